// Attention backward (sdpa_backward) without a GPU: the node rejects bad forward tensors (O, dO,
// Stats), bad gradients and the shapes cuDNN refuses, with its ErrorCode and a message naming the
// node, the tensor and the values; infers dQ, dK, dV and D; and lowers to cudnn-frontend's
// composite backward pattern as finalized cuDNN descriptors, one operation per step (the counts
// below list the steps).
#define BOOST_TEST_MODULE sdpa_backward
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <ostream>
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
using dnngraph::SdpaBackwardAttributes;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

struct Shape {
  std::int64_t b = 2, h_q = 8, h_k = 8, s_q = 17, s_kv = 33, d = 64;
};

// A Half graph with Q, K, V, O, dO (uids 1-5, packed BHSD) and Stats (uid 6, Float) of `s`;
// run() adds the node and names dQ, dK, dV, D (uids 10-13).
struct Backward {
  Graph g;
  TensorPtr q, k, v, o, d_o, stats, seq_q, seq_kv, dq, dk, dv, d_sum;

  explicit Backward(const Shape& s = {}) {
    g.set_io_data_type(DataType::Half);
    q = g.tensor(tensor("Q", 1, {s.b, s.h_q, s.s_q, s.d}));
    k = g.tensor(tensor("K", 2, {s.b, s.h_k, s.s_kv, s.d}));
    v = g.tensor(tensor("V", 3, {s.b, s.h_k, s.s_kv, s.d}));
    o = g.tensor(tensor("O", 4, {s.b, s.h_q, s.s_q, s.d}));
    d_o = g.tensor(tensor("dO", 5, {s.b, s.h_q, s.s_q, s.d}));
    stats = g.tensor(tensor("Stats", 6, {s.b, s.h_q, s.s_q, 1}).set_data_type(DataType::Float));
  }
  void add_lengths(std::int64_t b) {
    seq_q = g.tensor(tensor("seq_q", 7, {b, 1, 1, 1}).set_data_type(DataType::Int32));
    seq_kv = g.tensor(tensor("seq_kv", 8, {b, 1, 1, 1}).set_data_type(DataType::Int32));
  }
  void run(SdpaBackwardAttributes attributes) {
    auto [q_grad, k_grad, v_grad, d] =
        g.sdpa_backward(q, k, v, o, d_o, stats, attributes.set_name("bwd"));
    dq = q_grad;
    dk = k_grad;
    dv = v_grad;
    d_sum = d;
    dq->set_name("dQ").set_uid(10).set_output(true);
    dk->set_name("dK").set_uid(11).set_output(true);
    dv->set_name("dV").set_uid(12).set_output(true);
    d_sum->set_name("D").set_uid(13).set_output(true);
  }
};

// From cuDNN 9.6 dQ = dS K is accumulated in a Float tensor and copied to dQ: one operation
// more (the loaded library decides, as it decides the engines).
std::size_t accumulator_copy() {
  return dnngraph::cudnn_offers(dnngraph::CudnnCapability::SdpaBackwardAccumulator) ? 1U : 0U;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_backward_lowering)

BOOST_AUTO_TEST_CASE(without_scale_or_mask_lowers_to_fifteen_operations) {
  Backward b;
  b.run(SdpaBackwardAttributes());
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  // dO * O, row sum, D (times 1); Q K^T, minus Stats, exp (P); P^T (reshape), P^T dO (dV);
  // dO V^T, minus D, times P (dS); dS^T (reshape), dS^T Q (dK); K (reshape of K^T), dS K (dQ).
  BOOST_TEST(s.operation_count == 15U + accumulator_copy());
  BOOST_TEST(s.operations == (std::vector<std::string>{"sdpa_backward 'bwd'"}));
  BOOST_TEST(b.dq->dim() == (Dims{2, 8, 17, 64}));
  BOOST_TEST(b.dk->dim() == (Dims{2, 8, 33, 64}));
  BOOST_TEST(b.dv->dim() == (Dims{2, 8, 33, 64}));
  BOOST_TEST((b.dq->data_type() == DataType::Half));
  BOOST_TEST(b.d_sum->dim() == (Dims{2, 8, 17, 1}));
  BOOST_TEST((b.d_sum->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(scale_and_causal_mask_add_their_steps) {
  Backward b({.s_q = 33, .s_kv = 33});
  b.run(SdpaBackwardAttributes().set_attn_scale(0.125F).set_causal_mask(true));
  const LoweringSummary s = require_lowered(b.g);
  // 15 + scale of S and of dS + row index, column index, compare, select.
  BOOST_TEST(s.operation_count == 21U + accumulator_copy());
}

BOOST_AUTO_TEST_CASE(grouped_query_padding_and_bottom_right_sum_the_head_groups) {
  Backward b({.b = 3, .h_q = 8, .h_k = 2, .s_q = 33, .s_kv = 17, .d = 128});
  b.add_lengths(3);
  b.run(SdpaBackwardAttributes()
            .set_attn_scale(0.088F)
            .set_padding_mask(true)
            .set_seq_len_q(b.seq_q)
            .set_seq_len_kv(b.seq_kv)
            .set_causal_mask_bottom_right(true));
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  // 17 (with scale) + 6 padding steps + 6 causal steps (with + seq_len_kv - seq_len_q) + the
  // sums of dK and dV over each group of 4 query heads.
  BOOST_TEST(s.operation_count == 31U + accumulator_copy());
  BOOST_TEST(b.dk->dim() == (Dims{3, 2, 17, 128}));
  BOOST_TEST(b.dv->dim() == (Dims{3, 2, 17, 128}));
  BOOST_TEST(b.dq->dim() == (Dims{3, 8, 33, 128}));
}

BOOST_AUTO_TEST_CASE(gradients_in_bshd_strides_are_kept) {
  Backward b;
  b.run(SdpaBackwardAttributes());
  b.dq->set_stride({8704, 64, 512, 1});
  require_valid(b.g);
  BOOST_TEST(b.dq->stride() == (Dims{8704, 64, 512, 1}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_backward_validation)

BOOST_AUTO_TEST_CASE(o_of_other_dims_is_rejected) {
  Backward b;
  b.o->set_dim({2, 8, 33, 64}).set_stride({});
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "sdpa_backward 'bwd': O 'O' (uid 4) has dims [2, 8, 33, 64], "
                      "expected [2, 8, 17, 64]"));
}

BOOST_AUTO_TEST_CASE(d_o_of_another_type_is_rejected) {
  Backward b;
  b.d_o->set_data_type(DataType::BFloat16);
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "dO 'dO' (uid 5) has data type BFloat16"));
  BOOST_TEST(mentions(error, "it takes Q's type (Half)"));
}

BOOST_AUTO_TEST_CASE(stats_in_half_are_rejected) {
  Backward b;
  b.stats->set_data_type(DataType::Half);
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "Stats 'Stats' (uid 6) has data type Half; the statistics are Float"));
}

BOOST_AUTO_TEST_CASE(stats_of_other_dims_are_rejected) {
  Backward b;
  b.stats->set_dim({2, 8, 17, 2}).set_stride({});
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "has dims [2, 8, 17, 2], expected [2, 8, 17, 1]"));
}

BOOST_AUTO_TEST_CASE(single_query_and_key_is_rejected) {
  Backward b({.s_q = 1, .s_kv = 1});
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "s_q = s_kv = 1"));
}

BOOST_AUTO_TEST_CASE(the_forward_checks_apply_to_q_k_v) {
  Backward b({.h_q = 8, .h_k = 3});
  b.o->set_dim({2, 8, 17, 64});
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "sdpa_backward 'bwd': K has 3 heads, which does not divide Q's 8"));
}

BOOST_AUTO_TEST_CASE(the_forward_mask_checks_apply) {
  Backward b;
  b.run(SdpaBackwardAttributes().set_padding_mask(true));
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the padding mask needs both set_seq_len_q and set_seq_len_kv"));
}

BOOST_AUTO_TEST_CASE(bottom_right_without_padding_on_other_shapes_asks_for_lengths) {
  Backward b({.s_q = 17, .s_kv = 33});
  b.run(SdpaBackwardAttributes().set_causal_mask_bottom_right(true));
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "s_q 17 != s_kv 33 needs a padding mask"));
}

BOOST_AUTO_TEST_CASE(a_gradient_of_another_type_is_rejected) {
  Backward b;
  b.run(SdpaBackwardAttributes());
  b.dk->set_data_type(DataType::Float);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "dK 'dK' (uid 11) has data type Float"));
}

BOOST_AUTO_TEST_CASE(d_in_half_is_rejected) {
  Backward b;
  b.run(SdpaBackwardAttributes());
  b.d_sum->set_data_type(DataType::Half);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "D 'D' (uid 13) has data type Half; rowsum(dO * O) is Float"));
}

BOOST_AUTO_TEST_CASE(a_null_input_is_a_foreign_tensor_error) {
  Backward b;
  b.d_o = nullptr;
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "sdpa_backward 'bwd': input dO is null"));
}

BOOST_AUTO_TEST_CASE(scores_of_more_bytes_than_int64_counts_are_refused_before_their_strides) {
  // Found by fuzzing: the scores' packed strides were computed first, a signed overflow.
  constexpr std::int64_t s = std::int64_t{1} << 40;
  Backward b({.b = 1, .h_q = 1, .h_k = 1, .s_q = s, .s_kv = s, .d = 8});
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "sdpa_backward 'bwd': the scores of Q 'Q' (uid 1) and K 'K' (uid 2) are "
                      "Float [b, h_q, s_q, s_kv] = [1, 1, 1099511627776, 1099511627776]"));
  BOOST_TEST(b.dq->dim().empty());
}

BOOST_AUTO_TEST_CASE(per_head_gradients_of_more_elements_than_int64_counts_are_refused) {
  // Grouped-query: dK and dV per query head are [b, h_q, s_kv, d], larger than the scores here
  // (s_q 1): 2^45 heads of 1024 x 256.
  Backward b({.b = 1, .h_q = std::int64_t{1} << 45, .h_k = 1, .s_q = 1, .s_kv = 1024, .d = 256});
  b.run(SdpaBackwardAttributes());
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "sdpa_backward 'bwd': the gradient of 'K' (uid 2) per query head is "
                      "[b, h_q, s_kv, d]; its dims [1, 35184372088832, 1024, 256] have an element "
                      "count"));
}

BOOST_AUTO_TEST_SUITE_END()
