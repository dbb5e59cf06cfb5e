// The main demo: Y = ReLU(A x B + bias) in bf16 with fp32 accumulation, built once and run on
// the GPU, checked against a CPU reference; then the same topology as a dynamic-shape graph
// over several shapes sharing one KernelCache, with build times, revision and size. Without a
// CUDA device it validates and lowers the graph, prints what it built, and says that execution
// needs a device.
#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>  // the same API without the C++ module (g++ 13)
#endif

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  std::int64_t b, m, n, k;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// bf16 is the upper half of an fp32 (round to nearest even; inputs here are finite).
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

dnngraph::Graph make_graph(const Shape& s, std::shared_ptr<dnngraph::KernelCache> cache) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  if (cache) {
    g.set_dynamic_shape_enabled(true).set_kernel_cache(std::move(cache));
  }
  auto A = g.tensor(TensorAttributes()
                        .set_name("A")
                        .set_uid(1)
                        .set_dim({s.b, s.m, s.k})
                        .set_stride({s.m * s.k, s.k, 1}));
  auto B = g.tensor(TensorAttributes()
                        .set_name("B")
                        .set_uid(2)
                        .set_dim({s.b, s.k, s.n})
                        .set_stride({s.k * s.n, s.n, 1}));
  auto bias = g.tensor(TensorAttributes()
                           .set_name("bias")
                           .set_uid(4)
                           .set_dim({1, 1, s.n})
                           .set_stride({s.n, s.n, 1}));
  auto C = g.matmul(A, B, MatmulAttributes().set_name("mm").set_compute_data_type(DataType::Float));
  auto D =
      g.pointwise(C, bias, PointwiseAttributes().set_name("bias_add").set_mode(PointwiseMode::Add));
  auto Y = g.pointwise(D, PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
  Y->set_output(true).set_uid(3).set_data_type(DataType::BFloat16);
  return g;
}

// Runs a built graph on random data; returns the max |Y - CPU reference|, or a negative number
// when something failed (after printing what). exec_us: mean host + GPU time of 100 runs.
double run_and_check(const dnngraph::Graph& g, const dnngraph::Handle& handle, const Shape& s,
                     double* exec_us) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  auto random_bf16 = [&](std::int64_t count) {
    std::vector<std::uint16_t> v(static_cast<std::size_t>(count));
    for (auto& x : v) {
      x = to_bf16(dist(rng));
    }
    return v;
  };
  const auto a = random_bf16(s.b * s.m * s.k);
  const auto bm = random_bf16(s.b * s.k * s.n);
  const auto bias = random_bf16(s.n);
  std::vector<std::uint16_t> y(static_cast<std::size_t>(s.b * s.m * s.n));
  const std::int64_t ws = g.get_workspace_size().value_or(0);
  void* dev[5] = {};
  const std::size_t bytes[5] = {a.size() * 2, bm.size() * 2, bias.size() * 2, y.size() * 2,
                                static_cast<std::size_t>(ws)};
  bool ok = true;
  for (int i = 0; i < 5 && ok; ++i) {
    ok = bytes[i] == 0 || cudaMalloc(&dev[i], bytes[i]) == cudaSuccess;
  }
  ok = ok && cudaMemcpy(dev[0], a.data(), bytes[0], cudaMemcpyHostToDevice) == cudaSuccess &&
       cudaMemcpy(dev[1], bm.data(), bytes[1], cudaMemcpyHostToDevice) == cudaSuccess &&
       cudaMemcpy(dev[2], bias.data(), bytes[2], cudaMemcpyHostToDevice) == cudaSuccess;
  const std::unordered_map<std::int64_t, void*> pack{
      {1, dev[0]}, {2, dev[1]}, {4, dev[2]}, {3, dev[3]}};
  if (ok) {
    if (auto ran = g.execute(handle, pack, dev[4]); !ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
  }
  if (ok && exec_us != nullptr) {
    constexpr int runs = 100;
    cudaDeviceSynchronize();
    const auto start = Clock::now();
    for (int i = 0; ok && i < runs; ++i) {
      ok = g.execute(handle, pack, dev[4]).has_value();
    }
    ok = ok && cudaDeviceSynchronize() == cudaSuccess;
    *exec_us = ms_since(start) * 1000.0 / runs;
  }
  ok = ok && cudaMemcpy(y.data(), dev[3], bytes[3], cudaMemcpyDeviceToHost) == cudaSuccess;
  for (void* p : dev) {
    cudaFree(p);
  }
  if (!ok) {
    std::printf("a CUDA call failed\n");
    return -1;
  }
  double max_error = 0;
  for (std::int64_t bi = 0; bi < s.b; ++bi) {
    for (std::int64_t i = 0; i < s.m; ++i) {
      for (std::int64_t j = 0; j < s.n; ++j) {
        float acc = 0;
        for (std::int64_t kk = 0; kk < s.k; ++kk) {
          acc += from_bf16(a[static_cast<std::size_t>((bi * s.m + i) * s.k + kk)]) *
                 from_bf16(bm[static_cast<std::size_t>((bi * s.k + kk) * s.n + j)]);
        }
        const float ref = std::max(0.0F, acc + from_bf16(bias[static_cast<std::size_t>(j)]));
        const float got = from_bf16(y[static_cast<std::size_t>((bi * s.m + i) * s.n + j)]);
        max_error = std::max(max_error, static_cast<double>(std::fabs(got - ref)));
      }
    }
  }
  return max_error;
}

// bf16 output: 8 bits of mantissa; |ref| stays below ~32 here, so 0.125 is about 1 ulp there.
constexpr double tolerance = 0.125;

}  // namespace

int main() {
  using namespace dnngraph;
  std::printf("dnngraph demo: Y = ReLU(A x B + bias), bf16 in/out, fp32 accumulation\n");
  std::printf("cuDNN compiled %s, loaded %s\n",
              cudnn_version_string(cudnn_compiled_version()).c_str(),
              cudnn_version_string(cudnn_runtime_version()).c_str());

  const Shape first{4, 512, 384, 256};
  Graph g = make_graph(first, nullptr);
  auto lowered = g.lower();
  if (!lowered) {
    std::printf("lower failed: %s\n", lowered.error().message.c_str());
    return 1;
  }
  std::printf("shapes: A [4, 512, 256] x B [4, 256, 384] + bias [1, 1, 384] -> Y [4, 512, 384]\n");
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
  std::printf("build: %.1f ms, %s\n", build_ms, g.plan_info()->describe().c_str());
  double exec_us = 0;
  double error = run_and_check(g, *handle, first, &exec_us);
  bool pass = error >= 0 && error <= tolerance;
  std::printf("execute: %.1f us per call (host + GPU, mean of 100)\n", exec_us);
  std::printf("max |Y - reference| = %.5f (tolerance %.3f): %s\n", error, tolerance,
              pass ? "PASS" : "FAIL");

  // The same topology as a dynamic-shape graph: one KernelCache serves every shape.
  std::printf(
      "\nkernel cache: dynamic-shape graphs of this topology, one shared cache (%s "
      "revision/size)\n",
      std::string(KernelCache::introspection_path()).c_str());
  auto cache = std::make_shared<KernelCache>();
  const Shape shapes[] = {{4, 512, 384, 256},
                          {1, 1024, 1024, 1024},
                          {8, 128, 256, 512},
                          {2, 2048, 512, 768},
                          {1, 1000, 776, 512}};
  for (const Shape& s : shapes) {
    Graph dg = make_graph(s, cache);
    start = Clock::now();
    auto ok = dg.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback});
    const double ms = ms_since(start);
    if (!ok) {
      std::printf("build failed: %s\n", ok.error().message.c_str());
      return 1;
    }
    const double e = run_and_check(dg, *handle, s, nullptr);
    const bool shape_pass = e >= 0 && e <= tolerance;
    pass = pass && shape_pass;
    std::printf(
        "  [%lld, %lld, %lld, %lld] build %7.2f ms  %-9s revision %lld, size %lld, "
        "max error %.4f %s\n",
        static_cast<long long>(s.b), static_cast<long long>(s.m), static_cast<long long>(s.n),
        static_cast<long long>(s.k), ms,
        dg.plan_info()->kernel_cache_hit ? "cache hit" : "compiled",
        static_cast<long long>(cache->revision().value_or(-1)),
        static_cast<long long>(cache->size().value_or(-1)), e, shape_pass ? "PASS" : "FAIL");
  }
  return pass ? 0 : 1;
}
