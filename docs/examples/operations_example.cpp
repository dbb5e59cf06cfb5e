// docs/operations.md's example for FP8 matmul, by-value scalars and reductions:
//  1. Y = (A x B) * 0.25 with A, B in FP8 E4M3 (B column-major, as cuDNN's FP8 sample), Float
//     accumulation, the 0.25 a scalar passed by value, Y in Float;
//  2. per-channel sums of an NHWC image batch, Y [1, C, 1, 1] in Float (the reduction shape
//     cuDNN runs on its own).
// Without a CUDA device it validates and lowers both graphs; with one it runs them and checks
// them against a CPU reference (the FP8 products of small integers are exact).
#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>  // the same API without the C++ module (g++ 13)
#endif

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::int64_t m = 64, n = 48, k = 96;
constexpr std::int64_t images = 8, channels = 32, height = 7, width = 7;
constexpr float descale = 0.25F;

// E4M3 bytes of the integers 0..4 (bias 7, 3 mantissa bits); the sign is bit 7.
std::uint8_t e4m3(int v) {
  constexpr std::uint8_t magnitude[] = {0x00, 0x38, 0x40, 0x44, 0x48};
  return static_cast<std::uint8_t>((v < 0 ? 0x80 : 0) | magnitude[std::abs(v)]);
}

dnngraph::Graph fp8_matmul() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  auto A = g.tensor(TensorAttributes()
                        .set_name("A")
                        .set_uid(1)
                        .set_dim({1, m, k})
                        .set_stride({m * k, k, 1})
                        .set_data_type(DataType::Fp8E4M3));
  auto B = g.tensor(TensorAttributes()
                        .set_name("B")
                        .set_uid(2)
                        .set_dim({1, k, n})
                        .set_stride({k * n, 1, k})  // column-major: K contiguous
                        .set_data_type(DataType::Fp8E4M3));
  auto C = g.matmul(A, B, MatmulAttributes().set_name("mm"));
  g.pointwise(C, g.tensor(descale),
              PointwiseAttributes().set_name("descale").set_mode(PointwiseMode::Mul))
      ->set_output(true)
      .set_uid(3);
  return g;
}

dnngraph::Graph channel_sums() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  const std::vector<std::int64_t> dims{images, channels, height, width};
  auto X = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(dims).set_stride(
      channels_last_strides(dims)));
  auto Y = g.reduction(X, ReductionAttributes().set_name("sums").set_mode(ReductionMode::Add));
  Y->set_output(true)
      .set_uid(2)
      .set_dim({1, channels, 1, 1})
      .set_stride(channels_last_strides({1, channels, 1, 1}));
  return g;
}

// Uploads the inputs, runs g, downloads `out_count` Floats of uid `out_uid`; empty on failure.
std::vector<float> run(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                       const std::vector<std::pair<std::int64_t, std::vector<std::uint8_t>>>& in,
                       std::int64_t out_uid, std::size_t out_count) {
  std::unordered_map<std::int64_t, void*> pack;
  std::vector<void*> owned;
  bool ok = true;
  for (const auto& [uid, bytes] : in) {
    void* p = nullptr;
    ok = ok && cudaMalloc(&p, bytes.size()) == cudaSuccess &&
         cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice) == cudaSuccess;
    owned.push_back(p);
    pack[uid] = p;
  }
  void* out = nullptr;
  void* workspace = nullptr;
  const std::int64_t ws = g.get_workspace_size().value_or(0);
  ok = ok && cudaMalloc(&out, out_count * sizeof(float)) == cudaSuccess &&
       (ws == 0 || cudaMalloc(&workspace, static_cast<std::size_t>(ws)) == cudaSuccess);
  pack[out_uid] = out;
  if (ok) {
    if (auto ran = g.execute(handle, pack, workspace); !ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
  }
  std::vector<float> result(out_count);
  ok = ok && cudaMemcpy(result.data(), out, out_count * sizeof(float), cudaMemcpyDeviceToHost) ==
                 cudaSuccess;
  owned.push_back(out);
  owned.push_back(workspace);
  for (void* p : owned) {
    cudaFree(p);
  }
  return ok ? result : std::vector<float>{};
}

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
  return {p, p + v.size() * sizeof(T)};
}

}  // namespace

int main() {
  using namespace dnngraph;
  Graph mm = fp8_matmul();
  Graph sums = channel_sums();
  for (Graph* g : {&mm, &sums}) {
    auto lowered = g->lower();
    if (!lowered) {
      std::printf("lower failed: %s\n", lowered.error().message.c_str());
      return 1;
    }
    std::printf("lowered %zu tensors, %zu operations\n", lowered->tensor_count,
                lowered->operation_count);
  }
  auto handle = Handle::create();
  if (!handle) {
    std::printf("execution needs a CUDA device; none here (%s)\n", handle.error().message.c_str());
    return 0;
  }
  for (Graph* g : {&mm, &sums}) {
    if (auto built = g->build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}); !built) {
      std::printf("build failed: %s\n", built.error().message.c_str());
      return 1;
    }
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<int> a(m * k), b(k * n);  // b[p * n + j]: B as [K, N]
  std::ranges::generate(a, [&] { return small(rng); });
  std::ranges::generate(b, [&] { return small(rng); });
  std::vector<std::uint8_t> a8(a.size()), b8(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) a8[i] = e4m3(a[i]);
  for (std::int64_t p = 0; p < k; ++p) {
    for (std::int64_t j = 0; j < n; ++j) {
      b8[static_cast<std::size_t>(j * k + p)] = e4m3(b[static_cast<std::size_t>(p * n + j)]);
    }
  }
  const std::vector<float> y = run(mm, *handle, {{1, a8}, {2, b8}}, 3, m * n);
  double mm_error = y.empty() ? -1 : 0;
  for (std::int64_t i = 0; i < m && !y.empty(); ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        sum += a[static_cast<std::size_t>(i * k + p)] * b[static_cast<std::size_t>(p * n + j)];
      }
      mm_error =
          std::max(mm_error, std::fabs(y[static_cast<std::size_t>(i * n + j)] - sum * descale));
    }
  }
  std::uniform_real_distribution<float> unit(-1.0F, 1.0F);
  std::vector<float> x(images * height * width * channels);  // NHWC memory order
  std::ranges::generate(x, [&] { return unit(rng); });
  const std::vector<float> s = run(sums, *handle, {{1, bytes_of(x)}}, 2, channels);
  double sum_error = s.empty() ? -1 : 0;
  for (std::int64_t c = 0; c < channels && !s.empty(); ++c) {
    double want = 0;
    for (std::size_t i = static_cast<std::size_t>(c); i < x.size(); i += channels) want += x[i];
    sum_error = std::max(sum_error, std::fabs(s[static_cast<std::size_t>(c)] - want));
  }
  const bool pass = mm_error >= 0 && mm_error <= 1e-3 && sum_error >= 0 && sum_error <= 1e-3;
  std::printf("fp8 matmul: max |Y - reference| = %.3g; channel sums: %.3g (tolerance 1e-3): %s\n",
              mm_error, sum_error, pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
