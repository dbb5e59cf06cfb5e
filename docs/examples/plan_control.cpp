// docs/plan-control.md's example: build under a PlanPolicy (deterministic, no runtime
// compilation, a workspace cap), list the candidates that leaves, time each with CUDA events,
// keep the fastest as text and pin it in a new graph. Without a CUDA device it shows the text
// form of an engine choice and stops.
#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>  // the same API without the C++ module (g++ 13)
#endif

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::int64_t m = 1024;
constexpr std::int64_t n = 1024;
constexpr std::int64_t k = 1024;

dnngraph::Graph matmul_relu() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, m, k}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, k, n}));
  auto y = g.pointwise(g.matmul(a, b), PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  y->set_output(true).set_uid(3);
  return g;
}

// Median milliseconds of one execute (3 warm-up runs, then 11 timed), or a negative number.
double median_ms(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                 const std::unordered_map<std::int64_t, void*>& pack, void* workspace) {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int i = 0; i < 14; ++i) {
    cudaEventRecord(start, nullptr);
    if (!g.execute(handle, pack, workspace)) {
      return -1;
    }
    cudaEventRecord(stop, nullptr);
    float ms = 0;
    if (cudaEventSynchronize(stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
      return -1;
    }
    if (i >= 3) {
      times.push_back(ms);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::ranges::sort(times);
  return times[times.size() / 2];
}

}  // namespace

int main() {
  using namespace dnngraph;
  // An engine choice as text (PlanInfo::describe() starts with the same form): store it, read it
  // back, pin it.
  Result<EngineChoice> parsed = parse_engine_choice("engine 7, knobs {KERNEL_CFG=22}");
  if (!parsed || to_string(*parsed) != "engine 7, knobs {KERNEL_CFG=22}") {
    std::printf("parse_engine_choice failed\n");
    return 1;
  }
  auto handle = Handle::create();
  if (!handle) {
    std::printf("building needs a CUDA device; none here\n");
    return 0;
  }

  PlanPolicy policy{.excluded_behavior_notes = {BehaviorNote::RuntimeCompilation},
                    .max_workspace = std::int64_t{64} << 20,
                    .deterministic = true};
  Graph g = matmul_relu();
  auto built = g.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}, policy);
  if (!built && built.error().code == ErrorCode::NoEngine) {
    // Every engine this cuDNN offers compiles at run time (e.g. a cuDNN without its
    // precompiled-engines library): the error lists each filtered config and why. Relax.
    const std::string& why = built.error().message;
    std::printf("no engine without runtime compilation here (%s); allowing them\n",
                why.substr(0, why.find('\n')).c_str());
    policy.excluded_behavior_notes.clear();
    built = g.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}, policy);
  }
  if (!built) {
    std::printf("build failed: %s\n", built.error().message.c_str());
    return 1;
  }
  const std::int64_t count = *g.plan_count();
  std::printf("%lld candidate(s) after the filters; first: %s\n", static_cast<long long>(count),
              g.plan_info()->describe().c_str());

  void* a = nullptr;
  void* b = nullptr;
  void* y = nullptr;
  void* workspace = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(m * k) * 2;  // Half; m = n = k
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
      cudaMalloc(&y, bytes) != cudaSuccess ||
      cudaMalloc(&workspace, static_cast<std::size_t>(*policy.max_workspace)) != cudaSuccess) {
    std::printf("cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(a, 0, bytes);
  cudaMemset(b, 0, bytes);
  const std::unordered_map<std::int64_t, void*> pack{{1, a}, {2, b}, {3, y}};

  // Time every candidate (the workspace cap keeps each within the buffer allocated above).
  std::string fastest;
  double fastest_ms = 0;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(count, 8); ++i) {
    if (auto at = g.build_plan_at(*handle, i); !at) {
      std::printf("candidate %lld: %s\n", static_cast<long long>(i), at.error().message.c_str());
      continue;
    }
    const double ms = median_ms(g, *handle, pack, workspace);
    std::printf("candidate %lld: %.4f ms, %s\n", static_cast<long long>(i), ms,
                g.plan_info()->describe().c_str());
    if (ms >= 0 && (fastest.empty() || ms < fastest_ms)) {
      fastest = to_string(g.plan_info()->choice());
      fastest_ms = ms;
    }
  }
  if (fastest.empty()) {
    std::printf("no candidate ran\n");
    return 1;
  }

  // Later (another process): pin the stored choice; no heuristics query.
  Graph pinned = matmul_relu();
  auto choice = parse_engine_choice(fastest);
  if (!choice) {
    std::printf("%s\n", choice.error().message.c_str());
    return 1;
  }
  if (auto built = pinned.build(*handle, {HeuristicMode::A}, {.engine = *choice}); !built) {
    std::printf("pinning %s failed: %s\n", fastest.c_str(), built.error().message.c_str());
    return 1;
  }
  std::printf("pinned the fastest (%s, %.4f ms): %s\n", fastest.c_str(), fastest_ms,
              pinned.plan_info()->describe().c_str());

  // The same in one call: autotune times the first candidates on these buffers and keeps the
  // fastest (the table says what each took, or why it was not timed).
  auto report = g.autotune(*handle, pack, workspace, *policy.max_workspace,
                           {.warmup = 3, .iterations = 11, .max_candidates = 8});
  if (!report) {
    std::printf("autotune failed: %s\n", report.error().message.c_str());
    return 1;
  }
  std::printf("autotune kept #%lld:\n%s", static_cast<long long>(report->chosen_index),
              report->describe().c_str());
  cudaFree(a);
  cudaFree(b);
  cudaFree(y);
  cudaFree(workspace);
  return 0;
}
