// PlanInfo: what build() chose — the engine, its knobs, its notes, the workspace — readable by
// users; PlanPolicy: what build() may choose (filters) and how (first, by index, pinned).
#pragma once

#include "api/error.hpp"
#include "api/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph {

// (cudnnBackendKnobType_t, value) pairs of an engine config.
using KnobChoices = std::vector<std::pair<std::int64_t, std::int64_t>>;

// An engine config by value: enough to make the same config again on another operation graph
// of the same topology.
struct EngineChoice {
  std::int64_t engine_id = -1;  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  KnobChoices knobs;
  friend bool operator==(const EngineChoice&, const EngineChoice&) = default;
};

// "engine 7, knobs {KERNEL_CFG=22, SPLIT_K=1}": the text parse_engine_choice reads back, so a
// measured choice can be stored and pinned later.
[[nodiscard]] std::string to_string(const EngineChoice& choice);
// Reads to_string's form, or the start of PlanInfo::describe()'s ("engine 7 (heuristics A, knobs
// {KERNEL_CFG=22})..."). Knob names are those describe() prints (or "knob<N>" for others).
[[nodiscard]] Result<EngineChoice> parse_engine_choice(std::string_view text);

// What cuDNN says about an engine's numbers (CUDNN_ATTR_ENGINE_NUMERICAL_NOTE), in cuDNN's
// order (cudnnBackendNumericalNote_t, cuDNN 9.19).
enum class NumericalNote : std::uint8_t {
  TensorCore,
  DownConvertInputs,
  ReducedPrecisionReduction,
  Fft,
  Nondeterministic,
  Winograd,
  WinogradTile4x4,
  WinogradTile6x6,
  WinogradTile13x13,
  StrictNanPropagation,
};
// What cuDNN says about an engine's behaviour (CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE), in cuDNN's
// order (cudnnBackendBehaviorNote_t, cuDNN 9.19).
enum class BehaviorNote : std::uint8_t {
  RuntimeCompilation,
  RequiresFilterInt8x32Reorder,
  RequiresBiasInt8x32Reorder,
  SupportsCudaGraphNativeApi,
  CublasLtDependency,
};
[[nodiscard]] std::string_view to_string(NumericalNote note) noexcept;
[[nodiscard]] std::string_view to_string(BehaviorNote note) noexcept;
[[nodiscard]] bool is_known(NumericalNote note) noexcept;
[[nodiscard]] bool is_known(BehaviorNote note) noexcept;

// What build() may choose and how. The filters apply to every candidate (the heuristics' configs,
// the kernel cache's known configs, a pinned config); a filter that leaves none is a NoEngine
// error listing each config filtered out and why. Default: no filter, the first plan that
// finalizes in heuristics order (as build(handle, modes)).
struct PlanPolicy {
  // The `{}`s let callers leave fields out of a designated initializer
  // (`PlanPolicy{.deterministic = true}`) without clang's -Wmissing-designated-field-initializers.
  // NOLINTBEGIN(readability-redundant-member-init)
  // Configs with any of these notes are skipped.
  std::vector<NumericalNote> excluded_numerical_notes{};
  std::vector<BehaviorNote> excluded_behavior_notes{};
  // Configs of these engines (CUDNN_ATTR_ENGINE_GLOBAL_INDEX) are skipped.
  std::vector<std::int64_t> excluded_engines{};
  // Plans needing a larger workspace (bytes) are skipped; known only once a plan is finalized.
  std::optional<std::int64_t> max_workspace{};
  // Skips NumericalNote::Nondeterministic configs: the same inputs give the same bits.
  bool deterministic = false;
  // Build the candidate at this index of the ranked list (after the filters, in heuristics order
  // of the modes given, duplicates removed; see Graph::plan_count) instead of the first that
  // finalizes. No kernel-cache reordering applies.
  std::optional<std::int64_t> plan_index{};
  // Build exactly this engine config (PlanInfo::choice() of an earlier build, or
  // parse_engine_choice of its text); no heuristics query. Not with plan_index.
  std::optional<EngineChoice> engine{};
  // NOLINTEND(readability-redundant-member-init)
};

struct PlanInfo {
  HeuristicMode mode = HeuristicMode::A;  // the heuristics that ranked the chosen config
  std::int64_t engine_id = -1;            // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  KnobChoices knobs;
  std::vector<NumericalNote> numerical_notes;  // what cuDNN says of the chosen engine
  std::vector<BehaviorNote> behavior_notes;
  // What execute() needs: cuDNN's plan workspace, plus the tensors a node keeps there
  // (sdpa_backward's Float dQ accumulator).
  std::int64_t workspace_size = 0;
  std::int64_t candidates_tried =
      0;  // configs whose plan finalize was attempted, this one included
  // The ranked candidates after the policy's filters (Graph::plan_count) and the chosen one's
  // index among them; -1 when no list was ranked (a pinned config, or a kernel cache's known
  // config taken before any heuristics query).
  std::int64_t plan_count = -1;
  std::int64_t plan_index = -1;
  // The config came from the kernel cache's known configs: no heuristics query was made.
  bool from_cached_config = false;
  // The kernel cache held this config's kernel before the plan was finalized (no compilation).
  bool kernel_cache_hit = false;
  // Heuristics queries this build made (one per mode ranked; none for a pinned config, a
  // kernel cache's known config or a deserialized plan).
  std::int64_t heuristics_queries = 0;
  // The plan came from Graph::deserialize(): cuDNN's plan document when it had one
  // (plan_from_document), else the document's engine config finalized again.
  bool deserialized = false;
  bool plan_from_document = false;
  // With set_override_shape_enabled: how overrides reach cuDNN ("operation graph override
  // flag (cuDNN >= 9.21)" or "dynamic-shape graph (cuDNN < 9.21)") and how the workspace for
  // them is found ("cudnnGetExecutionPlanWorkspaceSize (cuDNN >= 9.23)" or "a plan built for
  // the override shapes with the same engine config"). Empty without overrides.
  std::string override_path;
  std::string override_workspace_path;

  // The engine and knobs, to pin with PlanPolicy::engine.
  [[nodiscard]] EngineChoice choice() const { return {engine_id, knobs}; }
  // "engine 7 (heuristics A, knobs {KERNEL_CFG=22}), workspace 0 B, 1 candidate(s) tried"
  [[nodiscard]] std::string describe() const;
};

// How Graph::autotune measures each candidate.
struct AutotuneOptions {
  std::int64_t warmup = 3;          // untimed runs per candidate first
  std::int64_t iterations = 20;     // timed runs per candidate; the median counts
  std::int64_t max_candidates = 8;  // the first ones of the ranked list (Graph::plan_count)
};

// One candidate of an autotune: its place in the ranked list, what it is, and its median GPU
// time, or why it was not timed (its plan did not build, it needs more workspace than given, or
// a run failed).
struct AutotuneRow {
  std::int64_t plan_index = -1;
  EngineChoice choice;
  std::int64_t workspace_size = 0;
  std::optional<double> median_ms;
  std::string skipped;  // empty when timed
};

struct AutotuneReport {
  std::vector<AutotuneRow> rows;   // in ranked order
  std::int64_t chosen_index = -1;  // the plan index kept: the fastest timed
  // The first candidate's median (the plan build() takes without autotune) over the chosen one's.
  [[nodiscard]] std::optional<double> speedup_over_first() const;
  // One line per candidate: "  #0 engine 2, knobs {...}: 0.123 ms (workspace 0 B) <- chosen".
  [[nodiscard]] std::string describe() const;
};

}  // namespace dnngraph
