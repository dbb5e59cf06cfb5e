// backend::VariantPack: CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR (uids, device pointers, workspace,
// execute-time shapes).
#pragma once

#include "backend/descriptor.hpp"
#include "backend/features.hpp"

#include <vector>

// cuDNN reads the override shapes and strides as a C++ object through the C ABI: a
// std::vector<std::vector<int64_t>> laid out by libstdc++, which cuDNN is built with. Another
// standard library would hand it an object of a different layout.
#if defined(_LIBCPP_VERSION) || !defined(__GLIBCXX__)
#error "dnngraph's backend must be built with libstdc++: cuDNN reads std::vector objects from it"
#endif

namespace dnngraph::backend {

class VariantPack final : public Descriptor {
 public:
  [[nodiscard]] static Expected<VariantPack> create() {
    return create_as<VariantPack>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_unique_ids(std::span<const std::int64_t> uids) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), uids);
  }
  // One device pointer per unique id, same order.
  [[nodiscard]] Expected<void> set_data_pointers(std::span<void* const> pointers) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS), pointers);
  }
  [[nodiscard]] Expected<void> set_workspace(void* workspace) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_WORKSPACE), workspace);
  }

  // Execute-time shapes (Feature::VariantPackOverrides, cuDNN 9.18; too_old() where the headers
  // or the loaded library predate them): one uid per overridden tensor, and its dims / strides in
  // a std::vector<std::vector<int64_t>>, same order. The element cuDNN takes (VOID_PTR, count 1)
  // is the vector object itself: arrayOfElements is its address. cuDNN reads it during finalize
  // and execute, so it must outlive both.
  [[nodiscard]] Expected<void> set_override_unique_ids(std::span<const std::int64_t> uids) {
    auto attribute = usable(VersionedAttribute::VariantPackOverrideUniqueIds);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return set(*attribute, uids);
  }
  [[nodiscard]] Expected<void> set_override_shapes(
      const std::vector<std::vector<std::int64_t>>& shapes) {
    return set_vectors(VersionedAttribute::VariantPackOverrideShapes, shapes);
  }
  [[nodiscard]] Expected<void> set_override_strides(
      const std::vector<std::vector<std::int64_t>>& strides) {
    return set_vectors(VersionedAttribute::VariantPackOverrideStrides, strides);
  }

 private:
  friend class Descriptor;  // create_as
  explicit VariantPack(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}

  [[nodiscard]] Expected<void> set_vectors(VersionedAttribute which,
                                           const std::vector<std::vector<std::int64_t>>& lists) {
    auto attribute = usable(which);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return set_raw(*attribute, CUDNN_TYPE_VOID_PTR, 1, &lists);
  }
};

}  // namespace dnngraph::backend
