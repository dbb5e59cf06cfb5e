// Override-shape lists are checked before cuDNN sees them: each violation is its own Error
// naming the override's index, the tensor and the values. No GPU needed: Graph::check_overrides
// runs the same checks as execute() and get_workspace_size().
#define BOOST_TEST_MODULE override_shapes
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/printing.hpp"

namespace {

using Dims = std::vector<std::int64_t>;
using dnngraph::ErrorCode;

// Y = ReLU(A x B), fp16, built (here: validated) on the cache shape b=1, M=N=K=1024.
struct MatmulGraph {
  dnngraph::Graph g;
  MatmulGraph() {
    using namespace dnngraph;
    g.set_io_data_type(DataType::Half).set_override_shape_enabled(true);
    auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, 1024, 1024}));
    auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1024, 1024}));
    auto y = g.pointwise(g.matmul(a, b), PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
    y->set_output(true).set_uid(3).set_name("Y");
    BOOST_TEST_REQUIRE(g.validate().has_value());
  }
  dnngraph::Result<void> check(const std::vector<std::int64_t>& uids,
                               const std::vector<Dims>& shapes,
                               const std::vector<Dims>& strides) const {
    return g.check_overrides(uids, shapes, strides);
  }
};

Dims packed(const Dims& d) { return dnngraph::packed_strides(d); }

void expect_error(const dnngraph::Result<void>& r, ErrorCode code,
                  const std::vector<std::string>& words) {
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().code == code);
  for (const auto& w : words) {
    BOOST_TEST(r.error().message.find(w) != std::string::npos,
               "message lacks '" << w << "': " << r.error().message);
  }
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(check_overrides, MatmulGraph)

BOOST_AUTO_TEST_CASE(a_full_consistent_override_is_accepted) {
  const Dims a{4, 1000, 512}, b{4, 512, 776}, y{4, 1000, 776};
  auto r = check({1, 2, 3}, {a, b, y}, {packed(a), packed(b), packed(y)});
  BOOST_TEST(r.has_value(), (r ? "" : r.error().message));
}

BOOST_AUTO_TEST_CASE(arrays_and_vectors_pass_straight_in) {
  const std::array<std::int64_t, 3> uids{1, 2, 3};
  const std::array<Dims, 3> shapes{Dims{1, 512, 512}, Dims{1, 512, 512}, Dims{1, 512, 512}};
  const std::vector<Dims> strides(3, Dims{512L * 512, 512, 1});
  BOOST_TEST(g.check_overrides(uids, shapes, strides).has_value());
}

BOOST_AUTO_TEST_CASE(lists_of_different_lengths_are_rejected) {
  expect_error(check({1, 2}, {Dims{1, 8, 8}}, {Dims{64, 8, 1}, Dims{64, 8, 1}}),
               ErrorCode::InvalidAttribute,
               {"differ in length", "2 uids", "1 shapes", "2 strides"});
}

BOOST_AUTO_TEST_CASE(an_unknown_uid_is_rejected) {
  expect_error(check({9}, {Dims{1, 8, 8}}, {Dims{64, 8, 1}}), ErrorCode::MissingTensor,
               {"override 0", "uid 9", "no tensor of this graph"});
}

BOOST_AUTO_TEST_CASE(a_virtual_tensor_takes_no_override) {
  // uid 4 is the matmul's virtual output (auto-assigned above the user's uids).
  expect_error(check({4}, {Dims{1, 8, 8}}, {Dims{64, 8, 1}}), ErrorCode::InvalidAttribute,
               {"override 0", "virtual"});
}

BOOST_AUTO_TEST_CASE(a_uid_listed_twice_is_rejected) {
  const Dims a{1, 512, 1024};
  expect_error(check({1, 1}, {a, a}, {packed(a), packed(a)}), ErrorCode::InvalidAttribute,
               {"listed twice", "overrides 0 and 1", "'A' (uid 1)"});
}

BOOST_AUTO_TEST_CASE(a_shape_of_another_rank_is_rejected) {
  expect_error(check({2}, {Dims{512, 1024}}, {Dims{1024, 1}}), ErrorCode::ShapeMismatch,
               {"override 0", "'B' (uid 2)", "[512, 1024]", "rank 2", "rank 3"});
}

BOOST_AUTO_TEST_CASE(strides_of_another_rank_are_rejected) {
  expect_error(check({2}, {Dims{1, 1024, 1024}}, {Dims{1024, 1}}), ErrorCode::ShapeMismatch,
               {"override 0", "strides [1024, 1]", "rank 2"});
}

BOOST_AUTO_TEST_CASE(a_zero_dim_is_rejected) {
  expect_error(check({1}, {Dims{1, 0, 1024}}, {Dims{1024, 1024, 1}}), ErrorCode::InvalidAttribute,
               {"override 0", "'A' (uid 1)", "dim 1 is 0", "positive"});
}

BOOST_AUTO_TEST_CASE(a_negative_dim_is_rejected) {
  expect_error(check({1}, {Dims{1, 1024, -8}}, {Dims{1024, 8, 1}}), ErrorCode::InvalidAttribute,
               {"dim 2 is -8"});
}

BOOST_AUTO_TEST_CASE(a_zero_stride_is_rejected) {
  expect_error(check({1}, {Dims{1, 1024, 1024}}, {Dims{1048576, 0, 1}}),
               ErrorCode::InvalidAttribute, {"stride 1 is 0", "positive"});
}

BOOST_AUTO_TEST_CASE(strides_that_change_the_layout_are_rejected) {
  // Column-major A where the plan was built for row-major.
  expect_error(check({1}, {Dims{1, 512, 256}}, {Dims{131072, 1, 512}}), ErrorCode::InvalidAttribute,
               {"order the dims differently", "[131072, 1, 512]"});
}

BOOST_AUTO_TEST_CASE(overlapping_strides_are_rejected) {
  expect_error(check({1}, {Dims{1, 512, 256}}, {Dims{131072, 128, 1}}), ErrorCode::InvalidAttribute,
               {"overlap", "dim 1 has stride 128", "256 x 1"});
}

BOOST_AUTO_TEST_CASE(a_row_stride_that_breaks_16_byte_alignment_is_rejected) {
  // 33 fp16 values are 66 bytes: the rows no longer start on 16-byte boundaries.
  const Dims b{1, 1024, 33};
  expect_error(check({2}, {b}, {packed(b)}), ErrorCode::InvalidAttribute,
               {"'B' (uid 2)", "stride 1 is 33", "66 bytes", "16 bytes"});
}

BOOST_AUTO_TEST_CASE(an_output_left_at_its_build_shape_must_still_fit) {
  const Dims a{1, 512, 1024}, b{1, 1024, 512};
  expect_error(
      check({1, 2}, {a, b}, {packed(a), packed(b)}), ErrorCode::ShapeMismatch,
      {"'Y' (uid 3)", "[1, 512, 512]", "keeps its build dims [1, 1024, 1024]", "override it too"});
}

BOOST_AUTO_TEST_CASE(inputs_that_disagree_on_k_are_rejected) {
  const Dims a{1, 512, 512}, b{1, 1024, 512}, y{1, 512, 512};
  expect_error(check({1, 2, 3}, {a, b, y}, {packed(a), packed(b), packed(y)}),
               ErrorCode::ShapeMismatch, {"overrides", "K of A", "512", "K of B", "1024"});
}

BOOST_AUTO_TEST_CASE(an_output_override_that_disagrees_with_the_inputs_is_rejected) {
  const Dims a{1, 512, 1024}, b{1, 1024, 256}, y{1, 512, 512};
  expect_error(check({1, 2, 3}, {a, b, y}, {packed(a), packed(b), packed(y)}),
               ErrorCode::ShapeMismatch,
               {"'Y' (uid 3)", "[1, 512, 256]", "its override is [1, 512, 512]"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(overrides_before_validate_are_not_checkable) {
  dnngraph::Graph g;
  g.set_io_data_type(dnngraph::DataType::Half).set_override_shape_enabled(true);
  auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_dim({1, 8, 8}));
  auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_dim({1, 8, 8}));
  g.matmul(a, b)->set_output(true);
  const std::vector<std::int64_t> uids{1};
  const std::vector<Dims> shapes{Dims{1, 8, 8}};
  auto r = g.check_overrides(uids, shapes, shapes);
  expect_error(r, ErrorCode::NotBuilt, {"validate()"});
}

BOOST_AUTO_TEST_CASE(execute_and_workspace_query_with_overrides_need_a_build) {
  MatmulGraph m;
  dnngraph::Handle none;
  const std::vector<std::int64_t> uids{1};
  const std::vector<Dims> shapes{Dims{1, 8, 1024}};
  const std::vector<Dims> strides{Dims{8192, 1024, 1}};
  auto ws = m.g.get_workspace_size(none, uids, shapes, strides);
  BOOST_TEST_REQUIRE(!ws.has_value());
  BOOST_TEST(ws.error().code == ErrorCode::NotBuilt);
  auto ran = m.g.execute(none, {}, nullptr, uids, shapes, strides);
  expect_error(ran, ErrorCode::NotBuilt, {"not built"});
}

BOOST_AUTO_TEST_CASE(set_override_shape_enabled_chains_with_the_other_options) {
  dnngraph::Graph g;
  dnngraph::Graph& same = g.set_override_shape_enabled(true)
                              .set_io_data_type(dnngraph::DataType::BFloat16)
                              .set_override_shape_enabled(false);
  BOOST_TEST(&same == &g);
}
