// backend::OperationBnBwdWeights: CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR, the weight
// half of a batch norm's backward split: from dY, X, the saved mean and inverse standard deviation
// and the scale, the scale and bias gradients and the equivalent dY scale, X scale and bias that
// give dX = eq_dy_scale * dY + eq_x_scale * X + eq_bias in a following fused operation.
#pragma once

#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationBnBwdWeights final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationBnBwdWeights> create() {
    return create_as<OperationBnBwdWeights>(CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_math_precision(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC), type);
  }
  [[nodiscard]] Expected<void> set_x(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC), t);
  }
  [[nodiscard]] Expected<void> set_dy(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC), t);
  }
  [[nodiscard]] Expected<void> set_mean(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC), t);
  }
  [[nodiscard]] Expected<void> set_inv_std(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC), t);
  }
  [[nodiscard]] Expected<void> set_scale(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC), t);
  }
  [[nodiscard]] Expected<void> set_dscale(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC),
                          t);
  }
  [[nodiscard]] Expected<void> set_dbias(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC), t);
  }
  [[nodiscard]] Expected<void> set_eq_dy_scale(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC),
                          t);
  }
  [[nodiscard]] Expected<void> set_eq_x_scale(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC),
                          t);
  }
  [[nodiscard]] Expected<void> set_eq_bias(const Tensor& t) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS), t);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationBnBwdWeights(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
