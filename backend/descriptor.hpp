// backend::Descriptor: move-only RAII owner of one cudnnBackendDescriptor_t. Attribute access is
// protected: the typed descriptor classes in this folder derive from it and offer one typed
// setter or getter per attribute of their cuDNN descriptor type, which takes the right C++ type
// and, for a descriptor-valued attribute, the right descriptor class. No policy lives here.
#pragma once

#include "backend/attribute.hpp"
#include "backend/status.hpp"

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dnngraph::backend {

// cudnnBackendDescriptor_t is void*, so descriptor-valued attributes have their own members
// (set_descriptors/get_descriptors) rather than an AttributeType entry.
// Maps a C++ element type to the cudnnBackendAttributeType_t cuDNN expects for it.
template <class T>
struct AttributeType;
template <>
struct AttributeType<std::int64_t> {
  static constexpr auto value = CUDNN_TYPE_INT64;
};
template <>
struct AttributeType<double> {
  static constexpr auto value = CUDNN_TYPE_DOUBLE;
};
template <>
struct AttributeType<float> {
  static constexpr auto value = CUDNN_TYPE_FLOAT;
};
template <>
struct AttributeType<bool> {
  static constexpr auto value = CUDNN_TYPE_BOOLEAN;
};
template <>
struct AttributeType<char> {
  static constexpr auto value = CUDNN_TYPE_CHAR;
};
template <>
struct AttributeType<void*> {
  static constexpr auto value = CUDNN_TYPE_VOID_PTR;
};
template <>
struct AttributeType<cudnnHandle_t> {
  static constexpr auto value = CUDNN_TYPE_HANDLE;
};
template <>
struct AttributeType<cudnnDataType_t> {
  static constexpr auto value = CUDNN_TYPE_DATA_TYPE;
};
template <>
struct AttributeType<cudnnPointwiseMode_t> {
  static constexpr auto value = CUDNN_TYPE_POINTWISE_MODE;
};
template <>
struct AttributeType<cudnnReduceTensorOp_t> {
  static constexpr auto value = CUDNN_TYPE_REDUCTION_OPERATOR_TYPE;
};
template <>
struct AttributeType<cudnnConvolutionMode_t> {
  static constexpr auto value = CUDNN_TYPE_CONVOLUTION_MODE;
};
template <>
struct AttributeType<cudnnBackendHeurMode_t> {
  static constexpr auto value = CUDNN_TYPE_HEUR_MODE;
};
template <>
struct AttributeType<cudnnBackendKnobType_t> {
  static constexpr auto value = CUDNN_TYPE_KNOB_TYPE;
};
template <>
struct AttributeType<cudnnBackendNormMode_t> {
  static constexpr auto value = CUDNN_TYPE_NORM_MODE;
};
template <>
struct AttributeType<cudnnBackendNormFwdPhase_t> {
  static constexpr auto value = CUDNN_TYPE_NORM_FWD_PHASE;
};
template <>
struct AttributeType<cudnnRngDistribution_t> {
  static constexpr auto value = CUDNN_TYPE_RNG_DISTRIBUTION;
};
template <>
struct AttributeType<cudnnGenStatsMode_t> {
  static constexpr auto value = CUDNN_TYPE_GENSTATS_MODE;
};
template <>
struct AttributeType<cudnnBnFinalizeStatsMode_t> {
  static constexpr auto value = CUDNN_TYPE_BN_FINALIZE_STATS_MODE;
};
template <>
struct AttributeType<cudnnResampleMode_t> {
  static constexpr auto value = CUDNN_TYPE_RESAMPLE_MODE;
};
template <>
struct AttributeType<cudnnPaddingMode_t> {
  static constexpr auto value = CUDNN_TYPE_PADDING_MODE;
};
// A rational number {numerator, denominator}: the resample descriptor's window, stride and
// paddings.
template <>
struct AttributeType<cudnnFraction_t> {
  static constexpr auto value = CUDNN_TYPE_FRACTION;
};
template <>
struct AttributeType<cudnnNanPropagation_t> {
  static constexpr auto value = CUDNN_TYPE_NAN_PROPOGATION;
};
template <>
struct AttributeType<cudnnBackendNumericalNote_t> {
  static constexpr auto value = CUDNN_TYPE_NUMERICAL_NOTE;
};
template <>
struct AttributeType<cudnnBackendBehaviorNote_t> {
  static constexpr auto value = CUDNN_TYPE_BEHAVIOR_NOTE;
};

// "OperationGraph" for CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, used in error contexts.
[[nodiscard]] std::string_view descriptor_type_name(cudnnBackendDescriptorType_t type) noexcept;
// Successful cudnnBackendFinalize calls on descriptors of `type` in this process, all threads
// together: how a test or a bench tells which cuDNN work a call did (a heuristics query is a
// finalized CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR).
[[nodiscard]] std::int64_t finalize_count(cudnnBackendDescriptorType_t type) noexcept;
// Descriptors of `type` created through Descriptor and not yet destroyed, in this process, all
// threads together: how a soak tells whether its descriptors leak or something below them grows.
[[nodiscard]] std::int64_t live_count(cudnnBackendDescriptorType_t type) noexcept;
// The same over every type.
[[nodiscard]] std::int64_t live_count_all() noexcept;

class Descriptor {
 public:
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor(Descriptor&& other) noexcept;
  Descriptor& operator=(Descriptor&& other) noexcept;  // destroys the descriptor it held
  ~Descriptor();

  [[nodiscard]] cudnnBackendDescriptor_t native() const noexcept { return raw_; }
  [[nodiscard]] cudnnBackendDescriptorType_t type() const noexcept { return type_; }
  [[nodiscard]] bool is_finalized() const noexcept { return finalized_; }

  // cudnnBackendFinalize.
  [[nodiscard]] Expected<void> finalize();

 protected:
  // cudnnBackendCreateDescriptor; needs no GPU.
  [[nodiscard]] static Expected<Descriptor> create(cudnnBackendDescriptorType_t type);
  // A typed class D's create(): D is constructible from Descriptor&& by Descriptor only (D
  // befriends Descriptor), so no descriptor of another type can become a D.
  template <class D>
  [[nodiscard]] static Expected<D> create_as(cudnnBackendDescriptorType_t type) {
    auto d = create(type);
    if (!d) {
      return std::unexpected(std::move(d.error()));
    }
    return D(std::move(*d));
  }

  // Raw attribute access, for the typed setters and getters of the derived classes only.

  // One value's size as an AttributeLog keeps it: 0 for pointers (handles, device pointers).
  template <class T>
  [[nodiscard]] static constexpr std::size_t logged_bytes() {
    if constexpr (std::is_pointer_v<T>) {
      return 0;
    } else {
      return sizeof(T);
    }
  }

  // cudnnBackendSetAttribute with the element type's cuDNN attribute type.
  template <class T>
  [[nodiscard]] Expected<void> set(const Attribute& attribute, std::span<const T> values) {
    // The C API takes every element type as void*; pointer-valued elements are arrays of
    // pointers, hence the explicit cast.
    return set_raw(attribute, AttributeType<T>::value, static_cast<std::int64_t>(values.size()),
                   static_cast<const void*>(values.data()), logged_bytes<T>());
  }
  template <class T>
  [[nodiscard]] Expected<void> set(const Attribute& attribute, const T& value) {
    return set(attribute, std::span<const T>(&value, 1));
  }

  // A one-element attribute read as T.
  template <class T>
  [[nodiscard]] Expected<T> get_one(const Attribute& attribute) const {
    T value{};
    auto got = get(attribute, std::span<T>(&value, 1));
    if (!got) {
      return std::unexpected(std::move(got.error()));
    }
    return value;
  }

  // cudnnBackendGetAttribute; returns the element count cuDNN reports (may exceed out.size()).
  template <class T>
  [[nodiscard]] Expected<std::int64_t> get(const Attribute& attribute, std::span<T> out) const {
    return get_raw(attribute, AttributeType<T>::value, static_cast<std::int64_t>(out.size()),
                   static_cast<void*>(out.data()));
  }

  // CUDNN_TYPE_BACKEND_DESCRIPTOR attributes.
  [[nodiscard]] Expected<void> set_descriptors(const Attribute& attribute,
                                               std::span<const cudnnBackendDescriptor_t> values) {
    return set_raw(attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   static_cast<std::int64_t>(values.size()),
                   static_cast<const void*>(values.data()));
  }
  [[nodiscard]] Expected<void> set_descriptor(const Attribute& attribute, const Descriptor& value) {
    cudnnBackendDescriptor_t raw = value.native();
    return set_descriptors(attribute, std::span<const cudnnBackendDescriptor_t>(&raw, 1));
  }
  // Fills the given (created, not finalized) descriptors; returns the count cuDNN reports.
  [[nodiscard]] Expected<std::int64_t> get_descriptors(
      const Attribute& attribute, std::span<cudnnBackendDescriptor_t> out) const {
    return get_raw(attribute, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(out.size()),
                   static_cast<void*>(out.data()));
  }

  // A CUDNN_TYPE_CHAR attribute (a JSON text, say): asks for its length, then reads it.
  [[nodiscard]] Expected<std::string> get_string(const Attribute& attribute) const;

  // element_bytes: one value's size, for an AttributeLog recording on this thread (0: pointer
  // values, which it leaves out; descriptor values it logs by their creation ordinals).
  [[nodiscard]] Expected<void> set_raw(const Attribute& attribute, cudnnBackendAttributeType_t type,
                                       std::int64_t count, const void* values,
                                       std::size_t element_bytes = 0);
  [[nodiscard]] Expected<std::int64_t> get_raw(const Attribute& attribute,
                                               cudnnBackendAttributeType_t type,
                                               std::int64_t requested, void* out) const;

  Descriptor(cudnnBackendDescriptor_t raw, cudnnBackendDescriptorType_t type) noexcept
      : raw_(raw), type_(type) {}

 private:
  void reset() noexcept;

  cudnnBackendDescriptor_t raw_ = nullptr;
  cudnnBackendDescriptorType_t type_{};
  bool finalized_ = false;
};

// Native handles of typed descriptors, for a CUDNN_TYPE_BACKEND_DESCRIPTOR array attribute.
template <class D>
[[nodiscard]] std::vector<cudnnBackendDescriptor_t> natives(std::span<const D> descriptors) {
  std::vector<cudnnBackendDescriptor_t> raw;
  raw.reserve(descriptors.size());
  for (const D& d : descriptors) {
    raw.push_back(d.native());
  }
  return raw;
}

}  // namespace dnngraph::backend
