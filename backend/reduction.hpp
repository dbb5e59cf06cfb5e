// backend::Reduction: CUDNN_BACKEND_REDUCTION_DESCRIPTOR (the operator and math type of a
// reduction).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Reduction final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Reduction> create() {
    return create_as<Reduction>(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_operator(cudnnReduceTensorOp_t op) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_REDUCTION_OPERATOR), op);
  }
  [[nodiscard]] Expected<void> set_compute_type(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_REDUCTION_COMP_TYPE), type);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Reduction(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
