// backend::OperationConvFprop: CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
// Y = alpha * conv(X, W) + beta * Y.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class OperationConvFprop : public Descriptor {
 public:
  explicit OperationConvFprop(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationConvFprop> create() {
    return create_as<OperationConvFprop>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X", tensor);
  }
  [[nodiscard]] Expected<void> set_w(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W", tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y", tensor);
  }
  [[nodiscard]] Expected<void> set_convolution(const Descriptor& convolution) {
    return set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                          "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC", convolution);
  }
  // CUDNN_TYPE_FLOAT: the type cuDNN takes for every compute type but Double.
  [[nodiscard]] Expected<void> set_alpha(float value) {
    return set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
               "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA", value);
  }
  [[nodiscard]] Expected<void> set_beta(float value) {
    return set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
               "CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA", value);
  }
};

}  // namespace dnngraph::backend
