// backend::Engine: CUDNN_BACKEND_ENGINE_DESCRIPTOR (one engine of an operation graph).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/operation_graph.hpp"

namespace dnngraph::backend {

class Engine final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Engine> create() {
    return create_as<Engine>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operation_graph(const OperationGraph& graph) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINE_OPERATION_GRAPH), graph);
  }
  [[nodiscard]] Expected<void> set_global_index(std::int64_t index) {
    return set(global_index_attribute, index);
  }
  [[nodiscard]] Expected<std::int64_t> global_index() const {
    return get_one<std::int64_t>(global_index_attribute);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Engine(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}

  static constexpr Attribute global_index_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
};

}  // namespace dnngraph::backend
