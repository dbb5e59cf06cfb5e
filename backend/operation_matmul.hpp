// backend::OperationMatmul: CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, C = A x B.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class OperationMatmul : public Descriptor {
 public:
  explicit OperationMatmul(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationMatmul> create() {
    return create_as<OperationMatmul>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_a(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, "CUDNN_ATTR_OPERATION_MATMUL_ADESC",
                          tensor);
  }
  [[nodiscard]] Expected<void> set_b(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, "CUDNN_ATTR_OPERATION_MATMUL_BDESC",
                          tensor);
  }
  [[nodiscard]] Expected<void> set_c(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, "CUDNN_ATTR_OPERATION_MATMUL_CDESC",
                          tensor);
  }
  [[nodiscard]] Expected<void> set_matmul(const Descriptor& matmul) {
    return set_descriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, "CUDNN_ATTR_OPERATION_MATMUL_DESC",
                          matmul);
  }
};

}  // namespace dnngraph::backend
