// PlanInfo: what build() chose — the engine, its knobs, the workspace — readable by users.
#pragma once

#include "api/types.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dnngraph {

struct PlanInfo {
  HeuristicMode mode = HeuristicMode::A;  // the heuristics that ranked the chosen config
  std::int64_t engine_id = -1;            // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<std::int64_t, std::int64_t>> knobs;  // (cudnnBackendKnobType_t, value)
  std::int64_t workspace_size = 0;
  std::int64_t candidates_tried = 0;  // configs whose plan finalize was attempted, this one included

  // "engine 7 (heuristics A, knobs {KERNEL_CFG=22}), workspace 0 B, 1 candidate(s) tried"
  [[nodiscard]] std::string describe() const;
};

}  // namespace dnngraph
