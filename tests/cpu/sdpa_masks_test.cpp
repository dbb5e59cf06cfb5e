// The attention score modifiers without a GPU: an additive bias (sdpa and sdpa_backward, with its
// gradient dBias from the backward), ALiBi, and a sliding window on top of the causal mask; the
// standard ALiBi slopes. Each lowers to
// the steps cudnn-frontend's composite pattern has (the bias an ADD after the scale, dBias a
// REDUCTION ADD of dS before the scale, the window GEN_INDEX x2, ADD, CMP_GT, BINARY_SELECT after
// the causal mask), graphs without them lower as before, and every refusal names the node, the
// tensor and the values.
#define BOOST_TEST_MODULE sdpa_masks
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using namespace dnngraph;
using namespace dnngraph::test;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;
using Names = std::vector<std::string>;

namespace {

struct Shape {
  std::int64_t b = 2, h = 4, s_q = 64, s_kv = 128, d = 64;
};

// A BFloat16 graph with Q, K, V (uids 1-3) and, where bias_dims is not empty, the bias (uid 8).
struct Inputs {
  Graph g;
  Shape s;
  TensorPtr q, k, v, bias;

  explicit Inputs(const Dims& bias_dims = {}, const Shape& shape = {},
                  DataType bias_type = DataType::BFloat16)
      : s(shape) {
    g.set_io_data_type(DataType::BFloat16);
    q = g.tensor(tensor("Q", 1, {s.b, s.h, s.s_q, s.d}));
    k = g.tensor(tensor("K", 2, {s.b, s.h, s.s_kv, s.d}));
    v = g.tensor(tensor("V", 3, {s.b, s.h, s.s_kv, s.d}));
    if (!bias_dims.empty()) {
      bias = g.tensor(tensor("bias", 8, bias_dims).set_data_type(bias_type));
    }
  }
  // O (uid 4) and, in training, Stats (uid 5) of the forward.
  TensorPtr forward(SdpaAttributes attributes) {
    auto [o, stats] = g.sdpa(q, k, v, attributes.set_name("attn"));
    o->set_uid(4).set_output(true);
    if (stats) {
      stats->set_uid(5).set_output(true);
    }
    return o;
  }
  // dQ, dK, dV, D (uids 10-13) of the backward from O, dO (uids 4, 5) and Stats (uid 6); returns
  // dQ.
  TensorPtr backward(SdpaBackwardAttributes attributes) {
    auto o = g.tensor(tensor("O", 4, {s.b, s.h, s.s_q, s.d}));
    auto d_o = g.tensor(tensor("dO", 5, {s.b, s.h, s.s_q, s.d}));
    auto stats = g.tensor(tensor("Stats", 6, {s.b, s.h, s.s_q, 1}).set_data_type(DataType::Float));
    auto outputs = g.sdpa_backward(q, k, v, o, d_o, stats, attributes.set_name("bwd"));
    std::int64_t uid = 10;
    for (const TensorPtr& t : outputs) {
      t->set_uid(uid++).set_output(true);
    }
    return outputs[0];
  }
};

// From cuDNN 9.6 dQ = dS K goes through a Float accumulator and a copy: one operation more.
std::size_t accumulator_copy() {
  return dnngraph::cudnn_offers(dnngraph::CudnnCapability::SdpaBackwardAccumulator) ? 1U : 0U;
}

Error validate_error(Graph& g) {
  auto ok = g.validate();
  BOOST_TEST_REQUIRE(!ok.has_value());
  BOOST_TEST_MESSAGE(ok.error().message);
  return ok.error();
}

bool says(const Error& e, const std::string& text) {
  return e.message.find(text) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(bias)

BOOST_AUTO_TEST_CASE(a_bias_is_one_addition_after_the_scale) {
  Inputs in({1, 4, 64, 128});
  in.forward(SdpaAttributes().set_attn_scale(0.125F).set_bias(in.bias));
  const LoweringSummary s = require_lowered(in.g);
  BOOST_TEST(s.all_finalized);
  // Q K^T, scale, bias, then the softmax's 7 and P V: one operation more than without a bias.
  BOOST_TEST(s.operation_count == 11U);
  const Names head(s.backend_operations.begin(), s.backend_operations.begin() + 3);
  BOOST_TEST(head == (Names{"OperationMatmul", "OperationPointwise", "OperationPointwise"}));
}

BOOST_AUTO_TEST_CASE(every_broadcast_shape_of_the_bias_is_taken) {
  for (const Dims& dims :
       {Dims{2, 4, 64, 128}, Dims{1, 4, 64, 128}, Dims{2, 1, 64, 128}, Dims{1, 1, 64, 128}}) {
    Inputs in(dims);
    in.forward(SdpaAttributes().set_bias(in.bias).set_causal_mask(true));
    const LoweringSummary s = require_lowered(in.g);
    BOOST_TEST(s.operation_count == 9U + 1U + 4U, dnngraph::to_string(dims));
  }
}

BOOST_AUTO_TEST_CASE(a_bias_of_another_key_length_is_refused_naming_the_dims) {
  Inputs in({1, 4, 64, 64});
  in.forward(SdpaAttributes().set_bias(in.bias));
  const Error e = validate_error(in.g);
  BOOST_TEST((e.code == ErrorCode::ShapeMismatch));
  BOOST_TEST(says(e,
                  "bias 'bias' (uid 8) has dims [1, 4, 64, 64], expected [2 or 1, 4 or 1, 64, "
                  "128]"));
}

BOOST_AUTO_TEST_CASE(a_bias_of_rank_three_is_refused) {
  Inputs in({4, 64, 128});
  in.forward(SdpaAttributes().set_bias(in.bias));
  BOOST_TEST((validate_error(in.g).code == ErrorCode::ShapeMismatch));
}

BOOST_AUTO_TEST_CASE(a_float_bias_on_bfloat16_inputs_is_refused) {
  Inputs in({1, 4, 64, 128}, {}, DataType::Float);
  in.forward(SdpaAttributes().set_bias(in.bias));
  const Error e = validate_error(in.g);
  BOOST_TEST((e.code == ErrorCode::InvalidAttribute));
  BOOST_TEST(says(e, "the bias takes Q's type (BFloat16)"));
}

BOOST_AUTO_TEST_CASE(a_bias_with_a_bottom_right_causal_mask_is_refused) {
  Inputs in({1, 4, 128, 128}, {.s_q = 128});
  in.forward(SdpaAttributes().set_bias(in.bias).set_causal_mask_bottom_right(true));
  BOOST_TEST(says(validate_error(in.g), "bottom-right causal mask"));
}

BOOST_AUTO_TEST_CASE(the_backward_adds_the_bias_to_the_recomputed_scores) {
  Inputs in({1, 4, 64, 128});
  in.backward(SdpaBackwardAttributes().set_attn_scale(0.125F).set_bias(in.bias));
  const LoweringSummary s = require_lowered(in.g);
  BOOST_TEST(s.all_finalized);
  // 17 with the scale (sdpa_backward_test) and the bias's addition.
  BOOST_TEST(s.operation_count == 18U + accumulator_copy());
}

BOOST_AUTO_TEST_CASE(dbias_is_a_reduction_of_ds_into_the_bias_shape) {
  Inputs in({1, 4, 64, 128});
  const TensorPtr dq = in.backward(
      SdpaBackwardAttributes().set_attn_scale(0.125F).set_bias(in.bias).set_dbias_output(true));
  const TensorPtr dbias = in.g.dbias(dq);
  BOOST_TEST_REQUIRE(dbias != nullptr);
  dbias->set_uid(14).set_output(true);
  const LoweringSummary s = require_lowered(in.g);
  // dS K writes dQ itself with dBias, on every cuDNN: no Float accumulator and no copy (cuDNN
  // leaves dBias unwritten beside the accumulator).
  BOOST_TEST(s.operation_count == 19U);
  // rowsum(dO * O) and dBias.
  BOOST_TEST(std::ranges::count(s.backend_operations, "OperationReduction") == 2);
  BOOST_TEST(dbias->dim() == (Dims{1, 4, 64, 128}));
  BOOST_TEST(dbias->stride() == dnngraph::packed_strides({1, 4, 64, 128}));
  BOOST_TEST((dbias->data_type() == DataType::BFloat16));
  BOOST_TEST(in.g.dbias(in.q) == nullptr);  // not a node's output
}

BOOST_AUTO_TEST_CASE(without_dbias_output_there_is_no_dbias_to_find) {
  Inputs in({1, 4, 64, 128});
  const TensorPtr dq = in.backward(SdpaBackwardAttributes().set_bias(in.bias));
  BOOST_TEST(in.g.dbias(dq) == nullptr);
}

BOOST_AUTO_TEST_CASE(dbias_of_a_bias_with_a_batch_is_refused_naming_the_shape_served) {
  for (const Dims& dims : {Dims{2, 4, 64, 128}, Dims{1, 1, 64, 128}, Dims{2, 1, 64, 128}}) {
    Inputs in(dims);
    const TensorPtr dq =
        in.backward(SdpaBackwardAttributes().set_bias(in.bias).set_dbias_output(true));
    in.g.dbias(dq)->set_uid(14).set_output(true);
    const Error e = validate_error(in.g);
    BOOST_TEST((e.code == ErrorCode::ShapeMismatch));
    BOOST_TEST(says(e, "dBias only for a bias of [1, h_q, s_q, s_kv] = [1, 4, 64, 128]"));
  }
}

BOOST_AUTO_TEST_CASE(dbias_without_a_bias_is_refused) {
  Inputs in;
  const TensorPtr dq = in.backward(SdpaBackwardAttributes().set_dbias_output(true));
  in.g.dbias(dq)->set_uid(14).set_output(true);
  BOOST_TEST(says(validate_error(in.g), "no bias is set"));
}

BOOST_AUTO_TEST_CASE(dbias_in_float_is_refused) {
  Inputs in({1, 4, 64, 128});
  const TensorPtr dq =
      in.backward(SdpaBackwardAttributes().set_bias(in.bias).set_dbias_output(true));
  in.g.dbias(dq)->set_uid(14).set_output(true).set_data_type(DataType::Float);
  const Error e = validate_error(in.g);
  BOOST_TEST((e.code == ErrorCode::InvalidAttribute));
  BOOST_TEST(says(e, "dBias takes Q's type (BFloat16)"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(alibi)

// Slopes Float [1, h, 1, 1] (uid 9) on in's graph.
TensorPtr slopes(Inputs& in, std::int64_t heads = 4, DataType type = DataType::Float) {
  return in.g.tensor(tensor("slopes", 9, {1, heads, 1, 1}).set_data_type(type));
}

BOOST_AUTO_TEST_CASE(the_slopes_of_a_power_of_two_of_heads_halve_geometrically) {
  // 8 heads: 2^-1, 2^-2, ..., 2^-8 (ratio 2^(-8/8)).
  const std::vector<float> s = alibi_slopes(8);
  BOOST_TEST_REQUIRE(s.size() == 8U);
  for (std::size_t h = 0; h < s.size(); ++h) {
    BOOST_TEST(s[h] == std::ldexp(1.0F, -static_cast<int>(h + 1)));
  }
}

BOOST_AUTO_TEST_CASE(other_head_counts_interleave_the_next_power_of_two) {
  // 12 heads: the 8 of 8 heads, then 2^(-1/2), 2^(-3/2), 2^(-5/2), 2^(-7/2) (the odd slopes of 16).
  const std::vector<float> s = alibi_slopes(12);
  BOOST_TEST_REQUIRE(s.size() == 12U);
  BOOST_TEST(s[7] == 1.0F / 256);
  for (std::size_t k = 0; k < 4; ++k) {
    const double expected = std::pow(2.0, -0.5 - static_cast<double>(k));
    BOOST_TEST(s[8 + k] == static_cast<float>(expected));
  }
  BOOST_TEST(alibi_slopes(1) == (std::vector<float>{1.0F / 256}));
  BOOST_TEST(alibi_slopes(0).empty());
}

BOOST_AUTO_TEST_CASE(alibi_adds_five_steps_after_the_bias) {
  Inputs in({1, 4, 64, 128});
  in.forward(SdpaAttributes()
                 .set_bias(in.bias)
                 .set_causal_mask(true)
                 .set_alibi_mask(true)
                 .set_alibi_slopes(slopes(in)));
  const LoweringSummary s = require_lowered(in.g);
  BOOST_TEST(s.all_finalized);
  // 9 + bias 1 + ALiBi (indices, column - row, times slope, add) 5 + causal 4.
  BOOST_TEST(s.operation_count == 9U + 1U + 5U + 4U);
}

BOOST_AUTO_TEST_CASE(the_backward_adds_alibi_too) {
  Inputs in;
  in.backward(SdpaBackwardAttributes().set_causal_mask(true).set_alibi_mask(true).set_alibi_slopes(
      slopes(in)));
  BOOST_TEST(require_lowered(in.g).operation_count == 15U + 5U + 4U + accumulator_copy());
}

BOOST_AUTO_TEST_CASE(alibi_without_its_slopes_names_the_helper) {
  Inputs in;
  in.forward(SdpaAttributes().set_causal_mask(true).set_alibi_mask(true));
  BOOST_TEST(says(validate_error(in.g), "holding alibi_slopes(4)"));
}

BOOST_AUTO_TEST_CASE(alibi_without_the_top_left_causal_mask_is_refused) {
  Inputs in;
  in.forward(SdpaAttributes().set_alibi_mask(true).set_alibi_slopes(slopes(in)));
  BOOST_TEST(says(validate_error(in.g), "ALiBi needs the top-left causal mask"));
}

BOOST_AUTO_TEST_CASE(slopes_of_other_heads_or_type_are_refused) {
  for (const auto& [heads, type] : {std::pair{std::int64_t{1}, DataType::Float},
                                    std::pair{std::int64_t{4}, DataType::BFloat16}}) {
    Inputs in;
    in.forward(SdpaAttributes().set_causal_mask(true).set_alibi_mask(true).set_alibi_slopes(
        slopes(in, heads, type)));
    const Error e = validate_error(in.g);
    BOOST_TEST((e.code == ErrorCode::ShapeMismatch));
    BOOST_TEST(says(e, "expected Float [1, 4, 1, 1] packed"));
  }
}

BOOST_AUTO_TEST_CASE(slopes_without_the_alibi_mask_are_refused) {
  Inputs in;
  in.forward(SdpaAttributes().set_causal_mask(true).set_alibi_slopes(slopes(in)));
  BOOST_TEST(says(validate_error(in.g), "set_alibi_mask(true) is not"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sliding_window)

BOOST_AUTO_TEST_CASE(a_window_adds_five_steps_after_the_causal_mask) {
  Inputs in;
  in.forward(SdpaAttributes().set_causal_mask(true).set_sliding_window_length(16));
  const LoweringSummary s = require_lowered(in.g);
  BOOST_TEST(s.all_finalized);
  // 9 + causal 4 + window: row and column indices, column + length, compare, select.
  BOOST_TEST(s.operation_count == 9U + 4U + 5U);
}

BOOST_AUTO_TEST_CASE(the_backward_masks_the_window_too) {
  Inputs in;
  in.backward(SdpaBackwardAttributes().set_causal_mask(true).set_sliding_window_length(16));
  const LoweringSummary s = require_lowered(in.g);
  // 15 without scale or mask (sdpa_backward_test) + causal 4 + window 5.
  BOOST_TEST(s.operation_count == 15U + 4U + 5U + accumulator_copy());
}

BOOST_AUTO_TEST_CASE(a_window_with_a_bias_and_dropout_lowers_where_cudnn_serves_it) {
  Inputs in({1, 4, 64, 128});
  auto seed = in.g.tensor(tensor("seed", 20, {1, 1, 1, 1}).set_data_type(DataType::Int64));
  auto offset = in.g.tensor(tensor("offset", 21, {1, 1, 1, 1}).set_data_type(DataType::Int64));
  in.forward(SdpaAttributes()
                 .set_bias(in.bias)
                 .set_causal_mask(true)
                 .set_sliding_window_length(8)
                 .set_dropout(0.1, seed, offset));
  if (dnngraph::cudnn_offers(dnngraph::CudnnCapability::SdpaSlidingWindowCombined)) {
    BOOST_TEST(require_lowered(in.g).operation_count == 9U + 1U + 4U + 5U + 3U);
  } else {
    BOOST_TEST((validate_error(in.g).code == ErrorCode::VersionTooOld));
  }
}

BOOST_AUTO_TEST_CASE(a_window_without_a_causal_mask_is_refused) {
  Inputs in;
  in.forward(SdpaAttributes().set_sliding_window_length(16));
  const Error e = validate_error(in.g);
  BOOST_TEST((e.code == ErrorCode::InvalidAttribute));
  BOOST_TEST(says(e, "no causal mask is set"));
}

BOOST_AUTO_TEST_CASE(a_window_with_a_bottom_right_causal_mask_is_refused) {
  Inputs in({}, {.s_q = 128});
  in.forward(SdpaAttributes().set_causal_mask_bottom_right(true).set_sliding_window_length(16));
  BOOST_TEST(says(validate_error(in.g), "the bottom-right alignment is not offered"));
}

BOOST_AUTO_TEST_CASE(a_window_of_zero_keys_is_refused) {
  Inputs in;
  in.forward(SdpaAttributes().set_causal_mask(true).set_sliding_window_length(0));
  BOOST_TEST(says(validate_error(in.g), "sliding window length 0"));
}

BOOST_AUTO_TEST_CASE(a_window_with_more_queries_than_keys_needs_padding) {
  Inputs in({}, {.s_q = 130});
  in.forward(SdpaAttributes().set_causal_mask(true).set_sliding_window_length(16));
  BOOST_TEST(says(validate_error(in.g), "needs s_q <= s_kv; s_q 130, s_kv 128"));
}

BOOST_AUTO_TEST_SUITE_END()
