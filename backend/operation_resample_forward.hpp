// backend::OperationResampleForward: CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR, Y
// resampled (pooled) from X by a Resample descriptor, and for max pooling optionally the index
// of each maximum within its window.
#pragma once

#include "backend/operation.hpp"
#include "backend/resample.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

// ALPHA and BETA are deprecated in cuDNN 9's headers (CUDNN_DEPRECATED_ENUM): not offered.
class OperationResampleForward final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationResampleForward> create() {
    return create_as<OperationResampleForward>(CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_index(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_FWD_IDXDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_resample(const Resample& resample) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC), resample);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationResampleForward(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
