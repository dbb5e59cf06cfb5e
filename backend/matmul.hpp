// backend::Matmul: CUDNN_BACKEND_MATMUL_DESCRIPTOR (the math settings of a matmul).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Matmul final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Matmul> create() {
    return create_as<Matmul>(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_compute_type(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_MATMUL_COMP_TYPE), type);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Matmul(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
