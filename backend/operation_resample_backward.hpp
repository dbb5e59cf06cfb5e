// backend::OperationResampleBackward: CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR, dX from dY
// through a Resample descriptor; max pooling reads either the forward's index tensor or its X
// and Y.
#pragma once

#include "backend/operation.hpp"
#include "backend/resample.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

// ALPHA and BETA are deprecated in cuDNN 9's headers (CUDNN_DEPRECATED_ENUM): not offered.
class OperationResampleBackward final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationResampleBackward> create() {
    return create_as<OperationResampleBackward>(CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_dx(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DXDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_dy(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DYDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_index(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_BWD_IDXDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_BWD_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_BWD_YDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_resample(const Resample& resample) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DESC), resample);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationResampleBackward(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
