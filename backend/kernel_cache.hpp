// backend::KernelCache: CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR (compiled kernels of dynamic graphs).
#pragma once

#include "backend/descriptor.hpp"

#include <string>
#include <string_view>

namespace dnngraph::backend {

class KernelCache : public Descriptor {
 public:
  explicit KernelCache(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<KernelCache> create() {
    return create_as<KernelCache>(CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operation_graph(const Descriptor& graph) {
    return set_descriptor(CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH, "CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH", graph);
  }
  // CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION, CUDNN_TYPE_CHAR.
  [[nodiscard]] Expected<void> set_json(std::string_view json) {
    return set(CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION,
               "CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION", std::span<const char>(json));
  }
  [[nodiscard]] Expected<std::string> json() const {
    return get_string(CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION, "CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION");
  }
};

}  // namespace dnngraph::backend
