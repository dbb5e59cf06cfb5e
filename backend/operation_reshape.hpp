// backend::OperationReshape: CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, Y = X under other dims
// and strides (cuDNN's view reshape; the mode attribute of cuDNN 9.22 is not used).
#pragma once

#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationReshape final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationReshape> create() {
    return create_as<OperationReshape>(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESHAPE_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RESHAPE_YDESC), tensor);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationReshape(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
