// backend::ExecutionPlan: the workspace query with overrides, and execute.
#include "backend/execution_plan.hpp"

#include "backend/features.hpp"
#include "backend/library.hpp"
#include "backend/variant_pack.hpp"

namespace dnngraph::backend {

bool has_workspace_size_for() noexcept {
  // Looked up in the loaded library: absent before 9.23.
  return available(Feature::WorkspaceSizeWithOverrides) &&
         lib::has_cudnnGetExecutionPlanWorkspaceSize();
}

Expected<std::int64_t> workspace_size_for(cudnnHandle_t handle, const ExecutionPlan& plan,
                                          const VariantPack& variant_pack) {
  if (!has_workspace_size_for()) {
    return std::unexpected(too_old(Feature::WorkspaceSizeWithOverrides));
  }
  std::size_t bytes = 0;
  auto ok = call("cudnnGetExecutionPlanWorkspaceSize", [&] {
    return lib::cudnnGetExecutionPlanWorkspaceSize(handle, plan.native(), variant_pack.native(),
                                                   &bytes);
  });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return static_cast<std::int64_t>(bytes);
}

Expected<void> execute(cudnnHandle_t handle, const ExecutionPlan& plan,
                       const VariantPack& variant_pack) {
  return call("cudnnBackendExecute", [&] {
    return lib::cudnnBackendExecute(handle, plan.native(), variant_pack.native());
  });
}

}  // namespace dnngraph::backend
