// backend::EngineHeuristics: CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR (ranked engine configs of a
// graph).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/engine_config.hpp"

#include <vector>

namespace dnngraph::backend {

class EngineHeuristics : public Descriptor {
 public:
  explicit EngineHeuristics(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<EngineHeuristics> create() {
    return create_as<EngineHeuristics>(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operation_graph(const Descriptor& graph) {
    return set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                          "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH", graph);
  }
  [[nodiscard]] Expected<void> set_mode(cudnnBackendHeurMode_t mode) {
    return set(CUDNN_ATTR_ENGINEHEUR_MODE, "CUDNN_ATTR_ENGINEHEUR_MODE", mode);
  }
  // The finalized engine configs cuDNN ranks for the graph, best first
  // (CUDNN_ATTR_ENGINEHEUR_RESULTS).
  [[nodiscard]] Expected<std::vector<EngineConfig>> results() const;
};

}  // namespace dnngraph::backend
