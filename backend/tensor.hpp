// backend::Tensor: CUDNN_BACKEND_TENSOR_DESCRIPTOR. Finalizes without a GPU.
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Tensor final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Tensor> create() {
    return create_as<Tensor>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_data_type(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_DATA_TYPE), type);
  }
  [[nodiscard]] Expected<void> set_dimensions(std::span<const std::int64_t> dims) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_DIMENSIONS), dims);
  }
  [[nodiscard]] Expected<void> set_strides(std::span<const std::int64_t> strides) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_STRIDES), strides);
  }
  [[nodiscard]] Expected<void> set_unique_id(std::int64_t uid) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_UNIQUE_ID), uid);
  }
  [[nodiscard]] Expected<void> set_byte_alignment(std::int64_t bytes) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), bytes);
  }
  [[nodiscard]] Expected<void> set_is_virtual(bool is_virtual) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_IS_VIRTUAL), is_virtual);
  }
  [[nodiscard]] Expected<void> set_is_by_value(bool by_value) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_IS_BY_VALUE), by_value);
  }
  // A packed variable-length tensor: `offsets` ([b + 1, 1, 1, 1] Int32 or Int64, in elements)
  // says where each batch starts in memory (cuDNN 9.0; the composite attention pattern reads it).
  [[nodiscard]] Expected<void> set_ragged_offset(const Tensor& offsets) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC), offsets);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Tensor(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
