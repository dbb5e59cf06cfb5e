// Graph::key() and Graph::topology_key(), on the CPU: equal for graphs that give cuDNN the same
// descriptors, different where cuDNN would see a difference, and topology_key() equal across the
// shapes of one layout.
#define BOOST_TEST_MODULE graph_key
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::MatmulAttributes;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using Dims = std::vector<std::int64_t>;

using namespace dnngraph::test;

namespace {

template <class T>
std::string describe(const dnngraph::Result<T>& result) {
  return result ? std::string("success") : result.error().message;
}

// What the graphs below may differ in.
struct Variant {
  std::int64_t m = 64, k = 32, n = 16;
  PointwiseMode activation = PointwiseMode::ReluFwd;
  DataType io = DataType::BFloat16;
  bool dynamic = false;
  bool b_transposed = false;  // B's strides column-major
  std::int64_t y_uid = 3;
  std::string name = "mm";  // names are not given to cuDNN
};

// Y = activation(A x B + bias).
Graph make(const Variant& v) {
  Graph g;
  g.set_io_data_type(v.io).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(v.dynamic);
  auto a = g.tensor(tensor("A", {4, v.m, v.k}).set_uid(1));
  auto b_attributes = tensor("B", {4, v.k, v.n}).set_uid(2);
  if (v.b_transposed) {
    b_attributes.set_stride({v.k * v.n, 1, v.k});
  }
  auto b = g.tensor(b_attributes);
  auto bias = g.tensor(tensor("bias", {1, 1, v.n}).set_uid(4));
  auto c = g.matmul(a, b, MatmulAttributes().set_name(v.name));
  auto d = g.pointwise(c, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  g.pointwise(d, PointwiseAttributes().set_mode(v.activation))->set_output(true).set_uid(v.y_uid);
  return g;
}

std::string key(const Variant& v) {
  Graph g = make(v);
  auto k = g.key();
  BOOST_REQUIRE_MESSAGE(k.has_value(), "key: " << describe(k));
  return *k;
}

std::string topology(const Variant& v) {
  Graph g = make(v);
  auto k = g.topology_key();
  BOOST_REQUIRE_MESSAGE(k.has_value(), "topology_key: " << describe(k));
  return *k;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_same_description_has_the_same_key_in_any_graph_object) {
  const std::string first = key({});
  BOOST_TEST(first.size() == 32U);
  BOOST_TEST(first.find_first_not_of("0123456789abcdef") == std::string::npos);
  BOOST_TEST(key({}) == first);
  Graph g = make({});
  auto again = g.key();
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(*again == first);
  BOOST_TEST(g.key().value() == first);                // asking twice changes nothing
  BOOST_TEST(key({.name = "another name"}) == first);  // a name cuDNN is not given
}

BOOST_AUTO_TEST_CASE(every_difference_cudnn_sees_gives_another_key) {
  const std::string base = key({});
  const std::vector<std::pair<const char*, Variant>> others{
      {"activation", {.activation = PointwiseMode::GeluFwd}},
      {"io type", {.io = DataType::Half}},
      {"dynamic shape", {.dynamic = true}},
      {"a dim", {.m = 128}},
      {"B's strides", {.b_transposed = true}},
      {"Y's uid", {.y_uid = 7}},
  };
  for (const auto& [what, v] : others) {
    BOOST_TEST_CONTEXT(what) { BOOST_TEST(key(v) != base); }
  }
}

BOOST_AUTO_TEST_CASE(topology_key_is_one_for_the_shapes_of_a_layout) {
  const std::string base = topology({.dynamic = true});
  BOOST_TEST(topology({.m = 1024, .k = 256, .n = 512, .dynamic = true}) == base);
  BOOST_TEST(key({.m = 1024, .dynamic = true}) != key({.dynamic = true}));
  BOOST_TEST(topology({.dynamic = true, .b_transposed = true}) != base);  // another layout
  BOOST_TEST(topology({.activation = PointwiseMode::SwishFwd, .dynamic = true}) != base);
  BOOST_TEST(topology({}) != base);  // static against dynamic
}

BOOST_AUTO_TEST_CASE(a_graph_that_does_not_validate_has_no_key) {
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  auto a = g.tensor(tensor("A", {4, 64, 32}).set_uid(1));
  auto b = g.tensor(tensor("B", {4, 16, 16}).set_uid(2));  // inner dims 32 and 16
  g.matmul(a, b, MatmulAttributes())->set_output(true).set_uid(3);
  const auto k = g.key();
  BOOST_REQUIRE(!k.has_value());
  BOOST_TEST_MESSAGE("key of an invalid graph: " << describe(k));
  BOOST_TEST(!g.topology_key().has_value());
}
