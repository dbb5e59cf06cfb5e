// backend::OperationNormBackward: CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR, the
// gradients of a normalization (layer, RMS, batch) from dY, X, the scale and the forward's saved
// statistics.
#pragma once

#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationNormBackward final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationNormBackward> create() {
    return create_as<OperationNormBackward>(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnBackendNormMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_MODE), mode);
  }
  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_dy(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_scale(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_mean(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_inv_variance(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_dscale(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_dbias(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_dx(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC), tensor);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationNormBackward(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
