// backend::OperationConcat: CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR, Y = the inputs one after
// another along one axis. backend::Feature::ConcatOperation (cuDNN 9.7) says where it runs.
#pragma once

#include "backend/operation.hpp"
#include "backend/tensor.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dnngraph::backend {

class OperationConcat final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationConcat> create() {
    return create_as<OperationConcat>(CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_axis(std::int64_t axis) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONCAT_AXIS), axis);
  }
  // In the order they are concatenated.
  [[nodiscard]] Expected<void> set_inputs(std::span<const Tensor* const> tensors) {
    std::vector<cudnnBackendDescriptor_t> raw;
    raw.reserve(tensors.size());
    for (const Tensor* t : tensors) {
      raw.push_back(t->native());
    }
    return set_descriptors(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONCAT_INPUT_DESCS), raw);
  }
  // The input (an index into set_inputs' list) whose memory already is its part of Y's.
  [[nodiscard]] Expected<void> set_in_place_index(std::int64_t index) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONCAT_INPLACE_INDEX), index);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_CONCAT_OUTPUT_DESC), tensor);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationConcat(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
