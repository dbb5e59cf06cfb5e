// backend::OperationReduction: CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, Y = reduce(X) over
// the dims where Y has extent 1 and X does not.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class OperationReduction : public Descriptor {
 public:
  explicit OperationReduction(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
  [[nodiscard]] static Expected<OperationReduction> create() {
    return create_as<OperationReduction>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_x(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
                          "CUDNN_ATTR_OPERATION_REDUCTION_XDESC", tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Descriptor& tensor) {
    return set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
                          "CUDNN_ATTR_OPERATION_REDUCTION_YDESC", tensor);
  }
  [[nodiscard]] Expected<void> set_reduction(const Descriptor& reduction) {
    return set_descriptor(CUDNN_ATTR_OPERATION_REDUCTION_DESC,
                          "CUDNN_ATTR_OPERATION_REDUCTION_DESC", reduction);
  }
};

}  // namespace dnngraph::backend
