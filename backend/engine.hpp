// backend::Engine: CUDNN_BACKEND_ENGINE_DESCRIPTOR (one engine of an operation graph).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Engine : public Descriptor {
 public:
  explicit Engine(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<Engine> create() {
    return create_as<Engine>(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operation_graph(const Descriptor& graph) {
    return set_descriptor(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, "CUDNN_ATTR_ENGINE_OPERATION_GRAPH",
                          graph);
  }
  [[nodiscard]] Expected<void> set_global_index(std::int64_t index) {
    return set(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, "CUDNN_ATTR_ENGINE_GLOBAL_INDEX", index);
  }
  [[nodiscard]] Expected<std::int64_t> global_index() const {
    return get_one<std::int64_t>(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, "CUDNN_ATTR_ENGINE_GLOBAL_INDEX");
  }
};

}  // namespace dnngraph::backend
