// Plan choice (internal to api/): engine configs -> the first execution plan that finalizes,
// among those the plan policy's filters keep (detail/plan/plan_filter.hpp); or the one at the
// policy's plan_index of that ranked list (every mode's configs in order, duplicates removed); or
// the policy's pinned engine config alone. With a kernel cache and cache_first, configs the cache
// already compiled come first: the cache's known configs rebuilt on the new graph (no heuristics
// query), then the heuristics' configs the cache holds, then the rest in heuristics order. On
// failure the Error lists what each candidate said (and each known config that did not apply); an
// error of the cache itself (a lookup, a plan it cannot take) is no candidate's: plan choice stops
// with it.
#pragma once

#include "api/error.hpp"
#include "api/kernel_cache.hpp"
#include "api/plan.hpp"
#include "backend/execution_plan.hpp"
#include "backend/operation_graph.hpp"
#include "detail/cudnn/known_issues.hpp"

#include <vector>

namespace dnngraph::detail {

struct PlanRequest {
  const backend::OperationGraph& graph;
  cudnnHandle_t handle;
  const std::vector<HeuristicMode>& modes;
  KernelCache* cache = nullptr;  // built already; plans attach to it
  bool cache_first = true;
  GraphTraits traits;                  // what the known-issues table matches candidates against
  const PlanPolicy* policy = nullptr;  // filters and which candidate; null: none, the first
};

struct ChosenPlan {
  backend::ExecutionPlan plan;
  PlanInfo info;
};

[[nodiscard]] Result<ChosenPlan> choose_plan(const PlanRequest& request);

// The plan of one given engine config (engine and knobs) on `graph`, attached to `cache` when
// not null: how a plan is rebuilt for other shapes of the same topology.
[[nodiscard]] Result<backend::ExecutionPlan> plan_for_choice(const backend::OperationGraph& graph,
                                                             cudnnHandle_t handle,
                                                             const EngineChoice& choice,
                                                             KernelCache* cache);

}  // namespace dnngraph::detail
