// backend::OperationConvWgrad: CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
// dW = alpha * conv_backward_filter(X, dY) + beta * dW.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class OperationConvWgrad : public Descriptor {
 public:
  explicit OperationConvWgrad(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationConvWgrad> create() {
    return create_as<OperationConvWgrad>(
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X", tensor);
  }
  [[nodiscard]] Expected<void> set_dy(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY", tensor);
  }
  [[nodiscard]] Expected<void> set_dw(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW", tensor);
  }
  [[nodiscard]] Expected<void> set_convolution(const Descriptor& convolution) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC", convolution);
  }
  // CUDNN_TYPE_FLOAT: the type cuDNN takes for every compute type but Double.
  [[nodiscard]] Expected<void> set_alpha(float value) {
    return set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
               "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA", value);
  }
  [[nodiscard]] Expected<void> set_beta(float value) {
    return set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
               "CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA", value);
  }
};

}  // namespace dnngraph::backend
