// backend::OperationConvFprop: CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
// Y = alpha * conv(X, W) + beta * Y.
#pragma once

#include "backend/convolution.hpp"
#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationConvFprop final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationConvFprop> create() {
    return create_as<OperationConvFprop>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X), tensor);
  }
  [[nodiscard]] Expected<void> set_w(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W), tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y), tensor);
  }
  [[nodiscard]] Expected<void> set_convolution(const Convolution& convolution) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC),
                          convolution);
  }
  // CUDNN_TYPE_FLOAT: the type cuDNN takes for every compute type but Double.
  [[nodiscard]] Expected<void> set_alpha(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA), value);
  }
  [[nodiscard]] Expected<void> set_beta(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA), value);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationConvFprop(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
