// detail::BuiltGraph (internal to api/): everything a successful build made, owned together
// so descriptors never outlive what they reference.
#pragma once

#include "api/lowering.hpp"
#include "api/plan.hpp"
#include "backend/execution_plan.hpp"
#include "backend/operation_graph.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dnngraph::detail {

struct Lowered {
  TensorTable tensors;
  std::vector<LoweredOperation> operations;
};

struct BuiltGraph {
  Lowered lowered;
  backend::OperationGraph operation_graph;
  backend::ExecutionPlan plan;
  PlanInfo info;
  std::vector<std::int64_t> io_uids;  // uids of non-virtual tensors, sorted: the variant pack
  std::vector<std::string> io_names;  // describe() of the same tensors, same order
};

}  // namespace dnngraph::detail
