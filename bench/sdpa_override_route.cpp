// Attention at every sequence length, two routes side by side in one run (H200, BF16, (b, h, d)
// = (4, 16, 128), inference): a static graph built per length, and one override-shape graph built
// once on the longest length and run at each length through execute-time shapes (cuDNN >= 9.21).
// Both in the form cuDNN runs exact under overrides (known issue sdpa-override-shapes): Q, K, V
// and O packed token after token with ragged offsets, a padding mask whose lengths are the
// length; the override changes Q's and O's sequence dim only (K and V keep the longest length as
// their dim, the offsets and lengths say where each sequence is and how long). Per length: the
// static build, each route's first call (the cost of a new length: build + first execute, or
// workspace query + first execute with overrides), the steady execute (CUDA events, median) as
// TFLOP/s, the ratio of the two, and max |O_override - O_static|.
// Usage: bench_sdpa_override_route [max_length] [lengths,comma,separated] [causal 0|1]
import dnngraph;

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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
constexpr std::int64_t uid_q = 1, uid_k = 2, uid_v = 3, uid_o = 4, uid_len_q = 6, uid_len_kv = 7,
                       uid_q_offsets = 8, uid_kv_offsets = 9;

struct Options {
  std::int64_t max_length = 8192;
  std::vector<std::int64_t> lengths{512, 1024, 1536, 2048, 3000, 4096, 6000, 8192};
  bool causal = true;
};

// Token-major strides of [b, h, s, d]: token t at t * h * d, head at d.
Dims token_major(std::int64_t s) { return {s * H * D, D, H * D, 1}; }

// Q and O declared with s_q tokens, K and V with s_kv, all packed token after token.
Graph make_graph(std::int64_t s_q, std::int64_t s_kv, const Options& o, bool overrides) {
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  g.set_override_shape_enabled(overrides);
  auto per_batch = [&](const char* name, std::int64_t uid, std::int64_t n) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({n, 1, 1, 1})
                        .set_data_type(DataType::Int32));
  };
  auto q_offsets = per_batch("q_offsets", uid_q_offsets, B + 1);
  auto kv_offsets = per_batch("kv_offsets", uid_kv_offsets, B + 1);
  auto input = [&](const char* name, std::int64_t uid, std::int64_t s,
                   const std::shared_ptr<TensorAttributes>& offsets) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({B, H, s, D})
                        .set_stride(token_major(s))
                        .set_ragged_offset(offsets));
  };
  auto q = input("Q", uid_q, s_q, q_offsets);
  auto k = input("K", uid_k, s_kv, kv_offsets);
  auto v = input("V", uid_v, s_kv, kv_offsets);
  auto [out, st] = g.sdpa(q, k, v,
                          dnngraph::SdpaAttributes()
                              .set_name("attn")
                              .set_attn_scale(1.0F / std::sqrt(static_cast<float>(D)))
                              .set_causal_mask(o.causal)
                              .set_padding_mask(true)
                              .set_seq_len_q(per_batch("len_q", uid_len_q, B))
                              .set_seq_len_kv(per_batch("len_kv", uid_len_kv, B)));
  out->set_name("O")
      .set_uid(uid_o)
      .set_output(true)
      .set_stride(token_major(s_q))
      .set_ragged_offset(q_offsets);
  return g;
}

// Q's and O's sequence dim: the only dims the override changes.
struct Overrides {
  std::vector<std::int64_t> uids{uid_q, uid_o};
  std::vector<Dims> shapes, strides;
  explicit Overrides(std::int64_t s) {
    for (int i = 0; i < 2; ++i) {
      shapes.push_back({B, H, s, D});
      strides.push_back(token_major(s));
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
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf(
      "# sdpa override route: cuDNN %lld, BF16 b %lld h %lld d %lld, %s, inference, packed "
      "(THD) with a padding mask, max %lld\n",
      static_cast<long long>(dnngraph::cudnn_runtime_version()), static_cast<long long>(B),
      static_cast<long long>(H), static_cast<long long>(D), o.causal ? "causal" : "no mask",
      static_cast<long long>(o.max_length));
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("# no handle: %s\n", handle.error().message.c_str());
    return 77;
  }
  const auto elements = static_cast<std::size_t>(B * H * o.max_length * D);
  std::mt19937 rng(7);
  Buffer q(elements * 2), k(elements * 2), v(elements * 2), out_static(elements * 2),
      out_override(elements * 2), lengths(B * sizeof(std::int32_t)),
      offsets((B + 1) * sizeof(std::int32_t));
  for (void* p : {q.p, k.p, v.p}) {
    const auto host = random_bf16(elements, rng);
    if (!cuda_ok(cudaMemcpy(p, host.data(), elements * 2, cudaMemcpyHostToDevice), "upload")) {
      return 2;
    }
  }
  // The override route: one build.
  Graph route = make_graph(o.max_length, o.max_length, o, /*overrides=*/true);
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
    Graph g = make_graph(s, s, o, /*overrides=*/false);
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
    // Every sequence of the batch is s tokens long, packed one after another.
    const std::vector<std::int32_t> length_values(B, static_cast<std::int32_t>(s));
    std::vector<std::int32_t> offset_values;
    for (std::int64_t i = 0; i <= B; ++i) {
      offset_values.push_back(static_cast<std::int32_t>(i * s * H * D));
    }
    if (!cuda_ok(cudaMemcpy(lengths.p, length_values.data(), B * sizeof(std::int32_t),
                            cudaMemcpyHostToDevice),
                 "upload") ||
        !cuda_ok(cudaMemcpy(offsets.p, offset_values.data(), (B + 1) * sizeof(std::int32_t),
                            cudaMemcpyHostToDevice),
                 "upload")) {
      return 2;
    }
    std::unordered_map<std::int64_t, void*> pack{{uid_q, q.p},
                                                 {uid_k, k.p},
                                                 {uid_v, v.p},
                                                 {uid_o, out_static.p},
                                                 {uid_len_q, lengths.p},
                                                 {uid_len_kv, lengths.p},
                                                 {uid_q_offsets, offsets.p},
                                                 {uid_kv_offsets, offsets.p}};
    start = Clock::now();
    bool ran = g.execute(*handle, pack, ws.p).has_value() && cudaDeviceSynchronize() == cudaSuccess;
    const double static_first = ms_since(start);
    const double static_ms =
        gpu_ms(reps, [&] { return g.execute(*handle, pack, ws.p).has_value(); });
    // Override: the graph built once, this length's shapes.
    const Overrides lists(s);
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
