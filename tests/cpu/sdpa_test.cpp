// Attention (sdpa) nodes without a GPU: sdpa() rejects each kind of bad input (ranks, data
// types, batch, head dims, grouped-query ratio, layouts, sequence length tensors, mask
// combinations) with its ErrorCode and a message naming the node, the tensor and the values;
// infers O and Stats; and lowers to the composite pattern (matmul, scale, masks, softmax steps,
// matmul) as finalized cuDNN descriptors, one operation per step.
#define BOOST_TEST_MODULE sdpa
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
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
  std::int64_t b = 2, h_q = 8, h_k = 8, h_v = 8, s_q = 17, s_kv = 33, d = 64, d_v = 64;
};

// A BFloat16 graph with Q, K, V (uids 1-3, packed BHSD) of `s`; run() adds the node and names
// O (uid 4) and Stats (uid 5).
struct Attention {
  Graph g;
  TensorPtr q, k, v, seq_q, seq_kv, o, stats;

  explicit Attention(const Shape& s = {}) {
    g.set_io_data_type(DataType::BFloat16);
    q = g.tensor(tensor("Q", 1, {s.b, s.h_q, s.s_q, s.d}));
    k = g.tensor(tensor("K", 2, {s.b, s.h_k, s.s_kv, s.d}));
    v = g.tensor(tensor("V", 3, {s.b, s.h_v, s.s_kv, s.d_v}));
  }
  void add_lengths(std::int64_t b) {
    seq_q = g.tensor(tensor("seq_q", 6, {b, 1, 1, 1}).set_data_type(DataType::Int32));
    seq_kv = g.tensor(tensor("seq_kv", 7, {b, 1, 1, 1}).set_data_type(DataType::Int32));
  }
  void run(SdpaAttributes attributes) {
    auto [out, st] = g.sdpa(q, k, v, attributes.set_name("attn"));
    o = out;
    stats = st;
    o->set_name("O").set_uid(4).set_output(true);
    if (stats) {
      stats->set_name("Stats").set_uid(5).set_output(true);
    }
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_lowering)

BOOST_AUTO_TEST_CASE(inference_lowers_to_two_matmuls_around_a_softmax) {
  Attention a;
  a.run(SdpaAttributes());
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  // Q K^T, max, minus max, exp, sum, log, log-sum-exp (virtual), divide, P V.
  BOOST_TEST(s.operation_count == 9U);
  BOOST_TEST(a.stats == nullptr);
  BOOST_TEST(a.o->dim() == (Dims{2, 8, 17, 64}));
  BOOST_TEST((a.o->data_type() == DataType::BFloat16));
  BOOST_TEST(a.o->stride() == (Dims{8704, 1088, 64, 1}));
}

BOOST_AUTO_TEST_CASE(training_with_scale_and_causal_mask_writes_float_stats) {
  Attention a;
  a.run(SdpaAttributes().set_attn_scale(0.125F).set_causal_mask(true).set_generate_stats(true));
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  // matmul, scale, row index, column index, compare, select, max, minus, exp, sum, log, stats
  // add, divide, matmul.
  BOOST_TEST(s.operation_count == 14U);
  BOOST_REQUIRE(a.stats != nullptr);
  BOOST_TEST(a.stats->dim() == (Dims{2, 8, 17, 1}));
  BOOST_TEST((a.stats->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(grouped_query_attention_with_padding_and_bottom_right_causal_lowers) {
  Attention a({.b = 3, .h_q = 8, .h_k = 2, .h_v = 2, .s_q = 33, .s_kv = 17, .d = 128, .d_v = 128});
  a.add_lengths(3);
  a.run(SdpaAttributes()
            .set_padding_mask(true)
            .set_seq_len_q(a.seq_q)
            .set_seq_len_kv(a.seq_kv)
            .set_causal_mask_bottom_right(true));
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.all_finalized);
  // matmul, 6 padding steps, 6 causal steps (with + seq_len_kv - seq_len_q), 4 softmax steps,
  // divide, matmul.
  BOOST_TEST(s.operation_count == 21U);  // + log and the virtual log-sum-exp
  BOOST_TEST(a.o->dim() == (Dims{3, 8, 33, 128}));
}

BOOST_AUTO_TEST_CASE(bottom_right_causal_without_padding_on_square_shapes_is_top_left) {
  Attention a({.s_q = 33, .s_kv = 33});
  a.run(SdpaAttributes().set_causal_mask_bottom_right(true));
  const LoweringSummary s = require_lowered(a.g);
  BOOST_TEST(s.operation_count == 13U);  // 9 + row, column, compare, select
}

BOOST_AUTO_TEST_CASE(bottom_right_causal_without_padding_on_other_shapes_asks_for_lengths) {
  Attention a({.s_q = 17, .s_kv = 33});
  a.run(SdpaAttributes().set_causal_mask_bottom_right(true));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "s_q 17 != s_kv 33 needs a padding mask"));
}

BOOST_AUTO_TEST_CASE(an_output_in_bshd_strides_is_kept) {
  Attention a;
  a.run(SdpaAttributes());
  a.o->set_stride({8704, 64, 512, 1});
  require_valid(a.g);
  BOOST_TEST(a.o->stride() == (Dims{8704, 64, 512, 1}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_validation)

BOOST_AUTO_TEST_CASE(a_q_of_rank_three_is_rejected) {
  Attention a;
  a.q->set_dim({2, 8, 17}).set_stride({});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "sdpa 'attn': Q 'Q' (uid 1) has dims [2, 8, 17]"));
  BOOST_TEST(mentions(error, "rank 4"));
}

BOOST_AUTO_TEST_CASE(float_inputs_are_rejected) {
  Attention a;
  a.q->set_data_type(DataType::Float);
  a.k->set_data_type(DataType::Float);
  a.v->set_data_type(DataType::Float);
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "has data type Float; attention takes Half or BFloat16"));
}

BOOST_AUTO_TEST_CASE(inputs_of_two_types_are_rejected) {
  Attention a;
  a.v->set_data_type(DataType::Half);
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "V 'V' (uid 3) has data type Half, but Q has BFloat16"));
}

BOOST_AUTO_TEST_CASE(a_batch_mismatch_is_rejected_naming_the_dims) {
  Attention a;
  a.k->set_dim({3, 8, 33, 64});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "the batch of K is 3, expected 2"));
}

BOOST_AUTO_TEST_CASE(a_head_dim_mismatch_between_q_and_k_is_rejected) {
  Attention a({.d = 64});
  a.k->set_dim({2, 8, 33, 128});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "the head dim of K (dim 3) is 128, expected 64"));
}

BOOST_AUTO_TEST_CASE(v_of_another_sequence_length_is_rejected) {
  Attention a;
  a.v->set_dim({2, 8, 32, 64});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "the sequence length of V (dim 2) is 32, expected 33"));
}

BOOST_AUTO_TEST_CASE(kv_heads_that_do_not_divide_q_heads_are_rejected) {
  Attention a({.h_q = 8, .h_k = 3, .h_v = 3});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "K has 3 heads, which does not divide Q's 8"));
}

BOOST_AUTO_TEST_CASE(a_head_dim_not_a_multiple_of_eight_is_rejected) {
  Attention a({.d = 100, .d_v = 64});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the head dim of Q and K is 100; cuDNN's fused attention engines"));
}

BOOST_AUTO_TEST_CASE(a_head_dim_above_256_is_rejected) {
  Attention a({.d = 64, .d_v = 264});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the head dim of V is 264"));
}

BOOST_AUTO_TEST_CASE(a_head_dim_that_is_not_innermost_is_rejected) {
  Attention a;
  a.q->set_stride({8704, 1088, 1, 17});
  a.run(SdpaAttributes());
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the head dim (dim 3) must be innermost (stride 1)"));
}

BOOST_AUTO_TEST_CASE(a_padding_mask_without_lengths_is_rejected) {
  Attention a;
  a.run(SdpaAttributes().set_padding_mask(true));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the padding mask needs both set_seq_len_q and set_seq_len_kv"));
}

BOOST_AUTO_TEST_CASE(lengths_without_a_padding_mask_are_rejected) {
  Attention a;
  a.add_lengths(2);
  a.run(SdpaAttributes().set_seq_len_q(a.seq_q).set_seq_len_kv(a.seq_kv));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "without set_padding_mask(true)"));
}

BOOST_AUTO_TEST_CASE(lengths_of_the_wrong_shape_are_rejected) {
  Attention a;
  a.add_lengths(3);
  a.run(SdpaAttributes().set_padding_mask(true).set_seq_len_q(a.seq_q).set_seq_len_kv(a.seq_kv));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(
      mentions(error, "seq_len_q 'seq_q' (uid 6) has dims [3, 1, 1, 1], expected [2, 1, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(lengths_of_another_type_are_rejected) {
  Attention a;
  a.add_lengths(2);
  a.seq_kv->set_data_type(DataType::Float);
  a.run(SdpaAttributes().set_padding_mask(true).set_seq_len_q(a.seq_q).set_seq_len_kv(a.seq_kv));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(
      error, "seq_len_kv 'seq_kv' (uid 7) has data type Float; sequence lengths are Int32"));
}

BOOST_AUTO_TEST_CASE(an_output_of_another_type_is_rejected) {
  Attention a;
  a.run(SdpaAttributes());
  a.o->set_data_type(DataType::Float);
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "O takes Q's type (BFloat16)"));
}

BOOST_AUTO_TEST_CASE(a_half_compute_type_is_rejected) {
  Attention a;
  a.run(SdpaAttributes().set_compute_data_type(DataType::Half));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "attention accumulates in Float"));
}

BOOST_AUTO_TEST_CASE(a_failed_validation_leaves_the_outputs_unsettled) {
  Attention a({.h_q = 8, .h_k = 3, .h_v = 3});
  a.run(SdpaAttributes());
  (void)validation_error(a.g);
  BOOST_TEST(a.o->dim().empty());
}

BOOST_AUTO_TEST_CASE(scores_of_more_bytes_than_int64_counts_are_refused_before_their_strides) {
  // Found by fuzzing: the scores' packed strides were computed first, a signed overflow.
  constexpr std::int64_t s = std::int64_t{1} << 40;
  Attention a({.b = 1, .h_q = 1, .h_k = 1, .h_v = 1, .s_q = s, .s_kv = s, .d = 8, .d_v = 8});
  // With dropout, whose mask has the scores' dims too.
  auto seed = a.g.tensor(tensor("seed", 8, {1, 1, 1, 1}).set_data_type(DataType::Int64));
  auto offset = a.g.tensor(tensor("offset", 9, {1, 1, 1, 1}).set_data_type(DataType::Int64));
  a.run(SdpaAttributes().set_dropout(0.1, seed, offset));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "sdpa 'attn': the scores of Q 'Q' (uid 1) and K 'K' (uid 2) are Float "
                      "[b, h_q, s_q, s_kv] = [1, 1, 1099511627776, 1099511627776], more bytes "
                      "than int64 counts"));
  BOOST_TEST(a.o->dim().empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_ragged)

namespace {

// A padded Attention (b 2) whose Q, K, V and O are ragged: token-major (BSHD) strides, offsets
// Int32 [3, 1, 1, 1] (uids 8 and 9 for the query and key sides).
struct Ragged {
  Attention a;
  TensorPtr q_offsets, kv_offsets;

  explicit Ragged(DataType offset_type = DataType::Int32, const Dims& offset_dims = {3, 1, 1, 1}) {
    for (const TensorPtr& t : {a.q, a.k, a.v}) {
      const Dims& d = t->dim();
      t->set_stride({d[2] * d[1] * d[3], d[3], d[1] * d[3], 1});
    }
    q_offsets = a.g.tensor(tensor("q_offsets", 8, offset_dims).set_data_type(offset_type));
    kv_offsets = a.g.tensor(tensor("kv_offsets", 9, offset_dims).set_data_type(offset_type));
    a.q->set_ragged_offset(q_offsets);
    a.k->set_ragged_offset(kv_offsets);
    a.v->set_ragged_offset(kv_offsets);
    a.add_lengths(2);
  }
  void run(bool padding = true) {
    SdpaAttributes attributes;
    if (padding) {
      attributes.set_padding_mask(true).set_seq_len_q(a.seq_q).set_seq_len_kv(a.seq_kv);
    }
    a.run(attributes);
    a.o->set_ragged_offset(q_offsets);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(ragged_q_k_v_and_o_lower_with_their_offsets) {
  Ragged r;
  r.run();
  const LoweringSummary s = require_lowered(r.a.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(r.q_offsets->uid().value_or(-1) == 8);
}

BOOST_AUTO_TEST_CASE(a_ragged_tensor_without_the_padding_mask_is_refused) {
  Ragged r;
  r.run(/*padding=*/false);
  const Error error = validation_error(r.a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "'Q' (uid 1) is ragged (packed variable-length), which needs the "
                      "padding mask"));
}

BOOST_AUTO_TEST_CASE(offsets_of_the_wrong_dims_are_refused) {
  Ragged r(DataType::Int32, {2, 1, 1, 1});
  r.run();
  const Error error = validation_error(r.a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "have dims [2, 1, 1, 1], expected [3, 1, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(offsets_of_a_float_type_are_refused) {
  Ragged r(DataType::Half);
  r.run();
  const Error error = validation_error(r.a.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "offsets are Int32 or Int64 (elements, not bytes)"));
}

BOOST_AUTO_TEST_CASE(offsets_that_no_longer_exist_are_refused_not_ignored) {
  Ragged r;
  r.a.q->set_ragged_offset(std::make_shared<TensorAttributes>(tensor("gone", 10, {3, 1, 1, 1})));
  BOOST_TEST(r.a.q->is_ragged());
  BOOST_TEST(r.a.q->ragged_offset() == nullptr);  // held weakly: the temporary is gone
  r.run();
  const Error error = validation_error(r.a.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "its ragged offsets tensor no longer exists"));
}

BOOST_AUTO_TEST_CASE(a_tensor_that_is_its_own_offsets_is_refused) {
  Ragged r;
  r.a.q->set_ragged_offset(r.a.q);  // no ownership cycle: held weakly
  r.run();
  const Error error = validation_error(r.a.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "must be a graph input in device memory"));
}

BOOST_AUTO_TEST_CASE(a_ragged_batch_of_int64_max_is_refused_without_overflowing) {
  // Found by fuzzing: the offsets' expected dims [b + 1, 1, 1, 1] overflowed (signed, UB).
  Ragged r;
  r.run();
  constexpr std::int64_t b = std::numeric_limits<std::int64_t>::max();
  r.a.g.tensor(tensor("huge", 20, {b, 1, 1, 1})
                   .set_data_type(DataType::Int8)
                   .set_ragged_offset(r.q_offsets));
  const Error error = validation_error(r.a.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "tensor 'huge' (uid 20) is ragged with a batch (dim 0) of "
                      "9223372036854775807; its offsets 'q_offsets' (uid 8) would need one row "
                      "more, which int64 cannot count"));
}

BOOST_AUTO_TEST_CASE(a_ragged_tensor_into_a_matmul_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto offsets = g.tensor(tensor("offsets", 3, {3, 1, 1, 1}).set_data_type(DataType::Int32));
  auto a = g.tensor(tensor("A", 1, {2, 1, 16, 16}).set_ragged_offset(offsets));
  auto b = g.tensor(tensor("B", 2, {2, 1, 16, 16}));
  g.matmul(a, b)->set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "only attention nodes (sdpa, sdpa_backward) take packed "
                      "variable-length tensors"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_overrides)

namespace {

// Packed strides of dims.
Dims packed(const Dims& dims) { return dnngraph::packed_strides(dims); }

// The overrides of a training graph at batch b, query length s_q, key length s_kv (heads 8,
// head dim 64 as built).
struct AttentionOverrides {
  std::vector<std::int64_t> uids{1, 2, 3, 4, 5};
  std::vector<Dims> shapes, strides;

  AttentionOverrides(std::int64_t b, std::int64_t s_q, std::int64_t s_kv) {
    shapes = {{b, 8, s_q, 64}, {b, 8, s_kv, 64}, {b, 8, s_kv, 64}, {b, 8, s_q, 64}, {b, 8, s_q, 1}};
    for (const Dims& d : shapes) {
      strides.push_back(packed(d));
    }
  }
  [[nodiscard]] dnngraph::Result<void> check(const Graph& g) const {
    return g.check_overrides(uids, shapes, strides);
  }
};

// The error of overriding tensor `index` of a training graph's overrides at (2, 5, 9) with
// `dims` (packed).
Error refusal_of_one_changed(std::size_t index, const Dims& dims) {
  Attention a;
  a.g.set_override_shape_enabled(true);
  a.run(SdpaAttributes().set_generate_stats(true));
  require_valid(a.g);
  AttentionOverrides o(2, 5, 9);
  o.shapes[index] = dims;
  o.strides[index] = packed(dims);
  const auto checked = o.check(a.g);
  BOOST_TEST_REQUIRE(!checked.has_value());
  return checked.error();
}

std::string message_of(const dnngraph::Result<void>& r) {
  return r ? std::string("accepted") : r.error().message;
}

}  // namespace

BOOST_AUTO_TEST_CASE(overrides_may_change_the_batch_and_both_sequence_lengths) {
  Attention a;
  a.g.set_override_shape_enabled(true);
  a.run(SdpaAttributes().set_generate_stats(true).set_causal_mask(true));
  require_valid(a.g);
  BOOST_TEST(a.g.check_overrides({}, {}, {}).has_value());
  for (const auto& [b, s_q, s_kv] : {std::tuple{2, 5, 9}, {1, 17, 33}, {3, 1, 64}, {2, 40, 8}}) {
    const auto checked = AttentionOverrides(b, s_q, s_kv).check(a.g);
    BOOST_TEST(checked.has_value(),
               "b " << b << " s_q " << s_q << " s_kv " << s_kv << ": " << message_of(checked));
  }
}

BOOST_AUTO_TEST_CASE(an_override_that_changes_the_heads_is_refused) {
  const Error error = refusal_of_one_changed(0, {2, 4, 5, 64});
  BOOST_TEST((error.code == ErrorCode::ShapeMismatch));
  BOOST_TEST(mentions(error, "sdpa 'attn': Q"));
  BOOST_TEST(mentions(error, "other heads or head dim than at build [2, 8, 17, 64]"));
}

BOOST_AUTO_TEST_CASE(keys_and_values_of_other_lengths_are_refused) {
  const Error error = refusal_of_one_changed(2, {2, 8, 10, 64});
  BOOST_TEST((error.code == ErrorCode::ShapeMismatch));
  BOOST_TEST(mentions(error, "has length 10, K"));
}

BOOST_AUTO_TEST_CASE(stats_that_keep_their_build_dims_under_a_new_length_are_refused) {
  Attention a;
  a.g.set_override_shape_enabled(true);
  a.run(SdpaAttributes().set_generate_stats(true));
  require_valid(a.g);
  AttentionOverrides o(2, 5, 9);
  o.uids.pop_back();
  o.shapes.pop_back();
  o.strides.pop_back();
  const auto checked = o.check(a.g);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST((checked.error().code == ErrorCode::ShapeMismatch));
  BOOST_TEST(mentions(checked.error(), "makes output 'Stats' (uid 5) [2, 8, 5, 1]"));
  BOOST_TEST(mentions(checked.error(), "keeps its build dims [2, 8, 17, 1]"));
}

BOOST_AUTO_TEST_CASE(a_new_batch_needs_the_length_tensors_overridden_too) {
  Attention a;
  a.g.set_override_shape_enabled(true);
  a.add_lengths(2);
  a.run(SdpaAttributes().set_padding_mask(true).set_seq_len_q(a.seq_q).set_seq_len_kv(a.seq_kv));
  require_valid(a.g);
  AttentionOverrides o(3, 5, 9);
  o.uids.pop_back();  // inference: no Stats
  o.shapes.pop_back();
  o.strides.pop_back();
  const auto refused = o.check(a.g);
  BOOST_TEST_REQUIRE(!refused.has_value());
  BOOST_TEST((refused.error().code == ErrorCode::ShapeMismatch));
  BOOST_TEST(mentions(refused.error(), "'seq_q' (uid 6) is [2, 1, 1, 1], expected [3, 1, 1, 1]"));
  o.uids.insert(o.uids.end(), {6, 7});
  o.shapes.insert(o.shapes.end(), 2, Dims{3, 1, 1, 1});
  o.strides.insert(o.strides.end(), 2, Dims{1, 1, 1, 1});
  const auto accepted = o.check(a.g);
  BOOST_TEST(accepted.has_value(), message_of(accepted));
}

// The ragged form cuDNN runs exact under overrides (SdpaNode::in_override_form): Q and O packed
// token after token with offsets, a padding mask, inference. Built at s_q 17; only Q's and O's
// sequence dim may change.
struct RaggedAttention : Attention {
  TensorPtr q_offsets;

  RaggedAttention() {
    g.set_override_shape_enabled(true);
    q_offsets = g.tensor(tensor("q_offsets", 8, {3, 1, 1, 1}).set_data_type(DataType::Int32));
    q->set_stride(token_major(17)).set_ragged_offset(q_offsets);
    add_lengths(2);
  }
  static Dims token_major(std::int64_t s) { return {s * 8 * 64, 64, std::int64_t{8} * 64, 1}; }
  void run_form(SdpaAttributes attributes) {
    run(attributes.set_padding_mask(true).set_seq_len_q(seq_q).set_seq_len_kv(seq_kv));
    o->set_stride(token_major(17)).set_ragged_offset(q_offsets);
  }
  // Q and O at s_q, the rest as built.
  [[nodiscard]] dnngraph::Result<void> check_at(std::int64_t s_q,
                                                std::vector<std::int64_t> uids = {1, 4},
                                                std::vector<Dims> shapes = {},
                                                std::vector<Dims> strides = {}) const {
    for (std::size_t i = shapes.size(); i < uids.size(); ++i) {
      shapes.push_back({2, 8, s_q, 64});
      strides.push_back(token_major(s_q));
    }
    return g.check_overrides(uids, shapes, strides);
  }
};

BOOST_AUTO_TEST_CASE(the_ragged_form_takes_any_query_length_and_nothing_else) {
  RaggedAttention a;
  a.run_form(SdpaAttributes().set_causal_mask(true));
  require_valid(a.g);
  for (const std::int64_t s_q : {2, 9, 17, 64, 200}) {
    const auto checked = a.check_at(s_q);
    BOOST_TEST(checked.has_value(), "s_q " << s_q << ": " << message_of(checked));
  }
  // One query token: cuDNN refuses it at execute; dnngraph before.
  const auto one = a.check_at(1);
  BOOST_TEST_REQUIRE(!one.has_value());
  BOOST_TEST(mentions(one.error(), "one query token is not served through overrides"));
  // K of another length.
  const auto k = a.check_at(
      9, {1, 4, 2}, {{2, 8, 9, 64}, {2, 8, 9, 64}, {2, 8, 20, 64}},
      {RaggedAttention::token_major(9), RaggedAttention::token_major(9), packed({2, 8, 20, 64})});
  BOOST_TEST_REQUIRE(!k.has_value());
  BOOST_TEST((k.error().code == ErrorCode::ShapeMismatch));
  BOOST_TEST(
      mentions(k.error(), "'K' (uid 2) is overridden to [2, 8, 20, 64], built [2, 8, 33, 64]"));
  BOOST_TEST(mentions(k.error(), "sdpa-override-shapes"));
  // Another batch (and its lengths) is refused too: the offsets hold one start per batch.
  const auto batch = a.check_at(9, {1, 4}, {{3, 8, 9, 64}, {3, 8, 9, 64}},
                                {RaggedAttention::token_major(9), RaggedAttention::token_major(9)});
  BOOST_TEST_REQUIRE(!batch.has_value());
  BOOST_TEST(mentions(batch.error(), "dim 0 may not change"));
  // Another token stride.
  const auto strides = a.check_at(9, {1, 4}, {{2, 8, 9, 64}, {2, 8, 9, 64}},
                                  {{std::int64_t{9} * 8 * 64 * 2, 64, std::int64_t{8} * 64 * 2, 1},
                                   RaggedAttention::token_major(9)});
  BOOST_TEST_REQUIRE(!strides.has_value());
  BOOST_TEST(mentions(strides.error(), "the head, token and element strides stay"));
  // The offsets themselves.
  const auto offsets =
      a.check_at(9, {1, 4, 8}, {{2, 8, 9, 64}, {2, 8, 9, 64}, {4, 1, 1, 1}},
                 {RaggedAttention::token_major(9), RaggedAttention::token_major(9), {1, 1, 1, 1}});
  BOOST_TEST_REQUIRE(!offsets.has_value());
  BOOST_TEST(mentions(offsets.error(), "ragged offsets keep their build dims"));
}

BOOST_AUTO_TEST_CASE(training_or_an_unpacked_output_leaves_the_ragged_form) {
  // Outside the form the general rules apply (and build() refuses the graph, known issue
  // sdpa-override-shapes): a new K length is then an override like any other.
  RaggedAttention a;
  a.run(SdpaAttributes()
            .set_generate_stats(true)
            .set_padding_mask(true)
            .set_seq_len_q(a.seq_q)
            .set_seq_len_kv(a.seq_kv));
  a.o->set_stride(RaggedAttention::token_major(17)).set_ragged_offset(a.q_offsets);
  require_valid(a.g);
  const auto checked =
      a.check_at(9, {1, 4, 5, 2, 3},
                 {{2, 8, 9, 64}, {2, 8, 9, 64}, {2, 8, 9, 1}, {2, 8, 20, 64}, {2, 8, 20, 64}},
                 {RaggedAttention::token_major(9), RaggedAttention::token_major(9),
                  packed({2, 8, 9, 1}), packed({2, 8, 20, 64}), packed({2, 8, 20, 64})});
  BOOST_TEST(checked.has_value(), message_of(checked));
}

BOOST_AUTO_TEST_SUITE_END()
