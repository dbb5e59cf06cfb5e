// backend::OperationRng: CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR, Y drawn from an Rng's
// distribution by a Philox generator keyed by a seed and an offset (tensors of one value).
#pragma once

#include "backend/operation.hpp"
#include "backend/rng.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationRng final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationRng> create() {
    return create_as<OperationRng>(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RNG_YDESC), tensor);
  }
  [[nodiscard]] Expected<void> set_rng(const Rng& rng) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RNG_DESC), rng);
  }
  [[nodiscard]] Expected<void> set_seed(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RNG_SEED), tensor);
  }
  [[nodiscard]] Expected<void> set_offset(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC), tensor);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationRng(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
