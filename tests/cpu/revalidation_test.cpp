// validate() fills in what it infers (output dims and strides, data types, uids), takes it back
// before the next validation, and leaves the tensors exactly as they were when it fails.
#define BOOST_TEST_MODULE revalidation
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/printing.hpp"

namespace {

using Dims = std::vector<std::int64_t>;
using dnngraph::DataType;

struct Matmul {
  dnngraph::Graph g;
  std::shared_ptr<dnngraph::TensorAttributes> a, b, c;
  Matmul() {
    g.set_io_data_type(DataType::Half);
    a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_dim({1, 8, 4}));
    b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_dim({1, 4, 2}));
    c = g.matmul(a, b);
    c->set_output(true);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(revalidation, Matmul)

BOOST_AUTO_TEST_CASE(a_changed_io_type_takes_effect_on_the_next_validation) {
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST(*a->data_type() == DataType::Half);
  g.set_io_data_type(DataType::BFloat16);
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST(*a->data_type() == DataType::BFloat16);
  BOOST_TEST(*c->data_type() == DataType::BFloat16);
}

BOOST_AUTO_TEST_CASE(changed_input_dims_give_new_output_dims) {
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST(c->dim() == (Dims{1, 8, 2}));
  a->set_dim({3, 16, 4});
  b->set_dim({3, 4, 32});
  auto again = g.validate();
  BOOST_TEST_REQUIRE(again.has_value(), (again ? "" : again.error().message));
  BOOST_TEST(c->dim() == (Dims{3, 16, 32}));
  BOOST_TEST(a->stride() == (Dims{64, 4, 1}));  // strides follow the new dims too
}

BOOST_AUTO_TEST_CASE(a_uid_set_later_does_not_collide_with_an_assigned_one) {
  BOOST_TEST_REQUIRE(g.validate().has_value());
  const auto assigned = *a->uid();
  auto late =
      g.tensor(dnngraph::TensorAttributes().set_name("late").set_uid(assigned).set_dim({1, 8, 2}));
  auto sum =
      g.pointwise(c, late, dnngraph::PointwiseAttributes().set_mode(dnngraph::PointwiseMode::Add));
  c->set_output(false);
  sum->set_output(true);
  auto again = g.validate();
  BOOST_TEST_REQUIRE(again.has_value(), (again ? "" : again.error().message));
  BOOST_TEST(*late->uid() == assigned);  // the user's uid stays
  BOOST_TEST(*a->uid() != assigned);     // the graph's own moved aside
}

BOOST_AUTO_TEST_CASE(values_the_user_set_after_validation_are_kept) {
  BOOST_TEST_REQUIRE(g.validate().has_value());
  c->set_uid(42);  // replaces the assigned uid
  BOOST_TEST_REQUIRE(g.validate().has_value());
  BOOST_TEST(*c->uid() == 42);
}

// Found by tests/fuzz/graph_fuzz.cpp: the failed validation took back what the earlier one
// had filled in (uids, dims, strides) and left it unset.
BOOST_AUTO_TEST_CASE(a_failed_validation_keeps_what_the_last_successful_one_filled_in) {
  BOOST_TEST_REQUIRE(g.validate().has_value());
  const auto uid = a->uid();
  g.matmul(c, nullptr);  // an error deferred to the next validation
  BOOST_TEST_REQUIRE(!g.validate().has_value());
  BOOST_TEST((a->uid() == uid));
  BOOST_TEST(c->dim() == (Dims{1, 8, 2}));
  BOOST_TEST(a->stride() == (Dims{32, 4, 1}));
}

BOOST_AUTO_TEST_CASE(a_failed_validation_changes_no_tensor) {
  b->set_dim({1, 5, 2});  // K mismatch: validation fails after the inputs were settled
  auto r = g.validate();
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(!a->uid().has_value());
  BOOST_TEST(!a->data_type().has_value());
  BOOST_TEST(a->stride().empty());
  BOOST_TEST(c->dim().empty());
  BOOST_TEST(!c->data_type().has_value());
}

BOOST_AUTO_TEST_SUITE_END()
