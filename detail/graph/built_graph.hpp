// detail::BuiltGraph (internal to api/): what a successful build made, owned together so
// descriptors never outlive what they reference, and const from then on. It runs the plan,
// answers workspace queries and checks override lists; Graph describes and validates, and
// forwards those calls here. The override memo is the one mutable part, under its own mutex.
#pragma once

#include "api/error.hpp"
#include "api/kernel_cache.hpp"
#include "api/plan.hpp"
#include "backend/execution_plan.hpp"
#include "backend/operation_graph.hpp"
#include "backend/variant_pack.hpp"
#include "detail/common/checkout_memo.hpp"
#include "detail/common/cuda_driver.hpp"
#include "detail/graph/override_shapes.hpp"
#include "detail/graph/pipeline.hpp"
#include "detail/plan/plan_document.hpp"

#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

// The override sets checked last (most recent first, at most `capacity`), so a set is checked
// once and a workspace query reuses the layout execute checked. execute() asks it only when no
// kept variant pack serves the call: the hot path matches the caller's lists with the packs'
// sets directly (PackEntry::serves), under the pack memo's one lock.
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

// A finalized variant pack that execute() made, and what for: `key` holds the call's data
// pointers (in the built graph's uid order), workspace and override lists as given, flat in one
// block (see pack_key), so matching a call reads one block per entry, not the dozen a checked
// set's lists and an override memo take; `overrides` is the checked set (null without
// overrides), whose lists cuDNN reads through the pack at every execute.
struct PackEntry {
  std::vector<std::int64_t> key;
  std::shared_ptr<const CheckedOverrides> overrides;
  backend::VariantPack pack;

  // Whether this pack serves a call with these pointers, workspace and override lists (empty:
  // none): equal elementwise to what it was made for, compared in place (no allocation). A set
  // equal to one that passed check_overrides passes again, so a call served here is not
  // checked again.
  [[nodiscard]] bool serves(std::span<void* const> call_pointers, void* call_workspace,
                            const Overrides& call_overrides) const;
};

// PackEntry::key of a call: the pointer count and pointers, the workspace, then each override
// list with its length (the uids; each shape's rank and dims; each stride list's length and
// values). Two calls have equal keys exactly when their pointers, workspace and lists are equal.
[[nodiscard]] std::vector<std::int64_t> pack_key(std::span<void* const> pointers, void* workspace,
                                                 const Overrides& overrides);

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

// What build() makes before plan choice, none of which needs a GPU (request.handle may be null:
// cuDNN 9.19 finalizes operation graphs and kernel caches on the CPU).
struct Topology {
  Lowered lowered;
  backend::OperationGraph graph;
  std::shared_ptr<KernelCache> cache;  // bound to `graph`: the request's, the graph's own, or null
  bool native_override = false;        // the operation graph carries the override-shape flag
  bool dynamic = false;                // the operation graph is dynamic-shape
};

// Lowers the (validated) graph, makes its operation graph and binds the kernel cache to it: the
// request's, or one of the graph's own for override shapes through a dynamic-shape graph.
[[nodiscard]] Result<Topology> bind_topology(const GraphView& graph, const BuildRequest& request);

// The device `handle`'s stream runs on (with the default stream, the current context's); `what`
// names the caller in the error.
[[nodiscard]] Result<CuDevice> device_of_handle(cudnnHandle_t handle, std::string_view what);

class BuiltGraph {
 public:
  // Lowers the (validated) graph, makes the operation graph and chooses the plan; then lays out
  // the tables and the workspace execute reads.
  [[nodiscard]] static Result<std::unique_ptr<const BuiltGraph>> build(const GraphView& graph,
                                                                       const BuildRequest& request);
  // build() with a plan document's plan instead of plan choice: no heuristics query. The plan
  // is cuDNN's document finalized on the request's handle, or without one the document's engine
  // config finalized (attached to the request's kernel cache, if any). The caller checked the
  // document against this graph, cuDNN and GPU.
  [[nodiscard]] static Result<std::unique_ptr<const BuiltGraph>> load(const GraphView& graph,
                                                                      const BuildRequest& request,
                                                                      const PlanDocument& document);

  [[nodiscard]] const PlanInfo& info() const noexcept { return info_; }
  [[nodiscard]] bool override_enabled() const noexcept { return override_enabled_; }
  // cuDNN's document of the plan (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION), or cuDNN's
  // refusal (an engine that does not serialize).
  [[nodiscard]] backend::Expected<std::string> plan_document() const { return plan_.json(); }
  // The GPU of the handle the plan was built on (its device asked right after the build, on the
  // thread that built), or why it cannot be told.
  [[nodiscard]] Result<GpuIdentity> gpu() const {
    if (!device_) {
      return std::unexpected(device_.error());
    }
    return identity_of(*device_, "serialize (the GPU the plan was built on)");
  }

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
             PlanInfo info, std::shared_ptr<KernelCache> cache)
      : lowered_(std::move(lowered)),
        operation_graph_(std::move(graph)),
        plan_(std::move(plan)),
        info_(std::move(info)),
        cache_(std::move(cache)) {}

 private:
  // build()'s and load()'s phases once the plan is made, in their order.
  [[nodiscard]] static Result<std::unique_ptr<const BuiltGraph>> assemble(
      const GraphView& graph, const BuildRequest& request, Topology topology,
      backend::ExecutionPlan plan, PlanInfo info);
  struct IoEntry;  // one row of the io tables below, before they are sorted
  // Gives each workspace tensor its place in the caller's workspace (tensor_workspace_ bytes in
  // all, counted in info_.workspace_size); their io rows, or which one has no settled layout.
  [[nodiscard]] Result<std::vector<IoEntry>> lay_out_workspace_tensors(const GraphView& graph);
  // The io tables (io_uids_ and the columns in its order): the graph's non-virtual tensors and
  // the workspace tensors.
  void assemble_io(const GraphView& graph, std::vector<IoEntry> workspace_rows);
  // Overrides on: which paths execute and the workspace query take, in info_ for the user.
  void enable_overrides(bool native_override);

  // The caller's pointers in uid order (by-value tensors point at values_), or why the map
  // does not fit the graph.
  [[nodiscard]] Result<void> fill_pointers(
      const std::unordered_map<std::int64_t, void*>& variant_pack, std::span<void*> pointers) const;
  // Points the workspace tensors' slots into `workspace`; cuDNN's part of it, for the pack.
  [[nodiscard]] void* place_workspace_tensors(void* workspace, std::span<void*> pointers) const;
  // Refuses a null workspace where the plan (under `checked`, when not null) needs one.
  [[nodiscard]] Result<void> check_workspace(cudnnHandle_t handle, void* workspace,
                                             const CheckedOverrides* checked,
                                             const GraphView& graph) const;
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
  // Same order: where a node's workspace tensor (Node::workspace_tensors) starts in the
  // caller's workspace, -1 for the others. They come first; cuDNN's own workspace starts at
  // tensor_workspace_ bytes.
  std::vector<std::int64_t> workspace_offsets_;
  std::int64_t tensor_workspace_ = 0;
  // Same order: the by-value tensors' values (0 elsewhere). cuDNN reads them through host
  // pointers into this buffer, which is allocated once and never moves.
  std::unique_ptr<std::int64_t[]> values_;  // 8 bytes each: a Float's or an Int64's
  bool override_enabled_ = false;
  bool native_workspace_ = false;          // cudnnGetExecutionPlanWorkspaceSize (cuDNN >= 9.23)
  std::shared_ptr<KernelCache> cache_;     // the user's, or the graph's own for override plans
  Result<CuDevice> device_ = CuDevice{0};  // see gpu()
  mutable OverrideMemo memo_;
  // Variant packs of recent executes, reused while the pointers, workspace and override set
  // repeat (a server's steady state): no descriptor is made or finalized then. Bounded; each
  // entry is used by one thread at a time (see CheckoutMemo).
  static constexpr std::size_t pack_capacity = 16;
  mutable CheckoutMemo<PackEntry> packs_{pack_capacity};
};

}  // namespace dnngraph::detail
