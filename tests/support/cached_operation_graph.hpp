// The operation graph as cuDNN itself saw it, without a GPU: cuDNN 9.19 finalizes a dynamic-shape
// operation graph and a kernel cache on the CPU, and the cache's JSON document carries the graph
// (its classification `finalizeMode`, each operation's tensors by uid, each tensor's type). For
// the pattern tests of the attention nodes. Include after api/graph.hpp.
#pragma once

#include "detail/graph/graph_access.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::test {

// The "operationGraph" object of g's kernel cache document (g made dynamic-shape for it).
inline boost::json::object cached_operation_graph(Graph& g) {
  auto cache = std::make_shared<KernelCache>();
  g.set_dynamic_shape_enabled(true).set_kernel_cache(cache);
  auto built = detail::GraphAccess::build_kernel_cache(g);
  BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
  auto document = cache->to_json();
  BOOST_TEST_REQUIRE(document.has_value(), (document ? "" : document.error().message));
  return boost::json::parse(*document).as_object().at("operationGraph").as_object();
}

inline std::string text(const boost::json::value& v) { return std::string(v.as_string()); }

// The operations of `kind` ("POINTWISE", "REDUCTION", "MATMUL") whose `port` reads or writes
// tensor `uid` (as cuDNN names tensors: the uid in decimal).
inline std::vector<boost::json::object> operations(const boost::json::object& graph,
                                                   std::string_view kind, std::string_view port,
                                                   std::string_view uid) {
  std::vector<boost::json::object> found;
  for (const boost::json::value& node : graph.at("nodes").as_array()) {
    const boost::json::object& op = node.as_object();
    const bool of_kind =
        text(op.at("operation")) == "CUDNN_BACKEND_OPERATION_" + std::string(kind) + "_DESCRIPTOR";
    const auto* value = op.if_contains(port);
    if (of_kind && value != nullptr && text(*value) == uid) {
      found.push_back(op);
    }
  }
  return found;
}

// The single operation of `kind` whose `port` is uid; fails the test when there is not one.
inline boost::json::object the_operation(const boost::json::object& graph, std::string_view kind,
                                         std::string_view port, std::string_view uid) {
  auto found = operations(graph, kind, port, uid);
  BOOST_TEST_REQUIRE(found.size() == 1U,
                     kind << " with " << port << " = " << uid << ": " << found.size() << " found");
  return found.front();
}

inline std::string data_type_of(const boost::json::object& graph, std::string_view uid) {
  for (const boost::json::value& t : graph.at("tensors").as_array()) {
    if (text(t.as_object().at("name")) == uid) {
      return text(t.as_object().at("dataType"));
    }
  }
  return "";
}

}  // namespace dnngraph::test
