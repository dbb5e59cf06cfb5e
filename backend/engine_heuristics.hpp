// backend::EngineHeuristics: CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR (ranked engine configs of a
// graph).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/engine_config.hpp"
#include "backend/operation_graph.hpp"

#include <vector>

namespace dnngraph::backend {

class EngineHeuristics final : public Descriptor {
 public:
  [[nodiscard]] static Expected<EngineHeuristics> create() {
    return create_as<EngineHeuristics>(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operation_graph(const OperationGraph& graph) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH), graph);
  }
  [[nodiscard]] Expected<void> set_mode(cudnnBackendHeurMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINEHEUR_MODE), mode);
  }
  // The finalized engine configs cuDNN ranks for the graph, best first
  // (CUDNN_ATTR_ENGINEHEUR_RESULTS).
  [[nodiscard]] Expected<std::vector<EngineConfig>> results() const;

 private:
  friend class Descriptor;  // create_as
  explicit EngineHeuristics(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}

  static constexpr Attribute results_attribute = DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINEHEUR_RESULTS);
};

}  // namespace dnngraph::backend
