// backend::OperationPointwise: CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: Y = op(X[, B[, T]])
// for forward modes, DX = op(DY, X) for the *_BWD modes.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class OperationPointwise : public Descriptor {
 public:
  explicit OperationPointwise(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationPointwise> create() {
    return create_as<OperationPointwise>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_pointwise(const Descriptor& pointwise) {
    return set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                          "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR", pointwise);
  }
  [[nodiscard]] Expected<void> set_x(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                          "CUDNN_ATTR_OPERATION_POINTWISE_XDESC", tensor);
  }
  [[nodiscard]] Expected<void> set_b(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                          "CUDNN_ATTR_OPERATION_POINTWISE_BDESC", tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                          "CUDNN_ATTR_OPERATION_POINTWISE_YDESC", tensor);
  }
  // BINARY_SELECT's predicate (cuDNN 9: the third input).
  [[nodiscard]] Expected<void> set_t(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
                          "CUDNN_ATTR_OPERATION_POINTWISE_TDESC", tensor);
  }
  // The *_BWD modes read DY and X and write DX instead of Y.
  [[nodiscard]] Expected<void> set_dy(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC,
                          "CUDNN_ATTR_OPERATION_POINTWISE_DYDESC", tensor);
  }
  [[nodiscard]] Expected<void> set_dx(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC,
                          "CUDNN_ATTR_OPERATION_POINTWISE_DXDESC", tensor);
  }
  [[nodiscard]] Expected<void> set_alpha1(float value) {
    return set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1",
               value);
  }
  [[nodiscard]] Expected<void> set_alpha2(float value) {
    return set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, "CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2",
               value);
  }
};

}  // namespace dnngraph::backend
