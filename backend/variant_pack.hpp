// backend::VariantPack: CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR (uids, device pointers, workspace).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class VariantPack : public Descriptor {
 public:
  explicit VariantPack(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<VariantPack> create() {
    return create_as<VariantPack>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_unique_ids(std::span<const std::int64_t> uids) {
    return set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS", uids);
  }
  // One device pointer per unique id, same order.
  [[nodiscard]] Expected<void> set_data_pointers(std::span<void* const> pointers) {
    return set_raw(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, "CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS",
                   CUDNN_TYPE_VOID_PTR, static_cast<std::int64_t>(pointers.size()),
                   pointers.data());
  }
  [[nodiscard]] Expected<void> set_workspace(void* workspace) {
    return set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, "CUDNN_ATTR_VARIANT_PACK_WORKSPACE", workspace);
  }
};

}  // namespace dnngraph::backend
