// backend::OperationConvWgrad: CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
// dW = alpha * conv_backward_filter(X, dY) + beta * dW.
#pragma once

#include "backend/convolution.hpp"
#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationConvWgrad final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationConvWgrad> create() {
    return create_as<OperationConvWgrad>(
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_dy(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_dw(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_convolution(const Convolution& convolution) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC),
                          convolution);
  }
  // CUDNN_TYPE_FLOAT: the type cuDNN takes for every compute type but Double.
  [[nodiscard]] Expected<void> set_alpha(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA), value);
  }
  [[nodiscard]] Expected<void> set_beta(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA), value);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationConvWgrad(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
