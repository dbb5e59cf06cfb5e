// backend::ExecutionPlan getters and execute.
#include "backend/execution_plan.hpp"

namespace dnngraph::backend {

Expected<std::int64_t> ExecutionPlan::workspace_size() const {
  std::int64_t bytes = 0;
  auto got = get(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, "CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE",
                 std::span<std::int64_t>(&bytes, 1));
  if (!got) {
    return std::unexpected(std::move(got.error()));
  }
  return bytes;
}

Expected<void> execute(cudnnHandle_t handle, const ExecutionPlan& plan,
                       const Descriptor& variant_pack) {
  return check(cudnnBackendExecute(handle, plan.native(), variant_pack.native()),
               "cudnnBackendExecute");
}

}  // namespace dnngraph::backend
