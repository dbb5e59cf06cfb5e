// Attention at every sequence length, two routes side by side in one run (H200, BF16, (b, h, d)
// = (4, 16, 128)): a static graph built per length, and one override-shape graph built once on
// the longest length and run at each length through execute-time shapes (cuDNN >= 9.21). Per
// length: the static build, each route's first call (the cost of a new length: build + first
// execute, or workspace query + first execute with overrides), the steady execute (CUDA events,
// median) as TFLOP/s, the ratio of the two, and max |O_override - O_static| (the same engine
// should agree bit for bit). Forward, training (O and Stats) or inference, causal or not.
// Usage: bench_sdpa_override_route [max_length] [lengths,comma,separated] [causal 0|1] [stats 0|1]
import dnngraph;

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "timing.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using dnngraph_bench::Clock;
using dnngraph_bench::ms_since;

constexpr std::int64_t B = 4, H = 16, D = 128;
constexpr std::int64_t uid_q = 1, uid_k = 2, uid_v = 3, uid_o = 4, uid_stats = 5;

struct Options {
  std::int64_t max_length = 8192;
  std::vector<std::int64_t> lengths{512, 1024, 1536, 2048, 3000, 4096, 6000, 8192};
  bool causal = true;
  bool stats = false;
};

// Rows of Stats padded to 4 Floats (16 bytes): the alignment the plan was built with.
std::int64_t stats_row(std::int64_t s) { return (s + 3) / 4 * 4; }

Graph make_graph(std::int64_t s, const Options& o, bool overrides) {
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  g.set_override_shape_enabled(overrides);
  const Dims dims{B, H, s, D};
  auto q = g.tensor(TensorAttributes().set_name("Q").set_uid(uid_q).set_dim(dims));
  auto k = g.tensor(TensorAttributes().set_name("K").set_uid(uid_k).set_dim(dims));
  auto v = g.tensor(TensorAttributes().set_name("V").set_uid(uid_v).set_dim(dims));
  auto [out, st] = g.sdpa(q, k, v,
                          dnngraph::SdpaAttributes()
                              .set_name("attn")
                              .set_attn_scale(1.0F / std::sqrt(static_cast<float>(D)))
                              .set_causal_mask(o.causal)
                              .set_generate_stats(o.stats));
  out->set_name("O").set_uid(uid_o).set_output(true);
  if (st) {
    const std::int64_t row = stats_row(s);
    st->set_name("Stats").set_uid(uid_stats).set_output(true).set_stride({H * row, row, 1, 1});
  }
  return g;
}

struct Overrides {
  std::vector<std::int64_t> uids{uid_q, uid_k, uid_v, uid_o};
  std::vector<Dims> shapes, strides;
  Overrides(std::int64_t s, bool stats) {
    for (int i = 0; i < 4; ++i) {
      shapes.push_back({B, H, s, D});
      strides.push_back(dnngraph::packed_strides(shapes.back()));
    }
    if (stats) {
      uids.push_back(uid_stats);
      shapes.push_back({B, H, s, 1});
      strides.push_back({H * stats_row(s), stats_row(s), 1, 1});
    }
  }
};

bool cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("# CUDA error in %s: %s\n", what, cudaGetErrorString(e));
  }
  return e == cudaSuccess;
}

// Device memory, freed on scope exit.
struct Buffer {
  void* p = nullptr;
  explicit Buffer(std::size_t bytes) {
    if (bytes > 0 && !cuda_ok(cudaMalloc(&p, bytes), "cudaMalloc")) {
      std::exit(2);
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { cudaFree(p); }
};

// Median milliseconds of `reps` calls timed with CUDA events, after 3 untimed.
template <class Call>
double gpu_ms(int reps, const Call& call) {
  cudaEvent_t start = nullptr, end = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  std::vector<double> ms;
  for (int i = 0; i < reps + 3; ++i) {
    cudaEventRecord(start);
    if (!call()) {
      ms.clear();
      break;
    }
    cudaEventRecord(end);
    cudaEventSynchronize(end);
    float t = 0;
    cudaEventElapsedTime(&t, start, end);
    if (i >= 3) {
      ms.push_back(t);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  return dnngraph_bench::median(ms);
}

std::vector<std::uint16_t> random_bf16(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) {
    const float f = dist(rng);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof(bits));
    x = static_cast<std::uint16_t>(bits >> 16U);
  }
  return v;
}

float bf16_to_float(std::uint16_t x) {
  const std::uint32_t bits = static_cast<std::uint32_t>(x) << 16U;
  float f = 0;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

Options parse(int argc, char** argv) {
  Options o;
  if (argc > 1) {
    o.max_length = std::atoll(argv[1]);
  }
  if (argc > 2) {
    o.lengths.clear();
    std::stringstream list(argv[2]);
    for (std::string item; std::getline(list, item, ',');) {
      o.lengths.push_back(std::atoll(item.c_str()));
    }
  }
  if (argc > 3) {
    o.causal = std::atoi(argv[3]) != 0;
  }
  if (argc > 4) {
    o.stats = std::atoi(argv[4]) != 0;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf("# sdpa override route: cuDNN %lld, BF16 b %lld h %lld d %lld, %s, %s, max %lld\n",
              static_cast<long long>(dnngraph::cudnn_runtime_version()), static_cast<long long>(B),
              static_cast<long long>(H), static_cast<long long>(D), o.causal ? "causal" : "no mask",
              o.stats ? "training (O, Stats)" : "inference", static_cast<long long>(o.max_length));
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("# no handle: %s\n", handle.error().message.c_str());
    return 77;
  }
  const auto elements = static_cast<std::size_t>(B * H * o.max_length * D);
  std::mt19937 rng(7);
  Buffer q(elements * 2), k(elements * 2), v(elements * 2), out_static(elements * 2),
      out_override(elements * 2),
      stats(static_cast<std::size_t>(B * H * stats_row(o.max_length)) * sizeof(float));
  for (void* p : {q.p, k.p, v.p}) {
    const auto host = random_bf16(elements, rng);
    if (!cuda_ok(cudaMemcpy(p, host.data(), elements * 2, cudaMemcpyHostToDevice), "upload")) {
      return 2;
    }
  }
  // The override route: one build.
  Graph route = make_graph(o.max_length, o, /*overrides=*/true);
  auto start = Clock::now();
  auto built = route.build(*handle, {dnngraph::HeuristicMode::A});
  const double route_build_ms = ms_since(start);
  if (!built) {
    std::printf("# override route refused at build: %s\n", built.error().message.c_str());
    return 3;
  }
  std::printf("# override route: one build at %lld in %.1f ms; plan %s\n",
              static_cast<long long>(o.max_length), route_build_ms,
              route.plan_info()->describe().c_str());
  std::printf(
      "length,static_build_ms,static_first_ms,static_ms,static_tflops,override_first_ms,"
      "override_ms,override_tflops,override_over_static,max_abs_diff\n");
  const int reps = 10;
  for (const std::int64_t s : o.lengths) {
    const double flops =
        4.0 * static_cast<double>(B * H) * static_cast<double>(s * s) * D / (o.causal ? 2 : 1);
    const auto bytes = static_cast<std::size_t>(B * H * s * D) * 2;
    // Static: a graph of this length.
    Graph g = make_graph(s, o, /*overrides=*/false);
    start = Clock::now();
    auto ok = g.build(*handle, {dnngraph::HeuristicMode::A});
    const double build_ms = ms_since(start);
    if (!ok) {
      std::printf("# static build at %lld failed: %s\n", static_cast<long long>(s),
                  ok.error().message.c_str());
      return 4;
    }
    const std::int64_t ws_static = g.get_workspace_size().value_or(0);
    Buffer ws(static_cast<std::size_t>(ws_static));
    std::unordered_map<std::int64_t, void*> pack{
        {uid_q, q.p}, {uid_k, k.p}, {uid_v, v.p}, {uid_o, out_static.p}};
    if (o.stats) {
      pack[uid_stats] = stats.p;
    }
    start = Clock::now();
    bool ran = g.execute(*handle, pack, ws.p).has_value() && cudaDeviceSynchronize() == cudaSuccess;
    const double static_first = ms_since(start);
    const double static_ms =
        gpu_ms(reps, [&] { return g.execute(*handle, pack, ws.p).has_value(); });
    // Override: the graph built once, this length's shapes.
    const Overrides lists(s, o.stats);
    pack[uid_o] = out_override.p;
    start = Clock::now();
    const auto ws_size = route.get_workspace_size(*handle, lists.uids, lists.shapes, lists.strides);
    Buffer ws_override(static_cast<std::size_t>(ws_size.value_or(0)));
    const auto first =
        route.execute(*handle, pack, ws_override.p, lists.uids, lists.shapes, lists.strides);
    ran = ran && ws_size && first && cudaDeviceSynchronize() == cudaSuccess;
    const double override_first = ms_since(start);
    if (!ran) {
      std::printf("# length %lld: %s\n", static_cast<long long>(s),
                  !ws_size ? ws_size.error().message.c_str()
                  : !first ? first.error().message.c_str()
                           : "a static execute failed");
      return 5;
    }
    const double override_ms = gpu_ms(reps, [&] {
      return route.execute(*handle, pack, ws_override.p, lists.uids, lists.shapes, lists.strides)
          .has_value();
    });
    // Both routes on the same inputs: the outputs.
    std::vector<std::uint16_t> a(bytes / 2), b(bytes / 2);
    cudaMemcpy(a.data(), out_static.p, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), out_override.p, bytes, cudaMemcpyDeviceToHost);
    double diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      diff =
          std::max(diff, static_cast<double>(std::fabs(bf16_to_float(a[i]) - bf16_to_float(b[i]))));
    }
    std::printf("%lld,%.2f,%.3f,%.4f,%.1f,%.3f,%.4f,%.1f,%.3f,%.3g\n", static_cast<long long>(s),
                build_ms, static_first, static_ms, flops / static_ms / 1e9, override_first,
                override_ms, flops / override_ms / 1e9, override_ms / static_ms, diff);
    std::fflush(stdout);
  }
  std::printf("# override route: built once, run at %zu lengths\n", o.lengths.size());
  return 0;
}
