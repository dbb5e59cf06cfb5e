// backend::OperationBnFinalize: CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR, a batch
// norm's statistics finalized from per-channel sums (genstats): the saved mean and inverse
// standard deviation, the equivalent scale and bias, and the running statistics' update.
#pragma once

#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationBnFinalize final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationBnFinalize> create() {
    return create_as<OperationBnFinalize>(
        CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnBnFinalizeStatsMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_STATS_MODE), mode);
  }
  [[nodiscard]] Expected<void> set_math_precision(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_MATH_PREC), type);
  }
  [[nodiscard]] Expected<void> set_sum(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_Y_SUM_DESC), t);
  }
  [[nodiscard]] Expected<void> set_sq_sum(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_Y_SQ_SUM_DESC), t);
  }
  [[nodiscard]] Expected<void> set_scale(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_SCALE_DESC), t);
  }
  [[nodiscard]] Expected<void> set_bias(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_BIAS_DESC), t);
  }
  [[nodiscard]] Expected<void> set_eq_scale(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_EQ_SCALE_DESC), t);
  }
  [[nodiscard]] Expected<void> set_eq_bias(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_EQ_BIAS_DESC), t);
  }
  [[nodiscard]] Expected<void> set_prev_running_mean(const Tensor& t) {
    return set_descriptor(
        DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_PREV_RUNNING_MEAN_DESC), t);
  }
  [[nodiscard]] Expected<void> set_prev_running_var(const Tensor& t) {
    return set_descriptor(
        DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_PREV_RUNNING_VAR_DESC), t);
  }
  [[nodiscard]] Expected<void> set_next_running_mean(const Tensor& t) {
    return set_descriptor(
        DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_UPDATED_RUNNING_MEAN_DESC), t);
  }
  [[nodiscard]] Expected<void> set_next_running_var(const Tensor& t) {
    return set_descriptor(
        DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_UPDATED_RUNNING_VAR_DESC), t);
  }
  [[nodiscard]] Expected<void> set_saved_mean(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_SAVED_MEAN_DESC), t);
  }
  [[nodiscard]] Expected<void> set_saved_inv_std(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_SAVED_INV_STD_DESC),
                          t);
  }
  [[nodiscard]] Expected<void> set_epsilon(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_EPSILON_DESC), t);
  }
  [[nodiscard]] Expected<void> set_momentum(const Tensor& t) {
    return set_descriptor(
        DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_EXP_AVERATE_FACTOR_DESC), t);
  }
  [[nodiscard]] Expected<void> set_accumulation_count(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_FINALIZE_ACCUM_COUNT_DESC), t);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationBnFinalize(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
