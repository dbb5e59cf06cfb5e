// backend::OperationMatmul: CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, C = A x B.
#pragma once

#include "backend/matmul.hpp"
#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationMatmul final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationMatmul> create() {
    return create_as<OperationMatmul>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_a(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_MATMUL_ADESC), tensor);
  }
  [[nodiscard]] Expected<void> set_b(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_MATMUL_BDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_c(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_MATMUL_CDESC), tensor);
  }
  // Per-batch actual extents of M, N or K (Int32 [batch..., 1, 1]): rows and columns past them
  // are padding (the attention pattern's variable sequence lengths).
  [[nodiscard]] Expected<void> set_m_override(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_n_override(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_k_override(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_matmul(const Matmul& matmul) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_MATMUL_DESC), matmul);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationMatmul(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
