// The table of versioned cuDNN capabilities, the attributes only newer headers declare, and the
// checks on both. The only file that tests CUDNN_VERSION.
#include "backend/features.hpp"

#include "backend/version.hpp"

#include <array>
#include <cstddef>
#include <optional>

namespace dnngraph::backend {

namespace {

// Each group is declared from the version its feature's entry below names.
#if CUDNN_VERSION >= 91800
constexpr std::optional<Attribute> override_unique_ids =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS);
constexpr std::optional<Attribute> override_shapes =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES);
constexpr std::optional<Attribute> override_strides =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES);
#else
constexpr std::optional<Attribute> override_unique_ids;
constexpr std::optional<Attribute> override_shapes;
constexpr std::optional<Attribute> override_strides;
#endif
#if CUDNN_VERSION >= 92100
constexpr std::optional<Attribute> override_shape_enabled =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED);
#else
constexpr std::optional<Attribute> override_shape_enabled;
#endif
#if CUDNN_VERSION >= 92700
constexpr std::optional<Attribute> cache_revision =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_KERNEL_CACHE_REVISION);
constexpr std::optional<Attribute> cache_entry_count =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_KERNEL_CACHE_ENTRY_COUNT);
#else
constexpr std::optional<Attribute> cache_revision;
constexpr std::optional<Attribute> cache_entry_count;
#endif
#if CUDNN_VERSION >= 92200
constexpr std::optional<cudnnBackendDescriptorType_t> slice_descriptor =
    CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR;
constexpr std::optional<Attribute> slice_x = DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_SLICE_XDESC);
constexpr std::optional<Attribute> slice_y = DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_SLICE_YDESC);
constexpr std::optional<Attribute> slice_starts =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_SLICE_START_INDICES);
constexpr std::optional<Attribute> slice_limits =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_SLICE_LIMIT_INDICES);
constexpr std::optional<Attribute> slice_strides =
    DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_SLICE_STRIDES);
#else
constexpr std::optional<cudnnBackendDescriptorType_t> slice_descriptor;
constexpr std::optional<Attribute> slice_x;
constexpr std::optional<Attribute> slice_y;
constexpr std::optional<Attribute> slice_starts;
constexpr std::optional<Attribute> slice_limits;
constexpr std::optional<Attribute> slice_strides;
#endif

#if CUDNN_VERSION >= 90900
constexpr std::optional<cudnnBackendNormMode_t> ada_layer_norm = CUDNN_ADA_LAYER_NORM;
#else
constexpr std::optional<cudnnBackendNormMode_t> ada_layer_norm;
#endif

// Versions: the "@since" notes of cuDNN 9.27's cudnn_graph.h, but for the concatenate operation.
constexpr std::array<FeatureEntry, 9> table{{
    {Feature::VariantPackOverrides, "execute-time override shapes in the variant pack",
     "CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS, _SHAPES, _STRIDES", 91800,
     override_unique_ids.has_value()},
    {Feature::OverrideShapeFlag, "the operation graph's override-shape flag",
     "CUDNN_ATTR_OPERATIONGRAPH_IS_OVERRIDE_SHAPE_ENABLED", 92100,
     override_shape_enabled.has_value()},
    // Looked up in the loaded library (dlsym), so the headers compiled against do not matter.
    {Feature::WorkspaceSizeWithOverrides, "the workspace query for override shapes",
     "cudnnGetExecutionPlanWorkspaceSize", 92300, true},
    {Feature::KernelCacheCounters, "the kernel cache's revision and entry count",
     "CUDNN_ATTR_KERNEL_CACHE_REVISION, CUDNN_ATTR_KERNEL_CACHE_ENTRY_COUNT", 92700,
     cache_revision.has_value()},
    // Not an attribute: the attention backward engines zero a dQ accumulator tensor in memory
    // themselves from 9.6 (before, cudnn-frontend 1.32 memsets it; dnngraph has no CUDA runtime
    // to do that, so below 9.6 the backward writes dQ directly).
    {Feature::SdpaBackwardAccumulator, "the attention backward's own zeroing of its dQ accumulator",
     "a non-virtual Float output of the SDPA backward pattern's dS K "
     "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR",
     90600, true},
    // The descriptor and its attributes are "@since cuDNN 9.0.0" in the headers, but
    // cudnn-frontend 1.32's concatenate node compiles it in and runs it from 9.7.0 only
    // ("Concatenate requires cuDNN v9.7.0", node/concatenate.h): dnngraph asks the same.
    {Feature::ConcatOperation, "the concatenate operation",
     "CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR", 90700, compiled_version >= 90700},
    {Feature::SliceOperation, "the slice operation",
     "CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR, CUDNN_ATTR_OPERATION_SLICE_*", 92200,
     slice_descriptor.has_value()},
    // A norm mode, not an attribute: cudnn-frontend 1.32's adalayernorm nodes gate on 9.9.0.
    {Feature::AdaptiveLayerNorm, "adaptive layer normalization",
     "CUDNN_ADA_LAYER_NORM of CUDNN_ATTR_OPERATION_NORM_FWD_MODE / _BWD_MODE", 90900,
     ada_layer_norm.has_value()},
    // The descriptor and its attributes are "@since cuDNN 9.4.0" in 9.27's cudnn_graph.h, as is the
    // kernel cache dnngraph needs anyway (so every header it compiles with declares them);
    // cudnn-frontend 1.32 (node/paged_cache_load.h) asks for 9.5.0 at compile and run time, and
    // so does dnngraph.
    {Feature::PagedCacheLoad, "the paged K/V cache load of attention",
     "CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR", 90500, compiled_version >= 90500},
}};

struct VersionedEntry {
  VersionedAttribute attribute;
  Feature feature;
  std::optional<Attribute> declared;  // nullopt where the headers lack it
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
  std::optional<cudnnBackendDescriptorType_t> declared;  // nullopt where the headers lack it
  std::string_view name;                                 // as descriptor_type_name spells it
};

constexpr std::array<VersionedTypeEntry, 1> versioned_types{{
    {VersionedDescriptorType::OperationSlice, Feature::SliceOperation, slice_descriptor,
     "OperationSlice"},
}};

// The tables are indexed by their enum, and an entry is compiled exactly when the headers are
// as new as its minimum and declare every attribute and descriptor type (or norm mode) of it.
constexpr bool tables_agree() {
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (static_cast<std::size_t>(table[i].feature) != i) {
      return false;
    }
  }
  const FeatureEntry& ada = table[static_cast<std::size_t>(Feature::AdaptiveLayerNorm)];
  if (ada.compiled != (compiled_version >= ada.minimum)) {
    return false;
  }
  for (std::size_t i = 0; i < versioned.size(); ++i) {
    const VersionedEntry& v = versioned[i];
    const FeatureEntry& f = table[static_cast<std::size_t>(v.feature)];
    if (static_cast<std::size_t>(v.attribute) != i || v.declared.has_value() != f.compiled ||
        f.compiled != (compiled_version >= f.minimum)) {
      return false;
    }
  }
  for (std::size_t i = 0; i < versioned_types.size(); ++i) {
    const VersionedTypeEntry& v = versioned_types[i];
    const FeatureEntry& f = table[static_cast<std::size_t>(v.feature)];
    if (static_cast<std::size_t>(v.type) != i || v.declared.has_value() != f.compiled) {
      return false;
    }
  }
  return true;
}
static_assert(tables_agree(), "backend/features.cpp: a table is out of step with the headers");

}  // namespace

std::span<const FeatureEntry> features() noexcept { return table; }

const FeatureEntry& entry(Feature feature) noexcept {
  return table[static_cast<std::size_t>(feature)];
}

std::int64_t loaded_version() noexcept {
  // The loaded library does not change within a process.
  static const std::int64_t version = runtime_version();
  return version;
}

bool compiled(Feature feature) noexcept { return entry(feature).compiled; }

bool loaded(Feature feature) noexcept { return loaded_version() >= entry(feature).minimum; }

bool available(Feature feature) noexcept { return compiled(feature) && loaded(feature); }

std::string too_old_message(Feature feature) {
  const FeatureEntry& e = entry(feature);
  return std::string(e.name) + " (" + std::string(e.cudnn) +
         ") needs cuDNN >= " + version_string(e.minimum) +
         "; dnngraph was compiled against cuDNN " + version_string(compiled_version) +
         (e.compiled ? "" : " (without it)") + " and cuDNN " + version_string(loaded_version()) +
         " is loaded";
}

Status too_old(Feature feature) {
  return Status{CUDNN_STATUS_NOT_SUPPORTED, std::string(entry(feature).cudnn),
                too_old_message(feature)};
}

Expected<Attribute> usable(VersionedAttribute attribute) {
  const VersionedEntry& v = versioned[static_cast<std::size_t>(attribute)];
  if (!v.declared || !available(v.feature)) {
    return std::unexpected(too_old(v.feature));
  }
  return *v.declared;
}

Expected<cudnnBackendDescriptorType_t> usable(VersionedDescriptorType type) {
  const VersionedTypeEntry& v = versioned_types[static_cast<std::size_t>(type)];
  if (!v.declared || !available(v.feature)) {
    return std::unexpected(too_old(v.feature));
  }
  return *v.declared;
}

std::string_view versioned_descriptor_type_name(cudnnBackendDescriptorType_t type) noexcept {
  for (const VersionedTypeEntry& v : versioned_types) {
    if (v.declared == type) {
      return v.name;
    }
  }
  return "";
}

Expected<cudnnBackendNormMode_t> adaptive_layer_norm_mode() {
  if (!ada_layer_norm || !available(Feature::AdaptiveLayerNorm)) {
    return std::unexpected(too_old(Feature::AdaptiveLayerNorm));
  }
  return *ada_layer_norm;
}

}  // namespace dnngraph::backend
