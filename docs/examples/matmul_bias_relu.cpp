// The main demo: Y = ReLU(A x B + bias) in bf16 with fp32 accumulation, built once and run on
// the GPU, checked against a CPU reference. Without a CUDA device it validates and lowers the
// graph, prints what it built, and says that execution needs a device.
import dnngraph;

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// bf16 is the upper half of an fp32 (round to nearest even).
std::uint16_t to_bf16(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>(bits >> 16);
}
float from_bf16(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

bool cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("CUDA error in %s: %s\n", what, cudaGetErrorString(status));
    return false;
  }
  return true;
}

}  // namespace

int main() {
  using namespace dnngraph;
  const std::int64_t b = 4;
  const std::int64_t m = 512;
  const std::int64_t n = 384;
  const std::int64_t k = 256;

  std::printf("dnngraph demo: Y = ReLU(A x B + bias), bf16 in/out, fp32 accumulation\n");
  std::printf("cuDNN compiled %s, loaded %s\n",
              cudnn_version_string(cudnn_compiled_version()).c_str(),
              cudnn_version_string(cudnn_runtime_version()).c_str());

  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  auto A = g.tensor(
      TensorAttributes().set_name("A").set_uid(1).set_dim({b, m, k}).set_stride({m * k, k, 1}));
  auto B = g.tensor(
      TensorAttributes().set_name("B").set_uid(2).set_dim({b, k, n}).set_stride({k * n, n, 1}));
  auto bias = g.tensor(
      TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, n}).set_stride({n, n, 1}));
  auto C = g.matmul(A, B, MatmulAttributes().set_name("mm").set_compute_data_type(DataType::Float));
  auto D =
      g.pointwise(C, bias, PointwiseAttributes().set_name("bias_add").set_mode(PointwiseMode::Add));
  auto Y = g.pointwise(D, PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
  Y->set_output(true).set_uid(3).set_data_type(DataType::BFloat16);

  auto lowered = g.lower();
  if (!lowered) {
    std::printf("lower failed: %s\n", lowered.error().message.c_str());
    return 1;
  }
  std::printf("shapes: A [%lld, %lld, %lld] x B [%lld, %lld, %lld] + bias [1, 1, %lld] -> Y %s\n",
              static_cast<long long>(b), static_cast<long long>(m), static_cast<long long>(k),
              static_cast<long long>(b), static_cast<long long>(k), static_cast<long long>(n),
              static_cast<long long>(n), to_string(Y->dim()).c_str());
  std::printf("lowered: %zu backend tensors, %zu operations, all finalized: %s\n",
              lowered->tensor_count, lowered->operation_count,
              lowered->all_finalized ? "yes" : "no");
  for (const auto& op : lowered->operations) {
    std::printf("  %s\n", op.c_str());
  }

  auto handle = Handle::create();
  if (!handle) {
    std::printf("execution needs a CUDA device; none here (%s)\n", handle.error().message.c_str());
    return 0;
  }

  auto start = Clock::now();
  auto built = g.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback});
  const double build_ms = ms_since(start);
  if (!built) {
    std::printf("build failed: %s\n", built.error().message.c_str());
    return 1;
  }
  auto info = g.plan_info();
  std::printf("build: %.1f ms, %s\n", build_ms, info->describe().c_str());

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  auto random_bf16 = [&](std::size_t count) {
    std::vector<std::uint16_t> v(count);
    for (auto& x : v) {
      x = to_bf16(dist(rng));
    }
    return v;
  };
  auto a = random_bf16(static_cast<std::size_t>(b * m * k));
  auto bm = random_bf16(static_cast<std::size_t>(b * k * n));
  auto bias_h = random_bf16(static_cast<std::size_t>(n));
  std::vector<std::uint16_t> y(static_cast<std::size_t>(b * m * n));

  void* a_dev = nullptr;
  void* b_dev = nullptr;
  void* bias_dev = nullptr;
  void* y_dev = nullptr;
  void* ws_dev = nullptr;
  const std::int64_t ws = g.get_workspace_size().value_or(0);
  bool ok =
      cuda_ok(cudaMalloc(&a_dev, a.size() * 2), "cudaMalloc") &&
      cuda_ok(cudaMalloc(&b_dev, bm.size() * 2), "cudaMalloc") &&
      cuda_ok(cudaMalloc(&bias_dev, bias_h.size() * 2), "cudaMalloc") &&
      cuda_ok(cudaMalloc(&y_dev, y.size() * 2), "cudaMalloc") &&
      (ws == 0 || cuda_ok(cudaMalloc(&ws_dev, static_cast<std::size_t>(ws)), "cudaMalloc")) &&
      cuda_ok(cudaMemcpy(a_dev, a.data(), a.size() * 2, cudaMemcpyHostToDevice), "copy A") &&
      cuda_ok(cudaMemcpy(b_dev, bm.data(), bm.size() * 2, cudaMemcpyHostToDevice), "copy B") &&
      cuda_ok(cudaMemcpy(bias_dev, bias_h.data(), bias_h.size() * 2, cudaMemcpyHostToDevice),
              "copy bias");
  std::unordered_map<std::int64_t, void*> pack{{1, a_dev}, {2, b_dev}, {4, bias_dev}, {3, y_dev}};
  double exec_us = 0;
  if (ok) {
    auto ran = g.execute(*handle, pack, ws_dev);
    if (!ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
    ok = ok && cuda_ok(cudaDeviceSynchronize(), "synchronize");
    constexpr int runs = 100;
    start = Clock::now();
    for (int i = 0; ok && i < runs; ++i) {
      ok = g.execute(*handle, pack, ws_dev).has_value();
    }
    ok = ok && cuda_ok(cudaDeviceSynchronize(), "synchronize");
    exec_us = ms_since(start) * 1000.0 / runs;
    ok = ok && cuda_ok(cudaMemcpy(y.data(), y_dev, y.size() * 2, cudaMemcpyDeviceToHost), "copy Y");
  }
  for (void* p : {a_dev, b_dev, bias_dev, y_dev, ws_dev}) {
    cudaFree(p);
  }
  if (!ok) {
    return 1;
  }

  // CPU reference from the same bf16 inputs, fp32 accumulation.
  double max_error = 0;
  for (std::int64_t bi = 0; bi < b; ++bi) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (std::int64_t kk = 0; kk < k; ++kk) {
          acc += from_bf16(a[static_cast<std::size_t>((bi * m + i) * k + kk)]) *
                 from_bf16(bm[static_cast<std::size_t>((bi * k + kk) * n + j)]);
        }
        const float ref = std::max(0.0F, acc + from_bf16(bias_h[static_cast<std::size_t>(j)]));
        const float got = from_bf16(y[static_cast<std::size_t>((bi * m + i) * n + j)]);
        max_error = std::max(max_error, static_cast<double>(std::fabs(got - ref)));
      }
    }
  }
  // bf16 output: 8 bits of mantissa; |ref| stays below ~30 here, so 0.125 is about 1 ulp there.
  const double tolerance = 0.125;
  std::printf("execute: %.1f us per call (host + GPU, mean of 100)\n", exec_us);
  std::printf("max |Y - reference| = %.5f (tolerance %.3f): %s\n", max_error, tolerance,
              max_error <= tolerance ? "PASS" : "FAIL");
  return max_error <= tolerance ? 0 : 1;
}
