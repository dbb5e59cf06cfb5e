// backend::Convolution: CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR (the geometry and math settings of
// a convolution, shared by the forward, backward-data and backward-filter operations).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Convolution final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Convolution> create() {
    return create_as<Convolution>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_compute_type(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_CONVOLUTION_COMP_TYPE), type);
  }
  [[nodiscard]] Expected<void> set_mode(cudnnConvolutionMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_CONVOLUTION_CONV_MODE), mode);
  }
  // The number of spatial dims; the four arrays below have this many values.
  [[nodiscard]] Expected<void> set_spatial_dims(std::int64_t count) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS), count);
  }
  [[nodiscard]] Expected<void> set_dilations(std::span<const std::int64_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_CONVOLUTION_DILATIONS), values);
  }
  [[nodiscard]] Expected<void> set_filter_strides(std::span<const std::int64_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES), values);
  }
  [[nodiscard]] Expected<void> set_pre_paddings(std::span<const std::int64_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS), values);
  }
  [[nodiscard]] Expected<void> set_post_paddings(std::span<const std::int64_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS), values);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Convolution(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
