// backend::ExecutionPlan: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, and cudnnBackendExecute.
#pragma once

#include "backend/descriptor.hpp"
#include "backend/engine_config.hpp"
#include "backend/kernel_cache.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace dnngraph::backend {

class VariantPack;

class ExecutionPlan final : public Descriptor {
 public:
  [[nodiscard]] static Expected<ExecutionPlan> create() {
    return create_as<ExecutionPlan>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_handle(cudnnHandle_t handle) {
    return set(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_EXECUTION_PLAN_HANDLE), handle);
  }
  [[nodiscard]] Expected<void> set_engine_config(const EngineConfig& config) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG), config);
  }
  // The kernel cache the plan stores into and looks up in; only for dynamic-shape operation
  // graphs.
  [[nodiscard]] Expected<void> set_kernel_cache(const KernelCache& cache) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE), cache);
  }
  [[nodiscard]] Expected<std::int64_t> workspace_size() const {
    return get_one<std::int64_t>(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
  }
  // CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION of a finalized plan.
  [[nodiscard]] Expected<std::string> json() const {
    return get_string(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION));
  }
  // The plan json() gave (in this cuDNN version, on this GPU), set instead of an engine config
  // before finalize: cudnn-frontend's loadFromJson sets it, then the handle, then finalizes.
  [[nodiscard]] Expected<void> set_json(std::string_view json) {
    return set_raw(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION),
                   CUDNN_TYPE_CHAR, static_cast<std::int64_t>(json.size()), json.data(), 1);
  }

 private:
  friend class Descriptor;  // create_as
  explicit ExecutionPlan(Descriptor&& d) noexcept : Descriptor(std::move(d)) {}
};

// cudnnGetExecutionPlanWorkspaceSize(handle, plan, variant pack)
// (Feature::WorkspaceSizeWithOverrides, cuDNN 9.23): the workspace this plan needs for the
// pack's override shapes. Looked up in the loaded library at run time, so a binary built against
// older headers uses it and one built against newer headers still starts on an older cuDNN;
// there it returns too_old().
[[nodiscard]] Expected<std::int64_t> workspace_size_for(cudnnHandle_t handle,
                                                        const ExecutionPlan& plan,
                                                        const VariantPack& variant_pack);
// Whether workspace_size_for can answer: the feature is available and the loaded library has the
// function.
[[nodiscard]] bool has_workspace_size_for() noexcept;

// cudnnBackendExecute(handle, plan, variant pack).
[[nodiscard]] Expected<void> execute(cudnnHandle_t handle, const ExecutionPlan& plan,
                                     const VariantPack& variant_pack);

}  // namespace dnngraph::backend
