// Graphs and override lists a careless user or an attacker could give (issue 16): each is an
// Error from validate() or check_overrides(), never a crash, a wrapped product, a changed user
// value or a value silently taken as something else. Each case failed on ca8a263 (by a crash
// where its comment says so, otherwise by a wrong acceptance or a wrong message).
#define BOOST_TEST_MODULE hostile_graph
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/printing.hpp"

namespace {

using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<dnngraph::TensorAttributes>;
using dnngraph::DataType;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;

constexpr std::int64_t two_to_the(int power) { return std::int64_t{1} << power; }

void expect_error(const dnngraph::Result<void>& r, ErrorCode code,
                  const std::vector<std::string>& words) {
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().code == code,
             "code " << to_string(r.error().code) << ": " << r.error().message);
  for (const auto& w : words) {
    BOOST_TEST(r.error().message.find(w) != std::string::npos,
               "message lacks '" << w << "': " << r.error().message);
  }
}

// C = A x B, fp16, validated with the override flag on.
struct Matmul {
  Graph g;
  TensorPtr a, b, c;
  explicit Matmul(bool overrides = true) {
    g.set_io_data_type(DataType::Half).set_override_shape_enabled(overrides);
    a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, 64, 32}));
    b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 32, 16}));
    c = g.matmul(a, b);
    c->set_output(true).set_uid(3).set_name("C");
  }
};

// Y = ReLU(X), fp16, X [2, 8, 4].
struct Relu {
  Graph g;
  TensorPtr x, y;
  explicit Relu(
      const TensorAttributes& x_attributes = TensorAttributes().set_name("X").set_dim({2, 8, 4}),
      PointwiseAttributes attributes = PointwiseAttributes().set_mode(PointwiseMode::ReluFwd)) {
    g.set_io_data_type(DataType::Half);
    x = g.tensor(x_attributes);
    y = g.pointwise(x, std::move(attributes));
    y->set_output(true);
  }
};

// Y = X + s with a by-value scalar s, fp16, X [2, 8, 4].
struct AddScalar {
  Graph g;
  TensorPtr x, s, y;
  explicit AddScalar(TensorAttributes scalar) {
    g.set_io_data_type(DataType::Half);
    x = g.tensor(TensorAttributes().set_name("X").set_dim({2, 8, 4}));
    s = g.tensor(scalar.set_name("s"));
    y = g.pointwise(x, s, PointwiseAttributes().set_mode(PointwiseMode::Add));
    y->set_output(true);
  }
};

// Layer normalization in inference of X [4, 16, 1, 1], Float, with the given epsilon value.
dnngraph::Result<void> validate_layernorm(
    float epsilon, dnngraph::NormFwdPhase phase = dnngraph::NormFwdPhase::Inference) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  auto x = g.tensor(TensorAttributes().set_name("X").set_dim({4, 16, 1, 1}));
  auto scale = g.tensor(TensorAttributes().set_name("scale").set_dim({1, 16, 1, 1}));
  auto bias = g.tensor(TensorAttributes().set_name("bias").set_dim({1, 16, 1, 1}));
  auto outputs = g.layernorm(
      x, scale, bias,
      dnngraph::LayernormAttributes().set_name("ln").set_forward_phase(phase).set_epsilon(
          g.tensor(epsilon)));
  for (const auto& out : outputs) {
    if (out) {
      out->set_output(true);
    }
  }
  return g.validate();
}

// Y = conv(X, W), fp16, with the given convolution mode.
dnngraph::Result<void> validate_conv(dnngraph::ConvolutionMode mode) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(TensorAttributes().set_name("X").set_dim({1, 8, 10, 10}));
  auto w = g.tensor(TensorAttributes().set_name("W").set_dim({16, 8, 3, 3}));
  auto y = g.conv_fprop(
      x, w, dnngraph::ConvFpropAttributes().set_name("conv").set_convolution_mode(mode));
  y->set_output(true);
  return g.validate();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(crashes)

// On ca8a263 this case died with SIGSEGV: the message's example indexed .back() of empty dims.
BOOST_AUTO_TEST_CASE(a_reduction_of_a_scalar_without_dims_is_an_error) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  auto y = g.reduction(g.tensor(2.0F), dnngraph::ReductionAttributes().set_name("sum").set_mode(
                                           dnngraph::ReductionMode::Add));
  y->set_output(true);
  expect_error(g.validate(), ErrorCode::InvalidAttribute, {"reduction 'sum'", "has no dims"});
}

// On ca8a263 the checks read the edited dims against the strides validate() had filled in: a
// heap-buffer-overflow read under ASan, garbage without it.
BOOST_AUTO_TEST_CASE(check_overrides_after_a_rank_change_without_validate_is_an_error) {
  Matmul m;
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  m.a->set_dim({1, 1, 64, 32});
  const Dims a{1, 1, 64, 32};
  expect_error(m.g.check_overrides(std::vector<std::int64_t>{1}, std::vector<Dims>{a},
                                   std::vector<Dims>{dnngraph::packed_strides(a)}),
               ErrorCode::InvalidState, {"check_overrides", "'A'", "changed after"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(edits_after_validation)

BOOST_AUTO_TEST_CASE(check_overrides_after_a_stride_edit_without_validate_is_an_error) {
  Matmul m;
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  m.b->set_stride({1024, 1, 32});
  const Dims b{1, 32, 16};
  expect_error(m.g.check_overrides(std::vector<std::int64_t>{2}, std::vector<Dims>{b},
                                   std::vector<Dims>{Dims{1024, 1, 32}}),
               ErrorCode::InvalidState, {"'B'", "changed after"});
}

BOOST_AUTO_TEST_CASE(check_overrides_after_validating_the_edit_again_is_accepted) {
  Matmul m;
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  m.a->set_dim({1, 128, 32});
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  const Dims a{1, 128, 32}, c{1, 128, 16};
  auto r = m.g.check_overrides(
      std::vector<std::int64_t>{1, 3}, std::vector<Dims>{a, c},
      std::vector<Dims>{dnngraph::packed_strides(a), dnngraph::packed_strides(c)});
  BOOST_TEST(r.has_value(), (r ? "" : r.error().message));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(override_arithmetic)

// Strides near 2^62: stride x dim and stride x element size wrapped on ca8a263, and this
// overlapping layout was accepted.
BOOST_AUTO_TEST_CASE(an_override_whose_layout_only_fits_after_wrapping_is_refused) {
  Matmul m;
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  const std::int64_t inner = two_to_the(62);
  const Dims a{1, 2, 4}, b{1, 4, 16}, c{1, 2, 16};
  const Dims a_strides{8, inner + 16, inner};
  expect_error(m.g.check_overrides(std::vector<std::int64_t>{1, 2, 3}, std::vector<Dims>{a, b, c},
                                   std::vector<Dims>{a_strides, dnngraph::packed_strides(b),
                                                     dnngraph::packed_strides(c)}),
               ErrorCode::InvalidAttribute, {"override 0", "'A'"});
}

BOOST_AUTO_TEST_CASE(an_override_with_more_elements_than_int64_counts_is_refused) {
  Matmul m;
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  const std::int64_t big = two_to_the(32);
  const Dims a{1, big, big}, b{1, big, 16}, c{1, big, 16};
  expect_error(
      m.g.check_overrides(
          std::vector<std::int64_t>{1, 2, 3}, std::vector<Dims>{a, b, c},
          std::vector<Dims>{Dims{1, big, 1}, Dims{16 * big, 16, 1}, Dims{16 * big, 16, 1}}),
      ErrorCode::InvalidAttribute, {"override 0", "element count", "does not fit in int64"});
}

BOOST_AUTO_TEST_CASE(an_override_spanning_more_bytes_than_int64_counts_is_refused) {
  Matmul m;
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  const Dims a{1, 64, 32}, b{1, 32, 16}, c{1, 64, 16};
  // 63 rows of 2^57 elements of 2 bytes: past 2^63 bytes, though each stride fits.
  const Dims a_strides{1, two_to_the(57), 1};
  expect_error(m.g.check_overrides(std::vector<std::int64_t>{1, 2, 3}, std::vector<Dims>{a, b, c},
                                   std::vector<Dims>{a_strides, dnngraph::packed_strides(b),
                                                     dnngraph::packed_strides(c)}),
               ErrorCode::InvalidAttribute, {"override 0", "more bytes than int64"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(user_values_stay)

BOOST_AUTO_TEST_CASE(a_failed_validation_keeps_the_strides_the_user_gave_a_scalar) {
  AddScalar graph(TensorAttributes().set_value(2.0F).set_stride({5, 5, 5}));
  graph.y->set_dim({9, 9, 9});  // Y cannot have these dims: validation fails after settling s
  BOOST_TEST_REQUIRE(!graph.g.validate().has_value());
  BOOST_TEST(graph.s->stride() == (Dims{5, 5, 5}));
  BOOST_TEST(graph.s->dim().empty());
}

BOOST_AUTO_TEST_CASE(scalar_strides_of_another_rank_than_the_node_gives_are_refused) {
  AddScalar graph(TensorAttributes().set_value(2.0F).set_stride({1, 1}));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute,
               {"'s'", "[1, 1]", "rank 2", "takes rank 3"});
  BOOST_TEST(graph.s->stride() == (Dims{1, 1}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(layouts)

BOOST_AUTO_TEST_CASE(overlapping_input_strides_are_refused) {
  Relu graph(TensorAttributes().set_name("X").set_dim({2, 8, 4}).set_stride({32, 2, 1}));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute, {"'X'", "overlap"});
}

BOOST_AUTO_TEST_CASE(overlapping_output_strides_are_refused) {
  Relu graph;
  graph.y->set_stride({32, 1, 1});
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute, {"overlap"});
}

BOOST_AUTO_TEST_CASE(an_input_spanning_more_bytes_than_int64_counts_is_refused) {
  Relu graph(
      TensorAttributes().set_name("X").set_dim({2, 8, 4}).set_stride({1, two_to_the(60), 4}));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute, {"'X'", "more bytes than int64"});
}

BOOST_AUTO_TEST_CASE(a_tensor_of_rank_nine_is_refused_with_cudnns_limit) {
  Relu graph(TensorAttributes().set_name("X").set_dim(Dims(9, 2)));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute, {"'X'", "rank 9", "1 to 8"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(float_attributes)

BOOST_AUTO_TEST_CASE(a_negative_epsilon_is_refused) {
  expect_error(validate_layernorm(-1e-5F), ErrorCode::InvalidAttribute,
               {"layernorm 'ln'", "epsilon", "not negative"});
}

BOOST_AUTO_TEST_CASE(a_nan_epsilon_is_refused) {
  expect_error(validate_layernorm(std::numeric_limits<float>::quiet_NaN()),
               ErrorCode::InvalidAttribute, {"layernorm 'ln'", "epsilon", "finite"});
}

BOOST_AUTO_TEST_CASE(a_nan_swish_beta_is_refused) {
  Relu graph(TensorAttributes().set_name("X").set_dim({2, 8, 4}),
             PointwiseAttributes()
                 .set_name("swish")
                 .set_mode(PointwiseMode::SwishFwd)
                 .set_swish_beta(std::numeric_limits<double>::quiet_NaN()));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute, {"'swish'", "swish beta"});
}

BOOST_AUTO_TEST_CASE(an_infinite_swish_beta_is_refused) {
  Relu graph(TensorAttributes().set_name("X").set_dim({2, 8, 4}),
             PointwiseAttributes()
                 .set_name("swish")
                 .set_mode(PointwiseMode::SwishFwd)
                 .set_swish_beta(std::numeric_limits<double>::infinity()));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute, {"'swish'", "swish beta"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(enums_outside_their_enumerators)

BOOST_AUTO_TEST_CASE(a_tensor_data_type_outside_the_enumerators_is_refused) {
  Relu graph(TensorAttributes().set_name("X").set_dim({2, 8, 4}).set_data_type(DataType{77}));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute, {"'X'", "77", "DataType"});
}

BOOST_AUTO_TEST_CASE(a_graph_compute_type_outside_the_enumerators_is_refused) {
  Relu graph;
  graph.g.set_compute_data_type(DataType{77});
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute,
               {"compute data type", "77", "DataType"});
}

BOOST_AUTO_TEST_CASE(a_pointwise_mode_outside_the_enumerators_is_refused) {
  Relu graph(TensorAttributes().set_name("X").set_dim({2, 8, 4}),
             PointwiseAttributes().set_name("pw").set_mode(PointwiseMode{200}));
  expect_error(graph.g.validate(), ErrorCode::InvalidAttribute,
               {"pointwise 'pw'", "mode", "200", "PointwiseMode"});
}

BOOST_AUTO_TEST_CASE(a_heuristic_mode_outside_the_enumerators_is_refused_at_build) {
  Relu graph;
  expect_error(
      graph.g.build(dnngraph::Handle{}, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode{9}}),
      ErrorCode::InvalidAttribute, {"heuristic mode 1", "9"});
}

BOOST_AUTO_TEST_CASE(a_convolution_mode_outside_the_enumerators_is_refused) {
  expect_error(validate_conv(dnngraph::ConvolutionMode{9}), ErrorCode::InvalidAttribute,
               {"conv_fprop 'conv'", "convolution mode", "9", "ConvolutionMode"});
}

BOOST_AUTO_TEST_CASE(a_reduction_mode_outside_the_enumerators_is_refused) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  auto x = g.tensor(TensorAttributes().set_name("X").set_dim({2, 8, 4}));
  auto y = g.reduction(
      x, dnngraph::ReductionAttributes().set_name("r").set_mode(dnngraph::ReductionMode{50}));
  y->set_output(true).set_dim({2, 8, 1});
  expect_error(g.validate(), ErrorCode::InvalidAttribute,
               {"reduction 'r'", "mode", "50", "ReductionMode"});
}

BOOST_AUTO_TEST_CASE(a_norm_phase_outside_the_enumerators_is_refused) {
  expect_error(validate_layernorm(1e-5F, dnngraph::NormFwdPhase{7}), ErrorCode::InvalidAttribute,
               {"layernorm 'ln'", "forward phase", "7", "NormFwdPhase"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(overrides_need_the_flag)

BOOST_AUTO_TEST_CASE(check_overrides_before_build_without_the_override_flag_is_an_error) {
  Matmul m(false);
  BOOST_TEST_REQUIRE(m.g.validate().has_value());
  const Dims a{1, 64, 32};
  expect_error(m.g.check_overrides(std::vector<std::int64_t>{1}, std::vector<Dims>{a},
                                   std::vector<Dims>{dnngraph::packed_strides(a)}),
               ErrorCode::InvalidState, {"set_override_shape_enabled"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(messages)

BOOST_AUTO_TEST_CASE(an_unnamed_input_is_named_by_the_node_that_reads_it) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(TensorAttributes().set_dim({1, 64, 0}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_dim({1, 32, 16}));
  g.matmul(a, b)->set_output(true);
  const auto r = g.validate();
  expect_error(r, ErrorCode::InvalidAttribute, {"input A of node #0 (matmul 'matmul_0')"});
  BOOST_TEST(r.error().message.find("''") == std::string::npos, r.error().message);
}

BOOST_AUTO_TEST_SUITE_END()
