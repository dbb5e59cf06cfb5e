// backend::ExecutionPlan: the workspace query with overrides, and execute.
#include "backend/execution_plan.hpp"

#include "backend/features.hpp"
#include "backend/variant_pack.hpp"

#include <dlfcn.h>

namespace dnngraph::backend {

namespace {

using WorkspaceSizeFn = cudnnStatus_t (*)(cudnnHandle_t, cudnnBackendDescriptor_t,
                                          cudnnBackendDescriptor_t, std::size_t*);

WorkspaceSizeFn workspace_size_fn() noexcept {
  // Resolved once; null where the loaded libcudnn predates 9.23.
  static const auto fn =
      reinterpret_cast<WorkspaceSizeFn>(dlsym(RTLD_DEFAULT, "cudnnGetExecutionPlanWorkspaceSize"));
  return fn;
}

}  // namespace

bool has_workspace_size_for() noexcept {
  return available(Feature::WorkspaceSizeWithOverrides) && workspace_size_fn() != nullptr;
}

Expected<std::int64_t> workspace_size_for(cudnnHandle_t handle, const ExecutionPlan& plan,
                                          const VariantPack& variant_pack) {
  if (!has_workspace_size_for()) {
    return std::unexpected(too_old(Feature::WorkspaceSizeWithOverrides));
  }
  const WorkspaceSizeFn fn = workspace_size_fn();
  std::size_t bytes = 0;
  auto ok = call("cudnnGetExecutionPlanWorkspaceSize",
                 [&] { return fn(handle, plan.native(), variant_pack.native(), &bytes); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return static_cast<std::int64_t>(bytes);
}

Expected<void> execute(cudnnHandle_t handle, const ExecutionPlan& plan,
                       const VariantPack& variant_pack) {
  return call("cudnnBackendExecute",
              [&] { return cudnnBackendExecute(handle, plan.native(), variant_pack.native()); });
}

}  // namespace dnngraph::backend
