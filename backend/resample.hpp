// backend::Resample: CUDNN_BACKEND_RESAMPLE_DESCRIPTOR (the mode, padding and window geometry of
// a resampling operation, shared by the forward and backward operations).
#pragma once

#include "backend/descriptor.hpp"

namespace dnngraph::backend {

class Resample final : public Descriptor {
 public:
  [[nodiscard]] static Expected<Resample> create() {
    return create_as<Resample>(CUDNN_BACKEND_RESAMPLE_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_mode(cudnnResampleMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_MODE), mode);
  }
  [[nodiscard]] Expected<void> set_compute_type(cudnnDataType_t type) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_COMP_TYPE), type);
  }
  [[nodiscard]] Expected<void> set_nan_propagation(cudnnNanPropagation_t nan) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_NAN_PROPAGATION), nan);
  }
  // What the window reads outside the input: zero, -infinity or the nearest edge value.
  [[nodiscard]] Expected<void> set_padding_mode(cudnnPaddingMode_t mode) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_PADDING_MODE), mode);
  }
  // The number of spatial dims; the four arrays below have this many values.
  [[nodiscard]] Expected<void> set_spatial_dims(std::int64_t count) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_SPATIAL_DIMS), count);
  }
  [[nodiscard]] Expected<void> set_window_dims(std::span<const cudnnFraction_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_WINDOW_DIMS), values);
  }
  [[nodiscard]] Expected<void> set_pre_paddings(std::span<const cudnnFraction_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_PRE_PADDINGS), values);
  }
  [[nodiscard]] Expected<void> set_post_paddings(std::span<const cudnnFraction_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_POST_PADDINGS), values);
  }
  [[nodiscard]] Expected<void> set_strides(std::span<const cudnnFraction_t> values) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_RESAMPLE_STRIDES), values);
  }

 private:
  friend class Descriptor;  // create_as
  explicit Resample(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

}  // namespace dnngraph::backend
