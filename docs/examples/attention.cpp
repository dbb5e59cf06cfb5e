// docs/attention.md's example: causal attention in BFloat16 (training: O and Stats) with a
// padding mask from per-batch sequence lengths, packed BHSD. Without a CUDA device it validates
// and lowers the graph (the composite pattern, listed) and says that execution needs a device;
// with one it runs the graph and checks O on every valid row, and Stats, against a CPU
// reference in double.
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
#include <cstring>
#include <limits>
#include <random>
#include <unordered_map>
#include <vector>

#include "attention_reference.hpp"

namespace {

constexpr std::int64_t b = 2, h = 4, s = 45, d = 64;
constexpr std::int32_t lengths[b] = {45, 29};  // actual tokens per batch: batch 1 is padded
enum : std::int64_t { uid_q = 1, uid_k, uid_v, uid_o, uid_stats, uid_len_q, uid_len_kv };

using dnngraph_example::causal_row;
using dnngraph_example::from_bf16;
using dnngraph_example::to_bf16;

dnngraph::Graph causal_attention() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  const auto input = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim({b, h, s, d}));
  };
  const auto length = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()  // Int32 [b, 1, 1, 1] in device memory
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({b, 1, 1, 1})
                        .set_data_type(DataType::Int32));
  };
  auto [O, stats] = g.sdpa(input("Q", uid_q), input("K", uid_k), input("V", uid_v),
                           SdpaAttributes()
                               .set_name("attn")
                               .set_attn_scale(1.0F / std::sqrt(static_cast<float>(d)))
                               .set_causal_mask(true)
                               .set_padding_mask(true)
                               .set_seq_len_q(length("seq_len_q", uid_len_q))
                               .set_seq_len_kv(length("seq_len_kv", uid_len_kv))
                               .set_generate_stats(true));
  O->set_output(true).set_uid(uid_o);          // [b, h, s, d], BFloat16
  stats->set_output(true).set_uid(uid_stats);  // [b, h, s, 1], Float: log-sum-exp per row
  return g;
}

struct Errors {
  double o = -1, stats = -1;  // -1: the run failed
  int rows = 0;               // valid rows compared
};

// O and Stats of the valid rows (i < length of the batch) in double.
Errors compare(const std::vector<std::uint16_t>& q, const std::vector<std::uint16_t>& k,
               const std::vector<std::uint16_t>& v, const std::vector<std::uint16_t>& o,
               const std::vector<float>& stats) {
  const auto at = [](std::int64_t bi, std::int64_t hi, std::int64_t i) {
    return static_cast<std::size_t>(((bi * h + hi) * s + i) * d);
  };
  Errors e{0, 0, 0};
  std::vector<double> want;
  for (std::int64_t bi = 0; bi < b; ++bi) {
    for (std::int64_t hi = 0; hi < h; ++hi) {
      const auto row = [&](const std::vector<std::uint16_t>& t) {
        return [&t, &at, bi, hi](std::int64_t j) { return &t[at(bi, hi, j)]; };
      };
      for (std::int64_t i = 0; i < lengths[bi]; ++i) {  // causal: keys 0..i, inside the length
        const double lse = causal_row(&q[at(bi, hi, i)], i, d, row(k), row(v), want);
        const std::size_t r = static_cast<std::size_t>((bi * h + hi) * s + i);
        e.stats = std::max(e.stats, std::fabs(stats[r] - lse));
        for (std::int64_t x = 0; x < d; ++x) {
          e.o = std::max(e.o, std::fabs(from_bf16(o[at(bi, hi, i) + x]) - want[x]));
        }
        ++e.rows;
      }
    }
  }
  return e;
}

Errors run(const dnngraph::Graph& g, const dnngraph::Handle& handle) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  const std::size_t count = b * h * s * d;
  std::vector<std::uint16_t> q(count), k(count), v(count), o(count, 0xFFFF);  // O starts NaN
  for (auto* t : {&q, &k, &v}) {
    std::ranges::generate(*t, [&] { return to_bf16(dist(rng)); });
  }
  std::vector<float> stats(b * h * s);
  const std::vector<std::int32_t> len(std::begin(lengths), std::end(lengths));
  const std::int64_t ws = g.get_workspace_size().value_or(0);
  void* dev[8] = {};  // Q, K, V, O, Stats, seq_len_q, seq_len_kv, workspace
  const std::size_t bytes[8] = {count * 2,
                                count * 2,
                                count * 2,
                                count * 2,
                                stats.size() * sizeof(float),
                                sizeof len[0] * b,
                                sizeof len[0] * b,
                                static_cast<std::size_t>(ws)};
  bool ok = true;
  for (int i = 0; i < 8 && ok; ++i) {
    ok = bytes[i] == 0 || cudaMalloc(&dev[i], bytes[i]) == cudaSuccess;
  }
  const void* host[7] = {
      q.data(),     k.data(),   v.data(),  o.data(),
      stats.data(), len.data(), len.data()};  // self-attention: seq_len_kv = seq_len_q
  for (int i = 0; i < 7 && ok; ++i) {
    ok = cudaMemcpy(dev[i], host[i], bytes[i], cudaMemcpyHostToDevice) == cudaSuccess;
  }
  const std::unordered_map<std::int64_t, void*> pack{
      {uid_q, dev[0]},     {uid_k, dev[1]},     {uid_v, dev[2]},     {uid_o, dev[3]},
      {uid_stats, dev[4]}, {uid_len_q, dev[5]}, {uid_len_kv, dev[6]}};
  if (ok) {
    if (auto ran = g.execute(handle, pack, dev[7]); !ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
  }
  ok = ok && cudaMemcpy(o.data(), dev[3], bytes[3], cudaMemcpyDeviceToHost) == cudaSuccess &&
       cudaMemcpy(stats.data(), dev[4], bytes[4], cudaMemcpyDeviceToHost) == cudaSuccess;
  for (void* p : dev) {
    cudaFree(p);
  }
  return ok ? compare(q, k, v, o, stats) : Errors{};
}

// Inputs in [-1, 1], exact in bf16, Float accumulation: what remains is P rounded to bf16 before
// P V and O rounded to bf16, each 2^-9 relative at most, so |O| <= 1 errs by < 4e-3.
constexpr double o_tolerance = 1e-2, stats_tolerance = 1e-3;

}  // namespace

int main() {
  using namespace dnngraph;
  Graph g = causal_attention();
  auto lowered = g.lower();
  if (!lowered) {
    std::printf("lower failed: %s\n", lowered.error().message.c_str());
    return 1;
  }
  std::printf("lowered %zu tensors, %zu operations:", lowered->tensor_count,
              lowered->operation_count);
  for (const auto& op : lowered->operations) {
    std::printf(" %s;", op.c_str());
  }
  std::printf("\n");
  auto handle = Handle::create();
  if (!handle) {
    std::printf("execution needs a CUDA device; none here (%s)\n", handle.error().message.c_str());
    return 0;
  }
  if (auto built = g.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}); !built) {
    std::printf("build failed: %s\n", built.error().message.c_str());
    return 1;
  }
  std::printf("plan: %s\n", g.plan_info()->describe().c_str());
  const Errors e = run(g, *handle);
  const bool pass = e.o >= 0 && e.o <= o_tolerance && e.stats <= stats_tolerance;
  std::printf(
      "%d valid rows: max |O - reference| = %.2e (tolerance %.0e), max |Stats - "
      "reference| = %.2e (tolerance %.0e): %s\n",
      e.rows, e.o, o_tolerance, e.stats, stats_tolerance, pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
