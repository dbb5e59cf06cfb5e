// Concatenate nodes without a GPU: concatenate() rejects each kind of bad input with its
// ErrorCode and a message that names the node, the tensor, the dim and the expected and given
// values; gives Y the sum of the inputs' extents along the axis, packed in the first input's
// memory order, in the inputs' data type; and lowers, alone, in place and before a pointwise
// node, to finalized cuDNN descriptors (or VersionTooOld below cuDNN 9.7).
#define BOOST_TEST_MODULE concatenate
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::ConcatenateAttributes;
using dnngraph::DataType;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

ConcatenateAttributes along(std::int64_t axis) {
  return ConcatenateAttributes().set_name("cat").set_axis(axis);
}

// A Half graph with A [2, 3, 4] (uid 1) and B [2, 5, 4] (uid 2), both packed; concat() adds the
// node and names Y (uid 9, an output).
struct Concat {
  Graph g;
  TensorPtr a, b;

  Concat() {
    g.set_io_data_type(DataType::Half);
    a = g.tensor(tensor("A", 1, {2, 3, 4}));
    b = g.tensor(tensor("B", 2, {2, 5, 4}));
  }
  TensorPtr concat(ConcatenateAttributes attributes = along(1)) {
    return concat({a, b}, std::move(attributes));
  }
  TensorPtr concat(const std::vector<TensorPtr>& inputs, ConcatenateAttributes attributes) {
    auto y = g.concatenate(inputs, std::move(attributes));
    y->set_name("Y").set_uid(9).set_output(true);
    return y;
  }
};

bool concat_available() {
  return dnngraph::cudnn_offers(dnngraph::CudnnCapability::ConcatOperation);
}

// A case that lowers runs where cuDNN has the operation, and is skipped, saying so, elsewhere.
boost::test_tools::assertion_result with_concat(boost::unit_test::test_unit_id /*id*/) {
  boost::test_tools::assertion_result result(concat_available());
  result.message() << "the concatenate operation needs cuDNN >= 9.7 loaded";
  return result;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(concatenate_validation)

BOOST_AUTO_TEST_CASE(no_inputs_are_rejected) {
  Concat c;
  c.concat({}, along(0));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "concatenate 'cat': no inputs"));
}

BOOST_AUTO_TEST_CASE(a_missing_axis_is_rejected_naming_its_range) {
  Concat c;
  c.concat(ConcatenateAttributes().set_name("cat"));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "concatenate 'cat': no axis; set_axis in ConcatenateAttributes"));
  BOOST_TEST(mentions(error, "0 to 2 (input 0 'A' (uid 1) has dims [2, 3, 4])"));
}

BOOST_AUTO_TEST_CASE(an_axis_beyond_the_rank_is_rejected_naming_its_range) {
  Concat c;
  c.concat(along(3));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "concatenate 'cat': axis 3 is out of range: input 0 'A' (uid 1) has "
                      "dims [2, 3, 4] (rank 3), so the axis is 0 to 2"));
}

BOOST_AUTO_TEST_CASE(a_negative_axis_is_rejected) {
  Concat c;
  c.concat(along(-1));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "axis -1 is out of range"));
}

BOOST_AUTO_TEST_CASE(an_input_of_another_rank_is_rejected_naming_both_ranks) {
  Concat c;
  auto flat = c.g.tensor(tensor("F", 3, {2, 20}));
  c.concat({c.a, flat}, along(1));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "concatenate 'cat': input 1 'F' (uid 3) has dims [2, 20] (rank 2), "
                      "but input 0 'A' (uid 1) has dims [2, 3, 4] (rank 3)"));
}

BOOST_AUTO_TEST_CASE(a_dim_off_the_axis_that_differs_is_rejected_naming_the_dim_and_both_extents) {
  Concat c;
  c.concat(along(2));  // A [2, 3, 4] and B [2, 5, 4] differ in dim 1
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "input 1 'B' (uid 2) has dims [2, 5, 4]: dim 1 is 5, but input 0 "
                      "'A' (uid 1) has 3 there"));
  BOOST_TEST(mentions(error, "every dim but the axis, 2"));
}

BOOST_AUTO_TEST_CASE(a_third_input_that_differs_is_named_by_its_position) {
  Concat c;
  auto d = c.g.tensor(tensor("D", 3, {3, 1, 4}));
  c.concat({c.a, c.b, d}, along(1));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "input 2 'D' (uid 3) has dims [3, 1, 4]: dim 0 is 3"));
}

BOOST_AUTO_TEST_CASE(inputs_of_different_data_types_are_rejected_naming_both) {
  Concat c;
  c.b->set_data_type(DataType::Float);
  c.concat();
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error,
                      "input 1 'B' (uid 2) has data type Float, but input 0 'A' (uid 1) "
                      "has Half; concatenated inputs share one data type"));
}

BOOST_AUTO_TEST_CASE(another_y_type_for_inputs_in_memory_is_rejected) {
  Concat c;
  c.concat()->set_data_type(DataType::Float);
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error,
                      "Y 'Y' (uid 9) has data type Float, but input 0 'A' (uid 1) has "
                      "Half; a concatenate of tensors in memory copies them as they are"));
}

BOOST_AUTO_TEST_CASE(y_dims_other_than_the_sum_are_rejected) {
  Concat c;
  c.concat()->set_dim({2, 7, 4});
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "was given dims [2, 7, 4], but the inputs give [2, 8, 4]"));
}

BOOST_AUTO_TEST_CASE(a_compute_data_type_is_rejected_as_meaningless) {
  Concat c;
  c.concat(along(1).set_compute_data_type(DataType::Float));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "concatenate 'cat': compute data type Float is set, but a "
                      "concatenate computes nothing"));
}

BOOST_AUTO_TEST_CASE(a_by_value_input_is_rejected) {
  Concat c;
  c.concat({c.a, c.g.tensor(2.0F)}, along(0));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "input 1 'scalar 2.000000'"));
  BOOST_TEST(mentions(error, "is passed by value (a host scalar)"));
}

BOOST_AUTO_TEST_CASE(a_null_input_is_rejected_naming_its_position) {
  Concat c;
  c.concat({c.a, nullptr}, along(1));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "concatenate 'cat': input 1 is null"));
}

BOOST_AUTO_TEST_CASE(an_in_place_index_out_of_range_is_rejected_naming_the_input_count) {
  Concat c;
  c.concat(along(1).set_in_place_index(2));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "in-place index 2 is out of range for 2 inputs; it names an input, "
                      "0 to 1"));
}

BOOST_AUTO_TEST_CASE(an_in_place_input_without_y_strides_is_rejected) {
  Concat c;
  c.concat(along(1).set_in_place_index(0));  // A packed [2, 3, 4]: strides [12, 4, 1]; Y [32, 4, 1]
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "in-place input 0 'A' (uid 1) has strides [12, 4, 1], but Y 'Y' "
                      "(uid 9) has [32, 4, 1]"));
}

BOOST_AUTO_TEST_CASE(an_in_place_concatenate_into_a_virtual_y_is_rejected) {
  Concat c;
  c.a->set_stride({32, 4, 1});
  auto y = c.concat(along(1).set_in_place_index(0));
  y->set_output(false);
  c.g.pointwise(y, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd))->set_output(true);
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "in-place input 0 'A' (uid 1) lies in Y's device memory, but Y 'Y' "
                      "(uid 9) is virtual"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(concatenate_shapes)

BOOST_AUTO_TEST_CASE(y_extent_along_the_axis_is_the_sum_and_y_is_packed) {
  Concat c;
  auto y = c.concat();
  require_valid(c.g);
  BOOST_TEST(y->dim() == (Dims{2, 8, 4}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{32, 4, 1}), boost::test_tools::per_element());
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Half);
}

BOOST_AUTO_TEST_CASE(three_inputs_along_the_first_dim_add_up) {
  Concat c;
  auto d = c.g.tensor(tensor("D", 3, {1, 3, 4}));
  auto e = c.g.tensor(tensor("E", 4, {4, 3, 4}));
  auto y = c.concat({c.a, d, e}, along(0));
  require_valid(c.g);
  BOOST_TEST(y->dim() == (Dims{7, 3, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(y_strides_follow_the_first_input_memory_order) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  // [1, 3, 4, 5] and [1, 5, 4, 5] channels-last: C innermost, then W, H.
  auto a = g.tensor(tensor("A", 1, {1, 3, 4, 5}).set_stride({60, 1, 15, 3}));
  auto b = g.tensor(tensor("B", 2, {1, 5, 4, 5}).set_stride({100, 1, 25, 5}));
  auto y = g.concatenate({a, b}, along(1));
  y->set_output(true);
  require_valid(g);
  BOOST_TEST(y->dim() == (Dims{1, 8, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{160, 1, 40, 8}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(virtual_inputs_may_give_y_another_data_type) {
  Concat c;
  auto ra = c.g.pointwise(c.a, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  auto rb = c.g.pointwise(c.b, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  auto y = c.concat({ra, rb}, along(1));
  require_valid(c.g);  // the relus' outputs are Float intermediates, and so is Y unless set
  BOOST_TEST(ra->data_type().value_or(DataType::Int8) == DataType::Float);
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Float);
  y->set_data_type(DataType::Half);
  require_valid(c.g);
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Half);
}

BOOST_AUTO_TEST_CASE(an_unnamed_concatenate_is_named_by_its_position) {
  Concat c;
  auto y = c.g.concatenate({c.a, c.b}, ConcatenateAttributes().set_axis(1));
  y->set_output(true);
  require_valid(c.g);
  BOOST_TEST(y->name() == "concatenate_0::Y");
}

BOOST_AUTO_TEST_CASE(execute_time_overrides_are_refused_naming_the_node) {
  Concat c;
  c.g.set_override_shape_enabled(true);
  c.concat();
  require_valid(c.g);
  const std::vector<std::int64_t> uids{1};
  const std::vector<Dims> shapes{{1, 3, 4}};
  const std::vector<Dims> strides{{12, 4, 1}};
  auto checked = c.g.check_overrides(uids, shapes, strides);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST_MESSAGE(checked.error().message);
  BOOST_TEST(mentions(checked.error(), "concatenate 'cat'"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(concatenate_lowering)

BOOST_AUTO_TEST_CASE(two_inputs_lower_to_one_concat_operation_or_version_too_old) {
  Concat c;
  c.concat();
  if (!concat_available()) {
    auto lowered = c.g.lower();
    BOOST_TEST_REQUIRE(!lowered.has_value());
    BOOST_TEST(lowered.error().code == ErrorCode::VersionTooOld);
    BOOST_TEST(mentions(lowered.error(), "lower concatenate 'cat': the concatenate operation"));
    BOOST_TEST(mentions(lowered.error(), "needs cuDNN >= 9.7.0"));
    return;
  }
  const LoweringSummary summary = require_lowered(c.g);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(summary.tensor_count == 3U);
  BOOST_TEST(summary.operations == (std::vector<std::string>{"concatenate 'cat'"}),
             boost::test_tools::per_element());
  BOOST_TEST(summary.backend_operations == (std::vector<std::string>{"OperationConcat"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(three_inputs_before_a_pointwise_node_lower_to_two_operations,
                     *boost::unit_test::precondition(with_concat)) {
  Concat c;
  auto d = c.g.tensor(tensor("D", 3, {2, 1, 4}));
  auto y = c.g.concatenate({c.a, c.b, d}, along(1));
  auto bias = c.g.tensor(tensor("bias", 4, {1, 9, 1}));
  c.g.pointwise(y, bias, PointwiseAttributes().set_name("add").set_mode(PointwiseMode::Add))
      ->set_output(true)
      .set_uid(5);
  const LoweringSummary summary = require_lowered(c.g);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(summary.backend_operations ==
                 (std::vector<std::string>{"OperationConcat", "OperationPointwise"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_in_place_concatenate_lowers_with_its_index,
                     *boost::unit_test::precondition(with_concat)) {
  Concat c;
  c.a->set_stride({32, 4, 1});  // A is Y's first 3 rows of each batch
  c.b->set_stride({32, 4, 1});
  c.concat(along(1).set_in_place_index(0));
  const LoweringSummary summary = require_lowered(c.g);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(summary.backend_operations == (std::vector<std::string>{"OperationConcat"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(lower_returns_the_validation_error_of_an_invalid_concatenate) {
  Concat c;
  c.concat(along(5));
  auto lowered = c.g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(lowered.error(), "axis 5 is out of range"));
}

BOOST_AUTO_TEST_SUITE_END()
