// backend::VariantPack: CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR (uids, device pointers, workspace).
#pragma once

#include "backend/descriptor.hpp"

#include <vector>

// cuDNN reads the override shapes and strides as a C++ object through the C ABI: a
// std::vector<std::vector<int64_t>> laid out by libstdc++, which cuDNN is built with. Another
// standard library would hand it an object of a different layout.
#if defined(_LIBCPP_VERSION) || !defined(__GLIBCXX__)
#error "dnngraph's backend must be built with libstdc++: cuDNN reads std::vector objects from it"
#endif

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
                   static_cast<const void*>(pointers.data()));
  }
#if CUDNN_VERSION >= 91800
  // Execute-time shapes (cuDNN >= 9.18): one uid per overridden tensor, and its dims / strides
  // in a std::vector<std::vector<int64_t>>, same order. The element cuDNN takes (VOID_PTR,
  // count 1) is the vector object itself: arrayOfElements is its address. cuDNN reads it during
  // finalize and execute, so it must outlive both.
  [[nodiscard]] Expected<void> set_override_unique_ids(std::span<const std::int64_t> uids) {
    return set(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS,
               "CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS", uids);
  }
  [[nodiscard]] Expected<void> set_override_shapes(
      const std::vector<std::vector<std::int64_t>>& shapes) {
    return set_raw(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES,
                   "CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES", CUDNN_TYPE_VOID_PTR, 1, &shapes);
  }
  [[nodiscard]] Expected<void> set_override_strides(
      const std::vector<std::vector<std::int64_t>>& strides) {
    return set_raw(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES,
                   "CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES", CUDNN_TYPE_VOID_PTR, 1, &strides);
  }
#endif
  [[nodiscard]] Expected<void> set_workspace(void* workspace) {
    return set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, "CUDNN_ATTR_VARIANT_PACK_WORKSPACE", workspace);
  }
};

}  // namespace dnngraph::backend
