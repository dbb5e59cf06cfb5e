// Dropout in the attention nodes without a GPU: set_dropout(p, seed, offset) on sdpa and
// sdpa_backward lowers to an rng operation and its multiplications where cudnn-frontend 1.32's
// composite pattern has them (forward: after the softmax, before P V; backward: the mask drawn
// first, then into P before dV and into dP and dS); a probability of 0 is no dropout; the mask can
// be an output (Graph::dropout_mask); and the checks refuse a probability outside [0, 1), a bad
// key, and the combinations cuDNN does not serve, each with a message naming the node and values.
#define BOOST_TEST_MODULE sdpa_dropout
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
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
using dnngraph::SdpaAttributes;
using dnngraph::SdpaBackwardAttributes;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;
using Names = std::vector<std::string>;

using namespace dnngraph::test;

namespace {

struct Shape {
  std::int64_t b = 2, h = 8, s_q = 17, s_kv = 33, d = 64;
};

// A BFloat16 graph with Q, K, V (uids 1-3), and the dropout key: seed (uid 8) and offset (uid 9),
// one value each (none for a graph that reads none: an unread input is refused).
struct Keyed {
  Graph g;
  Shape s;
  TensorPtr q, k, v, seed, offset;

  explicit Keyed(const Shape& shape = {}, DataType key_type = DataType::Int64,
                 const Dims& key_dims = {1, 1, 1, 1}, bool keyed = true)
      : s(shape) {
    g.set_io_data_type(DataType::BFloat16);
    q = g.tensor(tensor("Q", 1, {s.b, s.h, s.s_q, s.d}));
    k = g.tensor(tensor("K", 2, {s.b, s.h, s.s_kv, s.d}));
    v = g.tensor(tensor("V", 3, {s.b, s.h, s.s_kv, s.d}));
    if (keyed) {
      seed = g.tensor(tensor("seed", 8, key_dims).set_data_type(key_type));
      offset = g.tensor(tensor("offset", 9, key_dims).set_data_type(key_type));
    }
  }
  [[nodiscard]] Dims score_dims() const { return {s.b, s.h, s.s_q, s.s_kv}; }
};

// The forward on k: O (uid 4) and, with stats, Stats (uid 5) marked as outputs.
struct Forward {
  Keyed& k;
  TensorPtr o, stats;

  Forward(Keyed& keyed, SdpaAttributes attributes) : k(keyed) {
    auto [out, st] = k.g.sdpa(k.q, k.k, k.v, attributes.set_name("attn"));
    o = out;
    stats = st;
    o->set_name("O").set_uid(4).set_output(true);
    if (stats) {
      stats->set_name("Stats").set_uid(5).set_output(true);
    }
  }
};

// The backward on k: O, dO (uids 4, 5), Stats (uid 6) as inputs; dQ, dK, dV, D (uids 10-13).
struct Backward {
  Keyed& k;
  TensorPtr dq, dk, dv, d_sum;

  Backward(Keyed& keyed, SdpaBackwardAttributes attributes) : k(keyed) {
    const Shape& s = k.s;
    auto o = k.g.tensor(tensor("O", 4, {s.b, s.h, s.s_q, s.d}));
    auto d_o = k.g.tensor(tensor("dO", 5, {s.b, s.h, s.s_q, s.d}));
    auto stats =
        k.g.tensor(tensor("Stats", 6, {s.b, s.h, s.s_q, 1}).set_data_type(DataType::Float));
    auto [q_grad, k_grad, v_grad, d] =
        k.g.sdpa_backward(k.q, k.k, k.v, o, d_o, stats, attributes.set_name("bwd"));
    dq = q_grad;
    dk = k_grad;
    dv = v_grad;
    d_sum = d;
    std::int64_t uid = 10;
    for (const TensorPtr& t : {dq, dk, dv, d_sum}) {
      t->set_uid(uid++).set_output(true);
    }
  }
};

std::size_t count_of(const Names& names, const std::string& name) {
  return static_cast<std::size_t>(std::ranges::count(names, name));
}

// What build() says before it needs a GPU (it checks the graph is complete first; the empty
// Handle stops it after that).
Error build_error(Graph& g) {
  const auto built = g.build(dnngraph::Handle{}, {dnngraph::HeuristicMode::A});
  BOOST_TEST_REQUIRE(!built.has_value());
  BOOST_TEST_MESSAGE(built.error().message);
  return built.error();
}

// From cuDNN 9.6 dQ = dS K goes through a Float accumulator and a copy: one operation more.
std::size_t accumulator_copy() {
  return dnngraph::cudnn_offers(dnngraph::CudnnCapability::SdpaBackwardAccumulator) ? 1U : 0U;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_dropout_lowering)

BOOST_AUTO_TEST_CASE(forward_dropout_is_an_rng_and_two_multiplications_before_p_v) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_generate_stats(true).set_dropout(0.1, k.seed, k.offset));
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.all_finalized);
  // Q K^T, max, minus max, exp, sum, log, Stats, divide (P); rng, P * mask, times 1 / (1 - p);
  // P V.
  BOOST_TEST(s.operation_count == 12U);
  const Names tail(s.backend_operations.end() - 5, s.backend_operations.end());
  BOOST_TEST(tail == (Names{"OperationPointwise", "OperationRng", "OperationPointwise",
                            "OperationPointwise", "OperationMatmul"}));
  BOOST_TEST(count_of(s.backend_operations, "OperationRng") == 1U);
  BOOST_TEST(f.stats->dim() == (Dims{2, 8, 17, 1}));
}

BOOST_AUTO_TEST_CASE(a_probability_of_zero_is_no_dropout) {
  Keyed k({}, DataType::Int64, {}, /*keyed=*/false);
  Forward f(k, SdpaAttributes().set_dropout(0.0, nullptr, nullptr));
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.operation_count == 9U);  // as without set_dropout
  BOOST_TEST(count_of(s.backend_operations, "OperationRng") == 0U);
}

BOOST_AUTO_TEST_CASE(the_mask_as_an_output_is_float_packed_over_the_scores) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_dropout(0.25, k.seed, k.offset).set_dropout_mask_output(true));
  const TensorPtr mask = k.g.dropout_mask(f.o);
  BOOST_TEST_REQUIRE(mask != nullptr);
  mask->set_name("mask").set_uid(7).set_output(true);
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.operation_count == 12U);
  BOOST_TEST(mask->dim() == k.score_dims());
  BOOST_TEST(mask->stride() == dnngraph::packed_strides(k.score_dims()));
  BOOST_TEST((mask->data_type() == DataType::Float));
  BOOST_TEST(k.g.dropout_mask(k.q) == nullptr);  // not a node's output
}

BOOST_AUTO_TEST_CASE(without_a_mask_output_there_is_no_mask_to_find) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_dropout(0.25, k.seed, k.offset));
  BOOST_TEST(k.g.dropout_mask(f.o) == nullptr);
}

BOOST_AUTO_TEST_CASE(int32_keys_are_taken) {
  Keyed k({}, DataType::Int32, {1});
  Forward f(k, SdpaAttributes().set_dropout(0.5, k.seed, k.offset));
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.all_finalized);
}

BOOST_AUTO_TEST_CASE(dropout_goes_with_a_top_left_causal_mask_and_padding) {
  Keyed k;
  auto len_q = k.g.tensor(tensor("len_q", 14, {2, 1, 1, 1}).set_data_type(DataType::Int32));
  auto len_kv = k.g.tensor(tensor("len_kv", 15, {2, 1, 1, 1}).set_data_type(DataType::Int32));
  Forward f(k, SdpaAttributes()
                   .set_causal_mask(true)
                   .set_padding_mask(true)
                   .set_seq_len_q(len_q)
                   .set_seq_len_kv(len_kv)
                   .set_dropout(0.2, k.seed, k.offset));
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.operation_count == 9U + 6U + 4U + 3U);  // + padding, causal and dropout steps
}

BOOST_AUTO_TEST_CASE(the_backward_draws_the_mask_first_and_uses_it_three_times) {
  Keyed k;
  Backward b(k, SdpaBackwardAttributes().set_attn_scale(0.125F).set_dropout(0.1, k.seed, k.offset));
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.all_finalized);
  // 17 with the scale (see sdpa_backward_test) + rng, P * mask, times 1 / (1 - p), dP * mask,
  // dS times 1 / (1 - p).
  BOOST_TEST(s.operation_count == 22U + accumulator_copy());
  BOOST_TEST_REQUIRE(!s.backend_operations.empty());
  BOOST_TEST(s.backend_operations.front() == "OperationRng");
  BOOST_TEST(count_of(s.backend_operations, "OperationRng") == 1U);
  BOOST_TEST(b.d_sum->dim() == (Dims{2, 8, 17, 1}));
}

BOOST_AUTO_TEST_CASE(the_backward_can_write_the_mask_it_draws) {
  Keyed k;
  Backward b(
      k, SdpaBackwardAttributes().set_dropout(0.1, k.seed, k.offset).set_dropout_mask_output(true));
  const TensorPtr mask = k.g.dropout_mask(b.dq);
  BOOST_TEST_REQUIRE(mask != nullptr);
  BOOST_TEST(k.g.dropout_mask(b.d_sum) == mask);
  mask->set_uid(20).set_output(true);
  const LoweringSummary s = require_lowered(k.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(mask->dim() == k.score_dims());
  BOOST_TEST((mask->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(overrides_give_the_mask_output_the_new_lengths) {
  Keyed k;
  k.g.set_override_shape_enabled(true);
  Forward f(k, SdpaAttributes()
                   .set_generate_stats(true)
                   .set_dropout(0.1, k.seed, k.offset)
                   .set_dropout_mask_output(true));
  k.g.dropout_mask(f.o)->set_uid(7).set_output(true);
  require_valid(k.g);
  std::vector<std::int64_t> uids{1, 2, 3, 4, 5, 7};
  std::vector<Dims> shapes{{1, 8, 5, 64}, {1, 8, 9, 64}, {1, 8, 9, 64},
                           {1, 8, 5, 64}, {1, 8, 5, 1},  {1, 8, 5, 9}};
  std::vector<Dims> strides;
  strides.reserve(shapes.size());
  for (const Dims& d : shapes) {
    strides.push_back(dnngraph::packed_strides(d));
  }
  const auto accepted = k.g.check_overrides(uids, shapes, strides);
  BOOST_TEST(accepted.has_value(), (accepted ? "" : accepted.error().message));
  uids.pop_back();
  shapes.pop_back();
  strides.pop_back();
  const auto refused = k.g.check_overrides(uids, shapes, strides);
  BOOST_TEST_REQUIRE(!refused.has_value());
  BOOST_TEST(mentions(refused.error(), "keeps its build dims [2, 8, 17, 33]"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_dropout_validation)

BOOST_AUTO_TEST_CASE(a_probability_of_one_is_refused_saying_why) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_dropout(1.0, k.seed, k.offset));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "sdpa 'attn': dropout probability 1.000000 is outside [0, 1)"));
  BOOST_TEST(mentions(error, "1 keeps nothing"));
}

BOOST_AUTO_TEST_CASE(negative_and_nan_probabilities_are_refused) {
  for (const double p : {-0.1, std::numeric_limits<double>::quiet_NaN(), 1.5}) {
    Keyed k;
    Forward f(k, SdpaAttributes().set_dropout(p, k.seed, k.offset));
    const Error error = validation_error(k.g);
    BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
    BOOST_TEST(mentions(error, "is outside [0, 1)"));
  }
}

BOOST_AUTO_TEST_CASE(dropout_without_a_seed_is_refused_naming_the_setter) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_dropout(0.1, nullptr, k.offset));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "sdpa 'attn': dropout needs a seed and an offset tensor"));
}

BOOST_AUTO_TEST_CASE(a_float_seed_is_refused_naming_it) {
  Keyed k({}, DataType::Float);
  Forward f(k, SdpaAttributes().set_dropout(0.1, k.seed, k.offset));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error,
                      "sdpa 'attn': dropout seed 'seed' (uid 8) has data type Float; it "
                      "takes Int64 or Int32"));
}

BOOST_AUTO_TEST_CASE(a_key_of_two_values_is_refused) {
  Keyed k({}, DataType::Int64, {1, 1, 1, 2});
  Forward f(k, SdpaAttributes().set_dropout(0.1, k.seed, k.offset));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dropout seed 'seed' (uid 8) has dims [1, 1, 1, 2]; it holds one"));
}

BOOST_AUTO_TEST_CASE(a_seed_of_another_graph_is_refused) {
  Keyed k;
  Graph other;
  auto foreign = other.tensor(tensor("seed", 8, {1, 1, 1, 1}).set_data_type(DataType::Int64));
  Forward f(k, SdpaAttributes().set_dropout(0.1, foreign, k.offset));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "input dropout seed"));
}

BOOST_AUTO_TEST_CASE(dropout_with_a_bottom_right_causal_mask_is_refused_saying_why) {
  Keyed k({.s_q = 33, .s_kv = 33});
  Forward f(k,
            SdpaAttributes().set_causal_mask_bottom_right(true).set_dropout(0.1, k.seed, k.offset));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "dropout with a bottom-right causal mask"));
  BOOST_TEST(mentions(error, "cudnn-frontend refuses it too"));
}

BOOST_AUTO_TEST_CASE(the_backward_refuses_the_same_combination) {
  Keyed k({.s_q = 33, .s_kv = 33});
  Backward b(k, SdpaBackwardAttributes().set_causal_mask_bottom_right(true).set_dropout(0.1, k.seed,
                                                                                        k.offset));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "sdpa_backward 'bwd': dropout with a bottom-right causal mask"));
}

BOOST_AUTO_TEST_CASE(a_mask_output_without_dropout_is_refused) {
  Keyed k({}, DataType::Int64, {}, /*keyed=*/false);
  Forward f(k, SdpaAttributes().set_dropout_mask_output(true));
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "sdpa 'attn': set_dropout_mask_output(true) asks for the dropout "
                      "mask, but no dropout is set"));
}

BOOST_AUTO_TEST_CASE(a_mask_output_with_probability_zero_is_refused) {
  Keyed k({}, DataType::Int64, {}, /*keyed=*/false);
  Forward f(k, SdpaAttributes().set_dropout(0.0, nullptr, nullptr).set_dropout_mask_output(true));
  const Error error = validation_error(k.g);
  BOOST_TEST(mentions(error, "the dropout probability is 0, which draws none"));
}

BOOST_AUTO_TEST_CASE(a_zero_probability_reads_no_seed_so_an_unread_seed_is_refused) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_dropout(0.0, k.seed, k.offset));
  require_valid(k.g);
  const Error error = build_error(k.g);
  BOOST_TEST(mentions(error, "'seed' (uid 8) is not used by any node"));
}

BOOST_AUTO_TEST_CASE(a_mask_output_in_half_is_refused) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_dropout(0.1, k.seed, k.offset).set_dropout_mask_output(true));
  k.g.dropout_mask(f.o)->set_uid(7).set_output(true).set_data_type(DataType::Half);
  const Error error = validation_error(k.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "has data type Half and strides"));
  BOOST_TEST(mentions(error, "it is written Float with packed strides [4488, 561, 33, 1]"));
}

BOOST_AUTO_TEST_CASE(a_mask_output_left_virtual_is_refused) {
  Keyed k;
  Forward f(k, SdpaAttributes().set_dropout(0.1, k.seed, k.offset).set_dropout_mask_output(true));
  const Error error = build_error(k.g);
  BOOST_TEST(mentions(error, "attn::dropout_mask"));
  BOOST_TEST(mentions(error, "is virtual and no node reads it; mark it set_output(true)"));
}

BOOST_AUTO_TEST_SUITE_END()
