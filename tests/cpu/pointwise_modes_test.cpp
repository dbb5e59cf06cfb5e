// Every PointwiseMode lowers to a finalized backend operation without a GPU; arity, data types
// per mode family and the Boolean output of comparisons are checked at validate().
#define BOOST_TEST_MODULE pointwise_modes
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/pointwise_reference.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using dnngraph::test::all_pointwise_modes;
using dnngraph::test::family;
using dnngraph::test::PointwiseFamily;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

PointwiseAttributes pointwise(std::string name, PointwiseMode mode) {
  return PointwiseAttributes().set_name(std::move(name)).set_mode(mode);
}

// Inputs of the mode's arity with the types its family takes, Y [2, 3, 40] non-virtual.
// Numeric inputs have `type`; the second input broadcasts as [2, 1, 40] (one dim: see the
// comparison broadcast rule in detail/nodes/pointwise.cpp).
TensorPtr add_mode(Graph& g, PointwiseMode mode, DataType type) {
  const int n = dnngraph::arity(mode);
  const bool logical = family(mode) == PointwiseFamily::Logical;
  std::vector<TensorPtr> in;
  for (int i = 0; i < n; ++i) {
    const bool boolean = logical || (mode == PointwiseMode::BinarySelect && i == 2);
    const Dims dims = i == 1 ? Dims{2, 1, 40} : Dims{2, 3, 40};
    in.push_back(g.tensor(TensorAttributes()
                              .set_name("in" + std::to_string(i))
                              .set_uid(i + 1)
                              .set_dim(dims)
                              .set_data_type(boolean ? DataType::Boolean : type)));
  }
  const auto attributes = pointwise("op", mode);
  TensorPtr y = n == 1   ? g.pointwise(in[0], attributes)
                : n == 2 ? g.pointwise(in[0], in[1], attributes)
                         : g.pointwise(in[0], in[1], in[2], attributes);
  y->set_output(true).set_uid(10);
  return y;
}

void check_every_mode_lowers(DataType type) {
  for (const PointwiseMode mode : all_pointwise_modes) {
    BOOST_TEST_CONTEXT("mode " << to_string(mode) << ", " << to_string(type)) {
      Graph g;
      g.set_io_data_type(type).set_compute_data_type(DataType::Float);
      add_mode(g, mode, type);
      const auto lowered = g.lower();
      BOOST_TEST(lowered.has_value(), (lowered ? "" : lowered.error().message));
      if (lowered) {
        BOOST_TEST(lowered->operation_count == 1U);
        BOOST_TEST(lowered->all_finalized);
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_mode_has_its_own_name) {
  std::set<std::string_view> names;
  for (const PointwiseMode mode : all_pointwise_modes) {
    BOOST_TEST(to_string(mode) != "Unknown");
    names.insert(to_string(mode));
  }
  BOOST_TEST(names.size() == std::size(all_pointwise_modes));
  BOOST_TEST(names.size() == 49U);
}

BOOST_AUTO_TEST_CASE(arity_is_one_for_unary_two_for_binary_and_backward_three_for_select) {
  for (const PointwiseMode mode : all_pointwise_modes) {
    int expected = 1;
    switch (family(mode)) {
      case PointwiseFamily::Arithmetic:
      case PointwiseFamily::Comparison:
      case PointwiseFamily::ActivationBwd: expected = 2; break;
      case PointwiseFamily::Logical: expected = mode == PointwiseMode::LogicalNot ? 1 : 2; break;
      case PointwiseFamily::Select: expected = 3; break;
      default: break;
    }
    BOOST_TEST(dnngraph::arity(mode) == expected, "mode " << to_string(mode));
  }
}

BOOST_AUTO_TEST_CASE(every_mode_lowers_in_float) { check_every_mode_lowers(DataType::Float); }

BOOST_AUTO_TEST_CASE(every_mode_lowers_in_half) { check_every_mode_lowers(DataType::Half); }

BOOST_AUTO_TEST_CASE(every_mode_lowers_in_bfloat16) { check_every_mode_lowers(DataType::BFloat16); }

BOOST_AUTO_TEST_CASE(comparison_output_is_boolean_when_unset) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_intermediate_data_type(DataType::Float);
  const TensorPtr y = add_mode(g, PointwiseMode::CmpGt, DataType::Half);
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST_REQUIRE(y->data_type().has_value());
  BOOST_TEST(*y->data_type() == DataType::Boolean);
}

BOOST_AUTO_TEST_CASE(virtual_comparison_output_is_boolean_not_the_intermediate_type) {
  Graph g;
  g.set_io_data_type(DataType::Float).set_intermediate_data_type(DataType::Float);
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({2, 3, 40}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({2, 1, 40}));
  auto mask = g.pointwise(x, b, pointwise("gt", PointwiseMode::CmpGt));
  auto y = g.pointwise(x, b, mask, pointwise("select", PointwiseMode::BinarySelect));
  y->set_output(true).set_uid(3);
  const auto lowered = g.lower();
  BOOST_TEST_REQUIRE(lowered.has_value(), (lowered ? "" : lowered.error().message));
  BOOST_TEST(*mask->data_type() == DataType::Boolean);
  BOOST_TEST(*y->data_type() == DataType::Float);
  BOOST_TEST(lowered->operation_count == 2U);
}

BOOST_AUTO_TEST_CASE(comparison_output_keeps_a_data_type_the_caller_set) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  const TensorPtr y = add_mode(g, PointwiseMode::CmpEq, DataType::Float);
  y->set_data_type(DataType::Float);
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST(*y->data_type() == DataType::Float);
}

BOOST_AUTO_TEST_CASE(logical_output_is_boolean_when_unset) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  const TensorPtr y = add_mode(g, PointwiseMode::LogicalAnd, DataType::Half);
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST(*y->data_type() == DataType::Boolean);
}

BOOST_AUTO_TEST_CASE(logical_mode_rejects_a_float_input_naming_node_and_tensor) {
  Graph g;
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({1, 1, 8}).set_data_type(
      DataType::Boolean));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1, 8}).set_data_type(
      DataType::Float));
  g.pointwise(x, b, pointwise("and", PointwiseMode::LogicalAnd))->set_output(true).set_uid(3);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "pointwise 'and'"));
  BOOST_TEST(mentions(error, "'B' (uid 2)"));
  BOOST_TEST(mentions(error, "data type Float"));
  BOOST_TEST(mentions(error, "mode LogicalAnd takes it as Boolean"));
}

BOOST_AUTO_TEST_CASE(arithmetic_mode_rejects_a_boolean_input) {
  Graph g;
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({1, 1, 8}).set_data_type(
      DataType::Boolean));
  g.pointwise(x, pointwise("exp", PointwiseMode::Exp))->set_output(true).set_uid(2);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "pointwise 'exp'"));
  BOOST_TEST(mentions(error, "'X' (uid 1)"));
  BOOST_TEST(mentions(error, "mode Exp takes Half, BFloat16, Float"));
}

BOOST_AUTO_TEST_CASE(binary_select_rejects_a_predicate_that_is_not_boolean) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({1, 1, 8}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1, 8}));
  auto t = g.tensor(TensorAttributes().set_name("T").set_uid(3).set_dim({1, 1, 8}));
  g.pointwise(x, b, t, pointwise("select", PointwiseMode::BinarySelect))
      ->set_output(true)
      .set_uid(4);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "pointwise 'select'"));
  BOOST_TEST(mentions(error, "T 'T' (uid 3) has data type Half"));
  BOOST_TEST(mentions(error, "takes it as Boolean"));
}

BOOST_AUTO_TEST_CASE(binary_select_with_two_inputs_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({1, 1, 8}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1, 8}));
  g.pointwise(x, b, pointwise("select", PointwiseMode::BinarySelect))->set_output(true).set_uid(3);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "mode BinarySelect takes 3 input(s), given 2"));
}

BOOST_AUTO_TEST_CASE(binary_mode_with_three_inputs_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({1, 1, 8}));
  g.pointwise(x, x, x, pointwise("add3", PointwiseMode::Add))->set_output(true).set_uid(2);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "pointwise 'add3'"));
  BOOST_TEST(mentions(error, "mode Add takes 2 input(s), given 3"));
}

BOOST_AUTO_TEST_CASE(backward_mode_with_one_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto dy = g.tensor(TensorAttributes().set_name("dY").set_uid(1).set_dim({1, 1, 8}));
  g.pointwise(dy, pointwise("drelu", PointwiseMode::ReluBwd))->set_output(true).set_uid(2);
  const Error error = validation_error(g);
  BOOST_TEST(mentions(error, "mode ReluBwd takes 2 input(s), given 1"));
}

BOOST_AUTO_TEST_CASE(backward_mode_names_dy_in_a_type_error) {
  Graph g;
  auto dy =
      g.tensor(TensorAttributes().set_name("grad").set_uid(1).set_dim({1, 1, 8}).set_data_type(
          DataType::Boolean));
  auto x = g.tensor(
      TensorAttributes().set_name("X").set_uid(2).set_dim({1, 1, 8}).set_data_type(DataType::Half));
  g.pointwise(dy, x, pointwise("dgelu", PointwiseMode::GeluBwd))->set_output(true).set_uid(3);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "dY 'grad' (uid 1) has data type Boolean"));
}

BOOST_AUTO_TEST_CASE(backward_output_takes_the_broadcast_shape_of_dy_and_x) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto dy = g.tensor(TensorAttributes().set_name("dY").set_uid(1).set_dim({2, 3, 40}));
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(2).set_dim({2, 3, 40}));
  auto dx = g.pointwise(dy, x, pointwise("dswish", PointwiseMode::SwishBwd));
  dx->set_output(true).set_uid(3);
  const auto lowered = g.lower();
  BOOST_TEST_REQUIRE(lowered.has_value(), (lowered ? "" : lowered.error().message));
  BOOST_TEST(dx->dim() == (Dims{2, 3, 40}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(select_predicate_that_does_not_broadcast_is_rejected_by_name) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({2, 3, 40}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1, 40}));
  auto t = g.tensor(TensorAttributes()
                        .set_name("T")
                        .set_uid(3)
                        .set_dim({2, 5, 40})
                        .set_data_type(DataType::Boolean));
  g.pointwise(x, b, t, pointwise("select", PointwiseMode::BinarySelect))
      ->set_output(true)
      .set_uid(4);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "pointwise 'select'"));
  BOOST_TEST(mentions(error, "'T' (uid 3) is 5"));
  BOOST_TEST(mentions(error, "equal or one of them 1"));
}

BOOST_AUTO_TEST_CASE(select_output_broadcasts_all_three_inputs) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  // Rank 4: at rank 3 a graph of pointwise nodes alone refuses two-dim broadcasts.
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim({1, 2, 1, 40}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1, 1, 40}));
  auto t = g.tensor(TensorAttributes()
                        .set_name("T")
                        .set_uid(3)
                        .set_dim({1, 1, 3, 1})
                        .set_data_type(DataType::Boolean));
  auto y = g.pointwise(x, b, t, pointwise("select", PointwiseMode::BinarySelect));
  y->set_output(true).set_uid(4);
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST(y->dim() == (Dims{1, 2, 3, 40}), boost::test_tools::per_element());
}

// The GPU test's reference for each backward mode is dY times the derivative of its forward
// mode (central difference in double, h = 1e-5), away from the kink at 0.
BOOST_AUTO_TEST_CASE(backward_references_are_derivatives_of_the_forward_ones) {
  using dnngraph::test::pointwise_reference;
  constexpr std::pair<PointwiseMode, PointwiseMode> pairs[] = {
      {PointwiseMode::ReluBwd, PointwiseMode::ReluFwd},
      {PointwiseMode::TanhBwd, PointwiseMode::TanhFwd},
      {PointwiseMode::SigmoidBwd, PointwiseMode::SigmoidFwd},
      {PointwiseMode::EluBwd, PointwiseMode::EluFwd},
      {PointwiseMode::GeluBwd, PointwiseMode::GeluFwd},
      {PointwiseMode::GeluApproxTanhBwd, PointwiseMode::GeluApproxTanhFwd},
      {PointwiseMode::SoftplusBwd, PointwiseMode::SoftplusFwd},
      {PointwiseMode::SwishBwd, PointwiseMode::SwishFwd}};
  constexpr double h = 1e-5;
  constexpr double dy = 0.75;
  for (const auto& [bwd, fwd] : pairs) {
    for (double x = -3.95; x < 4; x += 0.1) {
      const double slope =
          (pointwise_reference(fwd, x + h) - pointwise_reference(fwd, x - h)) / (2 * h);
      BOOST_TEST(pointwise_reference(bwd, dy, x) == dy * slope, boost::test_tools::tolerance(1e-6));
    }
  }
}

// The two GELU forms differ by less than the GPU test's tolerance for them, so each mode is
// compared with its own formula there; this pins how far apart they are.
BOOST_AUTO_TEST_CASE(gelu_tanh_form_stays_within_1e_3_of_the_erf_form) {
  double worst = 0;
  for (double x = -6; x <= 6; x += 0.01) {
    worst = std::max(
        worst, std::fabs(dnngraph::test::pointwise_reference(PointwiseMode::GeluFwd, x) -
                         dnngraph::test::pointwise_reference(PointwiseMode::GeluApproxTanhFwd, x)));
  }
  BOOST_TEST_MESSAGE("max |gelu_erf - gelu_tanh| on [-6, 6]: " << worst);
  BOOST_TEST(worst < 1e-3);
  BOOST_TEST(worst > 1e-5);
}

// Inputs the GPU test draws stay in each mode's domain after rounding to Half.
BOOST_AUTO_TEST_CASE(drawn_operands_stay_in_each_modes_domain) {
  std::mt19937 rng(7);
  for (const PointwiseMode mode : all_pointwise_modes) {
    for (const DataType type : {DataType::Half, DataType::Float}) {
      const auto x = dnngraph::test::draw(type, dnngraph::test::x_range(mode), 240, rng);
      const auto b = dnngraph::test::draw(type, dnngraph::test::b_range(mode), 40, rng);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double y = dnngraph::test::pointwise_reference(mode, x[i], b[i % b.size()]);
        BOOST_TEST(std::isfinite(y), "mode " << to_string(mode) << " x " << x[i]);
      }
    }
  }
}

// The GPU test's tolerances admit a result computed in fp32 and rounded to the output type (a
// CPU stand-in for the device, with Mod as x - b * trunc(x / b) in fp32), for the same draws.
BOOST_AUTO_TEST_CASE(tolerances_admit_an_fp32_result_rounded_to_the_output_type) {
  std::mt19937 rng(11);
  for (const PointwiseMode mode : all_pointwise_modes) {
    for (const DataType type : {DataType::Half, DataType::Float}) {
      auto x = dnngraph::test::draw(type, dnngraph::test::x_range(mode), 240, rng);
      const auto b = dnngraph::test::draw(type, dnngraph::test::b_range(mode), 40, rng);
      if (mode == PointwiseMode::Mod) {
        dnngraph::test::keep_off_mod_jumps(type, x, b);
      }
      std::vector<float> got;
      std::vector<double> expected;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double e = dnngraph::test::pointwise_reference(mode, x[i], b[i % b.size()]);
        float fp32 = static_cast<float>(e);
        if (mode == PointwiseMode::Mod) {
          const float q = std::trunc(x[i] / b[i % b.size()]);
          fp32 = x[i] - b[i % b.size()] * q;
        }
        got.push_back(dnngraph::test::round_to(type, fp32));
        expected.push_back(e);
      }
      const auto comparison =
          dnngraph::test::compare(got, expected, dnngraph::test::pointwise_tolerance(mode, type));
      BOOST_TEST(comparison.passed(),
                 to_string(mode) << " " << to_string(type) << ": " << comparison.describe());
    }
  }
}
