// Known cuDNN defects, measured: each entry names the cuDNN versions it was measured on, the
// version range its workaround applies to, what goes wrong and where the workaround lives. Plan
// choice skips a candidate an entry with a candidate rule matches (and says so in a NoEngine
// error), so a defect measured as a wrong number or a driver failure becomes a refusal at build.
// A workaround gated on the version asks workaround_needed(defect), so it stops applying where
// the table says the defect was measured fixed, deliberately. Re-check every entry on each new
// cuDNN and move its range with the measurement.
#pragma once

#include "api/plan.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dnngraph::detail {

// What the candidate rules depend on, collected from a graph's nodes before plan choice.
struct GraphTraits {
  bool channels_first_conv_fprop = false;  // a conv_fprop whose X is not channels-last
  // a conv_fprop, conv_dgrad or conv_wgrad whose X/dX or Y/dY is not channels-last
  bool channels_first_conv = false;
  bool override_shapes = false;  // set_override_shape_enabled: shapes (and workspaces) vary
  bool dynamic_shape = false;    // the operation graph is built with dynamic shapes
  bool sdpa = false;             // an attention (sdpa) node
  // an sdpa or sdpa_backward node outside the one form cuDNN runs exact under override shapes
  // (SdpaNode::in_override_form: ragged Q and O, a padding mask, inference, no paged cache)
  bool sdpa_outside_override_form = false;
  bool rng = false;                // a random-number (rng) node
  bool row_norm_backward = false;  // a layernorm_backward or rmsnorm_backward node
  bool bfloat16_resample = false;  // a resample or resample_backward node on BFloat16 tensors
};

// A candidate as plan choice sees it: the engine config, the workspace its plan needs (-1 before
// the plan is finalized) and its engine's numerical notes.
struct Candidate {
  const EngineChoice& choice;
  std::int64_t workspace = -1;
  // What cuDNN says of the engine. The `{}` lets callers leave it out (`Candidate{choice, -1}`)
  // without clang's -Wmissing-field-initializers.
  std::span<const NumericalNote> numerical_notes = {};  // NOLINT(readability-redundant-member-init)
};

// One per entry of the table, in table order.
enum class Defect {
  Engine7ChannelsFirstConvFprop,
  PointwiseOnlyRank2Output,
  PointwiseOnlyTwoDimBroadcast,
  DynamicGraphConvOverrides,
  DynamicGraphMatmulEpilogueOverrides,
  BatchnormInferenceNoEngine,
  KernelCacheSerializedOnce,
  KernelCacheLookupRace,
  KernelCacheUnfinalizedGraph,
  KernelCacheHostileDocument,
  SdpaDynamicShape,
  SdpaOverrideShapes,
  RngOutsideAttention,
  ResampleMaxBackwardWithoutIndex,
  ResampleBfloat16Wrong,
  ResampleAfterPointwiseUnwritten,
  PagedKvTwoBlockSizes,
  KernelCacheLoadedNormCrash,
  Engine4ChannelsFirstConv,
  DynamicRowNormBackward,
  ResampleBfloat16WithoutTensorCore,
};

// Versions in the cudnnGetVersion() encoding, e.g. 92700 for 9.27.0.
struct KnownIssue {
  Defect defect;
  std::string_view id;          // "engine7-channels-first-conv-fprop": messages and docs
  std::int64_t first_affected;  // the workaround applies from here; 0: every version before too
  std::int64_t first_fixed;     // first version measured without the defect; 0: none yet
  std::int64_t first_measured;  // oldest cuDNN the defect was measured on
  std::int64_t last_measured;   // newest cuDNN measured (affected, or fixed when first_fixed is)
  std::string_view what;        // what goes wrong, and where it was measured
  std::string_view workaround;  // what dnngraph does, and where in the code
  // Plan-choice entries: whether the entry rules the candidate out. Null for the others.
  bool (*applies)(const GraphTraits& graph, const Candidate& candidate);
  // Entries of a graph cuDNN offers no engine for: whether the entry explains a NoEngine build of
  // the graph, so that build() names it. Null for the others.
  bool (*explains_no_engine)(const GraphTraits& graph);
};

// Every entry, in Defect order, for docs and tests.
[[nodiscard]] std::span<const KnownIssue> known_issues() noexcept;
[[nodiscard]] const KnownIssue& known_issue(Defect defect) noexcept;

// Whether cuDNN `version` is in the entry's range: first_affected <= version < first_fixed.
[[nodiscard]] bool in_range(const KnownIssue& issue, std::int64_t version) noexcept;
// Whether the workaround for `defect` applies to the cuDNN loaded in this process.
[[nodiscard]] bool workaround_needed(Defect defect) noexcept;

// The plan-choice entry that rules the candidate out on cuDNN `version`, or null.
[[nodiscard]] const KnownIssue* known_issue_for(const GraphTraits& graph,
                                                const Candidate& candidate,
                                                std::int64_t version) noexcept;

// The entry that explains why cuDNN `version` offered no engine for the graph, or null.
[[nodiscard]] const KnownIssue* known_issue_explaining_no_engine(const GraphTraits& graph,
                                                                 std::int64_t version) noexcept;

// "known cuDNN defect <id> (measured on cuDNN 9.27.0; applies to every cuDNN, no fixed version
// measured yet): <what>"
[[nodiscard]] std::string describe(const KnownIssue& issue);

}  // namespace dnngraph::detail
