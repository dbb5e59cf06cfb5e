// Graph validation rejects each kind of bad input with its ErrorCode and a message that names
// what is wrong (tensor, uid, dimension, expected and given values), and loses nothing the user
// set. Runs without a GPU.
#define BOOST_TEST_MODULE validation
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
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

// A Half graph with A [1, 8, 4] (uid 1) and B [1, 4, 2] (uid 2).
struct MatmulInputs {
  Graph g;
  std::shared_ptr<TensorAttributes> a;
  std::shared_ptr<TensorAttributes> b;

  MatmulInputs() {
    g.set_io_data_type(DataType::Half);
    a = g.tensor(tensor("A", 1, {1, 8, 4}));
    b = g.tensor(tensor("B", 2, {1, 4, 2}));
  }
};

}  // namespace

// Tensor layout.

BOOST_AUTO_TEST_CASE(tensor_without_dims_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1));
  auto b = g.tensor(tensor("B", 2, {1, 4, 2}));
  g.matmul(a, b);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "no dims"));
}

BOOST_AUTO_TEST_CASE(dims_and_strides_of_different_rank_are_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.tensor(tensor("A", 1, {2, 3, 4}).set_stride({12, 4}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "3 dims [2, 3, 4]"));
  BOOST_TEST(mentions(error, "2 strides [12, 4]"));
}

BOOST_AUTO_TEST_CASE(zero_dim_is_rejected_naming_its_index) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.tensor(tensor("A", 1, {2, 0, 4}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "dim 1 is 0"));
  BOOST_TEST(mentions(error, "[2, 0, 4]"));
}

BOOST_AUTO_TEST_CASE(negative_dim_is_rejected_naming_its_index) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.tensor(tensor("A", 1, {2, 3, -4}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "dim 2 is -4"));
}

BOOST_AUTO_TEST_CASE(zero_stride_is_rejected_naming_its_index) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.tensor(tensor("A", 1, {2, 3, 4}).set_stride({0, 4, 1}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "stride 0 is 0"));
  BOOST_TEST(mentions(error, "[0, 4, 1]"));
}

BOOST_AUTO_TEST_CASE(negative_stride_is_rejected_naming_its_index) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.tensor(tensor("A", 1, {2, 3, 4}).set_stride({12, -4, 1}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "stride 1 is -4"));
}

BOOST_AUTO_TEST_CASE(dims_whose_element_count_overflows_int64_are_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  constexpr std::int64_t big = std::int64_t{1} << 32;
  g.tensor(tensor("A", 1, {1, big, big}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "[1, 4294967296, 4294967296]"));
  BOOST_TEST(mentions(error, "does not fit in int64"));
}

BOOST_AUTO_TEST_CASE(matmul_output_whose_element_count_overflows_int64_is_rejected) {
  // Each input fits; M x N of the output does not.
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 1, {1, std::int64_t{1} << 31, 1}));
  auto b = g.tensor(tensor("B", 2, {1, 1, std::int64_t{1} << 33}));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "[1, 2147483648, 8589934592]"));
  BOOST_TEST(mentions(error, "does not fit in int64"));
}

BOOST_AUTO_TEST_CASE(output_strides_of_wrong_rank_are_rejected) {
  MatmulInputs in;
  auto c = in.g.matmul(in.a, in.b, MatmulAttributes().set_name("mm"));
  c->set_name("C").set_stride({2, 1});
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "'C'"));
  BOOST_TEST(mentions(error, "3 dims but 2 strides [2, 1]"));
}

BOOST_AUTO_TEST_CASE(virtual_input_that_no_node_produces_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.tensor(tensor("A", 1, {1, 8, 4}).set_is_virtual(true));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "virtual"));
}

// Uids.

BOOST_AUTO_TEST_CASE(duplicate_uid_is_rejected_naming_both_tensors) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.tensor(tensor("A", 7, {1, 8, 4}));
  g.tensor(tensor("B", 7, {1, 4, 2}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::DuplicateUid);
  BOOST_TEST(mentions(error, "'A' (uid 7)"));
  BOOST_TEST(mentions(error, "'B' (uid 7)"));
}

BOOST_AUTO_TEST_CASE(uid_of_a_node_output_that_repeats_an_input_uid_is_rejected) {
  MatmulInputs in;
  auto c = in.g.matmul(in.a, in.b);
  c->set_name("C").set_uid(2);
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::DuplicateUid);
  BOOST_TEST(mentions(error, "'B' (uid 2)"));
  BOOST_TEST(mentions(error, "'C' (uid 2)"));
}

BOOST_AUTO_TEST_CASE(largest_possible_user_uid_leaves_no_room_for_automatic_uids) {
  // Automatic uids go above the largest user uid; above INT64_MAX there is none, and the graph
  // must say so rather than overflow.
  Graph g;
  g.set_io_data_type(DataType::Half);
  constexpr std::int64_t largest = std::numeric_limits<std::int64_t>::max();
  auto a = g.tensor(tensor("A", largest, {1, 8, 4}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_dim({1, 4, 2}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "'B' (no uid yet)"));
  BOOST_TEST(mentions(error, std::to_string(largest)));
  BOOST_TEST(!b->uid().has_value());
  BOOST_TEST(a->uid().value_or(0) == largest);
}

// Tensors that are not this graph's.

BOOST_AUTO_TEST_CASE(tensor_of_another_graph_is_rejected_in_matmul) {
  MatmulInputs in;
  Graph other;
  auto foreign = other.tensor(tensor("foreign", 9, {1, 4, 2}));
  in.g.matmul(in.a, foreign, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "'foreign' (uid 9)"));
  BOOST_TEST(mentions(error, "does not belong to this graph"));
}

BOOST_AUTO_TEST_CASE(tensor_of_another_graph_is_rejected_in_pointwise) {
  MatmulInputs in;
  Graph other;
  auto foreign = other.tensor(tensor("foreign", 9, {1, 8, 4}));
  in.g.pointwise(in.a, foreign, pointwise("add", PointwiseMode::Add));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "pointwise 'add'"));
  BOOST_TEST(mentions(error, "'foreign' (uid 9)"));
}

BOOST_AUTO_TEST_CASE(node_output_of_another_graph_is_rejected) {
  MatmulInputs in;
  MatmulInputs other;
  auto foreign = other.g.matmul(other.a, other.b, MatmulAttributes().set_name("other_mm"));
  in.g.pointwise(foreign, pointwise("relu", PointwiseMode::ReluFwd));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "pointwise 'relu'"));
  BOOST_TEST(mentions(error, "'other_mm::C'"));
}

BOOST_AUTO_TEST_CASE(null_matmul_input_is_rejected_naming_the_input) {
  MatmulInputs in;
  in.g.matmul(in.a, nullptr, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "input B is null"));
}

BOOST_AUTO_TEST_CASE(null_pointwise_input_is_rejected_naming_the_input) {
  MatmulInputs in;
  in.g.pointwise(nullptr, pointwise("relu", PointwiseMode::ReluFwd));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "pointwise 'relu'"));
  BOOST_TEST(mentions(error, "input X is null"));
}

BOOST_AUTO_TEST_CASE(first_mistake_while_adding_nodes_is_reported_after_later_valid_nodes) {
  MatmulInputs in;
  in.g.pointwise(nullptr, pointwise("first", PointwiseMode::ReluFwd));
  in.g.matmul(in.a, in.b, MatmulAttributes().set_name("fine"));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "pointwise 'first'"));
}

// Matmul shapes and types.

BOOST_AUTO_TEST_CASE(matmul_with_mismatched_k_is_rejected_naming_both_values) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 1, {1, 8, 4}));
  auto b = g.tensor(tensor("B", 2, {1, 5, 2}));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "K of A 'A' (uid 1) (dim 2) is 4"));
  BOOST_TEST(mentions(error, "K of B 'B' (uid 2) (dim 1) is 5"));
}

BOOST_AUTO_TEST_CASE(matmul_with_incompatible_batch_dims_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 1, {2, 8, 4}));
  auto b = g.tensor(tensor("B", 2, {3, 4, 2}));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "batch dim 0"));
  BOOST_TEST(mentions(error, "'A' (uid 1) is 2"));
  BOOST_TEST(mentions(error, "'B' (uid 2) is 3"));
}

BOOST_AUTO_TEST_CASE(matmul_of_rank_2_tensors_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 1, {8, 4}));
  auto b = g.tensor(tensor("B", 2, {4, 2}));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "[8, 4]"));
  BOOST_TEST(mentions(error, "at least 3"));
}

BOOST_AUTO_TEST_CASE(matmul_of_unequal_ranks_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 1, {1, 8, 4}));
  auto b = g.tensor(tensor("B", 2, {1, 1, 4, 2}));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "'A' (uid 1) has dims [1, 8, 4]"));
  BOOST_TEST(mentions(error, "'B' (uid 2) has dims [1, 1, 4, 2]"));
  BOOST_TEST(mentions(error, "same rank"));
}

BOOST_AUTO_TEST_CASE(matmul_of_double_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 1, {1, 8, 4}).set_data_type(DataType::Double));
  auto b = g.tensor(tensor("B", 2, {1, 4, 2}));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "'A' (uid 1) has data type Double"));
}

BOOST_AUTO_TEST_CASE(matmul_of_boolean_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Boolean);
  auto a = g.tensor(tensor("A", 1, {1, 8, 4}).set_data_type(DataType::Half));
  auto b = g.tensor(tensor("B", 2, {1, 4, 2}));
  g.matmul(a, b, MatmulAttributes().set_name("mm"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "'B' (uid 2) has data type Boolean"));
}

BOOST_AUTO_TEST_CASE(matmul_with_double_compute_type_is_rejected) {
  MatmulInputs in;
  in.g.matmul(in.a, in.b,
              MatmulAttributes().set_name("mm").set_compute_data_type(DataType::Double));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "compute data type Double"));
}

// Pointwise modes and shapes.

BOOST_AUTO_TEST_CASE(pointwise_binary_mode_with_one_input_is_rejected) {
  MatmulInputs in;
  in.g.pointwise(in.a, pointwise("add", PointwiseMode::Add));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "pointwise 'add'"));
  BOOST_TEST(mentions(error, "mode Add takes 2 input(s), given 1"));
}

BOOST_AUTO_TEST_CASE(pointwise_unary_mode_with_two_inputs_is_rejected) {
  MatmulInputs in;
  in.g.pointwise(in.a, in.a, pointwise("relu", PointwiseMode::ReluFwd));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "mode ReluFwd takes 1 input(s), given 2"));
}

BOOST_AUTO_TEST_CASE(pointwise_without_mode_is_rejected) {
  MatmulInputs in;
  in.g.pointwise(in.a, in.a, PointwiseAttributes().set_name("nomode"));
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "pointwise 'nomode'"));
  BOOST_TEST(mentions(error, "no mode"));
}

BOOST_AUTO_TEST_CASE(pointwise_broadcast_of_unequal_dims_neither_1_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 3, 8}));
  auto y = g.tensor(tensor("Y", 2, {2, 4, 8}));
  g.pointwise(x, y, pointwise("add", PointwiseMode::Add));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "pointwise 'add'"));
  BOOST_TEST(mentions(error, "dim 1 of 'X' (uid 1) is 3"));
  BOOST_TEST(mentions(error, "'Y' (uid 2) is 4"));
}

BOOST_AUTO_TEST_CASE(pointwise_of_unequal_ranks_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 3, 8}));
  auto y = g.tensor(tensor("Y", 2, {3, 8}));
  g.pointwise(x, y, pointwise("add", PointwiseMode::Add));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "[2, 3, 8]"));
  BOOST_TEST(mentions(error, "[3, 8]"));
  BOOST_TEST(mentions(error, "same rank"));
}

BOOST_AUTO_TEST_CASE(pointwise_of_double_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Double);
  auto x = g.tensor(tensor("X", 1, {2, 3, 8}));
  g.pointwise(x, pointwise("relu", PointwiseMode::ReluFwd));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "pointwise 'relu'"));
  BOOST_TEST(mentions(error, "'X' (uid 1) has data type Double"));
}

// Outputs and data types.

BOOST_AUTO_TEST_CASE(output_dims_that_disagree_with_inference_are_rejected) {
  MatmulInputs in;
  auto c = in.g.matmul(in.a, in.b, MatmulAttributes().set_name("mm"));
  c->set_name("C").set_dim({1, 8, 3});
  const Error error = validation_error(in.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "'C'"));
  BOOST_TEST(mentions(error, "given dims [1, 8, 3]"));
  BOOST_TEST(mentions(error, "inputs give [1, 8, 2]"));
}

BOOST_AUTO_TEST_CASE(input_without_data_type_in_graph_without_io_type_is_rejected) {
  Graph g;
  auto a = g.tensor(tensor("A", 1, {1, 8, 4}));
  auto b = g.tensor(tensor("B", 2, {1, 4, 2}).set_data_type(DataType::Half));
  g.matmul(a, b);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "'A' (uid 1)"));
  BOOST_TEST(mentions(error, "no data type"));
  BOOST_TEST(mentions(error, "no io data type"));
}

BOOST_AUTO_TEST_CASE(output_without_data_type_in_graph_without_io_type_is_rejected) {
  Graph g;
  auto a = g.tensor(tensor("A", 1, {1, 8, 4}).set_data_type(DataType::Half));
  auto b = g.tensor(tensor("B", 2, {1, 4, 2}).set_data_type(DataType::Half));
  auto c = g.matmul(a, b, MatmulAttributes().set_name("mm"));
  c->set_name("C").set_output(true);
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "matmul 'mm'"));
  BOOST_TEST(mentions(error, "output 'C'"));
  BOOST_TEST(mentions(error, "no io data type"));
}

// Nothing the user gave is lost.

BOOST_AUTO_TEST_CASE(failed_validation_keeps_the_users_dims_strides_uid_and_type) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a =
      g.tensor(tensor("A", 11, {2, 8, 4}).set_stride({32, 1, 8}).set_data_type(DataType::BFloat16));
  auto b = g.tensor(tensor("B", 12, {2, 5, 3}));
  auto c = g.matmul(a, b, MatmulAttributes().set_name("mm"));
  c->set_uid(13).set_dim({2, 8, 3});
  BOOST_TEST_REQUIRE(!g.validate().has_value());
  BOOST_TEST(a->name() == "A");
  BOOST_TEST(a->uid().value_or(-1) == 11);
  BOOST_TEST(a->dim() == (Dims{2, 8, 4}));
  BOOST_TEST(a->stride() == (Dims{32, 1, 8}));
  BOOST_TEST((a->data_type() == DataType::BFloat16));
  BOOST_TEST(b->uid().value_or(-1) == 12);
  BOOST_TEST(b->dim() == (Dims{2, 5, 3}));
  BOOST_TEST(c->uid().value_or(-1) == 13);
  BOOST_TEST(c->dim() == (Dims{2, 8, 3}));
}

BOOST_AUTO_TEST_CASE(rejected_output_dims_are_kept_as_the_user_gave_them) {
  MatmulInputs in;
  auto c = in.g.matmul(in.a, in.b);
  c->set_dim({1, 8, 3}).set_stride({24, 3, 1});
  BOOST_TEST_REQUIRE(!in.g.validate().has_value());
  BOOST_TEST(c->dim() == (Dims{1, 8, 3}));
  BOOST_TEST(c->stride() == (Dims{24, 3, 1}));
}

BOOST_AUTO_TEST_CASE(failed_validation_assigns_no_uids) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(TensorAttributes().set_name("A").set_dim({1, 8, 4}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_dim({1, 5, 2}));
  auto c = g.matmul(a, b);
  BOOST_TEST_REQUIRE(!g.validate().has_value());
  BOOST_TEST(!a->uid().has_value());
  BOOST_TEST(!b->uid().has_value());
  BOOST_TEST(!c->uid().has_value());
}

// Build and execute before a plan exists.

BOOST_AUTO_TEST_CASE(execute_before_build_is_rejected) {
  MatmulInputs in;
  in.g.matmul(in.a, in.b);
  int buffer = 0;
  const std::unordered_map<std::int64_t, void*> pack{{1, &buffer}, {2, &buffer}};
  auto executed = in.g.execute(dnngraph::Handle(), pack, nullptr);
  BOOST_TEST_REQUIRE(!executed.has_value());
  BOOST_TEST(executed.error().code == ErrorCode::NotBuilt);
  BOOST_TEST(mentions(executed.error(), "execute"));
  BOOST_TEST(mentions(executed.error(), "not built"));
}

BOOST_AUTO_TEST_CASE(workspace_size_before_build_is_rejected) {
  MatmulInputs in;
  in.g.matmul(in.a, in.b);
  BOOST_TEST_REQUIRE(in.g.validate().has_value());
  auto size = in.g.get_workspace_size();
  BOOST_TEST_REQUIRE(!size.has_value());
  BOOST_TEST(size.error().code == ErrorCode::NotBuilt);
  BOOST_TEST(mentions(size.error(), "get_workspace_size"));
}

BOOST_AUTO_TEST_CASE(plan_info_before_build_is_rejected) {
  MatmulInputs in;
  in.g.matmul(in.a, in.b);
  auto info = in.g.plan_info();
  BOOST_TEST_REQUIRE(!info.has_value());
  BOOST_TEST(info.error().code == ErrorCode::NotBuilt);
  BOOST_TEST(mentions(info.error(), "plan_info"));
}

BOOST_AUTO_TEST_CASE(build_with_an_empty_handle_is_rejected) {
  MatmulInputs in;
  in.g.matmul(in.a, in.b)->set_output(true);
  const dnngraph::Handle empty;
  BOOST_TEST_REQUIRE(empty.empty());
  auto built = in.g.build(empty, {dnngraph::HeuristicMode::A});
  BOOST_TEST_REQUIRE(!built.has_value());
  BOOST_TEST(built.error().code == ErrorCode::InvalidHandle);
  BOOST_TEST(mentions(built.error(), "Handle is empty"));
  BOOST_TEST(!in.g.is_built());
}

BOOST_AUTO_TEST_CASE(build_refuses_an_input_no_node_reads) {
  MatmulInputs in;
  in.g.matmul(in.a, in.b)->set_output(true);
  in.g.tensor(TensorAttributes().set_name("stray").set_uid(7).set_dim({1, 2, 2}));
  auto built = in.g.build(dnngraph::Handle{}, {dnngraph::HeuristicMode::A});
  BOOST_TEST_REQUIRE(!built.has_value());
  BOOST_TEST(built.error().code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(built.error(), "'stray' (uid 7)"));
  BOOST_TEST(mentions(built.error(), "not used by any node"));
}

BOOST_AUTO_TEST_CASE(build_refuses_a_virtual_output_nothing_reads) {
  MatmulInputs in;
  auto c = in.g.matmul(in.a, in.b, MatmulAttributes().set_name("mm"));
  BOOST_TEST_REQUIRE(c->is_virtual());
  auto built = in.g.build(dnngraph::Handle{}, {dnngraph::HeuristicMode::A});
  BOOST_TEST_REQUIRE(!built.has_value());
  BOOST_TEST(built.error().code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(built.error(), "'mm::C'"));
  BOOST_TEST(mentions(built.error(), "set_output(true)"));
}
