// backend::Pointwise: CUDNN_BACKEND_POINTWISE_DESCRIPTOR (mode and math precision).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Pointwise final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Pointwise> create() {
    return create_as<Pointwise>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnPointwiseMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_MODE), mode);
  }
  [[nodiscard]] Expected<void> set_math_precision(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_MATH_PREC), type);
  }
  // GEN_INDEX: the dimension whose index the operation writes.
  [[nodiscard]] Expected<void> set_axis(std::int64_t axis) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_AXIS), axis);
  }
  [[nodiscard]] Expected<void> set_nan_propagation(cudnnNanPropagation_t nan) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_NAN_PROPAGATION), nan);
  }
  [[nodiscard]] Expected<void> set_relu_lower_clip(double value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP), value);
  }
  [[nodiscard]] Expected<void> set_relu_upper_clip(double value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP), value);
  }
  [[nodiscard]] Expected<void> set_relu_lower_clip_slope(double value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE), value);
  }
  [[nodiscard]] Expected<void> set_elu_alpha(double value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_ELU_ALPHA), value);
  }
  [[nodiscard]] Expected<void> set_softplus_beta(double value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA), value);
  }
  [[nodiscard]] Expected<void> set_swish_beta(double value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_POINTWISE_SWISH_BETA), value);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Pointwise(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
