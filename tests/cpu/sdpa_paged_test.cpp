// Attention over a paged K/V cache without a GPU (SdpaAttributes::set_paged_attention): K and V
// are containers of pages [num_blocks, h, block_size, d] read through Int32 page tables
// [b, 1, pages, 1]. sdpa() lowers with a PAGED_CACHE_LOAD operation in front of each matmul, and
// refuses each kind of bad paged input before cuDNN sees it, with its ErrorCode and a message
// naming the node, the tensor and the values.
#define BOOST_TEST_MODULE sdpa_paged
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::SdpaAttributes;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

struct Shape {
  std::int64_t b = 2, h_q = 8, h_k = 2, s_q = 17, d = 64, d_v = 64;
  std::int64_t max_seq_len_kv = 33, block_k = 8, block_v = 8, blocks_k = 11, blocks_v = 11;
  [[nodiscard]] std::int64_t pages(std::int64_t block) const {
    return (max_seq_len_kv + block - 1) / block;
  }
};

// A BFloat16 graph with Q (uid 1), the containers K and V (uids 2 and 3, packed), the lengths
// (uids 6 and 7) and the page tables (uids 8 and 9, Int32); run() adds the node ("attn") with the
// padding mask and the paged cache, and names O (uid 4).
struct Paged {
  Graph g;
  Shape s;
  TensorPtr q, k, v, seq_q, seq_kv, table_k, table_v, o, stats;

  explicit Paged(const Shape& shape = {}) : s(shape) {
    g.set_io_data_type(DataType::BFloat16);
    q = g.tensor(tensor("Q", 1, {s.b, s.h_q, s.s_q, s.d}));
    k = g.tensor(tensor("K", 2, {s.blocks_k, s.h_k, s.block_k, s.d}));
    v = g.tensor(tensor("V", 3, {s.blocks_v, s.h_k, s.block_v, s.d_v}));
    seq_q = g.tensor(tensor("seq_q", 6, {s.b, 1, 1, 1}).set_data_type(DataType::Int32));
    seq_kv = g.tensor(tensor("seq_kv", 7, {s.b, 1, 1, 1}).set_data_type(DataType::Int32));
    table_k = g.tensor(
        tensor("table_k", 8, {s.b, 1, s.pages(s.block_k), 1}).set_data_type(DataType::Int32));
    table_v = g.tensor(
        tensor("table_v", 9, {s.b, 1, s.pages(s.block_v), 1}).set_data_type(DataType::Int32));
  }
  [[nodiscard]] SdpaAttributes attributes() const {
    return SdpaAttributes()
        .set_padding_mask(true)
        .set_seq_len_q(seq_q)
        .set_seq_len_kv(seq_kv)
        .set_paged_attention(table_k, table_v, s.max_seq_len_kv);
  }
  void run(SdpaAttributes a) {
    auto [out, st] = g.sdpa(q, k, v, a.set_name("attn"));
    o = out;
    stats = st;
    o->set_name("O").set_uid(4).set_output(true);
    if (stats) {
      stats->set_name("Stats").set_uid(5).set_output(true);
    }
  }
  void run() { run(attributes()); }
};

// Where each OperationPagedCacheLoad is among the lowered operations.
std::vector<std::size_t> loads_in(const LoweringSummary& s) {
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < s.backend_operations.size(); ++i) {
    if (s.backend_operations[i] == "OperationPagedCacheLoad") {
      at.push_back(i);
    }
  }
  return at;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_paged_lowering)

BOOST_AUTO_TEST_CASE(k_and_v_are_loaded_from_pages_before_each_matmul) {
  Paged p;
  p.run();
  const LoweringSummary s = require_lowered(p.g);
  BOOST_TEST(s.all_finalized);
  // load K, Q K^T, 6 padding steps, max, minus, exp, sum, log, log-sum-exp (virtual), divide,
  // load V, P V.
  BOOST_TEST(s.operation_count == 17U);
  BOOST_TEST(loads_in(s) == (std::vector<std::size_t>{0, 15}));
  BOOST_TEST(s.backend_operations[1] == "OperationMatmul");
  BOOST_TEST(s.backend_operations[16] == "OperationMatmul");
  // O has Q's batch and length and V's head dim; the containers' block counts play no part.
  BOOST_TEST(p.o->dim() == (Dims{2, 8, 17, 64}));
  BOOST_TEST((p.o->data_type() == DataType::BFloat16));
}

BOOST_AUTO_TEST_CASE(training_with_a_bottom_right_causal_mask_reads_the_longest_key_length) {
  Paged p({.max_seq_len_kv = 40, .block_k = 16, .block_v = 16, .blocks_k = 6, .blocks_v = 6});
  p.run(p.attributes().set_generate_stats(true).set_causal_mask_bottom_right(true).set_attn_scale(
      0.125F));
  const LoweringSummary s = require_lowered(p.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(loads_in(s).size() == 2U);
  BOOST_REQUIRE(p.stats != nullptr);
  BOOST_TEST(p.stats->dim() == (Dims{2, 8, 17, 1}));
}

BOOST_AUTO_TEST_CASE(containers_of_another_block_count_for_v_and_token_major_pages_lower) {
  // vLLM keeps a block as [block_size, h, d]: dims [blocks, h, block_size, d] with token-major
  // strides. V has its own block count and head dim.
  Paged p({.d_v = 128, .block_k = 8, .block_v = 8, .blocks_k = 9, .blocks_v = 5});
  const Dims& kd = p.k->dim();
  p.k->set_stride({kd[1] * kd[2] * kd[3], kd[3], kd[1] * kd[3], 1});
  p.run();
  const LoweringSummary s = require_lowered(p.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(p.table_v->dim() == (Dims{2, 1, 5, 1}));
  BOOST_TEST(p.o->dim() == (Dims{2, 8, 17, 128}));
}

BOOST_AUTO_TEST_CASE(k_and_v_of_two_block_sizes_are_refused) {
  // Measured on the H200 (cuDNN 9.19 and 9.27): K in blocks of 16, V in blocks of 8 ran with
  // success and an O of NaN.
  Paged p({.block_k = 8, .block_v = 16, .blocks_k = 9, .blocks_v = 5});
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST((error.code == ErrorCode::InvalidAttribute));
  BOOST_TEST(mentions(error, "K's pages hold 8 positions"));
  BOOST_TEST(mentions(error, "V's 16; give both caches one block size"));
  BOOST_TEST(mentions(error, "known issue paged-kv-two-block-sizes"));
}

BOOST_AUTO_TEST_CASE(queries_packed_token_after_token_over_pages_lower_outside_the_override_form) {
  // THD-packed Q and O with a padding mask, inference: without pages the form execute-time
  // overrides are served in; with pages it is not (never measured), and the override check says
  // so.
  Paged p;
  auto offsets = p.g.tensor(tensor("q_offsets", 10, {3, 1, 1, 1}).set_data_type(DataType::Int32));
  // Token-major strides of [b, 8 heads, s, 64].
  const auto token_major = [](std::int64_t s) -> Dims { return {s * 512, 64, 512, 1}; };
  p.q->set_stride(token_major(17)).set_ragged_offset(offsets);
  p.g.set_override_shape_enabled(true);
  p.run();
  p.o->set_stride(token_major(17)).set_ragged_offset(offsets);
  const LoweringSummary s = require_lowered(p.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(loads_in(s).size() == 2U);
  const std::vector<Dims> shapes{{2, 8, 9, 64}, {2, 8, 9, 64}};
  const std::vector<Dims> strides{token_major(9), token_major(9)};
  const auto checked = p.g.check_overrides(std::vector<std::int64_t>{1, 4}, shapes, strides);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST(mentions(checked.error(), "paged cache take no execute-time overrides"));
}

BOOST_AUTO_TEST_CASE(the_page_tables_are_graph_inputs_with_their_uids) {
  Paged p;
  p.run();
  require_valid(p.g);
  BOOST_TEST(p.table_k->uid().value_or(-1) == 8);
  BOOST_TEST(p.table_v->uid().value_or(-1) == 9);
  BOOST_TEST(!p.table_k->is_virtual());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_paged_validation)

BOOST_AUTO_TEST_CASE(a_paged_cache_without_the_padding_mask_is_refused) {
  Paged p;
  p.run(SdpaAttributes().set_paged_attention(p.table_k, p.table_v, 33));
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "sdpa 'attn': a paged K/V cache needs the padding mask"));
}

BOOST_AUTO_TEST_CASE(a_max_seq_len_kv_of_zero_is_refused) {
  Paged p;
  p.run(p.attributes().set_paged_attention(p.table_k, p.table_v, 0));
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "max_seq_len_kv is 0"));
}

BOOST_AUTO_TEST_CASE(a_missing_page_table_is_refused) {
  Paged p;
  p.run(p.attributes().set_paged_attention(p.table_k, nullptr, 33));
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "sdpa 'attn': input page_table_v is null"));
}

BOOST_AUTO_TEST_CASE(a_page_table_of_another_type_is_refused) {
  Paged p;
  p.table_k->set_data_type(DataType::Int64);
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "page_table_k 'table_k' (uid 8) has data type Int64"));
  BOOST_TEST(mentions(error, "page tables are Int32"));
}

BOOST_AUTO_TEST_CASE(a_page_table_of_too_few_pages_is_refused_naming_the_count_expected) {
  Paged p;
  p.table_v->set_dim({2, 1, 4, 1});  // ceil(33 / 8) = 5
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "page_table_v 'table_v' (uid 9) has dims [2, 1, 4, 1], expected "
                      "[2, 1, 5, 1]: [b, 1, ceil(max_seq_len_kv 33 / block_size 8), 1]"));
}

BOOST_AUTO_TEST_CASE(a_max_seq_len_kv_beyond_the_pages_is_refused) {
  // 5 pages of 8 hold 40 positions: 41 needs a sixth page.
  Paged p;
  p.run(p.attributes().set_paged_attention(p.table_k, p.table_v, 41));
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "expected [2, 1, 6, 1]"));
}

BOOST_AUTO_TEST_CASE(a_max_seq_len_kv_near_int64_max_gives_its_page_count_without_overflow) {
  // Found by fuzzing: ceil(max_seq_len_kv / block_size) added block_size - 1 first (signed
  // overflow).
  constexpr std::int64_t longest = std::numeric_limits<std::int64_t>::max();
  Paged p;
  p.run(p.attributes().set_paged_attention(p.table_k, p.table_v, longest));
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "expected [2, 1, 1152921504606846976, 1]: [b, 1, ceil(max_seq_len_kv "
                      "9223372036854775807 / block_size 8), 1]"));
}

BOOST_AUTO_TEST_CASE(gathered_caches_of_more_bytes_than_int64_counts_are_refused) {
  // Found by fuzzing: the views' packed strides [b, h, max_seq_len_kv, d] overflowed. Pages of 8
  // for 2^58 positions: page tables of 2^55 pages (2^58 bytes) fit, the caches do not.
  constexpr std::int64_t longest = std::int64_t{1} << 58;
  Paged p;
  for (const TensorPtr& table : {p.table_k, p.table_v}) {
    table->set_dim({2, 1, longest / 8, 1});
  }
  p.run(p.attributes().set_paged_attention(p.table_k, p.table_v, longest));
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "sdpa 'attn': the cache gathered from 'K' (uid 2) is [b, h, max_seq_len_kv, "
                      "d]; with max_seq_len_kv 288230376151711744 its dims [2, 2, "
                      "288230376151711744, 64] have an element count"));
  BOOST_TEST(p.o->dim().empty());
}

BOOST_AUTO_TEST_CASE(a_page_table_of_another_batch_is_refused) {
  Paged p;
  p.table_k->set_dim({3, 1, 5, 1});
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "has dims [3, 1, 5, 1], expected [2, 1, 5, 1]"));
}

BOOST_AUTO_TEST_CASE(a_page_table_that_is_not_packed_is_refused) {
  Paged p;
  p.table_k->set_stride({10, 10, 2, 1});
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "has strides [10, 10, 2, 1]; page tables are packed [5, 5, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_container_of_rank_three_is_refused) {
  Paged p;
  p.v->set_dim({11, 2, 512}).set_stride({});
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "V container 'V' (uid 3) has dims [11, 2, 512]; a paged cache is "
                      "[num_blocks, h, block_size, d]"));
}

BOOST_AUTO_TEST_CASE(a_container_of_another_type_than_q_is_refused) {
  Paged p;
  p.k->set_data_type(DataType::Half);
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "K container 'K' (uid 2) has data type Half, Q has BFloat16"));
}

BOOST_AUTO_TEST_CASE(a_container_with_the_head_dim_not_innermost_is_refused) {
  Paged p;
  p.k->set_stride({1024, 512, 1, 8});
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the head dim (dim 3) must be innermost"));
}

BOOST_AUTO_TEST_CASE(a_ragged_container_is_refused) {
  Paged p;
  auto offsets = p.g.tensor(tensor("offsets", 10, {3, 1, 1, 1}).set_data_type(DataType::Int32));
  p.k->set_ragged_offset(offsets);
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "K container 'K' (uid 2) must be a graph input in device memory"));
}

BOOST_AUTO_TEST_CASE(container_heads_that_do_not_divide_q_heads_are_refused) {
  Paged p({.h_k = 3});
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "K has 3 heads, which does not divide Q's 8"));
}

BOOST_AUTO_TEST_CASE(a_container_head_dim_other_than_q_is_refused) {
  Paged p;
  p.k->set_dim({11, 2, 8, 128}).set_stride({});
  p.run();
  const Error error = validation_error(p.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "the head dim of K (dim 3) is 128, expected 64"));
}

BOOST_AUTO_TEST_CASE(execute_time_overrides_of_a_paged_graph_are_refused) {
  Paged p;
  p.g.set_override_shape_enabled(true);
  p.run();
  require_valid(p.g);
  const std::vector<std::int64_t> uids{1, 4};
  const std::vector<Dims> shapes{{2, 8, 9, 64}, {2, 8, 9, 64}};
  const std::vector<Dims> strides{dnngraph::packed_strides(shapes[0]),
                                  dnngraph::packed_strides(shapes[1])};
  const auto checked = p.g.check_overrides(uids, shapes, strides);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST(
      mentions(checked.error(), "K and V from a paged cache take no execute-time overrides"));
}

BOOST_AUTO_TEST_SUITE_END()
