// validate() settles what the user left out: node output dims (with batch broadcast), packed
// strides, data types of outputs and inputs, and uids. Runs without a GPU.
#define BOOST_TEST_MODULE shape_inference
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;

using namespace dnngraph::test;

namespace {

PointwiseAttributes pointwise(PointwiseMode mode) { return PointwiseAttributes().set_mode(mode); }

// The dims of A x B in a Half graph, after validate().
Dims matmul_dims(Dims a_dims, Dims b_dims) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", std::move(a_dims)));
  auto b = g.tensor(tensor("B", std::move(b_dims)));
  auto c = g.matmul(a, b);
  require_valid(g);
  return c->dim();
}

// A Half graph with A [2, 8, 4] and B [2, 4, 3] and C = A x B, not yet validated.
struct Matmul {
  Graph g;
  std::shared_ptr<TensorAttributes> a;
  std::shared_ptr<TensorAttributes> b;
  std::shared_ptr<TensorAttributes> c;

  Matmul() {
    g.set_io_data_type(DataType::Half);
    a = g.tensor(tensor("A", {2, 8, 4}));
    b = g.tensor(tensor("B", {2, 4, 3}));
    c = g.matmul(a, b);
  }
  void validate() { require_valid(g); }
};

}  // namespace

// Matmul dims.

BOOST_AUTO_TEST_CASE(matmul_output_is_batch_by_m_by_n) {
  BOOST_TEST(matmul_dims({2, 8, 4}, {2, 4, 3}) == (Dims{2, 8, 3}));
}

BOOST_AUTO_TEST_CASE(matmul_broadcasts_a_batch_of_1_in_b) {
  BOOST_TEST(matmul_dims({4, 8, 16}, {1, 16, 5}) == (Dims{4, 8, 5}));
}

BOOST_AUTO_TEST_CASE(matmul_broadcasts_a_batch_of_1_in_a) {
  BOOST_TEST(matmul_dims({1, 8, 16}, {3, 16, 5}) == (Dims{3, 8, 5}));
}

BOOST_AUTO_TEST_CASE(matmul_broadcasts_each_batch_dim_on_its_own) {
  BOOST_TEST(matmul_dims({2, 1, 8, 16}, {1, 7, 16, 5}) == (Dims{2, 7, 8, 5}));
}

// Strides.

BOOST_AUTO_TEST_CASE(packed_strides_make_the_last_dim_contiguous) {
  BOOST_TEST(dnngraph::packed_strides({2, 8, 3}) == (Dims{24, 3, 1}));
  BOOST_TEST(dnngraph::packed_strides({5}) == (Dims{1}));
}

BOOST_AUTO_TEST_CASE(matmul_output_gets_packed_strides) {
  Matmul mm;
  mm.validate();
  BOOST_TEST(mm.c->stride() == (Dims{24, 3, 1}));
}

BOOST_AUTO_TEST_CASE(input_without_strides_gets_packed_strides) {
  Matmul mm;
  mm.validate();
  BOOST_TEST(mm.a->stride() == (Dims{32, 4, 1}));
  BOOST_TEST(mm.b->stride() == (Dims{12, 3, 1}));
}

BOOST_AUTO_TEST_CASE(input_strides_the_user_set_are_kept) {
  Matmul mm;
  mm.b->set_stride({12, 1, 4});  // column-major B
  mm.validate();
  BOOST_TEST(mm.b->stride() == (Dims{12, 1, 4}));
}

BOOST_AUTO_TEST_CASE(output_strides_the_user_set_are_kept) {
  Matmul mm;
  mm.c->set_stride({24, 1, 8});
  mm.validate();
  BOOST_TEST(mm.c->dim() == (Dims{2, 8, 3}));
  BOOST_TEST(mm.c->stride() == (Dims{24, 1, 8}));
}

BOOST_AUTO_TEST_CASE(output_dims_the_user_set_that_agree_are_kept) {
  Matmul mm;
  mm.c->set_dim({2, 8, 3});
  mm.validate();
  BOOST_TEST(mm.c->dim() == (Dims{2, 8, 3}));
  BOOST_TEST(mm.c->stride() == (Dims{24, 3, 1}));
}

// Pointwise dims.

// Rank 4: a graph of pointwise nodes alone refuses two-dim broadcasts at rank 3 (see
// detail/nodes/pointwise.hpp); the inference itself is the same at any rank.
BOOST_AUTO_TEST_CASE(pointwise_broadcasts_a_bias_over_batch_and_rows) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", {2, 4, 8, 16}));
  auto bias = g.tensor(tensor("bias", {1, 1, 1, 16}));
  auto y = g.pointwise(x, bias, pointwise(PointwiseMode::Add));
  require_valid(g);
  BOOST_TEST(y->dim() == (Dims{2, 4, 8, 16}));
  BOOST_TEST(y->stride() == (Dims{512, 128, 16, 1}));
}

BOOST_AUTO_TEST_CASE(pointwise_broadcasts_the_first_input_too) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", {1, 1, 8, 1}));
  auto b = g.tensor(tensor("B", {1, 4, 1, 16}));
  auto y = g.pointwise(x, b, pointwise(PointwiseMode::Mul));
  require_valid(g);
  BOOST_TEST(y->dim() == (Dims{1, 4, 8, 16}));
}

BOOST_AUTO_TEST_CASE(unary_pointwise_output_has_the_input_dims) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", {3, 5, 7}));
  auto y = g.pointwise(x, pointwise(PointwiseMode::TanhFwd));
  require_valid(g);
  BOOST_TEST(y->dim() == (Dims{3, 5, 7}));
  BOOST_TEST(y->stride() == (Dims{35, 7, 1}));
}

BOOST_AUTO_TEST_CASE(dims_flow_through_a_chain_of_nodes) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", {4, 8, 16}));
  auto b = g.tensor(tensor("B", {1, 16, 5}));
  auto bias = g.tensor(tensor("bias", {1, 1, 5}));
  auto c = g.matmul(a, b);
  auto d = g.pointwise(c, bias, pointwise(PointwiseMode::Add));
  auto y = g.pointwise(d, pointwise(PointwiseMode::ReluFwd));
  require_valid(g);
  BOOST_TEST(y->dim() == (Dims{4, 8, 5}));
}

// Data types.

BOOST_AUTO_TEST_CASE(virtual_output_defaults_to_float) {
  Matmul mm;
  mm.validate();
  BOOST_TEST_REQUIRE(mm.c->is_virtual());
  BOOST_TEST_REQUIRE(mm.c->data_type().has_value());
  BOOST_TEST(*mm.c->data_type() == DataType::Float);
}

BOOST_AUTO_TEST_CASE(virtual_output_takes_the_intermediate_data_type) {
  Matmul mm;
  mm.g.set_intermediate_data_type(DataType::BFloat16);
  mm.validate();
  BOOST_TEST_REQUIRE(mm.c->data_type().has_value());
  BOOST_TEST(*mm.c->data_type() == DataType::BFloat16);
}

BOOST_AUTO_TEST_CASE(output_takes_the_io_data_type) {
  Matmul mm;
  mm.g.set_intermediate_data_type(DataType::Float);
  mm.c->set_output(true);
  mm.validate();
  BOOST_TEST_REQUIRE(mm.c->data_type().has_value());
  BOOST_TEST(*mm.c->data_type() == DataType::Half);
}

BOOST_AUTO_TEST_CASE(output_data_type_the_user_set_is_kept) {
  Matmul mm;
  mm.c->set_output(true).set_data_type(DataType::Float);
  mm.validate();
  BOOST_TEST_REQUIRE(mm.c->data_type().has_value());
  BOOST_TEST(*mm.c->data_type() == DataType::Float);
}

BOOST_AUTO_TEST_CASE(input_without_data_type_takes_the_io_data_type) {
  Matmul mm;
  mm.b->set_data_type(DataType::BFloat16);
  mm.validate();
  BOOST_TEST_REQUIRE(mm.a->data_type().has_value());
  BOOST_TEST(*mm.a->data_type() == DataType::Half);
  BOOST_TEST_REQUIRE(mm.b->data_type().has_value());
  BOOST_TEST(*mm.b->data_type() == DataType::BFloat16);
}

// Uids.

BOOST_AUTO_TEST_CASE(every_tensor_gets_a_uid_and_no_two_share_one) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", {4, 8, 16}).set_uid(5));
  auto b = g.tensor(tensor("B", {1, 16, 5}));
  auto bias = g.tensor(tensor("bias", {1, 1, 5}).set_uid(2));
  auto c = g.matmul(a, b);
  auto d = g.pointwise(c, bias, pointwise(PointwiseMode::Add));
  auto y = g.pointwise(d, pointwise(PointwiseMode::ReluFwd));
  y->set_output(true).set_uid(3);
  require_valid(g);
  std::set<std::int64_t> uids;
  for (const auto& t : {a, b, bias, c, d, y}) {
    BOOST_TEST_REQUIRE(t->uid().has_value(), t->name() << " has no uid");
    uids.insert(*t->uid());
  }
  BOOST_TEST(uids.size() == 6U);
}

BOOST_AUTO_TEST_CASE(user_uids_are_kept_and_automatic_ones_avoid_them) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", {1, 8, 4}));
  auto b = g.tensor(tensor("B", {1, 4, 2}).set_uid(1));
  auto c = g.matmul(a, b);
  c->set_output(true).set_uid(2);
  require_valid(g);
  BOOST_TEST(b->uid().value_or(-1) == 1);
  BOOST_TEST(c->uid().value_or(-1) == 2);
  BOOST_TEST_REQUIRE(a->uid().has_value());
  BOOST_TEST(*a->uid() != 1);
  BOOST_TEST(*a->uid() != 2);
}

BOOST_AUTO_TEST_CASE(validating_twice_changes_nothing) {
  Matmul mm;
  mm.validate();
  const Dims c_dims = mm.c->dim();
  const Dims c_strides = mm.c->stride();
  const std::optional<std::int64_t> a_uid = mm.a->uid();
  const std::optional<std::int64_t> c_uid = mm.c->uid();
  mm.validate();
  BOOST_TEST(mm.c->dim() == c_dims);
  BOOST_TEST(mm.c->stride() == c_strides);
  BOOST_TEST((mm.a->uid() == a_uid));
  BOOST_TEST((mm.c->uid() == c_uid));
}

// io_tensors(): the buffers a variant pack needs, with what validate() filled in; by-value
// scalars and virtual intermediates are not among them; before validate() (or after a change)
// it is the same error as the override checks.
BOOST_AUTO_TEST_CASE(io_tensors_are_the_variant_pack_tensors_as_validated) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto a = g.tensor(tensor("A", 7, {2, 8, 4}));
  auto b = g.tensor(tensor("B", {2, 4, 16}));
  auto scale = g.tensor(TensorAttributes().set_name("scale").set_value(0.5F));
  auto c = g.matmul(a, b);
  auto y = g.pointwise(c, scale, pointwise(PointwiseMode::Mul));
  y->set_output(true);
  BOOST_TEST(!g.io_tensors().has_value());
  require_valid(g);
  auto io = g.io_tensors();
  BOOST_TEST_REQUIRE(io.has_value());
  BOOST_TEST_REQUIRE(io->size() == 3U);
  BOOST_TEST((*io)[0]->name() == "A");
  BOOST_TEST((*io)[0]->uid().value_or(-1) == 7);
  BOOST_TEST((*io)[1]->stride() == (Dims{64, 16, 1}));
  BOOST_TEST(((*io)[2]->data_type() == DataType::Half));
  BOOST_TEST((*io)[2]->dim() == (Dims{2, 8, 16}));
  BOOST_TEST((*io)[2]->uid().has_value());
  b->set_dim({2, 4, 32});
  BOOST_TEST(!g.io_tensors().has_value());
}
