// detail::BuiltGraph (internal to api/): everything a successful build made, owned together
// so descriptors never outlive what they reference.
#pragma once

#include "api/kernel_cache.hpp"
#include "api/lowering.hpp"
#include "api/plan.hpp"
#include "backend/execution_plan.hpp"
#include "backend/operation_graph.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dnngraph::detail {

struct Lowered {
  TensorTable tensors;
  std::vector<LoweredOperation> operations;
};

// The override lists last checked by execute(), so repeated runs with the same shapes are not
// checked again (the hot path), and workspace sizes found for override shapes.
struct OverrideMemo {
  std::mutex mutex;
  std::vector<std::int64_t> uids;                               // guarded by mutex
  std::vector<std::vector<std::int64_t>> shapes;                // guarded by mutex
  std::vector<std::vector<std::int64_t>> strides;               // guarded by mutex
  bool valid = false;                                           // guarded by mutex
  std::map<std::vector<std::int64_t>, std::int64_t> workspace;  // guarded by mutex
};

struct BuiltGraph {
  BuiltGraph(Lowered l, backend::OperationGraph g, backend::ExecutionPlan p, PlanInfo i)
      : lowered(std::move(l)),
        operation_graph(std::move(g)),
        plan(std::move(p)),
        info(std::move(i)) {}

  Lowered lowered;
  backend::OperationGraph operation_graph;
  backend::ExecutionPlan plan;
  PlanInfo info;
  std::vector<std::int64_t> io_uids;  // uids of non-virtual tensors, sorted: the variant pack
  std::vector<std::string> io_names;  // describe() of the same tensors, same order
  std::vector<bool> by_value;         // same order: passed by value, not in the variant pack
  std::vector<float> values;          // same order: the by-value tensors' values (0 elsewhere)
  bool override_enabled = false;
  bool native_override = false;        // the operation graph's override flag (cuDNN >= 9.21)
  bool native_workspace = false;       // cudnnGetExecutionPlanWorkspaceSize (cuDNN >= 9.23)
  std::shared_ptr<KernelCache> cache;  // the user's, or the graph's own for override plans
  std::unique_ptr<OverrideMemo> memo = std::make_unique<OverrideMemo>();
};

}  // namespace dnngraph::detail
