// backend::Pointwise: CUDNN_BACKEND_POINTWISE_DESCRIPTOR (mode and math precision).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Pointwise : public Descriptor {
 public:
  explicit Pointwise(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<Pointwise> create() {
    return create_as<Pointwise>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnPointwiseMode_t mode) {
    return set(CUDNN_ATTR_POINTWISE_MODE, "CUDNN_ATTR_POINTWISE_MODE", mode);
  }
  [[nodiscard]] Expected<void> set_math_precision(cudnnDataType_t type) {
    return set(CUDNN_ATTR_POINTWISE_MATH_PREC, "CUDNN_ATTR_POINTWISE_MATH_PREC", type);
  }
  [[nodiscard]] Expected<void> set_nan_propagation(cudnnNanPropagation_t nan) {
    return set(CUDNN_ATTR_POINTWISE_NAN_PROPAGATION, "CUDNN_ATTR_POINTWISE_NAN_PROPAGATION", nan);
  }
  [[nodiscard]] Expected<void> set_relu_lower_clip(double value) {
    return set(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, "CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP", value);
  }
  [[nodiscard]] Expected<void> set_relu_upper_clip(double value) {
    return set(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, "CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP", value);
  }
  [[nodiscard]] Expected<void> set_relu_lower_clip_slope(double value) {
    return set(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE,
               "CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE", value);
  }
  [[nodiscard]] Expected<void> set_elu_alpha(double value) {
    return set(CUDNN_ATTR_POINTWISE_ELU_ALPHA, "CUDNN_ATTR_POINTWISE_ELU_ALPHA", value);
  }
  [[nodiscard]] Expected<void> set_softplus_beta(double value) {
    return set(CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA, "CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA", value);
  }
  [[nodiscard]] Expected<void> set_swish_beta(double value) {
    return set(CUDNN_ATTR_POINTWISE_SWISH_BETA, "CUDNN_ATTR_POINTWISE_SWISH_BETA", value);
  }
};

}  // namespace dnngraph::backend
