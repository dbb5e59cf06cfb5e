// Build time of dynamic-shape fp16 graphs over a sequence of shapes, per plan-choice strategy:
// matmul + bias + ReLU, and NHWC conv_fprop 3x3 (C = K = 64) + bias + ReLU; and the host cost of
// execute() (matmul). Every strategy runs in a child
// process of its own (cuDNN keeps compiled kernels per process), so "cold" means cold; the
// parent prints the strategies side by side with ratios against building without a cache.
//   bench_kernel_cache                       all strategies of both topologies, side by side
//   bench_kernel_cache --strategy=NAME [conv] one strategy (what the parent runs)
import dnngraph;

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  std::int64_t b, m, n, k;
};

// Aligned shapes first, then one that is not a multiple of 8 in M and N.
constexpr std::array shapes{
    Shape{1, 1024, 1024, 1024}, Shape{1, 512, 512, 1024},  Shape{2, 2048, 1024, 512},
    Shape{1, 256, 4096, 1024},  Shape{4, 1024, 512, 2048}, Shape{1, 4096, 4096, 1024},
    Shape{8, 128, 256, 512},    Shape{1, 768, 1536, 1024}, Shape{1, 1000, 776, 512}};

// Conv shapes: N, H, W (C = K = 64, 3x3, padding 1).
constexpr std::array conv_shapes{Shape{1, 56, 56, 0},   Shape{2, 28, 28, 0}, Shape{4, 14, 14, 0},
                                 Shape{1, 112, 112, 0}, Shape{8, 7, 7, 0},   Shape{3, 40, 40, 0},
                                 Shape{1, 224, 224, 0}, Shape{16, 14, 14, 0}};

struct Strategy {
  const char* name;
  bool dynamic;
  bool cache;
  bool cache_first;
  dnngraph::HeuristicMode mode;
};

constexpr std::array strategies{
    Strategy{"static-A", false, false, false, dnngraph::HeuristicMode::A},
    Strategy{"dynamic-cache-A", true, true, false, dnngraph::HeuristicMode::A},
    Strategy{"dynamic-cache-Fallback", true, true, false, dnngraph::HeuristicMode::Fallback},
    Strategy{"dynamic-cache-first-A", true, true, true, dnngraph::HeuristicMode::A},
};

dnngraph::Graph make_graph(const Shape& s, const Strategy& strategy,
                           const std::shared_ptr<dnngraph::KernelCache>& cache) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(strategy.dynamic);
  if (strategy.cache) {
    g.set_kernel_cache(cache).set_cache_first_plan_choice(strategy.cache_first);
  }
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({s.b, s.m, s.k}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({s.b, s.k, s.n}));
  auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, s.n}));
  auto c = g.matmul(a, b);
  auto d = g.pointwise(c, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  auto y = g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  y->set_output(true).set_uid(3);
  return g;
}

double median(std::vector<double> v) {
  if (v.empty()) {
    return 0;
  }
  std::ranges::sort(v);
  return v[v.size() / 2];
}

// Host time of one execute() call, median over many, on the first shape's built graph.
double execute_overhead_us(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                           const Shape& s) {
  const auto bytes = [](std::int64_t n) { return static_cast<std::size_t>(n) * 2; };
  void* a = nullptr;
  void* b = nullptr;
  void* bias = nullptr;
  void* y = nullptr;
  void* ws = nullptr;
  const std::int64_t ws_size = g.get_workspace_size().value_or(0);
  if (cudaMalloc(&a, bytes(s.b * s.m * s.k)) != cudaSuccess ||
      cudaMalloc(&b, bytes(s.b * s.k * s.n)) != cudaSuccess ||
      cudaMalloc(&bias, bytes(s.n)) != cudaSuccess ||
      cudaMalloc(&y, bytes(s.b * s.m * s.n)) != cudaSuccess ||
      (ws_size > 0 && cudaMalloc(&ws, static_cast<std::size_t>(ws_size)) != cudaSuccess)) {
    return -1;
  }
  const std::unordered_map<std::int64_t, void*> pack{{1, a}, {2, b}, {4, bias}, {3, y}};
  std::vector<double> us;
  constexpr int calls = 2000;
  us.reserve(calls);
  bool ok = true;
  for (int i = 0; i < calls && ok; ++i) {
    const auto start = Clock::now();
    ok = g.execute(handle, pack, ws).has_value();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (i % 200 == 199) {
      ok = ok && cudaDeviceSynchronize() == cudaSuccess;  // keep the launch queue short
    }
  }
  cudaDeviceSynchronize();
  for (void* p : {a, b, bias, y, ws}) {
    cudaFree(p);
  }
  return ok ? median(us) : -1;
}

dnngraph::Graph make_conv_graph(const Shape& s, const Strategy& strategy,
                                const std::shared_ptr<dnngraph::KernelCache>& cache) {
  using namespace dnngraph;
  constexpr std::int64_t c = 64;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(strategy.dynamic);
  if (strategy.cache) {
    g.set_kernel_cache(cache).set_cache_first_plan_choice(strategy.cache_first);
  }
  const std::vector<std::int64_t> xd{s.b, c, s.m, s.n}, wd{c, c, 3, 3}, bd{1, c, 1, 1};
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(xd).set_stride(
      channels_last_strides(xd)));
  auto w = g.tensor(TensorAttributes().set_name("W").set_uid(2).set_dim(wd).set_stride(
      channels_last_strides(wd)));
  auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim(bd).set_stride(
      channels_last_strides(bd)));
  auto y = g.conv_fprop(x, w, ConvFpropAttributes().set_padding({1, 1}));
  auto d = g.pointwise(y, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd))
      ->set_output(true)
      .set_uid(3);
  return g;
}

int run_strategy(const Strategy& strategy, bool conv) {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("SKIP %s: %s\n", strategy.name, handle.error().message.c_str());
    return 77;
  }
  auto cache = std::make_shared<dnngraph::KernelCache>();
  std::vector<dnngraph::Graph> graphs;
  std::vector<double> warm;
  double first = 0;
  std::printf("%-24s %-22s %9s  %-5s %s\n", strategy.name, "shape (b,m,n,k)", "build ms", "hit",
              "plan / cache");
  const std::span<const Shape> list =
      conv ? std::span<const Shape>(conv_shapes) : std::span<const Shape>(shapes);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Shape& s = list[i];
    auto g = conv ? make_conv_graph(s, strategy, cache) : make_graph(s, strategy, cache);
    const auto start = Clock::now();
    auto built = g.build(*handle, {strategy.mode, dnngraph::HeuristicMode::Fallback});
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lld,%lld,%lld,%lld", static_cast<long long>(s.b),
                  static_cast<long long>(s.m), static_cast<long long>(s.n),
                  static_cast<long long>(s.k));
    if (!built) {
      std::printf("%-24s %-22s FAILED: %s\n", "", shape, built.error().message.c_str());
      return 1;
    }
    auto info = g.plan_info();
    std::string cache_state;
    if (strategy.cache) {
      cache_state = " | revision " + std::to_string(cache->revision().value_or(-1)) + ", size " +
                    std::to_string(cache->size().value_or(-1));
    }
    std::printf("%-24s %-22s %9.2f  %-5s %s%s\n", "", shape, ms,
                info->kernel_cache_hit ? "yes" : "no", info->describe().c_str(),
                cache_state.c_str());
    (i == 0 ? first : warm.emplace_back()) = ms;
    graphs.push_back(std::move(g));
  }
  const double exec_us = conv ? 0.0 : execute_overhead_us(graphs.front(), *handle, shapes.front());
  std::printf("RESULT %s first_ms=%.3f warm_median_ms=%.3f warm_max_ms=%.3f execute_us=%.2f\n",
              strategy.name, first, median(warm), *std::ranges::max_element(warm), exec_us);
  return 0;
}

struct Row {
  std::string name;
  double first = -1, warm = -1, warm_max = -1, exec = -1;
};

}  // namespace

int main(int argc, char* argv[]) {
  constexpr std::string_view flag = "--strategy=";
  if (argc > 1 && std::string_view(argv[1]).starts_with(flag)) {
    const std::string_view name = std::string_view(argv[1]).substr(flag.size());
    const bool conv = argc > 2 && std::string_view(argv[2]) == "conv";
    for (const Strategy& s : strategies) {
      if (name == s.name) {
        return run_strategy(s, conv);
      }
    }
    std::printf("unknown strategy %.*s\n", static_cast<int>(name.size()), name.data());
    return 2;
  }
  std::printf("dnngraph kernel cache benchmark, fp16, cuDNN %s\n",
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str());
  bool any = false;
  for (const bool conv : {false, true}) {
    std::printf("\n=== %s\n", conv ? "conv_fprop 3x3 NHWC (C = K = 64) + bias + ReLU, 8 shapes"
                                   : "matmul + bias + ReLU, 9 shapes");
    std::vector<Row> rows;
    for (const Strategy& s : strategies) {
      const std::string command =
          std::string(argv[0]) + " --strategy=" + s.name + (conv ? " conv" : "");
      std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
      if (!pipe) {
        return 1;
      }
      std::array<char, 4096> line{};
      Row row{s.name};
      while (std::fgets(line.data(), line.size(), pipe.get()) != nullptr) {
        std::fputs(line.data(), stdout);
        char name[64];
        if (std::sscanf(line.data(),
                        "RESULT %63s first_ms=%lf warm_median_ms=%lf warm_max_ms=%lf "
                        "execute_us=%lf",
                        name, &row.first, &row.warm, &row.warm_max, &row.exec) == 5) {
          rows.push_back(row);
        }
      }
    }
    if (rows.empty()) {
      continue;
    }
    any = true;
    const double base = rows.front().warm;
    std::printf("\n%-24s %10s %14s %12s %14s %12s\n", "strategy", "first ms", "warm median ms",
                "warm max ms", "vs static-A", "execute us");
    for (const Row& r : rows) {
      std::printf("%-24s %10.2f %14.3f %12.2f %13.1fx %12.2f\n", r.name.c_str(), r.first, r.warm,
                  r.warm_max, r.warm > 0 ? base / r.warm : 0.0, r.exec);
    }
  }
  if (!any) {
    std::printf("no strategy ran (no CUDA device?)\n");
    return 77;
  }
  return 0;
}
