// Plan choice (internal to api/): heuristics → engine configs → the first execution plan that
// finalizes. On failure the Error lists what each candidate said.
#pragma once

#include "api/error.hpp"
#include "api/plan.hpp"
#include "backend/execution_plan.hpp"
#include "backend/operation_graph.hpp"

#include <vector>

namespace dnngraph::detail {

struct ChosenPlan {
  backend::ExecutionPlan plan;
  PlanInfo info;
};

[[nodiscard]] Result<ChosenPlan> choose_plan(const backend::OperationGraph& graph,
                                             cudnnHandle_t handle,
                                             const std::vector<HeuristicMode>& modes,
                                             const backend::Descriptor* kernel_cache);

}  // namespace dnngraph::detail
