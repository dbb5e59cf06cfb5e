// backend features: the one room that knows which cuDNN version brought which capability. Each
// versioned capability dnngraph uses is a named entry with the version it needs, answered by the
// library loaded now (cudnnGetVersion through backend/library, asked once) and never by the
// headers compiled against: one build serves every cuDNN 9 from the supported minimum on, each at
// its own capabilities. Attributes that only newer headers declare are named in features.cpp, so
// descriptor classes declare every method whatever the headers, answering too_old() where the
// loaded cuDNN cannot, and no file outside this room tests CUDNN_VERSION.
#pragma once

#include "backend/attribute.hpp"
#include "backend/status.hpp"

#include <cudnn.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dnngraph::backend {

enum class Feature {
  VariantPackOverrides,        // execute-time shapes in the variant pack (9.18)
  OverrideShapeFlag,           // the operation graph's override-shape flag (9.21)
  WorkspaceSizeWithOverrides,  // cudnnGetExecutionPlanWorkspaceSize (9.23)
  KernelCacheCounters,         // revision and entry count of a kernel cache (9.27)
  SdpaBackwardAccumulator,     // attention backward zeroes its Float dQ accumulator (9.6)
  ConcatOperation,             // the concatenate operation (9.7)
  SliceOperation,              // the slice operation (9.22)
  AdaptiveLayerNorm,           // the adaptive layer norm mode of the norm operations (9.9)
  PagedCacheLoad,              // K/V read from a paged cache through a page table (9.5)
  Fp8Attention,                // the FP8 attention forward pattern on Hopper (9.1)
  SdpaBiasGradientAnyLength,   // attention dBias with padding or lengths not multiples of 64 (9.5)
  SdpaSlidingWindowCombined,   // a sliding window together with a bias or dropout (9.10.2)
  Fp8AttentionBackward,        // the FP8 attention backward pattern on Hopper (9.7)
};

struct FeatureEntry {
  Feature feature;
  std::string_view key;    // the enumerator's name, "OverrideShapeFlag" (CudnnCapability's too)
  std::string_view name;   // for messages: "the operation graph's override-shape flag"
  std::string_view cudnn;  // what cuDNN's docs call it: attribute or function names
  std::int64_t minimum;    // cudnnGetVersion() encoding: 92100 for 9.21.0
};

// Every entry, in Feature order.
[[nodiscard]] std::span<const FeatureEntry> features() noexcept;
[[nodiscard]] const FeatureEntry& entry(Feature feature) noexcept;

// cudnnGetVersion() of the library loaded in this process, asked once; 0 where none loads.
[[nodiscard]] std::int64_t loaded_version() noexcept;

[[nodiscard]] bool available(Feature feature) noexcept;  // loaded_version() >= minimum

// The one "too old" text: "<name> (<cudnn>) needs cuDNN >= 9.21.0; the loaded cuDNN is 9.19.0
// (<its path>)".
[[nodiscard]] std::string too_old_message(Feature feature);
// The same as a Status: CUDNN_STATUS_NOT_SUPPORTED, in the context of the cuDNN names.
[[nodiscard]] Status too_old(Feature feature);

// Attributes that only newer headers declare, each belonging to one feature.
enum class VersionedAttribute {
  VariantPackOverrideUniqueIds,        // VariantPackOverrides
  VariantPackOverrideShapes,           // VariantPackOverrides
  VariantPackOverrideStrides,          // VariantPackOverrides
  OperationGraphOverrideShapeEnabled,  // OverrideShapeFlag
  KernelCacheRevision,                 // KernelCacheCounters
  KernelCacheEntryCount,               // KernelCacheCounters
  OperationSliceXDesc,                 // SliceOperation
  OperationSliceYDesc,                 // SliceOperation
  OperationSliceStartIndices,          // SliceOperation
  OperationSliceLimitIndices,          // SliceOperation
  OperationSliceStrides,               // SliceOperation
};

// The attribute where the loaded cuDNN has its feature; too_old(feature) where it is older.
[[nodiscard]] Expected<Attribute> usable(VersionedAttribute attribute);

// Descriptor types that only newer headers declare, each belonging to one feature.
enum class VersionedDescriptorType {
  OperationSlice,  // SliceOperation
};

// The descriptor type where its feature is available, else too_old(feature); as usable() above.
[[nodiscard]] Expected<cudnnBackendDescriptorType_t> usable(VersionedDescriptorType type);
// The name descriptor_type_name gives a versioned descriptor type ("OperationSlice"); "" for
// every other type.
[[nodiscard]] std::string_view versioned_descriptor_type_name(
    cudnnBackendDescriptorType_t type) noexcept;

// CUDNN_ADA_LAYER_NORM where Feature::AdaptiveLayerNorm is available; too_old(...) otherwise.
[[nodiscard]] Expected<cudnnBackendNormMode_t> adaptive_layer_norm_mode();

}  // namespace dnngraph::backend
