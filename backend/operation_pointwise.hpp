// backend::OperationPointwise: CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: Y = op(X[, B[, T]])
// for forward modes, DX = op(DY, X) for the *_BWD modes.
#pragma once

#include "backend/operation.hpp"
#include "backend/pointwise.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationPointwise final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationPointwise> create() {
    return create_as<OperationPointwise>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_pointwise(const Pointwise& pointwise) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR),
                          pointwise);
  }
  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_b(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), tensor);
  }
  // BINARY_SELECT's predicate (cuDNN 9: the third input).
  [[nodiscard]] Expected<void> set_t(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_TDESC), tensor);
  }
  // The *_BWD modes read DY and X and write DX instead of Y.
  [[nodiscard]] Expected<void> set_dy(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_dx(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_alpha1(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1), value);
  }
  [[nodiscard]] Expected<void> set_alpha2(float value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2), value);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationPointwise(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
