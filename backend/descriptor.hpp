// backend::Descriptor: move-only RAII owner of one cudnnBackendDescriptor_t, with typed
// attribute access over std::span. The typed descriptor classes in this folder derive from it
// and add the attribute names of their cuDNN descriptor type. No policy lives here.
#pragma once

#include "backend/status.hpp"

#include <cudnn.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

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
struct AttributeType<cudnnNanPropagation_t> {
  static constexpr auto value = CUDNN_TYPE_NAN_PROPOGATION;
};

// "OperationGraph" for CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, used in error contexts.
[[nodiscard]] std::string_view descriptor_type_name(cudnnBackendDescriptorType_t type) noexcept;

class Descriptor {
 public:
  // cudnnBackendCreateDescriptor; needs no GPU.
  [[nodiscard]] static Expected<Descriptor> create(cudnnBackendDescriptorType_t type);

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

  // cudnnBackendSetAttribute with the element type's cuDNN attribute type.
  template <class T>
  [[nodiscard]] Expected<void> set(cudnnBackendAttributeName_t name, std::string_view what,
                                   std::span<const T> values) {
    // The C API takes every element type as void*; pointer-valued elements are arrays of
    // pointers, hence the explicit cast.
    return set_raw(name, what, AttributeType<T>::value, static_cast<std::int64_t>(values.size()),
                   static_cast<const void*>(values.data()));
  }
  template <class T>
  [[nodiscard]] Expected<void> set(cudnnBackendAttributeName_t name, std::string_view what,
                                   const T& value) {
    return set(name, what, std::span<const T>(&value, 1));
  }

  // A one-element attribute read as T.
  template <class T>
  [[nodiscard]] Expected<T> get_one(cudnnBackendAttributeName_t name, std::string_view what) const {
    T value{};
    auto got = get(name, what, std::span<T>(&value, 1));
    if (!got) {
      return std::unexpected(std::move(got.error()));
    }
    return value;
  }

  // cudnnBackendGetAttribute; returns the element count cuDNN reports (may exceed out.size()).
  template <class T>
  [[nodiscard]] Expected<std::int64_t> get(cudnnBackendAttributeName_t name, std::string_view what,
                                           std::span<T> out) const {
    return get_raw(name, what, AttributeType<T>::value, static_cast<std::int64_t>(out.size()),
                   static_cast<void*>(out.data()));
  }

  // CUDNN_TYPE_BACKEND_DESCRIPTOR attributes.
  [[nodiscard]] Expected<void> set_descriptors(cudnnBackendAttributeName_t name,
                                               std::string_view what,
                                               std::span<const cudnnBackendDescriptor_t> values) {
    return set_raw(name, what, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   static_cast<std::int64_t>(values.size()),
                   static_cast<const void*>(values.data()));
  }
  [[nodiscard]] Expected<void> set_descriptor(cudnnBackendAttributeName_t name,
                                              std::string_view what, const Descriptor& value) {
    cudnnBackendDescriptor_t raw = value.native();
    return set_descriptors(name, what, std::span<const cudnnBackendDescriptor_t>(&raw, 1));
  }
  // Fills the given (created, not finalized) descriptors; returns the count cuDNN reports.
  [[nodiscard]] Expected<std::int64_t> get_descriptors(
      cudnnBackendAttributeName_t name, std::string_view what,
      std::span<cudnnBackendDescriptor_t> out) const {
    return get_raw(name, what, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(out.size()),
                   static_cast<void*>(out.data()));
  }

  // A CUDNN_TYPE_CHAR attribute (a JSON text, say): asks for its length, then reads it.
  [[nodiscard]] Expected<std::string> get_string(cudnnBackendAttributeName_t name,
                                                 std::string_view what) const;

  [[nodiscard]] Expected<void> set_raw(cudnnBackendAttributeName_t name, std::string_view what,
                                       cudnnBackendAttributeType_t type, std::int64_t count,
                                       const void* values);
  [[nodiscard]] Expected<std::int64_t> get_raw(cudnnBackendAttributeName_t name,
                                               std::string_view what,
                                               cudnnBackendAttributeType_t type,
                                               std::int64_t requested, void* out) const;

 protected:
  Descriptor(cudnnBackendDescriptor_t raw, cudnnBackendDescriptorType_t type) noexcept
      : raw_(raw), type_(type) {}

 private:
  void reset() noexcept;

  cudnnBackendDescriptor_t raw_ = nullptr;
  cudnnBackendDescriptorType_t type_{};
  bool finalized_ = false;
};

// Creates a typed descriptor class D (derived from Descriptor, constructible from Descriptor&&).
template <class D>
[[nodiscard]] Expected<D> create_as(cudnnBackendDescriptorType_t type) {
  auto d = Descriptor::create(type);
  if (!d) {
    return std::unexpected(std::move(d.error()));
  }
  return D(std::move(*d));
}

}  // namespace dnngraph::backend
