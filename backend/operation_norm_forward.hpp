// backend::OperationNormForward: CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, the forward
// normalizations (layer, RMS, batch) in inference or training phase.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class OperationNormForward : public Descriptor {
 public:
  explicit OperationNormForward(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationNormForward> create() {
    return create_as<OperationNormForward>(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnBackendNormMode_t mode) {
    return set(CUDNN_ATTR_OPERATION_NORM_FWD_MODE, "CUDNN_ATTR_OPERATION_NORM_FWD_MODE", mode);
  }
  [[nodiscard]] Expected<void> set_phase(cudnnBackendNormFwdPhase_t phase) {
    return set(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, "CUDNN_ATTR_OPERATION_NORM_FWD_PHASE", phase);
  }
  [[nodiscard]] Expected<void> set_x(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC,
                          "CUDNN_ATTR_OPERATION_NORM_FWD_XDESC", tensor);
  }
  [[nodiscard]] Expected<void> set_mean(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC,
                          "CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC", tensor);
  }
  [[nodiscard]] Expected<void> set_inv_variance(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC,
                          "CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC", tensor);
  }
  [[nodiscard]] Expected<void> set_scale(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC,
                          "CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC", tensor);
  }
  [[nodiscard]] Expected<void> set_bias(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC,
                          "CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC", tensor);
  }
  [[nodiscard]] Expected<void> set_epsilon(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC,
                          "CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC", tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC,
                          "CUDNN_ATTR_OPERATION_NORM_FWD_YDESC", tensor);
  }
};

}  // namespace dnngraph::backend
