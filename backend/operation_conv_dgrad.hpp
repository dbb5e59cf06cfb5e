// backend::OperationConvDgrad: CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
// dX = alpha * conv_backward_data(dY, W) + beta * dX.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class OperationConvDgrad : public Descriptor {
 public:
  explicit OperationConvDgrad(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationConvDgrad> create() {
    return create_as<OperationConvDgrad>(
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_dy(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY", tensor);
  }
  [[nodiscard]] Expected<void> set_w(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W", tensor);
  }
  [[nodiscard]] Expected<void> set_dx(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX", tensor);
  }
  [[nodiscard]] Expected<void> set_convolution(const Descriptor& convolution) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC", convolution);
  }
  // CUDNN_TYPE_FLOAT: the type cuDNN takes for every compute type but Double.
  [[nodiscard]] Expected<void> set_alpha(float value) {
    return set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
               "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA", value);
  }
  [[nodiscard]] Expected<void> set_beta(float value) {
    return set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
               "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA", value);
  }
};

}  // namespace dnngraph::backend
