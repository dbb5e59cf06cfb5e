// The room for cuDNN versions: each versioned capability is an entry with the version it needs,
// answered by the loaded library alone (never the headers compiled against), and every refusal
// reads the same way.
#define BOOST_TEST_MODULE features
#include <boost/test/unit_test.hpp>

#include "backend/execution_plan.hpp"
#include "backend/features.hpp"
#include "backend/kernel_cache.hpp"
#include "backend/operation_concat.hpp"
#include "backend/operation_graph.hpp"
#include "backend/operation_paged_cache_load.hpp"
#include "backend/operation_slice.hpp"
#include "backend/variant_pack.hpp"
#include "backend/version.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include "api/types.hpp"
#include "api/version.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace backend = dnngraph::backend;
using backend::Feature;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_feature_has_a_name_its_cudnn_names_and_a_cudnn_9_minimum) {
  BOOST_TEST(backend::features().size() == 13U);
  for (const auto& e : backend::features()) {
    BOOST_TEST(&backend::entry(e.feature) == &e);
    BOOST_TEST(!e.name.empty());
    const std::string cudnn(e.cudnn);
    BOOST_TEST((contains(cudnn, "cudnn") || contains(cudnn, "CUDNN")), cudnn);
    BOOST_TEST(e.minimum > 90000);
    BOOST_TEST(e.minimum < 100000);
  }
}

BOOST_AUTO_TEST_CASE(the_versions_each_feature_needs) {
  BOOST_TEST(backend::entry(Feature::VariantPackOverrides).minimum == 91800);
  BOOST_TEST(backend::entry(Feature::OverrideShapeFlag).minimum == 92100);
  BOOST_TEST(backend::entry(Feature::WorkspaceSizeWithOverrides).minimum == 92300);
  BOOST_TEST(backend::entry(Feature::KernelCacheCounters).minimum == 92700);
  BOOST_TEST(backend::entry(Feature::SdpaBackwardAccumulator).minimum == 90600);
  BOOST_TEST(backend::entry(Feature::ConcatOperation).minimum == 90700);
  BOOST_TEST(backend::entry(Feature::SliceOperation).minimum == 92200);
  BOOST_TEST(backend::entry(Feature::AdaptiveLayerNorm).minimum == 90900);
  BOOST_TEST(backend::entry(Feature::PagedCacheLoad).minimum == 90500);
  BOOST_TEST(backend::entry(Feature::Fp8Attention).minimum == 90100);
  BOOST_TEST(backend::entry(Feature::SdpaBiasGradientAnyLength).minimum == 90500);
  BOOST_TEST(backend::entry(Feature::SdpaSlidingWindowCombined).minimum == 91002);
  BOOST_TEST(backend::entry(Feature::Fp8AttentionBackward).minimum == 90700);
}

BOOST_AUTO_TEST_CASE(available_follows_the_loaded_library_alone) {
  BOOST_TEST(backend::loaded_version() == backend::runtime_version());
  for (const auto& e : backend::features()) {
    BOOST_TEST(backend::available(e.feature) == (backend::runtime_version() >= e.minimum), e.name);
  }
}

BOOST_AUTO_TEST_CASE(a_capability_newer_than_the_headers_is_still_offered_by_a_newer_library) {
  // One build serves every cuDNN: a capability the headers compiled against predate is still
  // used where the loaded library has it (the attribute values are named in features.cpp).
  for (const auto& e : backend::features()) {
    if (e.minimum > backend::compiled_version) {
      BOOST_TEST(backend::available(e.feature) == (backend::loaded_version() >= e.minimum), e.name);
    }
  }
  BOOST_TEST(dnngraph::cudnn_offers(dnngraph::CudnnCapability::OverrideShapeFlag) ==
             (backend::loaded_version() >= 92100));
  BOOST_TEST(dnngraph::cudnn_version_needed(dnngraph::CudnnCapability::SliceOperation) == 92200);
  BOOST_TEST(dnngraph::to_string(dnngraph::CudnnCapability::KernelCacheCounters) ==
             "KernelCacheCounters");
}

BOOST_AUTO_TEST_CASE(every_capability_is_its_feature_under_the_same_name_and_no_other) {
  // CudnnCapability is the public face of Feature: one enumerator per table row, in its order,
  // named as the row's key.
  using dnngraph::CudnnCapability;
  const std::array<std::pair<CudnnCapability, Feature>, 13> same{{
      {CudnnCapability::VariantPackOverrides, Feature::VariantPackOverrides},
      {CudnnCapability::OverrideShapeFlag, Feature::OverrideShapeFlag},
      {CudnnCapability::WorkspaceSizeWithOverrides, Feature::WorkspaceSizeWithOverrides},
      {CudnnCapability::KernelCacheCounters, Feature::KernelCacheCounters},
      {CudnnCapability::SdpaBackwardAccumulator, Feature::SdpaBackwardAccumulator},
      {CudnnCapability::ConcatOperation, Feature::ConcatOperation},
      {CudnnCapability::SliceOperation, Feature::SliceOperation},
      {CudnnCapability::AdaptiveLayerNorm, Feature::AdaptiveLayerNorm},
      {CudnnCapability::PagedCacheLoad, Feature::PagedCacheLoad},
      {CudnnCapability::Fp8Attention, Feature::Fp8Attention},
      {CudnnCapability::SdpaBiasGradientAnyLength, Feature::SdpaBiasGradientAnyLength},
      {CudnnCapability::SdpaSlidingWindowCombined, Feature::SdpaSlidingWindowCombined},
      {CudnnCapability::Fp8AttentionBackward, Feature::Fp8AttentionBackward},
  }};
  BOOST_TEST(same.size() == backend::features().size());
  for (const auto& [capability, feature] : same) {
    const auto& e = backend::entry(feature);
    BOOST_TEST(static_cast<std::size_t>(capability) == static_cast<std::size_t>(feature), e.key);
    BOOST_TEST(dnngraph::to_string(capability) == e.key);
    BOOST_TEST(dnngraph::cudnn_version_needed(capability) == e.minimum, e.key);
    BOOST_TEST(dnngraph::cudnn_offers(capability) == backend::available(feature), e.key);
  }
  const auto past_the_end = static_cast<dnngraph::CudnnCapability>(backend::features().size());
  BOOST_TEST(dnngraph::to_string(past_the_end) == dnngraph::unknown_enumerator);
  BOOST_TEST(dnngraph::cudnn_version_needed(past_the_end) == 0);
  BOOST_TEST(!dnngraph::cudnn_offers(past_the_end));
}

BOOST_AUTO_TEST_CASE(too_old_names_the_capability_the_version_needed_and_the_loaded_library) {
  const std::string text = backend::too_old_message(Feature::KernelCacheCounters);
  BOOST_TEST(contains(text, "revision and entry count"), text);
  BOOST_TEST(contains(text, "CUDNN_ATTR_KERNEL_CACHE_REVISION"), text);
  BOOST_TEST(contains(text, "needs cuDNN >= 9.27"), text);
  BOOST_TEST(!contains(text, "compiled against"), text);
  BOOST_TEST(
      contains(text, "the loaded cuDNN is " + backend::version_string(backend::runtime_version()) +
                         " (" + backend::library_path() + ")"),
      text);
  const backend::Status status = backend::too_old(Feature::KernelCacheCounters);
  BOOST_TEST(status.code == CUDNN_STATUS_NOT_SUPPORTED);
  BOOST_TEST(status.last_error == text);
  BOOST_TEST(contains(status.to_string(), "CUDNN_ATTR_KERNEL_CACHE_REVISION"));
}

BOOST_AUTO_TEST_CASE(the_api_error_for_a_missing_feature_is_version_too_old) {
  const dnngraph::Error error =
      dnngraph::detail::version_too_old(Feature::OverrideShapeFlag, "build: override shapes");
  BOOST_TEST((error.code == dnngraph::ErrorCode::VersionTooOld));
  BOOST_TEST(contains(error.message, "build: override shapes: "), error.message);
  BOOST_TEST(contains(error.message, "cuDNN >= 9.21"), error.message);
}

BOOST_AUTO_TEST_CASE(kernel_cache_counters_answer_too_old_where_the_feature_is_missing) {
  auto cache = backend::KernelCache::create();
  BOOST_TEST_REQUIRE(cache.has_value());
  auto revision = cache->revision();
  auto entries = cache->entry_count();
  if (backend::available(Feature::KernelCacheCounters)) {
    // Declared and loaded: whatever cuDNN answers, it is not our refusal.
    const bool refused_as_too_old =
        !revision &&
        revision.error().last_error == backend::too_old_message(Feature::KernelCacheCounters);
    BOOST_TEST(!refused_as_too_old);
  } else {
    BOOST_TEST_REQUIRE(!revision.has_value());
    BOOST_TEST(revision.error().code == CUDNN_STATUS_NOT_SUPPORTED);
    BOOST_TEST(revision.error().last_error ==
               backend::too_old_message(Feature::KernelCacheCounters));
    BOOST_TEST_REQUIRE(!entries.has_value());
    BOOST_TEST(entries.error().code == CUDNN_STATUS_NOT_SUPPORTED);
  }
}

BOOST_AUTO_TEST_CASE(the_override_shape_flag_is_set_or_refused_as_too_old) {
  auto graph = backend::OperationGraph::create();
  BOOST_TEST_REQUIRE(graph.has_value());
  auto set = graph->set_override_shape_enabled(true);
  if (backend::available(Feature::OverrideShapeFlag)) {
    BOOST_TEST(set.has_value(), (set ? "" : set.error().to_string()));
  } else {
    BOOST_TEST_REQUIRE(!set.has_value());
    BOOST_TEST(set.error().code == CUDNN_STATUS_NOT_SUPPORTED);
    BOOST_TEST(contains(set.error().to_string(), "needs cuDNN >= 9.21"), set.error().to_string());
  }
}

BOOST_AUTO_TEST_CASE(variant_pack_overrides_are_set_or_refused_as_too_old) {
  auto pack = backend::VariantPack::create();
  BOOST_TEST_REQUIRE(pack.has_value());
  const std::array<std::int64_t, 1> uids{1};
  const std::vector<std::vector<std::int64_t>> shapes{{1, 8, 4}};
  auto ids = pack->set_override_unique_ids(uids);
  auto dims = pack->set_override_shapes(shapes);
  if (backend::available(Feature::VariantPackOverrides)) {
    BOOST_TEST(ids.has_value(), (ids ? "" : ids.error().to_string()));
    BOOST_TEST(dims.has_value(), (dims ? "" : dims.error().to_string()));
  } else {
    BOOST_TEST(!ids.has_value());
    BOOST_TEST(!dims.has_value());
  }
}

BOOST_AUTO_TEST_CASE(the_workspace_query_with_overrides_follows_its_feature) {
  // The function is looked up in the loaded library; where the feature is missing it is absent.
  if (!backend::available(Feature::WorkspaceSizeWithOverrides)) {
    BOOST_TEST(!backend::has_workspace_size_for());
  }
}

BOOST_AUTO_TEST_CASE(the_slice_operation_is_made_or_refused_as_too_old) {
  auto op = backend::OperationSlice::create();
  if (backend::available(Feature::SliceOperation)) {
    BOOST_TEST_REQUIRE(op.has_value(), (op ? "" : op.error().to_string()));
    BOOST_TEST(backend::descriptor_type_name(op->type()) == "OperationSlice");
  } else {
    BOOST_TEST_REQUIRE(!op.has_value());
    BOOST_TEST(op.error().code == CUDNN_STATUS_NOT_SUPPORTED);
    BOOST_TEST(op.error().last_error == backend::too_old_message(Feature::SliceOperation));
    BOOST_TEST(contains(op.error().to_string(), "needs cuDNN >= 9.22"), op.error().to_string());
  }
}

BOOST_AUTO_TEST_CASE(the_concat_descriptor_is_declared_by_every_cudnn_9_and_named) {
  auto op = backend::OperationConcat::create();
  BOOST_TEST_REQUIRE(op.has_value(), (op ? "" : op.error().to_string()));
  BOOST_TEST(backend::descriptor_type_name(op->type()) == "OperationConcat");
}

BOOST_AUTO_TEST_CASE(the_adaptive_layer_norm_mode_is_given_or_refused_as_too_old) {
  auto mode = backend::adaptive_layer_norm_mode();
  if (backend::available(Feature::AdaptiveLayerNorm)) {
    BOOST_TEST_REQUIRE(mode.has_value());
    BOOST_TEST(static_cast<int>(*mode) == 5);  // CUDNN_ADA_LAYER_NORM in cudnn_graph.h since 9.9
  } else {
    BOOST_TEST_REQUIRE(!mode.has_value());
    BOOST_TEST(mode.error().code == CUDNN_STATUS_NOT_SUPPORTED);
    BOOST_TEST(contains(mode.error().to_string(), "needs cuDNN >= 9.9.0"),
               mode.error().to_string());
  }
  const std::string text = backend::too_old_message(Feature::AdaptiveLayerNorm);
  BOOST_TEST(contains(text, "adaptive layer normalization (CUDNN_ADA_LAYER_NORM"), text);
  BOOST_TEST(contains(text, "needs cuDNN >= 9.9.0"), text);
}

BOOST_AUTO_TEST_CASE(the_paged_cache_load_is_created_or_refused_as_too_old) {
  auto op = backend::OperationPagedCacheLoad::create();
  if (backend::available(Feature::PagedCacheLoad)) {
    BOOST_TEST_REQUIRE(op.has_value(), (op ? "" : op.error().to_string()));
    BOOST_TEST(backend::descriptor_type_name(op->type()) == "OperationPagedCacheLoad");
  } else {
    BOOST_TEST_REQUIRE(!op.has_value());
    BOOST_TEST(op.error().code == CUDNN_STATUS_NOT_SUPPORTED);
    BOOST_TEST(contains(op.error().to_string(), "needs cuDNN >= 9.5"), op.error().to_string());
  }
}
