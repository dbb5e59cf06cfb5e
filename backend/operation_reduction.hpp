// backend::OperationReduction: CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, Y = reduce(X) over
// the dims where Y has extent 1 and X does not.
#pragma once

#include "backend/operation.hpp"
#include "backend/reduction.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationReduction final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationReduction> create() {
    return create_as<OperationReduction>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_REDUCTION_XDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_REDUCTION_YDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_reduction(const Reduction& reduction) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_REDUCTION_DESC), reduction);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationReduction(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
