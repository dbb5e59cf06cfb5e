// backend::KernelCache: CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR (compiled kernels of dynamic graphs).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/engine_config.hpp"
#include "backend/features.hpp"
#include "backend/operation_graph.hpp"

#include <string>
#include <string_view>

namespace dnngraph::backend {

class KernelCache final : public Descriptor {
 public:
  [[nodiscard]] static Expected<KernelCache> create() {
    return create_as<KernelCache>(CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operation_graph(const OperationGraph& graph) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH), graph);
  }
  // CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION, CUDNN_TYPE_CHAR.
  [[nodiscard]] Expected<void> set_json(std::string_view json) {
    return set(json_attribute, std::span<const char>(json));
  }
  [[nodiscard]] Expected<std::string> json() const { return get_string(json_attribute); }

  // Whether the cache holds the kernel of this engine config
  // (CUDNN_ATTR_KERNEL_CACHE_IS_ENGINECFG_KERNEL_CACHED). Asked with the config as the single
  // element, cuDNN answers in the element count: 1 when cached, 0 when not (cuDNN 9.19; asked as
  // BOOLEAN it is BAD_PARAM_ATTRIBUTE_TYPE).
  [[nodiscard]] Expected<bool> is_kernel_cached(const EngineConfig& config) const {
    cudnnBackendDescriptor_t element = config.native();
    auto count =
        get_descriptors(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_KERNEL_CACHE_IS_ENGINECFG_KERNEL_CACHED),
                        std::span<cudnnBackendDescriptor_t>(&element, 1));
    if (!count) {
      return std::unexpected(std::move(count.error()));
    }
    return *count > 0;
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
  friend class Descriptor;  // create_as
  explicit KernelCache(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}

  [[nodiscard]] Expected<std::int64_t> counter(VersionedAttribute which) const {
    auto attribute = usable(which);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return get_one<std::int64_t>(*attribute);
  }

  static constexpr Attribute json_attribute =
      DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION);
};

}  // namespace dnngraph::backend
