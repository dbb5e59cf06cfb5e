// detail::BuiltGraph (internal to api/): what a successful build made, owned together so
// descriptors never outlive what they reference, and const from then on. It runs the plan,
// answers workspace queries and checks override lists; Graph describes and validates, and
// forwards those calls here. The override memo is the one mutable part, under its own mutex.
#pragma once

#include "api/checkout_memo.hpp"
#include "api/error.hpp"
#include "api/kernel_cache.hpp"
#include "api/override_shapes.hpp"
#include "api/pipeline.hpp"
#include "api/plan.hpp"
#include "backend/execution_plan.hpp"
#include "backend/operation_graph.hpp"
#include "backend/variant_pack.hpp"

#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnngraph::detail {

// One override set that passed check_overrides: the lists as given (in the type cuDNN reads,
// so variant packs point at them), every tensor's layout under them, and the workspace they
// need once a query asked. Const once made, but for the workspace (written once, atomically).
struct CheckedOverrides {
  OverrideLists lists;
  OverriddenTensors layout;
  mutable std::atomic<std::int64_t> workspace{-1};  // bytes; -1 until a query answered

  [[nodiscard]] bool equals(const Overrides& o) const { return lists.equals(o); }
  [[nodiscard]] std::optional<std::int64_t> known_workspace() const {
    const std::int64_t bytes = workspace.load(std::memory_order_acquire);
    return bytes < 0 ? std::nullopt : std::optional<std::int64_t>(bytes);
  }
};

// The override sets checked last (most recent first, at most `capacity`), so repeated runs with
// the same shapes are not checked again (the hot path: the set of the last call is compared
// first) and a workspace query reuses the layout execute checked.
class OverrideMemo {
 public:
  static constexpr std::size_t capacity = 64;

  // The checked set equal to o (moved to the front), or null.
  [[nodiscard]] std::shared_ptr<const CheckedOverrides> find(const Overrides& o);
  void insert(std::shared_ptr<const CheckedOverrides> checked);

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<const CheckedOverrides>> sets_;  // guarded by mutex_
};

// A finalized variant pack that execute() made, and what for: the data pointers (in the built
// graph's uid order), the workspace and the checked override set (null without overrides). It
// holds the set, whose lists cuDNN reads through the pack at every execute.
struct PackEntry {
  std::vector<void*> pointers;
  void* workspace = nullptr;
  std::shared_ptr<const CheckedOverrides> overrides;
  backend::VariantPack pack;
};

// What build() needs beyond the graph itself.
struct BuildRequest {
  cudnnHandle_t handle;
  const std::vector<HeuristicMode>& modes;
  std::shared_ptr<KernelCache> cache;  // the user's, or null
  bool dynamic_shape = false;
  bool cache_first = true;
  bool override_shape = false;
  const PlanPolicy* policy = nullptr;  // the user's, or null: no filter, the first plan
};

class BuiltGraph {
 public:
  // Lowers the (validated) graph, makes the operation graph and chooses the plan.
  [[nodiscard]] static Result<std::unique_ptr<const BuiltGraph>> build(const GraphView& graph,
                                                                       const BuildRequest& request);

  [[nodiscard]] const PlanInfo& info() const noexcept { return info_; }
  [[nodiscard]] bool override_enabled() const noexcept { return override_enabled_; }

  // Checks overrides against the graph (once per distinct set; see OverrideMemo).
  [[nodiscard]] Result<std::shared_ptr<const CheckedOverrides>> check(const Overrides& overrides,
                                                                      const GraphView& graph) const;
  // Runs the plan; the caller checked the handle, and that overrides are enabled and the graph
  // is still the one validated when there are overrides.
  [[nodiscard]] Result<void> execute(cudnnHandle_t handle,
                                     const std::unordered_map<std::int64_t, void*>& variant_pack,
                                     void* workspace, const Overrides& overrides,
                                     const GraphView& graph) const;
  // The workspace under these (non-empty) overrides; same preconditions as execute().
  [[nodiscard]] Result<std::int64_t> workspace_size(cudnnHandle_t handle,
                                                    const Overrides& overrides,
                                                    const GraphView& graph) const;

  BuiltGraph(Lowered lowered, backend::OperationGraph graph, backend::ExecutionPlan plan,
             PlanInfo info)
      : lowered_(std::move(lowered)),
        operation_graph_(std::move(graph)),
        plan_(std::move(plan)),
        info_(std::move(info)) {}

 private:
  [[nodiscard]] Result<std::int64_t> query_workspace(cudnnHandle_t handle,
                                                     const CheckedOverrides& checked,
                                                     const GraphView& graph) const;

  Lowered lowered_;
  backend::OperationGraph operation_graph_;
  backend::ExecutionPlan plan_;
  PlanInfo info_;
  std::vector<std::int64_t> io_uids_;  // uids of non-virtual tensors, sorted: the variant pack
  std::vector<std::string> io_names_;  // describe() of the same tensors, same order
  std::vector<bool> by_value_;         // same order: passed by value, not in the variant pack
  // Same order: the by-value tensors' values (0 elsewhere). cuDNN reads them through host
  // pointers into this buffer, which is allocated once and never moves.
  std::unique_ptr<float[]> values_;
  bool override_enabled_ = false;
  bool native_workspace_ = false;       // cudnnGetExecutionPlanWorkspaceSize (cuDNN >= 9.23)
  std::shared_ptr<KernelCache> cache_;  // the user's, or the graph's own for override plans
  mutable OverrideMemo memo_;
  // Variant packs of recent executes, reused while the pointers, workspace and override set
  // repeat (a server's steady state): no descriptor is made or finalized then. Bounded; each
  // entry is used by one thread at a time (see CheckoutMemo).
  static constexpr std::size_t pack_capacity = 16;
  mutable CheckoutMemo<PackEntry> packs_{pack_capacity};
};

}  // namespace dnngraph::detail
