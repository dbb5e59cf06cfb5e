// Graph::lower() turns a valid graph into finalized cuDNN backend tensor and operation
// descriptors without a GPU, and returns the validation error for an invalid one.
#define BOOST_TEST_MODULE lowering
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::MatmulAttributes;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;

using namespace dnngraph::test;

namespace {

PointwiseAttributes pointwise(std::string name, PointwiseMode mode) {
  return PointwiseAttributes().set_name(std::move(name)).set_mode(mode);
}

// Y = ReLU(A x B + bias) in BFloat16 with Float accumulation, as in docs/examples.
struct MatmulBiasRelu {
  Graph g;
  std::shared_ptr<TensorAttributes> y;

  MatmulBiasRelu() {
    g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
    auto a = g.tensor(tensor("A", {4, 64, 32}).set_uid(1));
    auto b = g.tensor(tensor("B", {4, 32, 16}).set_uid(2));
    auto bias = g.tensor(tensor("bias", {1, 1, 16}).set_uid(4));
    auto c = g.matmul(a, b, MatmulAttributes().set_name("mm"));
    auto d = g.pointwise(c, bias, pointwise("bias_add", PointwiseMode::Add));
    y = g.pointwise(d, pointwise("relu", PointwiseMode::ReluFwd));
    y->set_output(true).set_uid(3);
  }
};

constexpr PointwiseMode unary_modes[] = {PointwiseMode::ReluFwd,    PointwiseMode::GeluFwd,
                                         PointwiseMode::SigmoidFwd, PointwiseMode::TanhFwd,
                                         PointwiseMode::SwishFwd,   PointwiseMode::Identity};
constexpr PointwiseMode binary_modes[] = {PointwiseMode::Add, PointwiseMode::Sub,
                                          PointwiseMode::Mul, PointwiseMode::Div,
                                          PointwiseMode::Max, PointwiseMode::Min};

}  // namespace

BOOST_AUTO_TEST_CASE(matmul_bias_relu_lowers_to_six_tensors_and_three_operations) {
  MatmulBiasRelu graph;
  const LoweringSummary summary = require_lowered(graph.g);
  BOOST_TEST(summary.tensor_count == 6U);
  BOOST_TEST(summary.operation_count == 3U);
  BOOST_TEST(summary.all_finalized);
}

BOOST_AUTO_TEST_CASE(lowering_names_the_operations_in_graph_order) {
  MatmulBiasRelu graph;
  const LoweringSummary summary = require_lowered(graph.g);
  const std::vector<std::string> expected{"matmul 'mm'", "pointwise 'bias_add'",
                                          "pointwise 'relu'"};
  BOOST_TEST(summary.operations == expected);
}

BOOST_AUTO_TEST_CASE(lowering_validates_first_and_settles_the_graph) {
  MatmulBiasRelu graph;
  (void)require_lowered(graph.g);
  BOOST_TEST(graph.y->dim() == (Dims{4, 64, 16}));
  BOOST_TEST(graph.y->stride() == (Dims{1024, 16, 1}));
}

BOOST_AUTO_TEST_CASE(matmul_alone_lowers) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", {2, 8, 4}));
  auto b = g.tensor(tensor("B", {2, 4, 3}));
  g.matmul(a, b)->set_output(true);
  const LoweringSummary summary = require_lowered(g);
  BOOST_TEST(summary.tensor_count == 3U);
  BOOST_TEST(summary.operation_count == 1U);
  BOOST_TEST(summary.all_finalized);
}

BOOST_AUTO_TEST_CASE(matmul_with_broadcast_batch_lowers) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", {4, 8, 16}));
  auto b = g.tensor(tensor("B", {1, 16, 5}));
  g.matmul(a, b)->set_output(true);
  BOOST_TEST(require_lowered(g).all_finalized);
}

BOOST_AUTO_TEST_CASE(every_unary_pointwise_mode_lowers) {
  for (const PointwiseMode mode : unary_modes) {
    BOOST_TEST_CONTEXT("mode " << dnngraph::to_string(mode)) {
      Graph g;
      g.set_io_data_type(DataType::Float);
      auto x = g.tensor(tensor("X", {2, 8, 4}));
      g.pointwise(x, pointwise("op", mode))->set_output(true);
      auto lowered = g.lower();
      BOOST_TEST_REQUIRE(lowered.has_value(), (lowered ? "" : lowered.error().message));
      BOOST_TEST(lowered->operation_count == 1U);
      BOOST_TEST(lowered->all_finalized);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_binary_pointwise_mode_lowers) {
  for (const PointwiseMode mode : binary_modes) {
    BOOST_TEST_CONTEXT("mode " << dnngraph::to_string(mode)) {
      Graph g;
      g.set_io_data_type(DataType::Float);
      auto x = g.tensor(tensor("X", {2, 8, 4}));
      auto b = g.tensor(tensor("B", {2, 1, 4}));
      g.pointwise(x, b, pointwise("op", mode))->set_output(true);
      auto lowered = g.lower();
      BOOST_TEST_REQUIRE(lowered.has_value(), (lowered ? "" : lowered.error().message));
      BOOST_TEST(lowered->tensor_count == 3U);
      BOOST_TEST(lowered->all_finalized);
    }
  }
}

BOOST_AUTO_TEST_CASE(swish_with_a_beta_lowers) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", {2, 8, 4}));
  g.pointwise(x, pointwise("silu", PointwiseMode::SwishFwd).set_swish_beta(1.5))->set_output(true);
  BOOST_TEST(require_lowered(g).all_finalized);
}

BOOST_AUTO_TEST_CASE(lowering_an_invalid_graph_returns_the_validation_error) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", {1, 8, 4}).set_uid(1));
  auto b = g.tensor(tensor("B", {1, 5, 2}).set_uid(2));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  auto validated = g.validate();
  BOOST_TEST_REQUIRE(!validated.has_value());
  auto lowered = g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::ShapeMismatch);
  BOOST_TEST(lowered.error().code == validated.error().code);
  BOOST_TEST(lowered.error().message == validated.error().message);
}

BOOST_AUTO_TEST_CASE(lowering_a_graph_with_a_foreign_tensor_returns_foreign_tensor) {
  Graph g;
  Graph other;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", {1, 8, 4}));
  auto foreign = other.tensor(tensor("foreign", {1, 4, 2}));
  g.matmul(a, foreign);
  auto lowered = g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::ForeignTensor);
  BOOST_TEST(lowered.error().message.find("'foreign'") != std::string::npos,
             lowered.error().message);
}
