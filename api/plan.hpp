// PlanInfo: what build() chose — the engine, its knobs, the workspace — readable by users.
#pragma once

#include "api/types.hpp"

#include <cstdint>
#include <string>
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

struct PlanInfo {
  HeuristicMode mode = HeuristicMode::A;  // the heuristics that ranked the chosen config
  std::int64_t engine_id = -1;            // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  KnobChoices knobs;
  std::int64_t workspace_size = 0;
  std::int64_t candidates_tried =
      0;  // configs whose plan finalize was attempted, this one included
  // The config came from the kernel cache's known configs: no heuristics query was made.
  bool from_cached_config = false;
  // The kernel cache held this config's kernel before the plan was finalized (no compilation).
  bool kernel_cache_hit = false;
  // With set_override_shape_enabled: how overrides reach cuDNN ("operation graph override
  // flag (cuDNN >= 9.21)" or "dynamic-shape graph (cuDNN < 9.21)") and how the workspace for
  // them is found ("cudnnGetExecutionPlanWorkspaceSize (cuDNN >= 9.23)" or "a plan built for
  // the override shapes with the same engine config"). Empty without overrides.
  std::string override_path;
  std::string override_workspace_path;

  // "engine 7 (heuristics A, knobs {KERNEL_CFG=22}), workspace 0 B, 1 candidate(s) tried"
  [[nodiscard]] std::string describe() const;
};

}  // namespace dnngraph
