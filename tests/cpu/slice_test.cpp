// Slice nodes without a GPU: slice() rejects each kind of bad input with its ErrorCode and a
// message that names the node, the tensor, the dim and the expected and given values; gives Y
// ceil((limit - start) / stride) per dim, packed in X's memory order, in X's data type; and
// lowers, alone and before a matmul, to finalized cuDNN descriptors from cuDNN 9.22, while below
// it lower() and build() refuse with VersionTooOld naming 9.22 and the graph input that holds
// the same elements.
#define BOOST_TEST_MODULE slice
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
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
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::SliceAttributes;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using Slices = std::vector<std::pair<std::int64_t, std::int64_t>>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

SliceAttributes slices(Slices s) {
  return SliceAttributes().set_name("s").set_slices(std::move(s));
}

// A Half graph with X [4, 6, 8] (uid 1, packed); slice() adds the node and names Y (uid 2, an
// output).
struct Slice {
  Graph g;
  TensorPtr x;

  Slice() {
    g.set_io_data_type(DataType::Half);
    x = g.tensor(tensor("X", 1, {4, 6, 8}));
  }
  TensorPtr slice(SliceAttributes attributes) {
    auto y = g.slice(x, std::move(attributes));
    y->set_name("Y").set_uid(2).set_output(true);
    return y;
  }
};

bool slice_available() { return dnngraph::cudnn_offers(dnngraph::CudnnCapability::SliceOperation); }

// Lowering cases run on the side of cuDNN 9.22 they describe, and are skipped, saying so, on the
// other.
boost::test_tools::assertion_result with_slice(boost::unit_test::test_unit_id /*id*/) {
  boost::test_tools::assertion_result result(slice_available());
  result.message() << "the slice operation needs cuDNN >= 9.22 loaded";
  return result;
}
boost::test_tools::assertion_result without_slice(boost::unit_test::test_unit_id /*id*/) {
  boost::test_tools::assertion_result result(!slice_available());
  result.message() << "cuDNN >= 9.22 has the slice operation: nothing is refused";
  return result;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(slice_validation)

BOOST_AUTO_TEST_CASE(no_slices_are_rejected_naming_the_dims_of_x) {
  Slice s;
  s.slice(SliceAttributes().set_name("s"));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "slice 's': no slices; set_slices in SliceAttributes"));
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has dims [4, 6, 8] (rank 3)"));
}

BOOST_AUTO_TEST_CASE(a_pair_count_other_than_the_rank_is_rejected) {
  Slice s;
  s.slice(slices({{0, 2}, {0, 6}}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "2 {start, limit} pairs were given, but X 'X' (uid 1) has dims "
                      "[4, 6, 8] (rank 3)"));
}

BOOST_AUTO_TEST_CASE(a_stride_count_other_than_the_rank_is_rejected) {
  Slice s;
  s.slice(slices({{0, 4}, {0, 6}, {0, 8}}).set_strides({1, 2}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "slice strides [1, 2] have 2 entries, but X 'X' (uid 1) has dims "
                      "[4, 6, 8] (rank 3)"));
}

BOOST_AUTO_TEST_CASE(a_stride_that_is_not_positive_is_rejected_naming_its_dim) {
  Slice s;
  s.slice(slices({{0, 4}, {0, 6}, {0, 8}}).set_strides({1, 0, 1}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "slice 's': dim 1: slice stride 0 is not positive"));
}

BOOST_AUTO_TEST_CASE(a_start_beyond_the_extent_is_rejected_naming_dim_extent_and_range) {
  Slice s;
  s.slice(slices({{0, 4}, {6, 6}, {0, 8}}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "slice 's': dim 1 of X 'X' (uid 1): slice {6, 6} starts out of "
                      "range: X has 6 there, so start is 0 to 5"));
}

BOOST_AUTO_TEST_CASE(a_negative_start_is_rejected) {
  Slice s;
  s.slice(slices({{-1, 4}, {0, 6}, {0, 8}}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "dim 0 of X 'X' (uid 1): slice {-1, 4} starts out of range"));
}

BOOST_AUTO_TEST_CASE(a_limit_beyond_the_extent_is_rejected_naming_the_largest_limit) {
  Slice s;
  s.slice(slices({{0, 4}, {0, 6}, {2, 9}}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "dim 2 of X 'X' (uid 1): slice {2, 9} ends beyond X's extent 8 "
                      "there; limit (one past the last index taken) is at most 8"));
}

BOOST_AUTO_TEST_CASE(an_empty_slice_is_rejected) {
  Slice s;
  s.slice(slices({{0, 4}, {3, 3}, {0, 8}}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "dim 1 of X 'X' (uid 1): slice {3, 3} is empty (limit 3 is not "
                      "above start 3)"));
}

BOOST_AUTO_TEST_CASE(a_reversed_slice_is_rejected_as_empty) {
  Slice s;
  s.slice(slices({{0, 4}, {0, 6}, {5, 2}}));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "slice {5, 2} is empty"));
}

BOOST_AUTO_TEST_CASE(another_y_type_is_rejected_naming_both) {
  Slice s;
  s.slice(slices({{0, 4}, {0, 6}, {0, 8}}))->set_data_type(DataType::Float);
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "Y 'Y' (uid 2) has data type Float, but X 'X' (uid 1) has Half"));
}

BOOST_AUTO_TEST_CASE(y_dims_other_than_the_slice_gives_are_rejected) {
  Slice s;
  s.slice(slices({{1, 3}, {0, 6}, {0, 8}}))->set_dim({3, 6, 8});
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "was given dims [3, 6, 8], but the inputs give [2, 6, 8]"));
}

BOOST_AUTO_TEST_CASE(a_compute_data_type_is_rejected_as_meaningless) {
  Slice s;
  s.slice(slices({{0, 4}, {0, 6}, {0, 8}}).set_compute_data_type(DataType::Float));
  const Error error = validation_error(s.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error,
                      "slice 's': compute data type Float is set, but a slice computes "
                      "nothing"));
}

BOOST_AUTO_TEST_CASE(a_by_value_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.slice(g.tensor(1.5F), slices({{0, 1}}))->set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "is passed by value (a host scalar); a slice reads a tensor"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(slice_shapes)

BOOST_AUTO_TEST_CASE(y_dims_are_the_slice_lengths_and_y_is_packed) {
  Slice s;
  auto y = s.slice(slices({{1, 3}, {2, 6}, {0, 8}}));
  require_valid(s.g);
  BOOST_TEST(y->dim() == (Dims{2, 4, 8}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{32, 8, 1}), boost::test_tools::per_element());
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Half);
}

BOOST_AUTO_TEST_CASE(a_stride_takes_every_nth_element_rounding_up) {
  Slice s;
  auto y = s.slice(slices({{0, 4}, {1, 6}, {0, 8}}).set_strides({3, 2, 1}));
  require_valid(s.g);
  BOOST_TEST(y->dim() == (Dims{2, 3, 8}), boost::test_tools::per_element());  // {0, 3}, {1, 3, 5}
}

BOOST_AUTO_TEST_CASE(y_strides_follow_the_memory_order_of_x) {
  Graph g;
  g.set_io_data_type(DataType::Float);
  auto x = g.tensor(tensor("X", 1, {2, 8, 4, 4}).set_stride({128, 1, 32, 8}));  // NHWC
  auto y = g.slice(x, slices({{0, 2}, {2, 6}, {0, 4}, {1, 3}}));
  y->set_output(true);
  require_valid(g);
  BOOST_TEST(y->dim() == (Dims{2, 4, 4, 2}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{32, 1, 8, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_unnamed_slice_is_named_by_its_position) {
  Slice s;
  auto y = s.g.slice(s.x, SliceAttributes().set_slices({{0, 1}, {0, 1}, {0, 1}}));
  y->set_output(true);
  require_valid(s.g);
  BOOST_TEST(y->name() == "slice_0::Y");
}

BOOST_AUTO_TEST_CASE(execute_time_overrides_are_refused_naming_the_node) {
  Slice s;
  s.g.set_override_shape_enabled(true);
  s.slice(slices({{0, 2}, {0, 6}, {0, 8}}));
  require_valid(s.g);
  const std::vector<std::int64_t> uids{1};
  const std::vector<Dims> shapes{{2, 6, 8}};
  const std::vector<Dims> strides{{48, 8, 1}};
  auto checked = s.g.check_overrides(uids, shapes, strides);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST_MESSAGE(checked.error().message);
  BOOST_TEST(mentions(checked.error(), "slice 's'"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(slice_lowering)

BOOST_AUTO_TEST_CASE(a_slice_lowers_to_one_slice_operation_from_cudnn_9_22,
                     *boost::unit_test::precondition(with_slice)) {
  Slice s;
  s.slice(slices({{1, 3}, {2, 6}, {0, 8}}).set_strides({1, 2, 1}));
  const LoweringSummary summary = require_lowered(s.g);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(summary.tensor_count == 2U);
  BOOST_TEST(summary.backend_operations == (std::vector<std::string>{"OperationSlice"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_slice_feeding_a_matmul_lowers_to_two_operations_from_cudnn_9_22,
                     *boost::unit_test::precondition(with_slice)) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  auto a = g.tensor(tensor("A", 1, {11, 23, 64}));
  auto b = g.tensor(tensor("B", 2, {8, 64, 32}));
  auto a_slice = g.slice(a, slices({{1, 9}, {3, 19}, {0, 64}}));
  auto c = g.matmul(a_slice, b, MatmulAttributes().set_name("mm"));
  c->set_output(true).set_uid(3);
  const LoweringSummary summary = require_lowered(g);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(
      summary.backend_operations == (std::vector<std::string>{"OperationSlice", "OperationMatmul"}),
      boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(below_cudnn_9_22_lower_names_the_version_and_the_equivalent_input,
                     *boost::unit_test::precondition(without_slice)) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  auto a = g.tensor(tensor("A", 1, {11, 23, 64}));
  auto b = g.tensor(tensor("B", 2, {8, 64, 32}));
  auto a_slice = g.slice(a, slices({{1, 9}, {3, 19}, {0, 64}}));
  g.matmul(a_slice, b)->set_output(true).set_uid(3);
  require_valid(g);  // validation does not depend on the cuDNN version
  auto lowered = g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::VersionTooOld);
  BOOST_TEST(mentions(lowered.error(), "lower slice 's': the slice operation"));
  BOOST_TEST(mentions(lowered.error(), "needs cuDNN >= 9.22.0"));
  // (1 * 23 * 64 + 3 * 64) * 2 bytes = 3328, a multiple of 16.
  BOOST_TEST(mentions(lowered.error(),
                      "a tensor of dims [8, 16, 64] and strides [1472, 64, 1] "
                      "starting 3328 bytes into X 'A' (uid 1)'s memory: give "
                      "that to the graph as an input"));
}

BOOST_AUTO_TEST_CASE(below_cudnn_9_22_an_unaligned_view_is_not_offered,
                     *boost::unit_test::precondition(without_slice)) {
  Slice s;
  s.slice(slices({{0, 4}, {0, 6}, {1, 8}}).set_strides({1, 1, 2}));  // 1 element: 2 bytes
  auto lowered = s.g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::VersionTooOld);
  BOOST_TEST(mentions(lowered.error(), "strides [48, 8, 2] starting 2 bytes"));
  BOOST_TEST(mentions(lowered.error(), "not 16-byte aligned"));
}

BOOST_AUTO_TEST_CASE(below_cudnn_9_22_a_slice_of_a_virtual_tensor_has_no_view_to_offer,
                     *boost::unit_test::precondition(without_slice)) {
  Slice s;
  auto relu = s.g.pointwise(s.x, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  s.g.slice(relu, slices({{0, 2}, {0, 6}, {0, 8}}))->set_output(true);
  auto lowered = s.g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::VersionTooOld);
  BOOST_TEST(lowered.error().message.find("The same elements") == std::string::npos,
             lowered.error().message);
}

BOOST_AUTO_TEST_SUITE_END()
