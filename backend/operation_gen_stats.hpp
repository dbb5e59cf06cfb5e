// backend::OperationGenStats: CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR, the per-channel sum and
// sum of squares of X (the statistics a batch norm is finalized from, fused behind a convolution).
#pragma once

#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationGenStats final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationGenStats> create() {
    return create_as<OperationGenStats>(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnGenStatsMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_GENSTATS_MODE), mode);
  }
  [[nodiscard]] Expected<void> set_math_precision(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC), type);
  }
  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_GENSTATS_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_sum(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_sq_sum(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC), tensor);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationGenStats(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
