// detail::GraphAccess (internal to the library, not installed): what tests and fuzz harnesses
// do with a Graph beyond its public face, without a GPU. The bodies live in api/graph_build.cpp.
#pragma once

#include "api/error.hpp"
#include "api/graph.hpp"

namespace dnngraph::detail {

struct GraphAccess {
  // Graph::build up to plan choice, which needs no GPU: validate, lower, the dynamic-shape
  // operation graph (no handle) and the graph's kernel cache built on it. cuDNN 9.19 finalizes
  // both on the CPU, so the cache's document (to_json) can be read there. InvalidState for a
  // graph without a kernel cache; build()'s error for a cache on a graph without dynamic shapes.
  [[nodiscard]] static Result<void> build_kernel_cache(Graph& graph);
};

}  // namespace dnngraph::detail
