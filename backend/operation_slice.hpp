// backend::OperationSlice: CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR, Y = X[start:limit:stride] in
// each dim. Only cuDNN 9.22's headers declare it (backend::Feature::SliceOperation): below, or
// with an older library loaded, create() and every setter answer too_old().
#pragma once

#include "backend/features.hpp"
#include "backend/operation.hpp"
#include "backend/tensor.hpp"

#include <cstdint>
#include <span>

namespace dnngraph::backend {

class OperationSlice final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationSlice> create() {
    auto type = usable(VersionedDescriptorType::OperationSlice);
    if (!type) {
      return std::unexpected(std::move(type.error()));
    }
    return create_as<OperationSlice>(*type);
  }

  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_tensor(VersionedAttribute::OperationSliceXDesc, tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_tensor(VersionedAttribute::OperationSliceYDesc, tensor);
  }
  // One entry per dim of X: the first index taken, one past the last, the step between two.
  [[nodiscard]] Expected<void> set_start_indices(std::span<const std::int64_t> starts) {
    return set_list(VersionedAttribute::OperationSliceStartIndices, starts);
  }
  [[nodiscard]] Expected<void> set_limit_indices(std::span<const std::int64_t> limits) {
    return set_list(VersionedAttribute::OperationSliceLimitIndices, limits);
  }
  [[nodiscard]] Expected<void> set_strides(std::span<const std::int64_t> strides) {
    return set_list(VersionedAttribute::OperationSliceStrides, strides);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationSlice(Descriptor&& d) noexcept : Operation(std::move(d)) {}

  [[nodiscard]] Expected<void> set_tensor(VersionedAttribute which, const Tensor& tensor) {
    auto attribute = usable(which);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return set_descriptor(*attribute, tensor);
  }
  [[nodiscard]] Expected<void> set_list(VersionedAttribute which,
                                        std::span<const std::int64_t> values) {
    auto attribute = usable(which);
    if (!attribute) {
      return std::unexpected(std::move(attribute.error()));
    }
    return set(*attribute, values);
  }
};

}  // namespace dnngraph::backend
