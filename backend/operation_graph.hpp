// backend::OperationGraph: CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR (ops + handle [+ dynamic and
// override-shape flags]).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/features.hpp"
#include "backend/operation.hpp"

#include <vector>

namespace dnngraph::backend {

class OperationGraph final : public Descriptor {
 public:
  [[nodiscard]] static Expected<OperationGraph> create() {
    return create_as<OperationGraph>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_handle(cudnnHandle_t handle) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATIONGRAPH_HANDLE), handle);
  }
  // The operations, in any order; cuDNN wires them by their tensors' unique ids.
  [[nodiscard]] Expected<void> set_ops(std::span<const Operation* const> ops) {
    std::vector<cudnnBackendDescriptor_t> raw;
    raw.reserve(ops.size());
    for (const Operation* op : ops) {
      raw.push_back(op->native());
    }
    return set_descriptors(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATIONGRAPH_OPS), raw);
  }
  [[nodiscard]] Expected<void> set_dynamic_shape_enabled(bool enabled) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED), enabled);
  }
  // Execute-time shape overrides on plans of this graph (Feature::OverrideShapeFlag, cuDNN 9.21):
  // too_old() where the headers or the loaded library predate it.
  [[nodiscard]] Expected<void> set_override_shape_enabled(bool enabled) {
    auto attribute = usable(VersionedAttribute::OperationGraphOverrideShapeEnabled);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return set(*attribute, enabled);
  }
  [[nodiscard]] Expected<std::int64_t> engine_global_count() const {
    return get_one<std::int64_t>(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT));
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationGraph(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
