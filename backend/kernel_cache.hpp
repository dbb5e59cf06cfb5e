// backend::KernelCache: CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR (compiled kernels of dynamic graphs).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/features.hpp"

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
    return set_descriptor(CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH,
                          "CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH", graph);
  }
  // CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION, CUDNN_TYPE_CHAR.
  [[nodiscard]] Expected<void> set_json(std::string_view json) {
    return set(CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION,
               "CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION", std::span<const char>(json));
  }
  [[nodiscard]] Expected<std::string> json() const {
    return get_string(CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION,
                      "CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION");
  }

  // Read-only counters cuDNN keeps (Feature::KernelCacheCounters, cuDNN 9.27): one per
  // insertion, replacement, removal or eviction (lookups do not count; a JSON write starts a new
  // count), and the entry count. too_old() where the headers or the loaded library predate them.
  [[nodiscard]] Expected<std::int64_t> revision() const {
    return counter(VersionedAttribute::KernelCacheRevision);
  }
  [[nodiscard]] Expected<std::int64_t> entry_count() const {
    return counter(VersionedAttribute::KernelCacheEntryCount);
  }

 private:
  [[nodiscard]] Expected<std::int64_t> counter(VersionedAttribute which) const {
    auto attribute = usable(which);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return get_one<std::int64_t>(attribute->id, attribute->name);
  }
};

}  // namespace dnngraph::backend
