// The module `dnngraph` can be imported and its names used.
#define BOOST_TEST_MODULE module_import
#include <boost/test/unit_test.hpp>

import dnngraph;

BOOST_AUTO_TEST_CASE(imported_graph_validates_a_matmul) {
  dnngraph::Graph g;
  g.set_io_data_type(dnngraph::DataType::Half);
  auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_dim({1, 8, 4}));
  auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_dim({1, 4, 2}));
  auto c = g.matmul(a, b);
  BOOST_TEST(g.validate().has_value());
  BOOST_TEST(c->dim() == (std::vector<std::int64_t>{1, 8, 2}));
}
