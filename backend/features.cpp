// The table of versioned cuDNN capabilities, the attributes only newer headers declare, and the
// checks on both. The only file that tests CUDNN_VERSION.
#include "backend/features.hpp"

#include "backend/version.hpp"

#include <array>
#include <cstddef>

namespace dnngraph::backend {

namespace {

// dnngraph compiles against cuDNN 9.19 or newer headers and runs on whatever cuDNN 9 is loaded
// (backend/library): what it may use is asked of the loaded version alone. Attributes and
// descriptor types that headers older than their feature lack are named here with the values
// cuDNN 9.28.1's cudnn_graph.h gives them (enum values of the C ABI never change once released);
// where the headers compiled against declare one, a static_assert holds the two equal.
static_assert(CUDNN_VERSION >= 91900, "dnngraph needs cuDNN 9.19 or newer headers to compile");

template <class Enum>
constexpr Enum named(int value) {
  return static_cast<Enum>(value);
}
using AttributeName = cudnnBackendAttributeName_t;

constexpr Attribute override_unique_ids =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS);
constexpr Attribute override_shapes = DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES);
constexpr Attribute override_strides = DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES);
constexpr Attribute override_shape_enabled{named<AttributeName>(805),
                                           "CUDNN_ATTR_OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED"};
constexpr Attribute cache_revision{named<AttributeName>(2403), "CUDNN_ATTR_KERNEL_CACHE_REVISION"};
constexpr Attribute cache_entry_count{named<AttributeName>(2404),
                                      "CUDNN_ATTR_KERNEL_CACHE_ENTRY_COUNT"};
constexpr cudnnBackendDescriptorType_t slice_descriptor = named<cudnnBackendDescriptorType_t>(47);
constexpr Attribute slice_x{named<AttributeName>(3300), "CUDNN_ATTR_OPERATION_SLICE_XDESC"};
constexpr Attribute slice_y{named<AttributeName>(3301), "CUDNN_ATTR_OPERATION_SLICE_YDESC"};
constexpr Attribute slice_starts{named<AttributeName>(3302),
                                 "CUDNN_ATTR_OPERATION_SLICE_START_INDICES"};
constexpr Attribute slice_limits{named<AttributeName>(3303),
                                 "CUDNN_ATTR_OPERATION_SLICE_LIMIT_INDICES"};
constexpr Attribute slice_strides{named<AttributeName>(3304), "CUDNN_ATTR_OPERATION_SLICE_STRIDES"};
constexpr cudnnBackendNormMode_t ada_layer_norm = CUDNN_ADA_LAYER_NORM;

#if CUDNN_VERSION >= 92100
static_assert(override_shape_enabled.id == CUDNN_ATTR_OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED);
#endif
#if CUDNN_VERSION >= 92200
static_assert(slice_descriptor == CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR);
static_assert(slice_x.id == CUDNN_ATTR_OPERATION_SLICE_XDESC);
static_assert(slice_y.id == CUDNN_ATTR_OPERATION_SLICE_YDESC);
static_assert(slice_starts.id == CUDNN_ATTR_OPERATION_SLICE_START_INDICES);
static_assert(slice_limits.id == CUDNN_ATTR_OPERATION_SLICE_LIMIT_INDICES);
static_assert(slice_strides.id == CUDNN_ATTR_OPERATION_SLICE_STRIDES);
#endif
#if CUDNN_VERSION >= 92700
static_assert(cache_revision.id == CUDNN_ATTR_KERNEL_CACHE_REVISION);
static_assert(cache_entry_count.id == CUDNN_ATTR_KERNEL_CACHE_ENTRY_COUNT);
#endif

// Versions: the "@since" notes of cuDNN 9.27's cudnn_graph.h, but for the concatenate operation.
constexpr std::array<FeatureEntry, 13> table{{
    {Feature::VariantPackOverrides, "VariantPackOverrides",
     "execute-time override shapes in the variant pack",
     "CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS, _SHAPES, _STRIDES", 91800},
    {Feature::OverrideShapeFlag, "OverrideShapeFlag", "the operation graph's override-shape flag",
     "CUDNN_ATTR_OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED", 92100},
    // A function, looked up in the loaded library (backend/library).
    {Feature::WorkspaceSizeWithOverrides, "WorkspaceSizeWithOverrides",
     "the workspace query for override shapes", "cudnnGetExecutionPlanWorkspaceSize", 92300},
    {Feature::KernelCacheCounters, "KernelCacheCounters",
     "the kernel cache's revision and entry count",
     "CUDNN_ATTR_KERNEL_CACHE_REVISION, CUDNN_ATTR_KERNEL_CACHE_ENTRY_COUNT", 92700},
    // Not an attribute: the attention backward engines zero a dQ accumulator tensor in memory
    // themselves from 9.6 (before, cudnn-frontend 1.32 memsets it; dnngraph has no CUDA runtime
    // to do that, so below 9.6 the backward writes dQ directly).
    {Feature::SdpaBackwardAccumulator, "SdpaBackwardAccumulator",
     "the attention backward's own zeroing of its dQ accumulator",
     "a non-virtual Float output of the SDPA backward pattern's dS K "
     "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR",
     90600},
    // The descriptor and its attributes are "@since cuDNN 9.0.0" in the headers, but
    // cudnn-frontend 1.32's concatenate node compiles it in and runs it from 9.7.0 only
    // ("Concatenate requires cuDNN v9.7.0", node/concatenate.h): dnngraph asks the same.
    {Feature::ConcatOperation, "ConcatOperation", "the concatenate operation",
     "CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR", 90700},
    {Feature::SliceOperation, "SliceOperation", "the slice operation",
     "CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR, CUDNN_ATTR_OPERATION_SLICE_*", 92200},
    // A norm mode, not an attribute: cudnn-frontend 1.32's adalayernorm nodes gate on 9.9.0.
    {Feature::AdaptiveLayerNorm, "AdaptiveLayerNorm", "adaptive layer normalization",
     "CUDNN_ADA_LAYER_NORM of CUDNN_ATTR_OPERATION_NORM_FWD_MODE / _BWD_MODE", 90900},
    // The descriptor and its attributes are "@since cuDNN 9.4.0" in 9.27's cudnn_graph.h, as is the
    // kernel cache dnngraph needs anyway (so every header it compiles with declares them);
    // cudnn-frontend 1.32 (node/paged_cache_load.h) asks for 9.5.0 at compile and run time, and
    // so does dnngraph.
    {Feature::PagedCacheLoad, "PagedCacheLoad", "the paged K/V cache load of attention",
     "CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR", 90500},
    // Not an attribute: a pattern of ordinary operations on CUDNN_DATA_FP8_E4M3 tensors that the
    // fused FP8 flash-attention engine matches. cudnn-frontend (node/sdpa_fp8.h in 1.13, its
    // support surface since) refuses it "starting cudnn 9.1.0" and on 9.10.0, and
    // TransformerEngine serves its FP8 forward from 9.1.0 too.
    {Feature::Fp8Attention, "Fp8Attention", "FP8 scaled dot-product attention (forward)",
     "the SDPA FP8 pattern: CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR on CUDNN_DATA_FP8_E4M3, "
     "pointwise scales and CUDNN_REDUCE_TENSOR_AMAX",
     90100},
    // Not attributes: what the fused attention engines serve, as cudnn-frontend gates them
    // (node/sdpa_support_surface.h; the backward's pre-validation in
    // node/scaled_dot_product_flash_attention.h): dBias with a padding mask or lengths not
    // multiples of 64 from 9.5.0, a left bound (sliding window) with a bias or dropout from 9.10.2.
    {Feature::SdpaBiasGradientAnyLength, "SdpaBiasGradientAnyLength",
     "attention dBias with a padding mask or sequence lengths not multiples of 64",
     "CUDNN_REDUCE_TENSOR_ADD of dS into dBias in the SDPA backward pattern", 90500},
    {Feature::SdpaSlidingWindowCombined, "SdpaSlidingWindowCombined",
     "an attention sliding window together with a bias or dropout",
     "CUDNN_POINTWISE_CMP_GT of column + length with the row, with a bias or an RNG", 91002},
    // Not an attribute: the backward of the FP8 pattern (Fp8Attention above). cudnn-frontend's
    // SDPA FP8 backward node (node/sdpa_fp8_bwd.h) refuses it below 9.1.0 and on 9.10.0;
    // TransformerEngine (common/fused_attn/fused_attn.cpp) runs the FP8 backward on Hopper from
    // 9.2.1 for lengths that are multiples of 128 without a padding mask, and from 9.7.0 at any
    // length and with padding masks, all of which this node offers: dnngraph asks for 9.7.0.
    {Feature::Fp8AttentionBackward, "Fp8AttentionBackward",
     "FP8 scaled dot-product attention backward",
     "the SDPA FP8 backward pattern: CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR on "
     "CUDNN_DATA_FP8_E4M3 / CUDNN_DATA_FP8_E5M2, pointwise scales and CUDNN_REDUCE_TENSOR_AMAX",
     90700},
}};

struct VersionedEntry {
  VersionedAttribute attribute;
  Feature feature;
  Attribute attribute_value;
};

constexpr std::array<VersionedEntry, 11> versioned{{
    {VersionedAttribute::VariantPackOverrideUniqueIds, Feature::VariantPackOverrides,
     override_unique_ids},
    {VersionedAttribute::VariantPackOverrideShapes, Feature::VariantPackOverrides, override_shapes},
    {VersionedAttribute::VariantPackOverrideStrides, Feature::VariantPackOverrides,
     override_strides},
    {VersionedAttribute::OperationGraphOverrideShapeEnabled, Feature::OverrideShapeFlag,
     override_shape_enabled},
    {VersionedAttribute::KernelCacheRevision, Feature::KernelCacheCounters, cache_revision},
    {VersionedAttribute::KernelCacheEntryCount, Feature::KernelCacheCounters, cache_entry_count},
    {VersionedAttribute::OperationSliceXDesc, Feature::SliceOperation, slice_x},
    {VersionedAttribute::OperationSliceYDesc, Feature::SliceOperation, slice_y},
    {VersionedAttribute::OperationSliceStartIndices, Feature::SliceOperation, slice_starts},
    {VersionedAttribute::OperationSliceLimitIndices, Feature::SliceOperation, slice_limits},
    {VersionedAttribute::OperationSliceStrides, Feature::SliceOperation, slice_strides},
}};

struct VersionedTypeEntry {
  VersionedDescriptorType type;
  Feature feature;
  cudnnBackendDescriptorType_t value;
  std::string_view name;  // as descriptor_type_name spells it
};

constexpr std::array<VersionedTypeEntry, 1> versioned_types{{
    {VersionedDescriptorType::OperationSlice, Feature::SliceOperation, slice_descriptor,
     "OperationSlice"},
}};

// The tables are indexed by their enum.
constexpr bool tables_agree() {
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (static_cast<std::size_t>(table[i].feature) != i) {
      return false;
    }
  }
  for (std::size_t i = 0; i < versioned.size(); ++i) {
    if (static_cast<std::size_t>(versioned[i].attribute) != i) {
      return false;
    }
  }
  for (std::size_t i = 0; i < versioned_types.size(); ++i) {
    if (static_cast<std::size_t>(versioned_types[i].type) != i) {
      return false;
    }
  }
  return true;
}
static_assert(tables_agree(), "backend/features.cpp: a table is out of step with its enum");

}  // namespace

std::span<const FeatureEntry> features() noexcept { return table; }

const FeatureEntry& entry(Feature feature) noexcept {
  return table[static_cast<std::size_t>(feature)];
}

std::int64_t loaded_version() noexcept {
  // The loaded library does not change within a process; 0 where none can be loaded.
  static const std::int64_t version = runtime_version();
  return version;
}

bool available(Feature feature) noexcept { return loaded_version() >= entry(feature).minimum; }

std::string too_old_message(Feature feature) {
  const FeatureEntry& e = entry(feature);
  const std::int64_t loaded = loaded_version();
  return std::string(e.name) + " (" + std::string(e.cudnn) +
         ") needs cuDNN >= " + version_string(e.minimum) + "; " +
         (loaded == 0
              ? "no cuDNN is loaded (" + library_source() + ")"
              : "the loaded cuDNN is " + version_string(loaded) + " (" + library_path() + ")");
}

Status too_old(Feature feature) {
  return Status{CUDNN_STATUS_NOT_SUPPORTED, std::string(entry(feature).cudnn),
                too_old_message(feature)};
}

Expected<Attribute> usable(VersionedAttribute attribute) {
  const VersionedEntry& v = versioned[static_cast<std::size_t>(attribute)];
  if (!available(v.feature)) {
    return std::unexpected(too_old(v.feature));
  }
  return v.attribute_value;
}

Expected<cudnnBackendDescriptorType_t> usable(VersionedDescriptorType type) {
  const VersionedTypeEntry& v = versioned_types[static_cast<std::size_t>(type)];
  if (!available(v.feature)) {
    return std::unexpected(too_old(v.feature));
  }
  return v.value;
}

std::string_view versioned_descriptor_type_name(cudnnBackendDescriptorType_t type) noexcept {
  for (const VersionedTypeEntry& v : versioned_types) {
    if (v.value == type) {
      return v.name;
    }
  }
  return "";
}

Expected<cudnnBackendNormMode_t> adaptive_layer_norm_mode() {
  if (!available(Feature::AdaptiveLayerNorm)) {
    return std::unexpected(too_old(Feature::AdaptiveLayerNorm));
  }
  return ada_layer_norm;
}

}  // namespace dnngraph::backend
