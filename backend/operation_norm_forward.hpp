// backend::OperationNormForward: CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, the forward
// normalizations (layer, RMS, batch) in inference or training phase.
#pragma once

#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationNormForward final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationNormForward> create() {
    return create_as<OperationNormForward>(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnBackendNormMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_MODE), mode);
  }
  [[nodiscard]] Expected<void> set_phase(cudnnBackendNormFwdPhase_t phase) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_PHASE), phase);
  }
  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_mean(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_inv_variance(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_scale(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_bias(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_epsilon(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC), tensor);
  }
  // Batch normalization in training: the running statistics' update, next = (1 - factor) *
  // previous + factor * batch statistic.
  [[nodiscard]] Expected<void> set_exp_avg_factor(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_input_running_mean(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_input_running_var(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_output_running_mean(const Tensor& tensor) {
    return set_descriptor(
        DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC), tensor);
  }
  [[nodiscard]] Expected<void> set_output_running_var(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_NORM_FWD_YDESC), tensor);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationNormForward(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
