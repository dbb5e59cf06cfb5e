// Normalization nodes and by-value scalars without a GPU: layernorm and rmsnorm check their
// phase, epsilon, parameter shapes, data types and compute type with Errors that name the node,
// the tensor, the expected and the given values; infer Y (X's dims and layout) and, in training,
// the Float statistics [N, 1, ...]; and lower to finalized descriptors. batchnorm_inference
// lowers to four pointwise operations; batchnorm (training) gives per-channel statistics and, when
// given previous running statistics, the next ones; instancenorm gives statistics per sample and
// channel; adalayernorm gives statistics per sample and row and takes parameters per sample;
// the backward nodes check their statistics.
// Scalars from Graph::tensor(float) take the rank of the node that reads them, stay Float, and are
// refused where they cannot be.
#define BOOST_TEST_MODULE norm
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::BatchnormAttributes;
using dnngraph::BnFinalizeAttributes;
using dnngraph::DataType;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::GenstatsAttributes;
using dnngraph::Graph;
using dnngraph::InstancenormAttributes;
using dnngraph::LayernormAttributes;
using dnngraph::LoweringSummary;
using dnngraph::NormFwdPhase;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::RmsnormAttributes;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

// X [6, 64, 1, 1] channels-last (Half), scale and bias [1, 64, 1, 1] Float.
struct NormGraph {
  Graph g;
  TensorPtr x, scale, bias;
};

NormGraph norm_graph(Dims x_dims = {6, 64, 1, 1}) {
  NormGraph n;
  n.g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  Dims p(x_dims.size(), 1);
  std::copy(x_dims.begin() + 1, x_dims.end(), p.begin() + 1);
  n.x = n.g.tensor(tensor("X", 1, x_dims).set_stride(dnngraph::channels_last_strides(x_dims)));
  n.scale = n.g.tensor(tensor("scale", 2, p).set_data_type(DataType::Float));
  n.bias = n.g.tensor(tensor("bias", 3, p).set_data_type(DataType::Float));
  return n;
}

LayernormAttributes training(Graph& g) {
  return LayernormAttributes()
      .set_name("ln")
      .set_forward_phase(NormFwdPhase::Training)
      .set_epsilon(g.tensor(1e-5F));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(layernorm_inference_of_outputs)

BOOST_AUTO_TEST_CASE(training_gives_y_like_x_and_float_statistics_of_n_by_1) {
  NormGraph n = norm_graph();
  auto [y, mean, inv_var] = n.g.layernorm(n.x, n.scale, n.bias, training(n.g));
  BOOST_TEST_REQUIRE(mean != nullptr);
  BOOST_TEST_REQUIRE(inv_var != nullptr);
  y->set_output(true);
  mean->set_output(true);
  inv_var->set_output(true);
  const LoweringSummary lowered = require_lowered(n.g);
  BOOST_TEST(lowered.operation_count == 1U);
  BOOST_TEST(lowered.all_finalized);
  BOOST_TEST(y->dim() == n.x->dim());
  BOOST_TEST(y->stride() == n.x->stride());
  BOOST_TEST((*y->data_type() == DataType::Half));
  for (const TensorPtr& s : {mean, inv_var}) {
    BOOST_TEST(s->dim() == (Dims{6, 1, 1, 1}));
    BOOST_TEST((*s->data_type() == DataType::Float));
  }
}

BOOST_AUTO_TEST_CASE(inference_gives_no_statistics) {
  NormGraph n = norm_graph();
  auto [y, mean, inv_var] = n.g.layernorm(n.x, n.scale, n.bias,
                                          LayernormAttributes()
                                              .set_forward_phase(NormFwdPhase::Inference)
                                              .set_epsilon(n.g.tensor(1e-5F)));
  BOOST_TEST(mean == nullptr);
  BOOST_TEST(inv_var == nullptr);
  y->set_output(true);
  BOOST_TEST(require_lowered(n.g).all_finalized);
}

BOOST_AUTO_TEST_CASE(rmsnorm_without_bias_lowers_and_with_bias_too) {
  for (const bool with_bias : {false, true}) {
    NormGraph n = norm_graph();
    RmsnormAttributes a;
    a.set_forward_phase(NormFwdPhase::Training).set_epsilon(n.g.tensor(1e-6F));
    if (with_bias) {
      a.set_bias(n.bias);
    }
    auto [y, inv_rms] = n.g.rmsnorm(n.x, n.scale, a);
    y->set_output(true);
    inv_rms->set_output(true);
    if (!with_bias) {
      // The bias tensor is then read by nothing: build would refuse it; validate needs none.
      BOOST_TEST(require_lowered(n.g).operation_count == 1U);
    } else {
      BOOST_TEST(require_lowered(n.g).all_finalized);
    }
    BOOST_TEST(inv_rms->dim() == (Dims{6, 1, 1, 1}));
  }
}

BOOST_AUTO_TEST_CASE(epsilon_takes_the_rank_of_x_and_stays_float) {
  NormGraph n = norm_graph({4, 8, 6, 10});
  auto eps = n.g.tensor(1e-5F);
  auto [y, mean, inv_var] = n.g.layernorm(
      n.x, n.scale, n.bias,
      LayernormAttributes().set_forward_phase(NormFwdPhase::Inference).set_epsilon(eps));
  y->set_output(true);
  require_valid(n.g);
  BOOST_TEST(eps->dim() == (Dims{1, 1, 1, 1}));
  BOOST_TEST(eps->stride() == (Dims{1, 1, 1, 1}));
  BOOST_TEST((*eps->data_type() == DataType::Float));
  BOOST_TEST(eps->is_pass_by_value());
  BOOST_TEST(*eps->value() == 1e-5F);
}

namespace {

// A Half graph with X (uid 1) and the Float parameters mean (uid 2), inv_variance, scale and
// bias (uids 3-5, `others`), and Y = batchnorm_inference ("bn") an output.
struct BatchnormInference {
  Graph g;
  TensorPtr x, y;

  BatchnormInference(const TensorAttributes& x_attributes, const Dims& mean, const Dims& others) {
    g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
    x = g.tensor(x_attributes);
    const auto param = [&](const char* name, std::int64_t uid, const Dims& dims) {
      return g.tensor(tensor(name, uid, dims).set_data_type(DataType::Float));
    };
    y = g.batchnorm_inference(x, param("mean", 2, mean), param("inv_variance", 3, others),
                              param("scale", 4, others), param("bias", 5, others),
                              dnngraph::BatchnormInferenceAttributes().set_name("bn"));
    y->set_output(true);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(batchnorm_inference_is_four_pointwise_operations) {
  const Dims x_dims{2, 16, 5, 7};
  const Dims c{1, 16, 1, 1};
  BatchnormInference bn(tensor("X", 1, x_dims).set_stride(dnngraph::channels_last_strides(x_dims)),
                        c, c);
  const LoweringSummary lowered = require_lowered(bn.g);
  BOOST_TEST(lowered.operation_count == 4U);
  BOOST_TEST(lowered.operations.front() == "pointwise 'bn::center'");
  BOOST_TEST(lowered.operations.back() == "pointwise 'bn::shift'");
  BOOST_TEST(bn.y->stride() == dnngraph::channels_last_strides(x_dims));  // keeps X's layout
}

BOOST_AUTO_TEST_CASE(batchnorm_inference_refuses_parameters_of_other_channels_than_x) {
  // Found by fuzzing: a 1-channel X broadcast against 32-channel parameters gave a 32-channel Y.
  BatchnormInference bn(tensor("X", 1, {2, 1, 5, 7}), {1, 32, 1, 1}, {1, 32, 1, 1});
  const Error error = validation_error(bn.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "pointwise 'bn::center': mean 'mean' (uid 2) has 32 channels (dim 1), X "
                      "'X' (uid 1) has 1"));
  BOOST_TEST(bn.x->dim() == (Dims{2, 1, 5, 7}));
  BOOST_TEST(bn.y->dim().empty());
}

BOOST_AUTO_TEST_CASE(batchnorm_inference_refuses_a_parameter_that_would_widen_x) {
  // A parameter broadcasts into X, never X into it: mean [1, 16, 5, 1] for X [2, 16, 1, 7] would
  // give a Y of 5 rows.
  BatchnormInference bn(tensor("X", 1, {2, 16, 1, 7}), {1, 16, 5, 1}, {1, 16, 1, 1});
  const Error error = validation_error(bn.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "pointwise 'bn::center': mean 'mean' (uid 2) has dims [1, 16, 5, 1], X 'X' "
                      "(uid 1) has [2, 16, 1, 7]: dim 2 is 5; a parameter broadcasts into X"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(norm_bad_input)

BOOST_AUTO_TEST_CASE(no_phase_is_an_error_naming_the_setter) {
  NormGraph n = norm_graph();
  n.g.layernorm(n.x, n.scale, n.bias,
                LayernormAttributes().set_name("ln").set_epsilon(n.g.tensor(1e-5F)))[0]
      ->set_output(true);
  const Error e = validation_error(n.g);
  BOOST_TEST(e.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(e, "layernorm 'ln': no forward phase"));
}

BOOST_AUTO_TEST_CASE(no_epsilon_is_an_error) {
  NormGraph n = norm_graph();
  n.g.rmsnorm(n.x, n.scale,
              RmsnormAttributes().set_name("rms").set_forward_phase(NormFwdPhase::Inference))[0]
      ->set_output(true);
  const Error e = validation_error(n.g);
  BOOST_TEST(e.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(e, "rmsnorm 'rms': no epsilon"));
}

BOOST_AUTO_TEST_CASE(a_layernorm_without_bias_is_an_error) {
  NormGraph n = norm_graph();
  n.g.layernorm(n.x, n.scale, nullptr, training(n.g))[0]->set_output(true);
  const Error e = validation_error(n.g);
  BOOST_TEST(e.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(e, "layernorm 'ln': input bias is null"));
}

BOOST_AUTO_TEST_CASE(scale_of_the_wrong_dims_names_both_shapes) {
  NormGraph n = norm_graph();
  auto wrong = n.g.tensor(tensor("scale2", 7, {1, 32, 1, 1}).set_data_type(DataType::Float));
  n.g.layernorm(n.x, wrong, n.bias, training(n.g))[0]->set_output(true);
  const Error e = validation_error(n.g);
  BOOST_TEST(e.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(e, "scale 'scale2' (uid 7) has dims [1, 32, 1, 1], expected [1, 64, 1, 1]"));
  BOOST_TEST(mentions(e, "[6, 64, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_half_compute_type_is_refused) {
  NormGraph n = norm_graph();
  n.g.layernorm(n.x, n.scale, n.bias, training(n.g).set_compute_data_type(DataType::Half))[0]
      ->set_output(true);
  const Error e = validation_error(n.g);
  BOOST_TEST(e.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(e, "compute data type Half"));
}

BOOST_AUTO_TEST_CASE(an_int32_input_is_refused) {
  NormGraph n = norm_graph();
  n.x->set_data_type(DataType::Int32);
  n.g.layernorm(n.x, n.scale, n.bias, training(n.g))[0]->set_output(true);
  const Error e = validation_error(n.g);
  BOOST_TEST(e.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(e, "input X 'X' (uid 1) has data type Int32"));
}

BOOST_AUTO_TEST_CASE(an_epsilon_of_many_values_is_refused) {
  NormGraph n = norm_graph();
  auto eps = n.g.tensor(tensor("eps", 9, {1, 64, 1, 1}).set_data_type(DataType::Float));
  n.g.layernorm(n.x, n.scale, n.bias,
                LayernormAttributes()
                    .set_name("ln")
                    .set_forward_phase(NormFwdPhase::Inference)
                    .set_epsilon(eps))[0]
      ->set_output(true);
  const Error e = validation_error(n.g);
  BOOST_TEST(e.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(e, "epsilon 'eps' (uid 9) has dims [1, 64, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_rank_1_input_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  auto x = g.tensor(tensor("X", 1, {64}));
  auto s = g.tensor(tensor("scale", 2, {64}));
  auto b = g.tensor(tensor("bias", 3, {64}));
  g.layernorm(x, s, b, training(g))[0]->set_output(true);
  const Error e = validation_error(g);
  BOOST_TEST(e.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(e, "it takes rank 2 to 5"));
}

BOOST_AUTO_TEST_CASE(a_failed_validation_leaves_the_scalar_as_it_was) {
  NormGraph n = norm_graph();
  auto eps = n.g.tensor(1e-5F);
  n.x->set_data_type(DataType::Int32);  // fails after the graph inputs are settled
  n.g.layernorm(
         n.x, n.scale, n.bias,
         LayernormAttributes().set_forward_phase(NormFwdPhase::Inference).set_epsilon(eps))[0]
      ->set_output(true);
  BOOST_TEST(validation_error(n.g).code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(eps->dim().empty());
  BOOST_TEST(eps->stride().empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(by_value_scalars)

BOOST_AUTO_TEST_CASE(a_scalar_operand_takes_the_rank_of_the_pointwise_node) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 3, 40}));
  auto s = g.tensor(0.5F);
  g.pointwise(x, s, PointwiseAttributes().set_mode(PointwiseMode::Mul))->set_output(true);
  const LoweringSummary lowered = require_lowered(g);
  BOOST_TEST(lowered.all_finalized);
  BOOST_TEST(s->dim() == (Dims{1, 1, 1}));
  BOOST_TEST((*s->data_type() == DataType::Float));  // not the io type
  BOOST_TEST(s->uid().has_value());
}

BOOST_AUTO_TEST_CASE(a_by_value_tensor_of_another_type_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 3, 40}));
  auto s = g.tensor(
      TensorAttributes().set_name("s").set_uid(5).set_value(2.0F).set_data_type(DataType::Half));
  g.pointwise(x, s, PointwiseAttributes().set_mode(PointwiseMode::Mul))->set_output(true);
  const Error e = validation_error(g);
  BOOST_TEST(e.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(e, "tensor 's' (uid 5) is passed by value (set_value) with data type Half"));
}

BOOST_AUTO_TEST_CASE(a_by_value_tensor_with_many_elements_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 3, 40}));
  auto s =
      g.tensor(TensorAttributes().set_name("s").set_uid(5).set_value(2.0F).set_dim({1, 1, 40}));
  g.pointwise(x, s, PointwiseAttributes().set_mode(PointwiseMode::Mul))->set_output(true);
  const Error e = validation_error(g);
  BOOST_TEST(e.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(e, "has dims [1, 1, 40]; a by-value tensor holds one value"));
}

BOOST_AUTO_TEST_CASE(a_node_output_with_a_value_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 3, 40}));
  auto y = g.pointwise(x, PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
  y->set_output(true).set_value(1.0F);
  const Error e = validation_error(g);
  BOOST_TEST(e.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(e, "only graph inputs are passed by value"));
}

BOOST_AUTO_TEST_CASE(a_by_value_tensor_takes_no_override) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_override_shape_enabled(true);
  auto x = g.tensor(tensor("X", 1, {2, 3, 40}));
  auto s = g.tensor(TensorAttributes().set_name("s").set_uid(5).set_value(2.0F));
  g.pointwise(x, s, PointwiseAttributes().set_mode(PointwiseMode::Mul))
      ->set_output(true)
      .set_uid(3);
  require_valid(g);
  const std::vector<std::int64_t> uids{5};
  const std::vector<std::vector<std::int64_t>> shapes{{1, 1, 1}};
  const std::vector<std::vector<std::int64_t>> strides{{1, 1, 1}};
  const auto checked = g.check_overrides(uids, shapes, strides);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST(mentions(checked.error(), "passed by value"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pointwise_only_graph_shapes)

// cuDNN 9.19 computed these wrong on the H200 (tests/gpu/pointwise_test.cpp): refused.
BOOST_AUTO_TEST_CASE(broadcast_along_two_dims_at_rank_3_is_refused_naming_the_tensor) {
  for (const PointwiseMode mode : {PointwiseMode::Add, PointwiseMode::CmpGt}) {
    Graph g;
    g.set_io_data_type(DataType::Float);
    auto x = g.tensor(tensor("X", 1, {2, 3, 40}));
    auto b = g.tensor(tensor("B", 2, {1, 1, 40}));
    g.pointwise(x, b, PointwiseAttributes().set_name("op").set_mode(mode))->set_output(true);
    const Error e = validation_error(g);
    BOOST_TEST(e.code == ErrorCode::ShapeMismatch);
    BOOST_TEST(mentions(e,
                        "pointwise 'op': 'B' (uid 2) has dims [1, 1, 40] and broadcasts to "
                        "[2, 3, 40] along 2 dims"));
  }
}

BOOST_AUTO_TEST_CASE(rank_2_is_refused_even_without_broadcast) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  auto x = g.tensor(tensor("X", 1, {6, 40}));
  auto b = g.tensor(tensor("B", 2, {6, 40}));
  g.pointwise(x, b, PointwiseAttributes().set_mode(PointwiseMode::CmpLt))->set_output(true);
  const Error e = validation_error(g);
  BOOST_TEST(e.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(e, "(rank 2)"));
  BOOST_TEST(mentions(e, "add a leading dim of 1"));
}

BOOST_AUTO_TEST_CASE(one_dim_broadcast_by_value_scalars_and_rank_4_are_accepted) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  auto x = g.tensor(tensor("X", 1, {2, 3, 40}));
  auto b1 = g.tensor(tensor("B1", 2, {2, 1, 40}));
  auto mask = g.pointwise(x, b1, PointwiseAttributes().set_mode(PointwiseMode::CmpGt));
  auto scaled = g.pointwise(x, g.tensor(2.0F), PointwiseAttributes().set_mode(PointwiseMode::Mul));
  g.pointwise(scaled, x, mask, PointwiseAttributes().set_mode(PointwiseMode::BinarySelect))
      ->set_output(true);
  require_valid(g);
  Graph image;
  image.set_io_data_type(DataType::Float);
  auto xi = image.tensor(tensor("X", 1, {2, 8, 5, 7}));
  auto ci = image.tensor(tensor("C", 2, {1, 8, 1, 1}));
  image.pointwise(xi, ci, PointwiseAttributes().set_mode(PointwiseMode::Add))->set_output(true);
  require_valid(image);
}

BOOST_AUTO_TEST_CASE(the_same_broadcast_behind_a_matmul_is_accepted) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 1, {2, 3, 16}));
  auto w = g.tensor(tensor("W", 2, {2, 16, 40}));
  auto bias = g.tensor(tensor("bias", 3, {1, 1, 40}));
  auto c = g.matmul(a, w);
  g.pointwise(c, bias, PointwiseAttributes().set_mode(PointwiseMode::Add))->set_output(true);
  require_valid(g);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(norm_backward)

namespace {

// dY like X [6, 64, 1, 1] (uid 4), saved statistics [6, 1, 1, 1] Float (uids 5 and 6).
struct Backward {
  NormGraph n = norm_graph();
  TensorPtr dy, mean, inv_var;

  explicit Backward(const Dims& statistic_dims = {6, 1, 1, 1}) {
    dy = n.g.tensor(tensor("dY", 4, n.x->dim()).set_stride(n.x->stride()));
    mean = n.g.tensor(tensor("mean", 5, statistic_dims).set_data_type(DataType::Float));
    inv_var = n.g.tensor(tensor("inv_var", 6, statistic_dims).set_data_type(DataType::Float));
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(layernorm_backward_gives_dx_like_x_and_float_parameter_gradients) {
  Backward b;
  auto [dx, dscale, dbias] =
      b.n.g.layernorm_backward(b.dy, b.n.x, b.n.scale, b.mean, b.inv_var,
                               dnngraph::NormBackwardAttributes().set_name("ln_bwd"));
  for (const TensorPtr& t : {dx, dscale, dbias}) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(b.n.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (std::vector<std::string>{"layernorm_backward 'ln_bwd'"}));
  BOOST_TEST(dx->dim() == (Dims{6, 64, 1, 1}));
  BOOST_TEST(dx->stride() == b.n.x->stride());
  BOOST_TEST((dx->data_type() == DataType::Half));
  BOOST_TEST(dscale->dim() == (Dims{1, 64, 1, 1}));
  BOOST_TEST((dscale->data_type() == DataType::Float));
  BOOST_TEST((dbias->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(rmsnorm_backward_reads_no_mean_and_makes_no_dbias) {
  Backward b;
  auto [dx, dscale] = b.n.g.rmsnorm_backward(b.dy, b.n.x, b.n.scale, b.inv_var);
  dx->set_output(true);
  dscale->set_output(true);
  const LoweringSummary s = require_lowered(b.n.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (std::vector<std::string>{"rmsnorm_backward 'rmsnorm_backward_0'"}));
}

BOOST_AUTO_TEST_CASE(statistics_of_the_wrong_dims_name_both_shapes) {
  Backward b({6, 64, 1, 1});
  auto [dx, dscale, dbias] = b.n.g.layernorm_backward(b.dy, b.n.x, b.n.scale, b.mean, b.inv_var);
  dx->set_output(true);
  const Error error = validation_error(b.n.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "layernorm_backward 'layernorm_backward_0': mean 'mean' (uid 5) has "
                      "dims [6, 64, 1, 1], expected [6, 1, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_dy_of_other_dims_than_x_is_refused) {
  Backward b;
  b.dy->set_dim({6, 32, 1, 1}).set_stride({32, 1, 32, 32});
  auto [dx, dscale] = b.n.g.rmsnorm_backward(b.dy, b.n.x, b.n.scale, b.inv_var);
  dx->set_output(true);
  const Error error = validation_error(b.n.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dY 'dY' (uid 4) has dims [6, 32, 1, 1], expected [6, 64, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(half_statistics_are_refused) {
  Backward b;
  b.inv_var->set_data_type(DataType::Half);
  auto [dx, dscale] = b.n.g.rmsnorm_backward(b.dy, b.n.x, b.n.scale, b.inv_var);
  dx->set_output(true);
  const Error error = validation_error(b.n.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "inv_variance 'inv_var' (uid 6) has data type Half; it takes Float"));
}

BOOST_AUTO_TEST_CASE(a_null_mean_is_a_foreign_tensor_error) {
  Backward b;
  auto [dx, dscale, dbias] = b.n.g.layernorm_backward(b.dy, b.n.x, b.n.scale, nullptr, b.inv_var);
  const Error error = validation_error(b.n.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "input mean is null"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(batchnorm_training)

namespace {

// X [4, 32, 5, 3] channels-last (Half), scale and bias [1, 32, 1, 1] Float (uids 2 and 3).
struct Batch {
  Graph g;
  TensorPtr x, scale, bias;

  Batch() {
    g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
    const Dims dims{4, 32, 5, 3};
    x = g.tensor(tensor("X", 1, dims).set_stride(dnngraph::channels_last_strides(dims)));
    scale = g.tensor(tensor("scale", 2, {1, 32, 1, 1}).set_data_type(DataType::Float));
    bias = g.tensor(tensor("bias", 3, {1, 32, 1, 1}).set_data_type(DataType::Float));
  }
  TensorPtr running(const char* name, std::int64_t uid) {
    return g.tensor(tensor(name, uid, {1, 32, 1, 1}).set_data_type(DataType::Float));
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(batchnorm_gives_per_channel_float_statistics_and_no_running_ones_unasked) {
  Batch b;
  auto [y, mean, inv_var, next_mean, next_var] = b.g.batchnorm(
      b.x, b.scale, b.bias, BatchnormAttributes().set_name("bn").set_epsilon(b.g.tensor(1e-5F)));
  BOOST_TEST_REQUIRE(mean != nullptr);
  BOOST_TEST_REQUIRE(inv_var != nullptr);
  BOOST_TEST(next_mean == nullptr);
  BOOST_TEST(next_var == nullptr);
  for (const TensorPtr& t : {y, mean, inv_var}) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (std::vector<std::string>{"batchnorm 'bn'"}));
  BOOST_TEST(y->dim() == b.x->dim());
  BOOST_TEST(y->stride() == b.x->stride());
  BOOST_TEST(mean->dim() == (Dims{1, 32, 1, 1}));
  BOOST_TEST(mean->stride() == dnngraph::channels_last_strides({1, 32, 1, 1}));
  BOOST_TEST((inv_var->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(previous_running_statistics_give_next_ones_of_their_dims) {
  Batch b;
  auto [y, mean, inv_var, next_mean, next_var] = b.g.batchnorm(
      b.x, b.scale, b.bias,
      BatchnormAttributes()
          .set_epsilon(b.g.tensor(1e-5F))
          .set_previous_running_stats(b.running("rm", 4), b.running("rv", 5), b.g.tensor(0.1F)));
  BOOST_TEST_REQUIRE(next_mean != nullptr);
  BOOST_TEST_REQUIRE(next_var != nullptr);
  for (const TensorPtr& t : {y, mean, inv_var, next_mean, next_var}) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(next_var->dim() == (Dims{1, 32, 1, 1}));
  BOOST_TEST((next_var->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(running_statistics_without_momentum_are_an_error) {
  Batch b;
  auto outs = b.g.batchnorm(
      b.x, b.scale, b.bias,
      BatchnormAttributes()
          .set_epsilon(b.g.tensor(1e-5F))
          .set_previous_running_stats(b.running("rm", 4), b.running("rv", 5), nullptr));
  outs[0]->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "input momentum is null"));
}

BOOST_AUTO_TEST_CASE(a_momentum_above_one_is_refused_with_its_value) {
  Batch b;
  auto outs = b.g.batchnorm(
      b.x, b.scale, b.bias,
      BatchnormAttributes()
          .set_epsilon(b.g.tensor(1e-5F))
          .set_previous_running_stats(b.running("rm", 4), b.running("rv", 5), b.g.tensor(1.5F)));
  outs[0]->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "batchnorm 'batchnorm_0': momentum"));
  BOOST_TEST(mentions(error, "has value 1.500000; it must be finite, not negative and at most 1"));
}

BOOST_AUTO_TEST_CASE(a_running_mean_of_the_wrong_dims_names_both_shapes) {
  Batch b;
  auto rm = b.g.tensor(tensor("rm", 4, {1, 16, 1, 1}).set_data_type(DataType::Float));
  auto outs =
      b.g.batchnorm(b.x, b.scale, b.bias,
                    BatchnormAttributes()
                        .set_epsilon(b.g.tensor(1e-5F))
                        .set_previous_running_stats(rm, b.running("rv", 5), b.g.tensor(0.1F)));
  outs[0]->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "previous running mean 'rm' (uid 4) has dims [1, 16, 1, 1], "
                      "expected [1, 32, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_scale_of_layernorm_dims_is_refused_naming_the_channel_dims) {
  Batch b;
  b.scale->set_dim({1, 32, 5, 3}).set_stride({480, 15, 3, 1});
  auto outs =
      b.g.batchnorm(b.x, b.scale, b.bias, BatchnormAttributes().set_epsilon(b.g.tensor(1e-5F)));
  outs[0]->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(
      mentions(error, "scale 'scale' (uid 2) has dims [1, 32, 5, 3], expected [1, 32, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_rank_3_input_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {4, 32, 7}));
  auto scale = g.tensor(tensor("scale", 2, {1, 32, 1}).set_data_type(DataType::Float));
  auto bias = g.tensor(tensor("bias", 3, {1, 32, 1}).set_data_type(DataType::Float));
  auto outs = g.batchnorm(x, scale, bias, BatchnormAttributes().set_epsilon(g.tensor(1e-5F)));
  outs[0]->set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "(rank 3); it takes rank 4 to 5"));
}

BOOST_AUTO_TEST_CASE(batchnorm_backward_reads_per_channel_statistics_and_gives_dbias) {
  Batch b;
  auto dy = b.g.tensor(tensor("dY", 6, b.x->dim()).set_stride(b.x->stride()));
  auto [dx, dscale, dbias] =
      b.g.batchnorm_backward(dy, b.x, b.scale, b.running("mean", 7), b.running("inv_var", 8));
  BOOST_TEST_REQUIRE(dbias != nullptr);
  for (const TensorPtr& t : {dx, dscale, dbias}) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations ==
             (std::vector<std::string>{"batchnorm_backward 'batchnorm_backward_0'"}));
  BOOST_TEST(dx->stride() == b.x->stride());
  BOOST_TEST(dbias->dim() == (Dims{1, 32, 1, 1}));
}

BOOST_AUTO_TEST_CASE(batchnorm_backward_refuses_layernorm_statistics) {
  Batch b;
  auto dy = b.g.tensor(tensor("dY", 6, b.x->dim()).set_stride(b.x->stride()));
  auto mean = b.g.tensor(tensor("mean", 7, {4, 1, 1, 1}).set_data_type(DataType::Float));
  auto [dx, dscale, dbias] =
      b.g.batchnorm_backward(dy, b.x, b.scale, mean, b.running("inv_var", 8));
  dx->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "mean 'mean' (uid 7) has dims [4, 1, 1, 1], expected [1, 32, 1, 1]"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(instancenorm)

namespace {

// Batch's X, scale and bias under instancenorm (statistics per sample and channel).
struct Instance : batchnorm_training::Batch {
  TensorPtr statistic(const char* name, std::int64_t uid) {
    return g.tensor(tensor(name, uid, {4, 32, 1, 1})
                        .set_stride(dnngraph::channels_last_strides({4, 32, 1, 1}))
                        .set_data_type(DataType::Float));
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(training_gives_statistics_per_sample_and_channel) {
  Instance b;
  auto [y, mean, inv_var] = b.g.instancenorm(b.x, b.scale, b.bias,
                                             InstancenormAttributes()
                                                 .set_name("in")
                                                 .set_forward_phase(NormFwdPhase::Training)
                                                 .set_epsilon(b.g.tensor(1e-5F)));
  BOOST_TEST_REQUIRE(mean != nullptr);
  BOOST_TEST_REQUIRE(inv_var != nullptr);
  for (const TensorPtr& t : {y, mean, inv_var}) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (std::vector<std::string>{"instancenorm 'in'"}));
  BOOST_TEST(y->stride() == b.x->stride());
  BOOST_TEST(mean->dim() == (Dims{4, 32, 1, 1}));
  BOOST_TEST(mean->stride() == dnngraph::channels_last_strides({4, 32, 1, 1}));
  BOOST_TEST((inv_var->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(inference_gives_no_statistics) {
  Instance b;
  auto [y, mean, inv_var] = b.g.instancenorm(b.x, b.scale, b.bias,
                                             InstancenormAttributes()
                                                 .set_forward_phase(NormFwdPhase::Inference)
                                                 .set_epsilon(b.g.tensor(1e-5F)));
  BOOST_TEST(mean == nullptr);
  BOOST_TEST(inv_var == nullptr);
  y->set_output(true);
  BOOST_TEST(require_lowered(b.g).all_finalized);
}

BOOST_AUTO_TEST_CASE(a_scale_of_layernorm_dims_is_refused_naming_the_channel_dims) {
  Instance b;
  b.scale->set_dim({1, 32, 5, 3}).set_stride({480, 15, 3, 1});
  auto outs = b.g.instancenorm(b.x, b.scale, b.bias,
                               InstancenormAttributes()
                                   .set_forward_phase(NormFwdPhase::Training)
                                   .set_epsilon(b.g.tensor(1e-5F)));
  outs[0]->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "instancenorm 'instancenorm_0': scale 'scale' (uid 2) has dims "
                      "[1, 32, 5, 3], expected [1, 32, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_rank_3_input_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {4, 32, 7}));
  auto scale = g.tensor(tensor("scale", 2, {1, 32, 1}).set_data_type(DataType::Float));
  auto bias = g.tensor(tensor("bias", 3, {1, 32, 1}).set_data_type(DataType::Float));
  auto outs = g.instancenorm(x, scale, bias,
                             InstancenormAttributes()
                                 .set_forward_phase(NormFwdPhase::Training)
                                 .set_epsilon(g.tensor(1e-5F)));
  outs[0]->set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "(rank 3); it takes rank 4 to 5"));
}

BOOST_AUTO_TEST_CASE(backward_reads_statistics_per_sample_and_channel) {
  Instance b;
  auto dy = b.g.tensor(tensor("dY", 6, b.x->dim()).set_stride(b.x->stride()));
  auto [dx, dscale, dbias] = b.g.instancenorm_backward(dy, b.x, b.scale, b.statistic("mean", 7),
                                                       b.statistic("inv_var", 8));
  for (const TensorPtr& t : {dx, dscale, dbias}) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations ==
             (std::vector<std::string>{"instancenorm_backward 'instancenorm_backward_0'"}));
  BOOST_TEST(dscale->dim() == (Dims{1, 32, 1, 1}));
}

BOOST_AUTO_TEST_CASE(backward_refuses_batchnorm_statistics) {
  Instance b;
  auto dy = b.g.tensor(tensor("dY", 6, b.x->dim()).set_stride(b.x->stride()));
  auto [dx, dscale, dbias] =
      b.g.instancenorm_backward(dy, b.x, b.scale, b.running("mean", 7), b.statistic("inv_var", 8));
  dx->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "mean 'mean' (uid 7) has dims [1, 32, 1, 1], expected [4, 32, 1, 1]"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(genstats)

BOOST_AUTO_TEST_CASE(gives_float_per_channel_sums_in_x_memory_order) {
  batchnorm_training::Batch b;
  auto [sum, sq_sum] = b.g.genstats(b.x, GenstatsAttributes().set_name("stats"));
  sum->set_output(true);
  sq_sum->set_output(true);
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (std::vector<std::string>{"genstats 'stats'"}));
  BOOST_TEST(sum->dim() == (Dims{1, 32, 1, 1}));
  BOOST_TEST(sq_sum->stride() == dnngraph::channels_last_strides({1, 32, 1, 1}));
  BOOST_TEST((sum->data_type() == DataType::Float));
}

BOOST_AUTO_TEST_CASE(a_rank_3_input_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto [sum, sq_sum] = g.genstats(g.tensor(tensor("X", 1, {4, 32, 7})));
  sum->set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "genstats 'genstats_0': input X 'X' (uid 1) has dims [4, 32, 7] (rank "
                      "3); it takes rank 4 to 5"));
}

BOOST_AUTO_TEST_CASE(half_statistics_are_refused) {
  batchnorm_training::Batch b;
  auto [sum, sq_sum] = b.g.genstats(b.x);
  sum->set_output(true).set_data_type(DataType::Half);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "has data type Half; statistics are Float"));
}

BOOST_AUTO_TEST_CASE(an_integer_input_is_refused) {
  Graph g;
  auto [sum, sq_sum] =
      g.genstats(g.tensor(tensor("X", 1, {4, 32, 7, 7}).set_data_type(DataType::Int32)));
  sum->set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "has data type Int32; it takes Half, BFloat16 or Float"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bn_finalize)

namespace {

// The sums genstats would give for 32 channels, and the rest of bn_finalize's inputs.
struct Finalize {
  Graph g;
  TensorPtr sum, sq_sum, scale, bias, mean, var, count;

  Finalize() {
    g.set_compute_data_type(DataType::Float);
    const auto channel = [&](const char* name, std::int64_t uid) {
      return g.tensor(tensor(name, uid, {1, 32, 1, 1})
                          .set_stride(dnngraph::channels_last_strides({1, 32, 1, 1}))
                          .set_data_type(DataType::Float));
    };
    sum = channel("sum", 1);
    sq_sum = channel("sq_sum", 2);
    scale = channel("scale", 3);
    bias = channel("bias", 4);
    mean = channel("running_mean", 5);
    var = channel("running_var", 6);
    count = g.int64_scalar(64);  // by value, as cudnn-frontend's samples pass it
  }
  // epsilon and momentum in device memory (uids 8 and 9), as cuDNN's BN_FINALIZE takes them.
  BnFinalizeAttributes attributes() {
    return BnFinalizeAttributes()
        .set_name("fin")
        .set_epsilon(g.tensor(1e-5F))
        .set_accumulation_count(count)
        .set_previous_running_stats(mean, var, g.tensor(0.1F));
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(gives_six_per_channel_float_outputs_and_lowers) {
  Finalize f;
  const auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias, f.attributes());
  for (const TensorPtr& t : outs) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(f.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (std::vector<std::string>{"bn_finalize 'fin'"}));
  for (const TensorPtr& t : outs) {
    BOOST_TEST(t->dim() == (Dims{1, 32, 1, 1}));
    BOOST_TEST((t->data_type() == DataType::Float));
  }
}

BOOST_AUTO_TEST_CASE(a_sum_of_image_dims_is_refused) {
  Finalize f;
  f.sum->set_dim({4, 32, 1, 1});
  auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias, f.attributes());
  outs[0]->set_output(true);
  const Error error = validation_error(f.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "bn_finalize 'fin': sum 'sum' (uid 1) has dims [4, 32, 1, 1]; it "
                      "takes per-channel dims"));
}

BOOST_AUTO_TEST_CASE(a_scale_of_other_channels_names_both_dims) {
  Finalize f;
  f.scale->set_dim({1, 16, 1, 1});
  auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias, f.attributes());
  outs[0]->set_output(true);
  const Error error = validation_error(f.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(
      mentions(error, "scale 'scale' (uid 3) has dims [1, 16, 1, 1], expected [1, 32, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_float_count_is_refused) {
  Finalize f;
  auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias,
                              f.attributes().set_accumulation_count(f.g.tensor(64.0F)));
  outs[0]->set_output(true);
  const Error error = validation_error(f.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(
      mentions(error, "has dims [1, 1, 1, 1] and data type Float; it holds one Int64 value"));
}

BOOST_AUTO_TEST_CASE(an_int64_scalar_is_int64_by_value_and_refuses_another_type) {
  Graph g;
  auto count = g.int64_scalar(64);
  BOOST_TEST(count->is_pass_by_value());
  BOOST_TEST(count->int_value().value_or(0) == 64);
  BOOST_TEST(!count->value().has_value());
  count->set_data_type(DataType::Float);
  auto x = g.tensor(tensor("X", 1, {2, 3}).set_data_type(DataType::Float));
  g.pointwise(x, count, PointwiseAttributes().set_mode(PointwiseMode::Add))->set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(
      mentions(error, "is passed by value (set_int_value) with data type Float; it is Int64"));
}

BOOST_AUTO_TEST_CASE(a_momentum_in_device_memory_is_refused) {
  Finalize f;
  auto momentum = f.g.tensor(tensor("momentum", 9, {1, 1, 1, 1}).set_data_type(DataType::Float));
  auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias,
                              f.attributes().set_previous_running_stats(f.mean, f.var, momentum));
  outs[0]->set_output(true);
  const Error error = validation_error(f.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "momentum 'momentum' (uid 9) is in device memory; cuDNN's "
                      "BN_FINALIZE takes it by value"));
}

BOOST_AUTO_TEST_CASE(a_count_in_device_memory_is_refused) {
  Finalize f;
  auto count = f.g.tensor(tensor("count", 7, {1, 1, 1, 1}).set_data_type(DataType::Int64));
  auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias,
                              f.attributes().set_accumulation_count(count));
  outs[0]->set_output(true);
  const Error error = validation_error(f.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "accumulation count 'count' (uid 7) is in device memory; cuDNN's "
                      "BN_FINALIZE takes it by value"));
}

BOOST_AUTO_TEST_CASE(a_count_of_zero_or_below_is_refused_naming_the_value) {
  // Found by fuzzing: 0 and -5 were accepted (the mean divides by the count).
  for (const std::int64_t given : {std::int64_t{0}, std::int64_t{-5}}) {
    Finalize f;
    auto count = f.g.int64_scalar(given);
    auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias,
                                f.attributes().set_accumulation_count(count));
    outs[0]->set_output(true);
    const Error error = validation_error(f.g);
    BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
    BOOST_TEST(mentions(error, "bn_finalize 'fin': accumulation count"));
    BOOST_TEST(mentions(error, "has value " + std::to_string(given) +
                                   "; it is the number of elements per channel (N * H * W), "
                                   "positive"));
    BOOST_TEST(count->int_value().value_or(0) == given);  // the user's value stays
  }
}

BOOST_AUTO_TEST_CASE(a_missing_count_is_a_foreign_tensor_error) {
  Finalize f;
  auto outs = f.g.bn_finalize(f.sum, f.sq_sum, f.scale, f.bias,
                              f.attributes().set_accumulation_count(nullptr));
  const Error error = validation_error(f.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "input accumulation count is null"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(adalayernorm)

namespace {

// X [4, 50, 64] packed (Half, uid 1), scale and bias per sample [4, 1, 64] Float (uids 2 and 3),
// as cudnn-frontend's adaptive layernorm sample lays them out.
struct Adaptive {
  Graph g;
  TensorPtr x, scale, bias;

  Adaptive() {
    g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
    x = g.tensor(tensor("X", 1, {4, 50, 64}).set_stride({3200, 64, 1}));
    scale = g.tensor(
        tensor("scale", 2, {4, 1, 64}).set_stride({64, 64, 1}).set_data_type(DataType::Float));
    bias = g.tensor(
        tensor("bias", 3, {4, 1, 64}).set_stride({64, 64, 1}).set_data_type(DataType::Float));
  }
  dnngraph::AdaLayernormAttributes attributes(NormFwdPhase phase) {
    return dnngraph::AdaLayernormAttributes().set_name("ada").set_forward_phase(phase).set_epsilon(
        g.tensor(1e-5F));
  }
  TensorPtr statistic(const char* name, std::int64_t uid, const Dims& dims = {4, 50, 1}) {
    return g.tensor(tensor(name, uid, dims).set_data_type(DataType::Float));
  }
};

// Whether the loaded cuDNN has the adaptive mode (9.9).
bool adaptive_available() {
  return dnngraph::cudnn_offers(dnngraph::CudnnCapability::AdaptiveLayerNorm);
}

// The lowering of g where the adaptive mode is available; else checks that validate() refuses it
// as too old and gives nothing.
std::optional<LoweringSummary> lowered_where_available(Graph& g) {
  if (!adaptive_available()) {
    BOOST_TEST(validation_error(g).code == ErrorCode::VersionTooOld);
    return std::nullopt;
  }
  return require_lowered(g);
}

}  // namespace

BOOST_AUTO_TEST_CASE(training_gives_statistics_per_sample_and_row) {
  Adaptive a;
  auto [y, mean, inv_var] =
      a.g.adalayernorm(a.x, a.scale, a.bias, a.attributes(NormFwdPhase::Training));
  BOOST_TEST_REQUIRE(mean != nullptr);
  BOOST_TEST_REQUIRE(inv_var != nullptr);
  for (const TensorPtr& t : {y, mean, inv_var}) {
    t->set_output(true);
  }
  const auto s = lowered_where_available(a.g);
  if (!s) {
    return;
  }
  BOOST_TEST(s->all_finalized);
  BOOST_TEST(s->operations == (std::vector<std::string>{"adalayernorm 'ada'"}));
  BOOST_TEST(s->backend_operations == (std::vector<std::string>{"OperationNormForward"}));
  BOOST_TEST(y->dim() == a.x->dim());
  BOOST_TEST(y->stride() == a.x->stride());
  BOOST_TEST((y->data_type() == DataType::Half));
  for (const TensorPtr& t : {mean, inv_var}) {
    BOOST_TEST(t->dim() == (Dims{4, 50, 1}));
    BOOST_TEST(t->stride() == (Dims{50, 1, 1}));
    BOOST_TEST((t->data_type() == DataType::Float));
  }
}

BOOST_AUTO_TEST_CASE(inference_gives_no_statistics) {
  Adaptive a;
  auto [y, mean, inv_var] =
      a.g.adalayernorm(a.x, a.scale, a.bias, a.attributes(NormFwdPhase::Inference));
  BOOST_TEST(mean == nullptr);
  BOOST_TEST(inv_var == nullptr);
  y->set_output(true);
  const auto s = lowered_where_available(a.g);
  BOOST_TEST((!s || s->all_finalized));
}

BOOST_AUTO_TEST_CASE(below_cudnn_9_9_it_is_refused_as_too_old_naming_the_version) {
  Adaptive a;
  auto outs = a.g.adalayernorm(a.x, a.scale, a.bias, a.attributes(NormFwdPhase::Inference));
  outs[0]->set_output(true);
  auto validated = a.g.validate();
  if (adaptive_available()) {
    BOOST_TEST(validated.has_value(), (validated ? "" : validated.error().message));
    return;
  }
  BOOST_TEST_REQUIRE(!validated.has_value());
  BOOST_TEST(validated.error().code == ErrorCode::VersionTooOld);
  BOOST_TEST(mentions(validated.error(), "adalayernorm 'ada': adaptive layer normalization"));
  BOOST_TEST(mentions(validated.error(), "needs cuDNN >= 9.9.0"));
}

BOOST_AUTO_TEST_CASE(a_shared_scale_of_layernorm_dims_is_refused_naming_the_per_sample_dims) {
  Adaptive a;
  a.scale->set_dim({1, 50, 64}).set_stride({3200, 64, 1});
  auto outs = a.g.adalayernorm(a.x, a.scale, a.bias, a.attributes(NormFwdPhase::Training));
  outs[0]->set_output(true);
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code ==
             (adaptive_available() ? ErrorCode::ShapeMismatch : ErrorCode::VersionTooOld));
  if (adaptive_available()) {
    BOOST_TEST(mentions(error,
                        "adalayernorm 'ada': scale 'scale' (uid 2) has dims [1, 50, 64], expected "
                        "[4, 1, 64] for X 'X' (uid 1) of dims [4, 50, 64]"));
  }
}

BOOST_AUTO_TEST_CASE(a_rank_2_input_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {4, 64}));
  auto scale = g.tensor(tensor("scale", 2, {4, 1}).set_data_type(DataType::Float));
  auto bias = g.tensor(tensor("bias", 3, {4, 1}).set_data_type(DataType::Float));
  auto outs = g.adalayernorm(x, scale, bias,
                             dnngraph::AdaLayernormAttributes()
                                 .set_forward_phase(NormFwdPhase::Inference)
                                 .set_epsilon(g.tensor(1e-5F)));
  outs[0]->set_output(true);
  const Error error = validation_error(g);
  if (adaptive_available()) {
    BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
    BOOST_TEST(mentions(error,
                        "adalayernorm 'adalayernorm_0': input X 'X' (uid 1) has dims [4, 64] "
                        "(rank 2); it takes rank 3 to 5"));
  }
}

BOOST_AUTO_TEST_CASE(a_missing_bias_is_an_error) {
  Adaptive a;
  auto outs = a.g.adalayernorm(a.x, a.scale, nullptr, a.attributes(NormFwdPhase::Inference));
  const Error error = validation_error(a.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "adalayernorm 'ada': input bias is null"));
}

BOOST_AUTO_TEST_CASE(backward_gives_per_sample_parameter_gradients) {
  Adaptive a;
  auto dy = a.g.tensor(tensor("dY", 4, a.x->dim()).set_stride(a.x->stride()));
  auto [dx, dscale, dbias] =
      a.g.adalayernorm_backward(dy, a.x, a.scale, a.statistic("mean", 5), a.statistic("inv_var", 6),
                                dnngraph::NormBackwardAttributes().set_name("ada_bwd"));
  for (const TensorPtr& t : {dx, dscale, dbias}) {
    t->set_output(true);
  }
  const auto s = lowered_where_available(a.g);
  if (!s) {
    return;
  }
  BOOST_TEST(s->all_finalized);
  BOOST_TEST(s->operations == (std::vector<std::string>{"adalayernorm_backward 'ada_bwd'"}));
  BOOST_TEST(s->backend_operations == (std::vector<std::string>{"OperationNormBackward"}));
  BOOST_TEST(dx->dim() == a.x->dim());
  BOOST_TEST(dx->stride() == a.x->stride());
  BOOST_TEST((dx->data_type() == DataType::Half));
  for (const TensorPtr& t : {dscale, dbias}) {
    BOOST_TEST(t->dim() == (Dims{4, 1, 64}));
    BOOST_TEST(t->stride() == (Dims{64, 64, 1}));
    BOOST_TEST((t->data_type() == DataType::Float));
  }
}

BOOST_AUTO_TEST_CASE(backward_refuses_layernorm_statistics) {
  Adaptive a;
  auto dy = a.g.tensor(tensor("dY", 4, a.x->dim()).set_stride(a.x->stride()));
  auto [dx, dscale, dbias] = a.g.adalayernorm_backward(
      dy, a.x, a.scale, a.statistic("mean", 5, {4, 1, 1}), a.statistic("inv_var", 6));
  dx->set_output(true);
  const Error error = validation_error(a.g);
  if (adaptive_available()) {
    BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
    BOOST_TEST(mentions(error,
                        "adalayernorm_backward 'adalayernorm_backward_0': mean 'mean' (uid 5) "
                        "has dims [4, 1, 1], expected [4, 50, 1]"));
  }
}

BOOST_AUTO_TEST_SUITE_END()
