// Reshape nodes without a GPU: reshape() rejects each kind of bad input with its ErrorCode and a
// message that names the node, the tensor, the dims or entry and the expected and given values;
// gives Y packed strides (a merge or split of dims) or X's dims and strides in the permutation's
// order (a transpose), and X's data type; and lowers, alone and around a matmul, to finalized
// cuDNN descriptors.
#define BOOST_TEST_MODULE reshape
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
using dnngraph::ReshapeAttributes;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

ReshapeAttributes named(std::string name = "rs") {
  return ReshapeAttributes().set_name(std::move(name));
}

ReshapeAttributes permuted(Dims permutation) {
  return named().set_permutation(std::move(permutation));
}

// A Half graph with X [2, 3, 4] (uid 1, packed); reshape() adds the node and names Y (uid 2).
struct Reshape {
  Graph g;
  TensorPtr x;

  Reshape() {
    g.set_io_data_type(DataType::Half);
    x = g.tensor(tensor("X", 1, {2, 3, 4}));
  }
  TensorPtr reshape(Dims y_dims, ReshapeAttributes attributes = named()) {
    auto y = g.reshape(x, std::move(attributes));
    y->set_name("Y").set_uid(2).set_output(true);
    if (!y_dims.empty()) {
      y->set_dim(std::move(y_dims));
    }
    return y;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(reshape_validation)

BOOST_AUTO_TEST_CASE(y_without_dims_or_permutation_is_rejected_asking_for_either) {
  Reshape r;
  r.reshape({});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "reshape 'rs': Y 'Y' (uid 2) has no dims"));
  BOOST_TEST(mentions(error, "X has dims [2, 3, 4], 24 elements: e.g. [6, 4]"));
  BOOST_TEST(mentions(error, "permutation"));
}

BOOST_AUTO_TEST_CASE(y_with_another_element_count_is_rejected_naming_both_counts) {
  Reshape r;
  r.reshape({5, 4});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "Y 'Y' (uid 2) has dims [5, 4] (20 elements)"));
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has dims [2, 3, 4] (24 elements)"));
}

BOOST_AUTO_TEST_CASE(y_with_a_dim_that_is_not_positive_is_rejected) {
  Reshape r;
  r.reshape({-6, -4});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "[-6, -4] (not all positive"));
}

BOOST_AUTO_TEST_CASE(y_of_rank_nine_is_rejected_naming_the_largest_rank) {
  Reshape r;
  r.reshape({1, 1, 1, 1, 1, 1, 2, 3, 4});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "(rank 9); a tensor has 1 to 8 dims"));
}

BOOST_AUTO_TEST_CASE(a_permutation_of_another_length_is_rejected_naming_the_rank_of_x) {
  Reshape r;
  r.reshape({}, permuted({1, 0}));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "permutation [1, 0] has 2 entries"));
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has dims [2, 3, 4] (rank 3)"));
}

BOOST_AUTO_TEST_CASE(a_permutation_entry_beyond_the_dims_of_x_is_rejected) {
  Reshape r;
  r.reshape({}, permuted({0, 1, 3}));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "reshape 'rs': entry 2 of permutation [0, 1, 3] is 3"));
  BOOST_TEST(mentions(error, "0 to 2"));
}

BOOST_AUTO_TEST_CASE(a_negative_permutation_entry_is_rejected) {
  Reshape r;
  r.reshape({}, permuted({-1, 0, 1}));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "entry 0 of permutation [-1, 0, 1] is -1"));
}

BOOST_AUTO_TEST_CASE(a_repeated_permutation_entry_is_rejected) {
  Reshape r;
  r.reshape({}, permuted({0, 2, 0}));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "entry 2 of permutation [0, 2, 0] is 0, which an earlier entry"));
}

BOOST_AUTO_TEST_CASE(y_dims_other_than_the_permutation_gives_are_rejected) {
  Reshape r;
  r.reshape({2, 3, 4}, permuted({0, 2, 1}));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "was given dims [2, 3, 4], but the inputs give [2, 4, 3]"));
}

BOOST_AUTO_TEST_CASE(y_strides_other_than_the_permutation_gives_are_rejected) {
  Reshape r;
  r.reshape({}, permuted({0, 2, 1}))->set_stride({12, 3, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "was given strides [12, 3, 1]"));
  BOOST_TEST(mentions(error, "strides [12, 4, 1] gives [12, 1, 4]"));
}

BOOST_AUTO_TEST_CASE(a_merge_of_dims_of_x_with_gaps_is_rejected_naming_its_span) {
  Reshape r;
  r.x->set_stride({16, 5, 1});  // rows of 4 padded to 5, planes of 15 padded to 16
  r.reshape({6, 4});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has dims [2, 3, 4] and strides [16, 5, 1]"));
  BOOST_TEST(mentions(error, "span 30 elements for 24"));
}

BOOST_AUTO_TEST_CASE(y_strides_with_gaps_are_rejected_naming_their_span) {
  Reshape r;
  r.reshape({6, 4})->set_stride({8, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "Y 'Y' (uid 2) has dims [6, 4] and strides [8, 1]"));
  BOOST_TEST(mentions(error, "span 44 elements for 24"));
}

BOOST_AUTO_TEST_CASE(overlapping_y_strides_are_rejected_by_the_layout_rule) {
  Reshape r;
  r.reshape({6, 4})->set_stride({2, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "tensor 'Y' (uid 2)"));
  BOOST_TEST(mentions(error, "overlap"));
}

BOOST_AUTO_TEST_CASE(y_strides_of_another_rank_are_rejected) {
  Reshape r;
  r.reshape({6, 4})->set_stride({4, 1, 1});
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "has 2 dims but 3 strides [4, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_compute_data_type_is_rejected_as_meaningless) {
  Reshape r;
  r.reshape({6, 4}, named().set_compute_data_type(DataType::Float));
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "reshape 'rs': compute data type Float is set"));
}

BOOST_AUTO_TEST_CASE(another_data_type_for_the_view_of_an_input_in_memory_is_rejected) {
  Reshape r;
  r.reshape({6, 4})->set_data_type(DataType::Float);
  const Error error = validation_error(r.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "Y 'Y' (uid 2) has data type Float, but X 'X' (uid 1) has Half"));
}

BOOST_AUTO_TEST_CASE(a_by_value_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto y = g.reshape(g.tensor(2.0F), named());
  y->set_output(true).set_dim({1});
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "reshape 'rs': input X"));
  BOOST_TEST(mentions(error, "passed by value"));
}

BOOST_AUTO_TEST_CASE(a_null_input_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  g.reshape(nullptr, named());
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "reshape 'rs': input X is null"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reshape_shapes)

BOOST_AUTO_TEST_CASE(a_merge_of_dims_keeps_the_user_dims_and_gets_packed_strides) {
  Reshape r;
  auto y = r.reshape({6, 4});
  require_valid(r.g);
  BOOST_TEST(y->dim() == (Dims{6, 4}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{4, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_split_of_a_dim_gets_packed_strides) {
  Reshape r;
  auto y = r.reshape({2, 3, 2, 2});
  require_valid(r.g);
  BOOST_TEST(y->stride() == (Dims{12, 4, 2, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(y_strides_in_another_packed_order_are_kept) {
  Reshape r;
  auto y = r.reshape({6, 4});
  y->set_stride({1, 6});
  require_valid(r.g);
  BOOST_TEST(y->stride() == (Dims{1, 6}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_transpose_gives_y_the_dims_and_strides_of_x_in_permutation_order) {
  Reshape r;
  auto y = r.reshape({}, permuted({0, 2, 1}));
  require_valid(r.g);
  BOOST_TEST(y->dim() == (Dims{2, 4, 3}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{12, 1, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_transpose_of_x_with_gaps_keeps_its_strides) {
  Reshape r;
  r.x->set_stride({16, 5, 1});
  auto y = r.reshape({}, permuted({2, 0, 1}));
  require_valid(r.g);
  BOOST_TEST(y->dim() == (Dims{4, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{1, 16, 5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(y_takes_the_data_type_of_x_not_the_io_type) {
  Reshape r;
  r.x->set_data_type(DataType::Float);
  auto y = r.reshape({24});
  require_valid(r.g);
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Float);
}

BOOST_AUTO_TEST_CASE(a_virtual_x_may_give_y_another_data_type) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_intermediate_data_type(DataType::Float);
  auto a = g.tensor(tensor("A", 1, {1, 8, 16}));
  auto b = g.tensor(tensor("B", 2, {1, 16, 4}));
  auto c = g.matmul(a, b, MatmulAttributes().set_name("mm"));
  auto y = g.reshape(c, permuted({0, 2, 1}));
  y->set_name("Y").set_uid(3).set_output(true).set_data_type(DataType::Half);
  require_valid(g);
  BOOST_TEST(c->data_type().value_or(DataType::Int8) == DataType::Float);
  BOOST_TEST(y->dim() == (Dims{1, 4, 8}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{32, 1, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_unnamed_reshape_is_named_by_its_position) {
  Reshape r;
  auto y = r.g.reshape(r.x);
  y->set_output(true).set_dim({24});
  require_valid(r.g);
  BOOST_TEST(y->name() == "reshape_0::Y");
}

BOOST_AUTO_TEST_CASE(revalidation_infers_the_same_strides_and_type_again) {
  Reshape r;
  auto y = r.reshape({}, permuted({1, 0, 2}));
  require_valid(r.g);
  require_valid(r.g);
  BOOST_TEST(y->dim() == (Dims{3, 2, 4}), boost::test_tools::per_element());
  BOOST_TEST(y->stride() == (Dims{4, 12, 1}), boost::test_tools::per_element());
  BOOST_TEST(y->data_type().value_or(DataType::Int8) == DataType::Half);
}

BOOST_AUTO_TEST_CASE(a_failed_validation_leaves_y_as_the_user_set_it) {
  Reshape r;
  auto y = r.reshape({5, 4});
  BOOST_TEST(!r.g.validate().has_value());
  BOOST_TEST(y->stride().empty());
  BOOST_TEST(!y->data_type().has_value());
}

BOOST_AUTO_TEST_CASE(execute_time_overrides_are_refused_naming_the_node) {
  Reshape r;
  r.g.set_override_shape_enabled(true);
  r.reshape({6, 4});
  require_valid(r.g);
  const std::vector<std::int64_t> uids{1, 2};
  const std::vector<Dims> shapes{{1, 3, 4}, {3, 4}};
  const std::vector<Dims> strides{{12, 4, 1}, {4, 1}};
  auto checked = r.g.check_overrides(uids, shapes, strides);
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST_MESSAGE(checked.error().message);
  BOOST_TEST(mentions(checked.error(), "reshape 'rs'"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reshape_lowering)

BOOST_AUTO_TEST_CASE(a_merge_of_dims_lowers_to_two_tensors_and_one_operation) {
  Reshape r;
  r.reshape({6, 4});
  const LoweringSummary summary = require_lowered(r.g);
  BOOST_TEST(summary.tensor_count == 2U);
  BOOST_TEST(summary.operation_count == 1U);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST_REQUIRE(summary.operations.size() == 1U);
  BOOST_TEST(summary.operations[0] == "reshape 'rs'");
}

BOOST_AUTO_TEST_CASE(a_transpose_lowers_to_finalized_descriptors) {
  Reshape r;
  r.reshape({}, permuted({2, 1, 0}));
  BOOST_TEST(require_lowered(r.g).all_finalized);
}

// The attention pattern: B stored [1, N, K] row-major, transposed by a view into matmul's
// [1, K, N] operand (K contiguous).
BOOST_AUTO_TEST_CASE(a_transposed_operand_of_a_matmul_lowers_to_two_operations) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_intermediate_data_type(DataType::Float);
  auto a = g.tensor(tensor("A", 1, {1, 8, 16}));
  auto b = g.tensor(tensor("B", 2, {1, 4, 16}));
  auto b_t = g.reshape(b, permuted({0, 2, 1}));
  auto c = g.matmul(a, b_t, MatmulAttributes().set_name("mm"));
  c->set_name("C").set_uid(3).set_output(true);
  const LoweringSummary summary = require_lowered(g);
  BOOST_TEST(summary.tensor_count == 4U);
  BOOST_TEST(summary.operation_count == 2U);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(b_t->is_virtual());
  BOOST_TEST(b_t->stride() == (Dims{64, 1, 16}), boost::test_tools::per_element());
  BOOST_TEST(b_t->data_type().value_or(DataType::Int8) == DataType::Half);
}

BOOST_AUTO_TEST_CASE(a_matmul_output_merged_into_rows_lowers) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_intermediate_data_type(DataType::Float);
  auto a = g.tensor(tensor("A", 1, {2, 8, 16}));
  auto b = g.tensor(tensor("B", 2, {2, 16, 4}));
  auto c = g.matmul(a, b, MatmulAttributes().set_name("mm"));
  auto y = g.reshape(c, named());
  y->set_name("Y").set_uid(3).set_output(true).set_dim({1, 16, 4}).set_data_type(DataType::Half);
  const LoweringSummary summary = require_lowered(g);
  BOOST_TEST(summary.operation_count == 2U);
  BOOST_TEST(summary.all_finalized);
}

BOOST_AUTO_TEST_CASE(lower_returns_the_validation_error_of_an_invalid_reshape) {
  Reshape r;
  r.reshape({});
  auto lowered = r.g.lower();
  BOOST_TEST_REQUIRE(!lowered.has_value());
  BOOST_TEST(lowered.error().code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(lowered.error(), "has no dims"));
}

BOOST_AUTO_TEST_SUITE_END()
