// backend::Descriptor implementation.
#include "backend/descriptor.hpp"

#include "backend/attribute_log.hpp"

#include "backend/features.hpp"
#include "backend/library.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dnngraph::backend {

std::string_view descriptor_type_name(cudnnBackendDescriptorType_t type) noexcept {
  switch (type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return "Tensor";
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: return "Matmul";
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return "OperationMatmul";
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return "Pointwise";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return "OperationPointwise";
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: return "Reduction";
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return "OperationReduction";
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: return "OperationNormForward";
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR: return "OperationNormBackward";
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return "OperationReshape";
    case CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR: return "OperationConcat";
    case CUDNN_BACKEND_RNG_DESCRIPTOR: return "Rng";
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR: return "OperationRng";
    case CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR: return "OperationPagedCacheLoad";
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR: return "OperationGenStats";
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR: return "OperationBnFinalize";
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR: return "OperationBnBwdWeights";
    case CUDNN_BACKEND_RESAMPLE_DESCRIPTOR: return "Resample";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR: return "OperationResampleForward";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR: return "OperationResampleBackward";
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return "Convolution";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return "OperationConvFprop";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return "OperationConvDgrad";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return "OperationConvWgrad";
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return "OperationGraph";
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return "EngineHeuristics";
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return "Engine";
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return "EngineConfig";
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR: return "KnobChoice";
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return "ExecutionPlan";
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return "VariantPack";
    case CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR: return "KernelCache";
    default: {
      // Types only newer headers declare (OperationSlice) are named where they are declared.
      const std::string_view versioned = versioned_descriptor_type_name(type);
      return versioned.empty() ? std::string_view("Descriptor") : versioned;
    }
  }
}

namespace {

// finalize_count's and live_count's counters, by descriptor type; types past the table (none in
// cuDNN 9.28) are not counted.
constexpr std::size_t counted_types = 64;
std::array<std::atomic<std::int64_t>, counted_types> finalized_by_type{};
std::array<std::atomic<std::int64_t>, counted_types> live_by_type{};

void count(std::array<std::atomic<std::int64_t>, counted_types>& counters,
           cudnnBackendDescriptorType_t type, std::int64_t delta) noexcept {
  if (const auto i = static_cast<std::size_t>(type); i < counted_types) {
    counters[i].fetch_add(delta, std::memory_order_relaxed);
  }
}

std::int64_t read(const std::array<std::atomic<std::int64_t>, counted_types>& counters,
                  cudnnBackendDescriptorType_t type) noexcept {
  const auto i = static_cast<std::size_t>(type);
  return i < counted_types ? counters[i].load(std::memory_order_relaxed) : 0;
}

}  // namespace

std::int64_t finalize_count(cudnnBackendDescriptorType_t type) noexcept {
  return read(finalized_by_type, type);
}

std::int64_t live_count(cudnnBackendDescriptorType_t type) noexcept {
  return read(live_by_type, type);
}

std::int64_t live_count_all() noexcept {
  std::int64_t total = 0;
  for (const auto& counter : live_by_type) {
    total += counter.load(std::memory_order_relaxed);
  }
  return total;
}

Expected<Descriptor> Descriptor::create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t raw = nullptr;
  // Every context below is made on failure only: execute() creates, sets and finalizes a
  // variant pack whenever it cannot reuse one.
  auto ok = call_described(
      [type] {
        return "cudnnBackendCreateDescriptor(" + std::string(descriptor_type_name(type)) + ")";
      },
      [&] { return lib::cudnnBackendCreateDescriptor(type, &raw); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  if (AttributeLog* log = AttributeLog::active()) {
    log->created(raw, type);
  }
  count(live_by_type, type, 1);
  return Descriptor(raw, type);
}

Descriptor::Descriptor(Descriptor&& other) noexcept
    : raw_(std::exchange(other.raw_, nullptr)),
      type_(other.type_),
      finalized_(std::exchange(other.finalized_, false)) {}

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    reset();
    raw_ = std::exchange(other.raw_, nullptr);
    type_ = other.type_;
    finalized_ = std::exchange(other.finalized_, false);
  }
  return *this;
}

Descriptor::~Descriptor() { reset(); }

void Descriptor::reset() noexcept {
  if (raw_ != nullptr) {
    // A destroy failure leaves nothing to recover; the descriptor is gone either way.
    [[maybe_unused]] auto destroyed = call(
        "cudnnBackendDestroyDescriptor", [&] { return lib::cudnnBackendDestroyDescriptor(raw_); });
    count(live_by_type, type_, -1);
    raw_ = nullptr;
  }
  finalized_ = false;
}

Expected<void> Descriptor::finalize() {
  auto ok = call_described(
      [this] { return "cudnnBackendFinalize(" + std::string(descriptor_type_name(type_)) + ")"; },
      [&] { return lib::cudnnBackendFinalize(raw_); });
  if (ok) {
    finalized_ = true;
    count(finalized_by_type, type_, 1);
  }
  return ok;
}

Expected<void> Descriptor::set_raw(const Attribute& attribute, cudnnBackendAttributeType_t type,
                                   std::int64_t count, const void* values,
                                   std::size_t element_bytes) {
  if (AttributeLog* log = AttributeLog::active()) {
    log->set(raw_, type_, attribute.id, type, count, values, element_bytes);
  }
  return call_described(
      [&] {
        return "set " + std::string(attribute.name) + " on " +
               std::string(descriptor_type_name(type_));
      },
      [&] { return lib::cudnnBackendSetAttribute(raw_, attribute.id, type, count, values); });
}

Expected<std::int64_t> Descriptor::get_raw(const Attribute& attribute,
                                           cudnnBackendAttributeType_t type, std::int64_t requested,
                                           void* out) const {
  std::int64_t count = 0;
  auto ok = call_described(
      [&] {
        return "get " + std::string(attribute.name) + " of " +
               std::string(descriptor_type_name(type_));
      },
      [&] {
        return lib::cudnnBackendGetAttribute(raw_, attribute.id, type, requested, &count, out);
      });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return count;
}

}  // namespace dnngraph::backend

namespace dnngraph::backend {

Expected<std::string> Descriptor::get_string(const Attribute& attribute) const {
  auto size = get_raw(attribute, CUDNN_TYPE_CHAR, 0, nullptr);
  if (!size) {
    return std::unexpected(std::move(size.error()));
  }
  // Another thread can grow the text (a kernel cache) between the size query and the read:
  // cuDNN then answers BAD_PARAM_SIZE_INSUFFICIENT with the size now needed (9.27 docs).
  constexpr int attempts = 4;
  for (int i = 0; i < attempts; ++i) {
    std::vector<char> text(static_cast<std::size_t>(*size) + 1, '\0');
    std::int64_t count = 0;
    auto ok = call(
        "get " + std::string(attribute.name) + " of " + std::string(descriptor_type_name(type_)),
        [&] {
          return lib::cudnnBackendGetAttribute(native(), attribute.id, CUDNN_TYPE_CHAR,
                                               static_cast<std::int64_t>(text.size()), &count,
                                               text.data());
        });
    if (!ok && ok.error().code == CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT && count > *size) {
      *size = count;
      continue;
    }
    if (!ok) {
      return std::unexpected(std::move(ok.error()));
    }
    return std::string(text.data());  // the buffer has one more '\0' than cuDNN writes
  }
  return std::unexpected(Status{CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT,
                                "get " + std::string(attribute.name) + " (kept growing while read)",
                                ""});
}

}  // namespace dnngraph::backend
