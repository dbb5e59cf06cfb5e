// docs/attention.md's variable-length example: a server's attention, built once and run on every
// batch of requests through execute-time override shapes. Q, K, V and O are packed token after
// token (THD: no padding in memory) with ragged offsets; a padding mask gives each sequence's
// length. The graph is built once with room for 256 tokens per sequence; each batch overrides only
// Q's and O's sequence dim (its longest request), which is the form cuDNN runs exact (docs/
// attention.md, known issue sdpa-override-shapes). Without a CUDA device it validates the graph
// and checks each batch's override lists; with one it builds once, runs three batches, and checks
// every token of O against a CPU reference in double.
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
#include <limits>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

#include "attention_reference.hpp"

namespace {

using dnngraph_example::causal_row;
using dnngraph_example::from_bf16;
using dnngraph_example::to_bf16;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t b = 3, h = 4, d = 64, max_tokens = 256;
enum : std::int64_t { uid_q = 1, uid_k, uid_v, uid_o, uid_len, uid_offsets };

// [b, h, s, d] packed token after token: token t at t * h * d, head at d.
Dims token_major(std::int64_t s) { return {s * h * d, d, h * d, 1}; }

// Causal self-attention over a batch of b sequences of up to max_tokens tokens.
dnngraph::Graph varlen_attention() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  g.set_override_shape_enabled(true);  // built once, every batch through override shapes
  const auto per_batch = [&](const char* name, std::int64_t uid, std::int64_t n) {
    return g.tensor(  // Int32 in device memory
        TensorAttributes()
            .set_name(name)
            .set_uid(uid)
            .set_dim({n, 1, 1, 1})
            .set_data_type(DataType::Int32));
  };
  auto offsets = per_batch("offsets", uid_offsets, b + 1);  // where each sequence starts
  auto lengths = per_batch("lengths", uid_len, b);
  const auto packed = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({b, h, max_tokens, d})
                        .set_stride(token_major(max_tokens))
                        .set_ragged_offset(offsets));
  };
  auto [O, stats] = g.sdpa(packed("Q", uid_q), packed("K", uid_k), packed("V", uid_v),
                           SdpaAttributes()
                               .set_name("attn")
                               .set_attn_scale(1.0F / std::sqrt(static_cast<float>(d)))
                               .set_causal_mask(true)
                               .set_padding_mask(true)
                               .set_seq_len_q(lengths)
                               .set_seq_len_kv(lengths));  // inference: no Stats
  O->set_output(true).set_uid(uid_o).set_stride(token_major(max_tokens)).set_ragged_offset(offsets);
  return g;
}

// One batch's override lists: Q's and O's sequence dim is its longest request.
struct Overrides {
  std::vector<std::int64_t> uids{uid_q, uid_o};
  std::vector<Dims> shapes, strides;
  explicit Overrides(std::int64_t longest)
      : shapes(2, Dims{b, h, longest, d}), strides(2, token_major(longest)) {}
};

// The largest |O - reference| over every token of the batch (-1: the run failed).
double run_batch(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                 const std::vector<std::int32_t>& len, std::mt19937& rng) {
  std::vector<std::int32_t> first(b + 1, 0);  // in tokens
  std::partial_sum(len.begin(), len.end(), first.begin() + 1);
  const std::size_t count = static_cast<std::size_t>(first[b]) * h * d;
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<std::uint16_t> q(count), k(count), v(count), o(count, 0xFFFF);  // O starts NaN
  for (auto* t : {&q, &k, &v}) {
    std::ranges::generate(*t, [&] { return to_bf16(dist(rng)); });
  }
  std::vector<std::int32_t> offsets(b + 1);  // in elements
  std::ranges::transform(first, offsets.begin(), [](std::int32_t t) { return t * h * d; });
  const Overrides lists(*std::ranges::max_element(len));
  const auto ws = g.get_workspace_size(handle, lists.uids, lists.shapes, lists.strides);
  if (!ws) {
    std::printf("workspace: %s\n", ws.error().message.c_str());
    return -1;
  }
  void* dev[7] = {};  // Q, K, V, O, lengths, offsets, workspace
  const std::size_t bytes[7] = {count * 2,
                                count * 2,
                                count * 2,
                                count * 2,
                                b * 4,
                                (b + 1) * 4,
                                static_cast<std::size_t>(*ws)};
  const void* host[6] = {q.data(), k.data(), v.data(), o.data(), len.data(), offsets.data()};
  bool ok = true;
  for (int i = 0; i < 7 && ok; ++i) {
    ok = bytes[i] == 0 || cudaMalloc(&dev[i], bytes[i]) == cudaSuccess;
  }
  for (int i = 0; i < 6 && ok; ++i) {
    ok = cudaMemcpy(dev[i], host[i], bytes[i], cudaMemcpyHostToDevice) == cudaSuccess;
  }
  const std::unordered_map<std::int64_t, void*> pack{{uid_q, dev[0]},   {uid_k, dev[1]},
                                                     {uid_v, dev[2]},   {uid_o, dev[3]},
                                                     {uid_len, dev[4]}, {uid_offsets, dev[5]}};
  if (ok) {
    if (auto ran = g.execute(handle, pack, dev[6], lists.uids, lists.shapes, lists.strides); !ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
  }
  ok = ok && cudaMemcpy(o.data(), dev[3], bytes[3], cudaMemcpyDeviceToHost) == cudaSuccess;
  for (void* p : dev) {
    cudaFree(p);
  }
  if (!ok) {
    return -1;
  }
  // Token t of sequence s, head hi: element ((first[s] + t) * h + hi) * d.
  const auto at = [&](std::int64_t s, std::int64_t t, std::int64_t hi) {
    return static_cast<std::size_t>(((first[s] + t) * h + hi) * d);
  };
  double error = 0;
  std::vector<double> want;
  for (std::int64_t s = 0; s < b; ++s) {
    for (std::int64_t hi = 0; hi < h; ++hi) {
      const auto row = [&](const std::vector<std::uint16_t>& t) {
        return [&t, &at, s, hi](std::int64_t j) { return &t[at(s, j, hi)]; };
      };
      for (std::int64_t i = 0; i < len[s]; ++i) {  // causal: keys 0..i
        causal_row(&q[at(s, i, hi)], i, d, row(k), row(v), want);
        for (std::int64_t x = 0; x < d; ++x) {
          error = std::max(error, std::fabs(from_bf16(o[at(s, i, hi) + x]) - want[x]));
        }
      }
    }
  }
  return error;
}

// As examples/attention.cpp: P and O rounded to bf16, each 2^-9 relative at most.
constexpr double o_tolerance = 1e-2;

}  // namespace

int main() {
  using namespace dnngraph;
  Graph g = varlen_attention();
  if (auto valid = g.validate(); !valid) {
    std::printf("validate failed: %s\n", valid.error().message.c_str());
    return 1;
  }
  // Three batches of requests; each overrides Q's and O's sequence dim with its longest.
  const std::vector<std::vector<std::int32_t>> batches{{45, 29, 7}, {130, 12, 80}, {256, 200, 3}};
  for (const auto& len : batches) {
    const Overrides lists(*std::ranges::max_element(len));
    if (auto checked = g.check_overrides(lists.uids, lists.shapes, lists.strides); !checked) {
      std::printf("overrides refused: %s\n", checked.error().message.c_str());
      return 1;
    }
  }
  std::printf("validated; the override lists of %zu batches check\n", batches.size());
  auto handle = Handle::create();
  if (!handle) {
    std::printf("execution needs a CUDA device; none here (%s)\n", handle.error().message.c_str());
    return 0;
  }
  if (auto built = g.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}); !built) {
    // Below cuDNN 9.21 there is no override-shape flag and attention does not take overrides.
    std::printf("build refused: %s\n", built.error().message.c_str());
    return cudnn_offers(CudnnCapability::OverrideShapeFlag) ? 1 : 0;
  }
  std::printf("built once: %s\n", g.plan_info()->describe().c_str());
  std::mt19937 rng(13);
  bool pass = true;
  for (const auto& len : batches) {
    const double error = run_batch(g, *handle, len, rng);
    const bool ok = error >= 0 && error <= o_tolerance;
    pass = pass && ok;
    std::printf("batch of %d, %d and %d tokens: max |O - reference| = %.2e (tolerance %.0e): %s\n",
                len[0], len[1], len[2], error, o_tolerance, ok ? "PASS" : "FAIL");
  }
  return pass ? 0 : 1;
}
