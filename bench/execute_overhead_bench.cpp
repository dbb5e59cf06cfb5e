// Host cost of one execute() call, median of many, side by side in one run: a static graph, an
// override-enabled graph run without overrides, with the same overrides every call (checked
// once, then only compared), and with two override sets taking turns (checked every call).
// fp16 matmul built on the cache shape b=1, M=N=K=1024; overrides run M=N=K=512 / 256. Last, the
// static graph's execute() captured once in a CUDA graph and replayed (cudaGraphLaunch).
// Everything runs on one non-blocking stream (a capture needs one).
import dnngraph;

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Dims = std::vector<std::int64_t>;

dnngraph::Graph make_graph(bool overrides) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  g.set_override_shape_enabled(overrides);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, 1024, 1024}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1024, 1024}));
  g.matmul(a, b)->set_output(true).set_uid(3);
  return g;
}

struct OverrideSet {
  std::vector<std::int64_t> uids{1, 2, 3};
  std::vector<Dims> shapes;
  std::vector<Dims> strides;
  explicit OverrideSet(std::int64_t n) {
    for (int i = 0; i < 3; ++i) {
      shapes.push_back({1, n, n});
      strides.push_back(dnngraph::packed_strides(shapes.back()));
    }
  }
};

// Median host microseconds of `calls` invocations; the GPU is drained every 256 calls so the
// launch queue never blocks a call.
double median_us(int calls, const std::function<bool()>& call) {
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    if (!call()) {
      return -1;
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (i % 256 == 255) {
      cudaDeviceSynchronize();
    }
  }
  cudaDeviceSynchronize();
  std::ranges::sort(us);
  return us[us.size() / 2];
}

}  // namespace

int main() {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("needs a CUDA device: %s\n", handle.error().message.c_str());
    return 77;
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      !handle->set_stream(stream)) {
    std::printf("no stream\n");
    return 1;
  }
  void* buffers[3] = {};
  for (void*& p : buffers) {
    if (cudaMalloc(&p, std::size_t{1024} * 1024 * 2) != cudaSuccess) {
      return 1;
    }
  }
  const std::unordered_map<std::int64_t, void*> pack{
      {1, buffers[0]}, {2, buffers[1]}, {3, buffers[2]}};
  auto plain = make_graph(false);
  auto over = make_graph(true);
  for (auto* g : {&plain, &over}) {
    if (auto built = g->build(*handle, {dnngraph::HeuristicMode::A}); !built) {
      std::printf("build: %s\n", built.error().message.c_str());
      return 1;
    }
  }
  // Each graph's own workspace (the static plan may pick an engine that needs one).
  void* plain_ws = nullptr;
  const std::int64_t plain_ws_size = plain.get_workspace_size().value_or(0);
  if (plain_ws_size > 0 &&
      cudaMalloc(&plain_ws, static_cast<std::size_t>(plain_ws_size)) != cudaSuccess) {
    return 1;
  }
  const OverrideSet s512(512), s256(256);
  for (const auto* s : {&s512, &s256}) {  // workspace of both (0 for this plan; checked anyway)
    auto ws = over.get_workspace_size(*handle, s->uids, s->shapes, s->strides);
    if (!ws || *ws != 0) {
      std::printf("workspace query: %s\n",
                  ws ? "needs a workspace; bench assumes none" : ws.error().message.c_str());
      return 1;
    }
  }
  constexpr int calls = 20000;
  const double t_plain =
      median_us(calls, [&] { return plain.execute(*handle, pack, plain_ws).has_value(); });
  const double t_none =
      median_us(calls, [&] { return over.execute(*handle, pack, nullptr).has_value(); });
  const double t_same = median_us(calls, [&] {
    return over.execute(*handle, pack, nullptr, s512.uids, s512.shapes, s512.strides).has_value();
  });
  int turn = 0;
  const double t_alt = median_us(calls, [&] {
    const OverrideSet& s = (++turn % 2 == 0) ? s512 : s256;
    return over.execute(*handle, pack, nullptr, s.uids, s.shapes, s.strides).has_value();
  });
  // The static graph's execute() in a CUDA graph (warmed above with the same buffers).
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) != cudaSuccess) {
    return 1;
  }
  const bool captured = plain.execute(*handle, pack, plain_ws).has_value();
  if (cudaStreamEndCapture(stream, &graph) != cudaSuccess || !captured ||
      cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    std::printf("capture of execute() failed\n");
    return 1;
  }
  const double t_graph =
      median_us(calls, [&] { return cudaGraphLaunch(exec, stream) == cudaSuccess; });
  std::printf("execute() host time, median of %d calls (cuDNN %s, %s)\n", calls,
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str(),
              over.plan_info()->override_path.c_str());
  std::printf("  %-52s %8.2f us  1.00x\n", "static graph, no overrides", t_plain);
  std::printf("  %-52s %8.2f us  %.2fx\n", "override-enabled graph, no overrides", t_none,
              t_none / t_plain);
  std::printf("  %-52s %8.2f us  %.2fx\n", "with overrides, same shapes every call", t_same,
              t_same / t_plain);
  std::printf("  %-52s %8.2f us  %.2fx\n", "with overrides, two shape sets taking turns", t_alt,
              t_alt / t_plain);
  std::printf("  %-52s %8.2f us  %.2fx\n", "CUDA graph replay of the static execute()", t_graph,
              t_graph / t_plain);
  std::printf("  (static plan: %s)\n", plain.plan_info()->describe().c_str());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (void* p : buffers) {
    cudaFree(p);
  }
  cudaFree(plain_ws);
  if (!handle->set_stream(nullptr)) {
    return 1;
  }
  cudaStreamDestroy(stream);
  return 0;
}
