// backend::ExecutionPlan getters and execute.
#include "backend/execution_plan.hpp"

namespace dnngraph::backend {

Expected<std::int64_t> ExecutionPlan::workspace_size() const {
  return get_one<std::int64_t>(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                               "CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE");
}

Expected<void> execute(cudnnHandle_t handle, const ExecutionPlan& plan,
                       const Descriptor& variant_pack) {
  return check(cudnnBackendExecute(handle, plan.native(), variant_pack.native()),
               "cudnnBackendExecute");
}

}  // namespace dnngraph::backend
