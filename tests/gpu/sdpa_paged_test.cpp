// Attention over a paged K/V cache on the GPU (SdpaAttributes::set_paged_attention) against the
// CPU reference in double of the same keys and values unpaged. Each case scatters K and V into
// containers of pages through page tables that are shuffled permutations (never the identity, K
// and V each their own), with blocks no page table names left NaN, and the batches' lengths
// shorter than max_seq_len_kv and not multiples of the block size. Half and BFloat16, causal
// (both diagonals) and not, grouped- and multi-query heads, inference and training, decode
// (s_q 1), vLLM's token-major block layout, and queries packed token
// after token (THD) over the pages. A graph cuDNN has no engine for is a finding (skipped with
// the Error), never a pass.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/gpu_run.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"
#include "support/sdpa_reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::DiagonalAlignment;
using dnngraph::Graph;
using dnngraph::SdpaAttributes;
using dnngraph::TensorAttributes;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::repack;
using dnngraph::test::SdpaCase;
using dnngraph::test::starts;
using dnngraph::test::token_major;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t uid_q = 1, uid_k = 2, uid_v = 3, uid_o = 4, uid_stats = 5, uid_len_q = 6,
                       uid_len_kv = 7, uid_table_k = 8, uid_table_v = 9, uid_q_offsets = 10;

// How one of K and V is paged: its block size, how many blocks no page table names (left NaN),
// and whether a block is [h, block_size, d] in memory (BHSD) or [block_size, h, d] (vLLM).
struct Paging {
  std::int64_t block_size;
  std::int64_t spare_blocks = 3;
  bool token_major = false;
};

// The attention (its s_kv is max_seq_len_kv; its lengths are the padding mask's, required), how
// K and V are paged, and whether Q and O are packed token after token (THD, ragged offsets), as
// a serving system's prefill batches them.
struct PagedCase {
  SdpaCase attention;
  Paging k, v;
  bool ragged_q = false;

  [[nodiscard]] std::int64_t pages(const Paging& p) const {
    return (attention.s_kv + p.block_size - 1) / p.block_size;
  }
  [[nodiscard]] std::int64_t blocks(const Paging& p) const {
    return attention.b * pages(p) + p.spare_blocks;
  }
  [[nodiscard]] Dims container_dims(const Paging& p) const {
    return {blocks(p), attention.h_k, p.block_size, attention.d};
  }
  [[nodiscard]] Dims container_strides(const Paging& p) const {
    const std::int64_t h = attention.h_k, d = attention.d, bs = p.block_size;
    return p.token_major ? Dims{bs * h * d, d, h * d, 1} : Dims{h * bs * d, bs * d, d, 1};
  }
  [[nodiscard]] std::string text() const {
    const auto paging = [](const Paging& p) {
      return "block " + std::to_string(p.block_size) + (p.token_major ? " token-major" : "");
    };
    return attention.text() + " [K " + paging(k) + ", V " + paging(v) +
           (ragged_q ? ", Q and O THD" : "") + "]";
  }
};

Graph make_graph(const PagedCase& pc) {
  const SdpaCase& c = pc.attention;
  Graph g;
  g.set_name(c.name).set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  auto q = g.tensor(TensorAttributes().set_name("Q").set_uid(uid_q).set_dim(c.q_dims()));
  std::shared_ptr<TensorAttributes> q_offsets;
  if (pc.ragged_q) {
    q_offsets = g.tensor(TensorAttributes()
                             .set_name("q_offsets")
                             .set_uid(uid_q_offsets)
                             .set_dim({c.b + 1, 1, 1, 1})
                             .set_data_type(DataType::Int32));
    q->set_stride(token_major(c.q_dims())).set_ragged_offset(q_offsets);
  }
  const auto container = [&](const char* name, std::int64_t uid, const Paging& p) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim(pc.container_dims(p))
                        .set_stride(pc.container_strides(p)));
  };
  auto k = container("K pages", uid_k, pc.k);
  auto v = container("V pages", uid_v, pc.v);
  const auto int32 = [&](const char* name, std::int64_t uid, const Dims& dims) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim(dims).set_data_type(
        DataType::Int32));
  };
  SdpaAttributes a;
  a.set_name("attn")
      .set_attn_scale(c.scale())
      .set_generate_stats(c.stats)
      .set_padding_mask(true)
      .set_seq_len_q(int32("seq_len_q", uid_len_q, {c.b, 1, 1, 1}))
      .set_seq_len_kv(int32("seq_len_kv", uid_len_kv, {c.b, 1, 1, 1}))
      .set_paged_attention(int32("page_table_k", uid_table_k, {c.b, 1, pc.pages(pc.k), 1}),
                           int32("page_table_v", uid_table_v, {c.b, 1, pc.pages(pc.v), 1}), c.s_kv);
  if (c.causal == DiagonalAlignment::TopLeft) {
    a.set_causal_mask(true);
  } else if (c.causal == DiagonalAlignment::BottomRight) {
    a.set_causal_mask_bottom_right(true);
  }
  auto [o, stats] = g.sdpa(q, k, v, a);
  o->set_name("O").set_uid(uid_o).set_output(true);
  if (pc.ragged_q) {
    o->set_stride(token_major(c.q_dims())).set_ragged_offset(q_offsets);
  }
  if (stats) {
    stats->set_name("Stats").set_uid(uid_stats).set_output(true);
  }
  return g;
}

// One of K and V paged: the page table (Int32 [b, pages], a shuffled permutation of the blocks,
// not the identity), the container's bytes (every block NaN first; each batch's pages then hold
// its positions 0 .. pages * block_size - 1 of `full`, [b, h, pages * block_size, d]) and the
// unpaged values the reference reads, [b, h, s_kv, d].
struct Paged {
  std::vector<std::int32_t> table;
  std::vector<std::byte> container;
  std::vector<float> unpaged;
};

Paged page(const PagedCase& pc, const Paging& p, const HostTensor& full, std::mt19937& rng) {
  const SdpaCase& c = pc.attention;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  const std::int64_t pages = pc.pages(p), bs = p.block_size, s_full = pages * bs;
  const auto element = n(dnngraph::size_of(c.type));
  std::vector<std::int32_t> order(n(pc.blocks(p)));
  std::iota(order.begin(), order.end(), 0);
  while (std::is_sorted(order.begin(), order.begin() + c.b * pages)) {
    std::shuffle(order.begin(), order.end(), rng);
  }
  Paged out;
  out.table.assign(order.begin(), order.begin() + c.b * pages);
  out.container.assign(dnngraph::test::element_count(pc.container_dims(p)) * element,
                       std::byte{0xFF});  // NaN in Half and BFloat16
  out.unpaged.resize(dnngraph::test::element_count(c.kv_dims()));
  const Dims strides = pc.container_strides(p);
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    for (std::int64_t h = 0; h < c.h_k; ++h) {
      for (std::int64_t s = 0; s < s_full; ++s) {
        const std::int64_t block = out.table[n(bi * pages + s / bs)];
        for (std::int64_t x = 0; x < c.d; ++x) {
          const std::size_t from = n(((bi * c.h_k + h) * s_full + s) * c.d + x);
          const std::size_t to =
              n(block * strides[0] + h * strides[1] + (s % bs) * strides[2] + x * strides[3]);
          std::memcpy(out.container.data() + to * element, full.bytes.data() + from * element,
                      element);
          if (s < c.s_kv) {
            out.unpaged[n(((bi * c.h_k + h) * c.s_kv + s) * c.d + x)] = full.values[from];
          }
        }
      }
    }
  }
  return out;
}

// The test's own check of page(): K or V read back from the container through the page table,
// as cuDNN is to read it, is the unpaged tensor the reference reads.
bool reads_back(const PagedCase& pc, const Paging& p, const Paged& paged) {
  const SdpaCase& c = pc.attention;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  const std::vector<float> container = dnngraph::test::decode(c.type, paged.container);
  const Dims strides = pc.container_strides(p);
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    for (std::int64_t h = 0; h < c.h_k; ++h) {
      for (std::int64_t s = 0; s < c.s_kv; ++s) {
        const std::int64_t block = paged.table[n(bi * pc.pages(p) + s / p.block_size)];
        for (std::int64_t x = 0; x < c.d; ++x) {
          const float read = container[n(block * strides[0] + h * strides[1] +
                                         (s % p.block_size) * strides[2] + x)];
          if (read != paged.unpaged[n(((bi * c.h_k + h) * c.s_kv + s) * c.d + x)]) {
            return false;
          }
        }
      }
    }
  }
  return true;
}

struct Errors {
  dnngraph::test::Comparison o, stats;
};

// Runs a built graph once on inputs uniform in [-1, 1] and compares O (and Stats) with the
// reference on the valid rows. Every output byte starts as NaN.
Errors run_and_compare(const PagedCase& pc, dnngraph::test::BuiltCase& built,
                       std::int64_t workspace_size) {
  const SdpaCase& c = pc.attention;
  std::mt19937 rng(c.seed);
  const auto count = [](const Dims& d) { return dnngraph::test::element_count(d); };
  const auto full = [&](const Paging& p) {
    return dnngraph::test::random_tensor(c.type,
                                         count({c.b, c.h_k, pc.pages(p) * p.block_size, c.d}), rng);
  };
  // Q (and O) hold the valid tokens only when packed (THD).
  const std::vector<std::int64_t> q_starts = starts(c.len_q);
  const std::size_t q_count =
      pc.ragged_q ? static_cast<std::size_t>(q_starts.back() * c.h_q * c.d) : count(c.q_dims());
  const HostTensor q = dnngraph::test::random_tensor(c.type, q_count, rng);
  std::vector<float> q_padded = q.values;
  if (pc.ragged_q) {
    q_padded.assign(count(c.q_dims()), 0.0F);
    repack(c, c.h_q, c.s_q, c.len_q, /*to_packed=*/false, q.values, q_padded);
  }
  const HostTensor k_full = full(pc.k);
  const HostTensor v_full = full(pc.v);
  const Paged k = page(pc, pc.k, k_full, rng);
  const Paged v = page(pc, pc.v, v_full, rng);
  BOOST_REQUIRE(reads_back(pc, pc.k, k) && reads_back(pc, pc.v, v));
  const dnngraph::test::SdpaExpected e =
      dnngraph::test::sdpa_reference(c, q_padded, k.unpaged, v.unpaged);
  const std::size_t rows = e.row_valid.size();

  dnngraph::test::PackRun run;
  run.copy(uid_q, std::span<const std::byte>(q.bytes), "Q");
  run.copy(uid_k, std::span<const std::byte>(k.container), "K pages");
  run.copy(uid_v, std::span<const std::byte>(v.container), "V pages");
  run.copy(uid_table_k, std::span<const std::int32_t>(k.table), "page_table_k");
  run.copy(uid_table_v, std::span<const std::int32_t>(v.table), "page_table_v");
  run.copy(uid_len_q, std::span<const std::int32_t>(c.len_q), "seq_len_q");
  run.copy(uid_len_kv, std::span<const std::int32_t>(c.len_kv), "seq_len_kv");
  if (pc.ragged_q) {
    std::vector<std::int32_t> q_offsets;  // in elements
    q_offsets.reserve(q_starts.size());
    for (const std::int64_t first : q_starts) {
      q_offsets.push_back(static_cast<std::int32_t>(first * c.h_q * c.d));
    }
    run.copy(uid_q_offsets, std::span<const std::int32_t>(q_offsets), "q_offsets");
  }
  DeviceBuffer* o_dev =
      run.output(uid_o, q_count * static_cast<std::size_t>(dnngraph::size_of(c.type)), "O");
  DeviceBuffer* stats_dev =
      c.stats ? run.output(uid_stats, rows * sizeof(float), "Stats") : nullptr;
  run.execute(built, workspace_size, pc.text());

  std::vector<float> o_got = dnngraph::test::download(*o_dev, c.type, q_count, "O");
  if (pc.ragged_q) {
    const std::vector<float> packed = std::move(o_got);
    o_got.assign(e.o.size(), 0.0F);
    repack(c, c.h_q, c.s_q, c.len_q, /*to_packed=*/false, packed, o_got);
  }
  const auto per_row = static_cast<std::size_t>(c.d);
  using dnngraph::test::valid_rows;
  Errors errors;
  errors.o =
      dnngraph::test::compare(valid_rows(std::span<const float>(o_got), e.row_valid, per_row),
                              valid_rows(std::span<const double>(e.o), e.row_valid, per_row),
                              dnngraph::test::o_tolerance(c.type));
  if (stats_dev != nullptr) {
    const std::vector<float> stats =
        dnngraph::test::download(*stats_dev, DataType::Float, rows, "Stats");
    errors.stats =
        dnngraph::test::compare(valid_rows(std::span<const float>(stats), e.row_valid, 1),
                                valid_rows(std::span<const double>(e.stats), e.row_valid, 1),
                                dnngraph::test::stats_tolerance);
  }
  return errors;
}

boost::unit_test::precondition builds(const PagedCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

// Tolerances (dnngraph::test::o_tolerance, stats_tolerance; argued in support/sdpa_reference.hpp):
// the page loads copy values exactly, so the unpaged attention's bound holds unchanged: two
// roundings to the io type (P and O), 3.9e-3 in BFloat16 and 4.9e-4 in Half against tolerances
// of 1e-2 and 2e-3; a page read from the wrong block or past seq_len_kv errs by O(0.1) or is NaN.
void check_against_reference(const PagedCase& c) {
  const auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_graph(c); });
  const Errors errors = run_and_compare(c, *taken.built, taken.workspace_size);
  BOOST_TEST_MESSAGE(
      c.text() << ": O " << errors.o.describe()
               << (c.attention.stats ? "; Stats " + errors.stats.describe() : std::string()));
  BOOST_CHECK_MESSAGE(errors.o.passed(), c.text() << ": O " << errors.o.describe());
  if (c.attention.stats) {
    BOOST_CHECK_MESSAGE(errors.stats.passed(), c.text() << ": Stats " << errors.stats.describe());
  }
}

namespace cases {
const auto bf16 = DataType::BFloat16;
const auto half = DataType::Half;
const PagedCase padded_bf16{{"paged, padding, inference",
                             bf16,
                             3,
                             4,
                             4,
                             17,
                             67,
                             64,
                             {},
                             false,
                             {17, 5, 11},
                             {67, 40, 1},
                             1601},
                            {16},
                            {16}};
const PagedCase gqa_bottom_right_half{{"paged, GQA 8:2, causal bottom-right, training",
                                       half,
                                       2,
                                       8,
                                       2,
                                       33,
                                       100,
                                       128,
                                       DiagonalAlignment::BottomRight,
                                       true,
                                       {33, 9},
                                       {100, 57},
                                       1602},
                                      {32},
                                      {32}};
const PagedCase mqa_top_left_token_major_bf16{{"paged, multi-query, causal top-left, training",
                                               bf16,
                                               2,
                                               4,
                                               1,
                                               33,
                                               33,
                                               64,
                                               DiagonalAlignment::TopLeft,
                                               true,
                                               {33, 20},
                                               {33, 25},
                                               1603},
                                              {8, 2, true},
                                              {8, 2, true}};
const PagedCase decode_half{{"paged, decode (s_q 1), GQA 8:2, causal bottom-right",
                             half,
                             3,
                             8,
                             2,
                             1,
                             130,
                             128,
                             DiagonalAlignment::BottomRight,
                             false,
                             {1, 1, 1},
                             {130, 77, 3},
                             1604},
                            {16},
                            {16}};
const PagedCase ragged_q_half{{"paged, THD-packed Q and O, GQA 4:2, causal bottom-right",
                               half,
                               3,
                               4,
                               2,
                               40,
                               96,
                               64,
                               DiagonalAlignment::BottomRight,
                               false,
                               {40, 7, 23},
                               {96, 50, 23},
                               1606},
                              {32, 1},
                              {32, 1},
                              true};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_paged_forward)
DNNGRAPH_REFERENCE_CASE(bfloat16_padding_from_shuffled_pages_matches_reference, cases::padded_bf16)
DNNGRAPH_REFERENCE_CASE(half_grouped_query_causal_bottom_right_training_matches_reference,
                        cases::gqa_bottom_right_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_multi_query_causal_top_left_token_major_pages_match_reference,
                        cases::mqa_top_left_token_major_bf16)
DNNGRAPH_REFERENCE_CASE(half_decode_of_one_query_token_matches_reference, cases::decode_half)
DNNGRAPH_REFERENCE_CASE(half_thd_packed_queries_over_pages_match_reference, cases::ragged_q_half)
BOOST_AUTO_TEST_SUITE_END()
