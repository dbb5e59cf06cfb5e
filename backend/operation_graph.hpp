// backend::OperationGraph: CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR (ops + handle [+ dynamic flag]).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/features.hpp"

#include <vector>

namespace dnngraph::backend {

class OperationGraph : public Descriptor {
 public:
  explicit OperationGraph(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationGraph> create() {
    return create_as<OperationGraph>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_handle(cudnnHandle_t handle) {
    return set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE", handle);
  }
  // The operations, in any order; cuDNN wires them by their tensors' unique ids.
  [[nodiscard]] Expected<void> set_ops(std::span<const cudnnBackendDescriptor_t> ops) {
    return set_descriptors(CUDNN_ATTR_OPERATIONGRAPH_OPS, "CUDNN_ATTR_OPERATIONGRAPH_OPS", ops);
  }
  [[nodiscard]] Expected<void> set_dynamic_shape_enabled(bool enabled) {
    return set(CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED,
               "CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED", enabled);
  }
  // Execute-time shape overrides on plans of this graph (Feature::OverrideShapeFlag, cuDNN 9.21):
  // too_old() where the headers or the loaded library predate it.
  [[nodiscard]] Expected<void> set_override_shape_enabled(bool enabled) {
    auto attribute = usable(VersionedAttribute::OperationGraphOverrideShapeEnabled);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return set(attribute->id, attribute->name, enabled);
  }
  [[nodiscard]] Expected<std::int64_t> engine_global_count() const {
    return get_one<std::int64_t>(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                 "CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT");
  }
};

}  // namespace dnngraph::backend
