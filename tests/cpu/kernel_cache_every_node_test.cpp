// The kernel cache persists for every node kind (issue 35): a dynamic-shape graph of each kind
// dnngraph offers, and the fused forms the GPU tests build (support/every_node_graphs.hpp), gets a
// kernel cache on the CPU (cuDNN 9.19 finalizes operation graphs and kernel caches without a
// GPU), cuDNN serializes it (to_json), and from_json loads that very document into a fresh cache.
// A kind the loaded cuDNN lacks is reported skipped, with the version it needs.
#define BOOST_TEST_MODULE kernel_cache_every_node
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"
#include "api/layout.hpp"
#include "detail/graph/graph_access.hpp"

#include <memory>

#include "support/every_node_graphs.hpp"

namespace {

using dnngraph::test::every_node::NodeCase;
using dnngraph::test::every_node::NodeGraph;

// The graph, made dynamic-shape with a new kernel cache, has the cache built on the CPU; cuDNN's
// document of it loads into a fresh cache.
void round_trips(const NodeGraph& graph) {
  dnngraph::Graph g = graph.make();
  auto cache = std::make_shared<dnngraph::KernelCache>();
  g.set_dynamic_shape_enabled(true).set_kernel_cache(cache);
  auto built = dnngraph::detail::GraphAccess::build_kernel_cache(g);
  BOOST_TEST_REQUIRE(built.has_value(), "the cache did not build on the CPU: "
                                            << (built ? "" : built.error().message));
  auto document = cache->to_json();
  BOOST_TEST_REQUIRE(document.has_value(),
                     "to_json: " << (document ? "" : document.error().message));
  dnngraph::KernelCache fresh;
  auto loaded = fresh.from_json(*document);
  BOOST_TEST(loaded.has_value(), "from_json refused cuDNN's own document: "
                                     << (loaded ? "" : loaded.error().message) << "\n"
                                     << *document);
}

// the_document_cudnn_writes_loads_into_a_fresh_cache/for_conv_dgrad, ...: one case per entry.
const auto* const registered = dnngraph::test::every_node::register_cases(
    "the_document_cudnn_writes_loads_into_a_fresh_cache",
    [](const NodeCase& c) { dnngraph::test::every_node::for_each_graph(c, round_trips); });

}  // namespace
