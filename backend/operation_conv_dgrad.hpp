// backend::OperationConvDgrad: CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
// dX = alpha * conv_backward_data(dY, W) + beta * dX.
#pragma once

#include "backend/convolution.hpp"
#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationConvDgrad final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationConvDgrad> create() {
    return create_as<OperationConvDgrad>(
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_dy(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY), tensor);
  }
  [[nodiscard]] Expected<void> set_w(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W), tensor);
  }
  [[nodiscard]] Expected<void> set_dx(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX), tensor);
  }
  [[nodiscard]] Expected<void> set_convolution(const Convolution& convolution) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC),
                          convolution);
  }
  // CUDNN_TYPE_FLOAT: the type cuDNN takes for every compute type but Double.
  [[nodiscard]] Expected<void> set_alpha(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA), value);
  }
  [[nodiscard]] Expected<void> set_beta(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA), value);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationConvDgrad(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
