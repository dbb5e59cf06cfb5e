// Reduction nodes without a GPU: reduction() rejects each kind of bad input with its ErrorCode and
// a message that names the node, tensor, dim, expected and given values; keeps the Y dims the
// user set and gives them packed strides and a data type; and lowers, alone and after a matmul,
// to finalized cuDNN descriptors in every mode.
#define BOOST_TEST_MODULE reduction
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
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::MatmulAttributes;
using dnngraph::ReductionAttributes;
using dnngraph::ReductionMode;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

ReductionAttributes sum(std::string name = "red") {
  return ReductionAttributes().set_name(std::move(name)).set_mode(ReductionMode::Add);
}

// A Half graph with X [4, 32, 64] (uid 1); reduce() adds the node and names Y (uid 2).
struct Reduce {
  Graph g;
  TensorPtr x;

  Reduce() {
    g.set_io_data_type(DataType::Half);
    x = g.tensor(tensor("X", 1, {4, 32, 64}));
  }
  TensorPtr reduce(Dims y_dims, ReductionAttributes attributes = sum()) {
    auto y = g.reduction(x, std::move(attributes));
    y->set_name("Y").set_uid(2).set_output(true);
    if (!y_dims.empty()) {
      y->set_dim(std::move(y_dims));
    }
    return y;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(reduction_validation)

BOOST_AUTO_TEST_CASE(a_reduction_without_a_mode_is_rejected) {
  Reduce r;
  r.reduce({4, 32, 1}, ReductionAttributes().set_name("red"));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "reduction 'red'"));
  BOOST_TEST(mentions(error, "no mode set"));
}

BOOST_AUTO_TEST_CASE(y_without_dims_is_rejected_asking_for_them) {
  Reduce r;
  r.reduce({});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "reduction 'red'"));
  BOOST_TEST(mentions(error, "Y 'Y'"));
  BOOST_TEST(mentions(error, "has no dims"));
  BOOST_TEST(mentions(error, "[4, 32, 64]"));
  BOOST_TEST(mentions(error, "[4, 32, 1]"));
}

BOOST_AUTO_TEST_CASE(y_of_another_rank_is_rejected_naming_both_ranks) {
  Reduce r;
  r.reduce({4, 32});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "reduction 'red'"));
  BOOST_TEST(mentions(error, "[4, 32] (rank 2)"));
  BOOST_TEST(mentions(error, "[4, 32, 64] (rank 3)"));
}

BOOST_AUTO_TEST_CASE(a_y_dim_that_is_neither_x_dim_nor_1_is_rejected_naming_the_dim) {
  Reduce r;
  r.reduce({4, 16, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 1 of Y 'Y' (uid 2) is 16"));
  BOOST_TEST(mentions(error, "dim 1 of X 'X' (uid 1) is 32"));
}

BOOST_AUTO_TEST_CASE(a_y_dim_larger_than_the_x_dim_is_rejected) {
  Reduce r;
  r.reduce({8, 32, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 0 of Y"));
  BOOST_TEST(mentions(error, "is 8"));
}

BOOST_AUTO_TEST_CASE(y_with_the_dims_of_x_is_rejected_as_reducing_nothing) {
  Reduce r;
  r.reduce({4, 32, 64});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "nothing is reduced"));
  BOOST_TEST(mentions(error, "[4, 32, 64]"));
}

BOOST_AUTO_TEST_CASE(an_int32_input_is_rejected_naming_its_type) {
  Reduce r;
  r.x->set_data_type(DataType::Int32);
  r.reduce({4, 32, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "input X 'X' (uid 1) has data type Int32"));
  BOOST_TEST(mentions(error, "Half, BFloat16 or Float"));
}

BOOST_AUTO_TEST_CASE(an_fp8_input_is_rejected) {
  Reduce r;
  r.x->set_data_type(DataType::Fp8E4M3);
  r.reduce({4, 32, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "Fp8E4M3"));
}

BOOST_AUTO_TEST_CASE(a_half_compute_type_is_rejected) {
  Reduce r;
  r.reduce({4, 32, 1}, sum().set_compute_data_type(DataType::Half));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "compute data type Half"));
  BOOST_TEST(mentions(error, "Float"));
}

BOOST_AUTO_TEST_CASE(the_graph_compute_type_applies_when_the_node_sets_none) {
  Reduce r;
  r.g.set_compute_data_type(DataType::BFloat16);
  r.reduce({4, 32, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "compute data type BFloat16"));
}

BOOST_AUTO_TEST_CASE(an_int32_output_is_rejected_naming_its_type) {
  Reduce r;
  r.reduce({4, 32, 1})->set_data_type(DataType::Int32);
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "output Y 'Y' (uid 2) has data type Int32"));
}

BOOST_AUTO_TEST_CASE(a_null_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.reduction(nullptr, sum());
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "reduction 'red': input X is null"));
}

BOOST_AUTO_TEST_CASE(an_input_of_another_graph_is_rejected) {
  Graph other;
  auto x = other.tensor(tensor("X", 1, {4, 32, 64}));
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.reduction(x, sum());
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "does not belong to this graph"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reduction_shapes)

BOOST_AUTO_TEST_CASE(y_keeps_its_dims_and_gets_packed_strides) {
  Reduce r;
  auto y = r.reduce({4, 1, 64});
  require_valid(r.g);
  BOOST_TEST(y->dim() == (Dims{4, 1, 64}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{64, 64, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(reducing_several_dims_gives_packed_strides) {
  Reduce r;
  auto y = r.reduce({4, 1, 1});
  require_valid(r.g);
  BOOST_TEST(y->stride() == (Dims{1, 1, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(strides_the_user_set_on_y_are_kept) {
  Reduce r;
  auto y = r.reduce({4, 32, 1});
  y->set_stride({1, 4, 1});
  require_valid(r.g);
  BOOST_TEST(y->stride() == (Dims{1, 4, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_non_virtual_y_gets_the_io_type) {
  Reduce r;
  auto y = r.reduce({4, 32, 1});
  require_valid(r.g);
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Half);
}

BOOST_AUTO_TEST_CASE(a_y_data_type_the_user_set_is_kept) {
  Reduce r;
  auto y = r.reduce({4, 32, 1});
  y->set_data_type(DataType::Float);
  require_valid(r.g);
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Float);
}

BOOST_AUTO_TEST_CASE(an_unnamed_reduction_is_named_by_its_position) {
  Reduce r;
  auto y = r.g.reduction(r.x, ReductionAttributes().set_mode(ReductionMode::Max));
  y->set_output(true).set_dim({4, 32, 1});
  require_valid(r.g);
  BOOST_TEST(y->name() == "reduction_0::Y");
}

BOOST_AUTO_TEST_CASE(revalidation_keeps_the_user_dims_of_y) {
  Reduce r;
  auto y = r.reduce({1, 32, 1});
  require_valid(r.g);
  require_valid(r.g);
  BOOST_TEST(y->dim() == (Dims{1, 32, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(execute_time_overrides_are_refused_naming_the_node) {
  Reduce r;
  r.g.set_override_shape_enabled(true);
  r.reduce({4, 32, 1});
  require_valid(r.g);
  const std::vector<std::int64_t> uids{1, 2};
  const std::vector<Dims> shapes{{2, 32, 64}, {2, 32, 1}};
  const std::vector<Dims> strides{{2048, 64, 1}, {32, 1, 1}};
  auto checked = r.g.check_overrides(uids, shapes, strides);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST_MESSAGE(checked.error().message);
  BOOST_TEST(mentions(checked.error(), "reduction 'red'"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reduction_lowering)

BOOST_AUTO_TEST_CASE(a_reduction_lowers_to_two_tensors_and_one_operation) {
  Reduce r;
  r.reduce({4, 32, 1});
  const LoweringSummary summary = require_lowered(r.g);
  BOOST_TEST(summary.tensor_count == 2U);
  BOOST_TEST(summary.operation_count == 1U);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST_REQUIRE(summary.operations.size() == 1U);
  BOOST_TEST(summary.operations[0] == "reduction 'red'");
}

BOOST_AUTO_TEST_CASE(add_mul_min_max_and_amax_lower_to_finalized_descriptors) {
  for (const ReductionMode mode : {ReductionMode::Add, ReductionMode::Mul, ReductionMode::Min,
                                   ReductionMode::Max, ReductionMode::Amax}) {
    BOOST_TEST_CONTEXT("mode " << dnngraph::to_string(mode)) {
      Reduce r;
      r.reduce({4, 1, 1}, ReductionAttributes().set_name("red").set_mode(mode));
      const LoweringSummary summary = require_lowered(r.g);
      BOOST_TEST(summary.all_finalized);
    }
  }
}

// cuDNN 9.19 refuses these at the Reduction descriptor's finalize (CUDNN_STATUS_NOT_SUPPORTED);
// a later cuDNN may take them. Either way lower() says which mode and which cuDNN.
BOOST_AUTO_TEST_CASE(a_mode_cudnn_refuses_fails_lowering_naming_the_mode_and_the_cudnn_version) {
  for (const ReductionMode mode : {ReductionMode::Avg, ReductionMode::Norm1, ReductionMode::Norm2,
                                   ReductionMode::MulNoZeros}) {
    BOOST_TEST_CONTEXT("mode " << dnngraph::to_string(mode)) {
      Reduce r;
      r.reduce({4, 1, 1}, ReductionAttributes().set_name("red").set_mode(mode));
      auto lowered = r.g.lower();
      if (lowered) {
        BOOST_TEST_MESSAGE("cuDNN "
                           << dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version())
                           << " lowers mode " << dnngraph::to_string(mode));
        BOOST_TEST(lowered->all_finalized);
        continue;
      }
      BOOST_TEST_MESSAGE(lowered.error().message);
      BOOST_TEST(lowered.error().code == ErrorCode::CudnnFailure);
      BOOST_TEST(mentions(lowered.error(), "reduction 'red' (mode "));
      BOOST_TEST(mentions(lowered.error(), std::string(dnngraph::to_string(mode))));
      BOOST_TEST(mentions(lowered.error(), "cuDNN " + dnngraph::cudnn_version_string(
                                                          dnngraph::cudnn_runtime_version())));
    }
  }
}

BOOST_AUTO_TEST_CASE(every_mode_has_a_name) {
  BOOST_TEST(dnngraph::to_string(ReductionMode::Add) == "Add");
  BOOST_TEST(dnngraph::to_string(ReductionMode::Avg) == "Avg");
  BOOST_TEST(dnngraph::to_string(ReductionMode::Norm2) == "Norm2");
  BOOST_TEST(dnngraph::to_string(ReductionMode::MulNoZeros) == "MulNoZeros");
}

BOOST_AUTO_TEST_CASE(float_and_bfloat16_inputs_lower) {
  for (const DataType type : {DataType::Float, DataType::BFloat16}) {
    BOOST_TEST_CONTEXT("type " << dnngraph::to_string(type)) {
      Reduce r;
      r.x->set_data_type(type);
      r.reduce({1, 32, 64});
      BOOST_TEST(require_lowered(r.g).all_finalized);
    }
  }
}

// Row sums of a matmul output: the reduction reads the matmul's virtual Float output.
BOOST_AUTO_TEST_CASE(matmul_then_row_sum_lowers_to_four_tensors_and_two_operations) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_intermediate_data_type(DataType::Float);
  auto a = g.tensor(tensor("A", 1, {1, 64, 128}));
  auto b = g.tensor(tensor("B", 2, {1, 128, 32}));
  auto c = g.matmul(a, b, MatmulAttributes().set_name("mm"));
  auto y = g.reduction(c, sum("row_sum"));
  y->set_name("Y").set_uid(3).set_output(true).set_dim({1, 64, 1}).set_data_type(DataType::Float);
  const LoweringSummary summary = require_lowered(g);
  BOOST_TEST(summary.tensor_count == 4U);
  BOOST_TEST(summary.operation_count == 2U);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(c->data_type().value_or(DataType::Int8) == DataType::Float);
  BOOST_TEST(c->dim() == (Dims{1, 64, 32}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(lower_returns_the_validation_error_of_an_invalid_reduction) {
  Reduce r;
  r.reduce({});
  auto lowered = r.g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(lowered.error(), "has no dims"));
}

BOOST_AUTO_TEST_SUITE_END()
