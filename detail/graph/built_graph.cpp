// detail::BuiltGraph: plan assembly at build, then execute, workspace queries and override
// checks on the built plan.
#include "detail/graph/built_graph.hpp"

#include "api/layout.hpp"
#include "detail/common/checked.hpp"

#include "backend/features.hpp"
#include "backend/handle.hpp"
#include "backend/version.hpp"
#include "detail/cache/kernel_cache_access.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/cudnn/known_issues.hpp"
#include "detail/plan/plan_choice.hpp"

#include <gsl/util>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

namespace dnngraph::detail {

std::shared_ptr<const CheckedOverrides> OverrideMemo::find(const Overrides& o) {
  std::scoped_lock lock(mutex_);
  auto it = std::ranges::find_if(sets_, [&](const auto& set) { return set->equals(o); });
  if (it == sets_.end()) {
    return nullptr;
  }
  std::rotate(sets_.begin(), it, it + 1);
  return sets_.front();
}

namespace {

// Writes a call's PackEntry::key.
class KeyWriter {
 public:
  bool value(std::int64_t v) {
    key_.push_back(v);
    return true;
  }
  bool values(std::span<const std::int64_t> v) {
    key_.push_back(gsl::narrow_cast<std::int64_t>(v.size()));
    key_.insert(key_.end(), v.begin(), v.end());
    return true;
  }
  [[nodiscard]] std::vector<std::int64_t> take() { return std::move(key_); }

 private:
  std::vector<std::int64_t> key_;
};

// Compares a call with a PackEntry::key as KeyWriter writes it, value by value: false at the
// first difference (no key is made per call).
class KeyReader {
 public:
  explicit KeyReader(std::span<const std::int64_t> key) : rest_(key) {}
  bool value(std::int64_t v) {
    if (rest_.empty() || rest_.front() != v) {
      return false;
    }
    rest_ = rest_.subspan(1);
    return true;
  }
  bool values(std::span<const std::int64_t> v) {
    if (!value(gsl::narrow_cast<std::int64_t>(v.size())) || rest_.size() < v.size()) {
      return false;
    }
    // A plain loop: the lists are a tensor's rank long, too short for a memcmp call to pay.
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] != rest_[i]) {
        return false;
      }
    }
    rest_ = rest_.subspan(v.size());
    return true;
  }
  [[nodiscard]] bool done() const noexcept { return rest_.empty(); }

 private:
  std::span<const std::int64_t> rest_;
};

std::int64_t address(void* p) {
  return static_cast<std::int64_t>(std::bit_cast<std::uintptr_t>(p));
}

// Hands `key` the values of a call's PackEntry::key in order (see pack_key); false at the first
// it refuses.
template <class Key>
bool walk_key(Key& key, std::span<void* const> pointers, void* workspace,
              const Overrides& overrides) {
  if (!key.value(gsl::narrow_cast<std::int64_t>(pointers.size()))) {
    return false;
  }
  for (void* p : pointers) {
    if (!key.value(address(p))) {
      return false;
    }
  }
  if (!key.value(address(workspace)) || !key.values(overrides.uids)) {
    return false;
  }
  for (const std::span<const std::vector<std::int64_t>> lists :
       {overrides.shapes, overrides.strides}) {
    if (!key.value(gsl::narrow_cast<std::int64_t>(lists.size()))) {
      return false;
    }
    for (const std::vector<std::int64_t>& list : lists) {
      if (!key.values(list)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<std::int64_t> pack_key(std::span<void* const> pointers, void* workspace,
                                   const Overrides& overrides) {
  KeyWriter key;
  walk_key(key, pointers, workspace, overrides);
  return key.take();
}

bool PackEntry::serves(std::span<void* const> call_pointers, void* call_workspace,
                       const Overrides& call_overrides) const {
  KeyReader reader(key);
  return walk_key(reader, call_pointers, call_workspace, call_overrides) && reader.done();
}

void OverrideMemo::insert(std::shared_ptr<const CheckedOverrides> checked) {
  std::scoped_lock lock(mutex_);
  if (sets_.size() == capacity) {
    sets_.pop_back();
  }
  sets_.insert(sets_.begin(), std::move(checked));
}

namespace {

// The operation graph's flags for the request. Overrides: the operation graph's own flag
// (backend::Feature::OverrideShapeFlag, 9.21); below it a dynamic-shape graph, whose plans take
// the variant pack's override shapes (9.18+), for the node kinds proven exact there (known issues
// dynamic-graph-conv-overrides and dynamic-graph-matmul-epilogue-overrides say what the others
// did).
Result<OperationGraphFlags> operation_graph_flags(const GraphView& graph,
                                                  const BuildRequest& request) {
  if (!request.override_shape || backend::available(backend::Feature::OverrideShapeFlag)) {
    return OperationGraphFlags{.dynamic_shape = request.dynamic_shape,
                               .override_shape = request.override_shape};
  }
  for (const auto& node : graph.nodes) {
    if (!node->exact_overrides_on_dynamic_graphs()) {
      return make_error(
          ErrorCode::VersionTooOld,
          "build: override shapes on " + node->describe() + ": " +
              backend::too_old_message(backend::Feature::OverrideShapeFlag) +
              ". Below 9.21 overrides go through a dynamic-shape graph; on the H200 "
              "with cuDNN 9.19 only a matmul alone ran exact there (convolutions returned "
              "wrong numbers, a pointwise node after a matmul failed in the driver at "
              "execute). Without overrides, build per shape with a dynamic-shape graph and "
              "a kernel cache");
    }
  }
  return OperationGraphFlags{.dynamic_shape = true, .override_shape = false};
}

// The kernel cache bound to `op_graph` (built on it), or null for none.
Result<std::shared_ptr<KernelCache>> bind_kernel_cache(const BuildRequest& request,
                                                       OperationGraphFlags flags,
                                                       const backend::OperationGraph& op_graph) {
  // Plans for other override shapes (the workspace query below 9.23) reuse this plan's kernel
  // through a cache: the user's, or one of the graph's own.
  std::shared_ptr<KernelCache> cache = request.cache;
  if (!cache && flags.dynamic_shape && request.override_shape) {
    cache = std::make_shared<KernelCache>();
  }
  if (cache) {
    if (auto built_cache = KernelCacheAccess::build(*cache, op_graph); !built_cache) {
      return std::unexpected(built_cache.error());
    }
  }
  return cache;
}

// What the known-issues table matches plan candidates against: what the nodes note, and the
// build's shapes.
GraphTraits build_traits(const GraphView& graph, const BuildRequest& request, bool dynamic) {
  GraphTraits traits;
  for (const auto& node : graph.nodes) {
    node->note_traits(traits);
  }
  traits.override_shapes = request.override_shape;
  traits.dynamic_shape = dynamic;
  return traits;
}

// Plan choice on the bound topology. A graph that gets no engine is told why where we know: the
// override-shape flag, or an entry of the known-issues table.
Result<ChosenPlan> choose_plan_for(const Topology& topology, const GraphView& graph,
                                   const BuildRequest& request) {
  const GraphTraits traits = build_traits(graph, request, topology.dynamic);
  auto chosen = choose_plan({topology.graph, request.handle, request.modes, topology.cache.get(),
                             request.cache_first, traits, request.policy});
  if (chosen || chosen.error().code != ErrorCode::NoEngine) {
    return chosen;
  }
  if (topology.native_override) {
    // Measured with cuDNN 9.27: conv_fprop + ReLU gets no engine config at all with the flag.
    return make_error(ErrorCode::NoEngine,
                      chosen.error().message +
                          "\n  (the operation graph has the override-shape flag: cuDNN " +
                          backend::version_string(backend::loaded_version()) +
                          " offers no engine for execute-time shapes on this graph; build "
                          "without set_override_shape_enabled, or per shape with a kernel "
                          "cache)");
  }
  if (const KnownIssue* issue =
          known_issue_explaining_no_engine(traits, backend::loaded_version())) {
    return make_error(ErrorCode::NoEngine,
                      chosen.error().message + "\n  (" + describe(*issue) + ")");
  }
  return chosen;
}

}  // namespace

Result<Topology> bind_topology(const GraphView& graph, const BuildRequest& request) {
  auto lowered = lower_graph(graph);
  if (!lowered) {
    return std::unexpected(lowered.error());
  }
  auto flags = operation_graph_flags(graph, request);
  if (!flags) {
    return std::unexpected(flags.error());
  }
  auto op_graph = make_operation_graph(request.handle, *lowered, *flags, "build");
  if (!op_graph) {
    return std::unexpected(op_graph.error());
  }
  auto cache = bind_kernel_cache(request, *flags, *op_graph);
  if (!cache) {
    return std::unexpected(cache.error());
  }
  return Topology{std::move(*lowered), std::move(*op_graph), std::move(*cache),
                  flags->override_shape, flags->dynamic_shape};
}

struct BuiltGraph::IoEntry {
  std::int64_t uid;
  std::string name;
  bool by_value = false;
  std::int64_t bits = 0;  // a by-value scalar's bytes: a Float in the first four, or an Int64
  std::int64_t workspace_offset = -1;  // a workspace tensor's, see workspace_offsets_
};

Result<std::unique_ptr<const BuiltGraph>> BuiltGraph::build(const GraphView& graph,
                                                            const BuildRequest& request) {
  auto topology = bind_topology(graph, request);
  if (!topology) {
    return std::unexpected(topology.error());
  }
  auto chosen = choose_plan_for(*topology, graph, request);
  if (!chosen) {
    return std::unexpected(chosen.error());
  }
  return assemble(graph, request, std::move(*topology), std::move(chosen->plan),
                  std::move(chosen->info));
}

namespace {

// cuDNN's plan document finalized on `handle`, as cudnn-frontend's loadFromJson does it: the
// document, then the handle, then finalize.
Result<backend::ExecutionPlan> plan_from_document(cudnnHandle_t handle, std::string_view text) {
  auto plan = backend::ExecutionPlan::create();
  if (!plan) {
    return std::unexpected(cudnn_error(plan.error(), "deserialize: execution plan"));
  }
  if (auto ok =
          in_order([&] { return plan->set_json(text); }, [&] { return plan->set_handle(handle); },
                   [&] { return plan->finalize(); });
      !ok) {
    return std::unexpected(cudnn_error(
        ok.error(), "deserialize: cuDNN did not take the document's plan (build() instead)"));
  }
  return std::move(*plan);
}

}  // namespace

Result<std::unique_ptr<const BuiltGraph>> BuiltGraph::load(const GraphView& graph,
                                                           const BuildRequest& request,
                                                           const PlanDocument& document) {
  auto topology = bind_topology(graph, request);
  if (!topology) {
    return std::unexpected(topology.error());
  }
  // The known-issues table as build()'s plan choice applies it, on the document's engine config
  // and notes: a plan saved before an entry existed (or on a cuDNN it did not cover then) is
  // refused, not run. Once before the plan exists, once with its workspace.
  const GraphTraits traits = build_traits(graph, request, topology->dynamic);
  const auto ruled_out = [&](std::int64_t workspace) -> std::optional<Error> {
    const KnownIssue* issue =
        known_issue_for(traits, Candidate{document.engine, workspace, document.numerical_notes},
                        backend::loaded_version());
    if (issue == nullptr) {
      return std::nullopt;
    }
    return Error{ErrorCode::NoEngine,
                 "deserialize: the document's engine config (" + to_string(document.engine) +
                     ") is ruled out for this graph by " + describe(*issue) + "; build() instead"};
  };
  if (auto refused = ruled_out(-1)) {
    return std::unexpected(std::move(*refused));
  }
  auto plan = document.cudnn_plan ? plan_from_document(request.handle, *document.cudnn_plan)
                                  : plan_for_choice(topology->graph, request.handle,
                                                    document.engine, topology->cache.get());
  if (!plan) {
    return std::unexpected(plan.error());
  }
  auto workspace = plan->workspace_size();
  if (!workspace) {
    return std::unexpected(cudnn_error(workspace.error(), "deserialize: workspace size"));
  }
  if (auto refused = ruled_out(*workspace)) {
    return std::unexpected(std::move(*refused));
  }
  if (topology->cache) {  // as build() does: a known config, taken first once the cache holds it
    KernelCacheAccess::remember(*topology->cache, document.engine);
  }
  // Nothing was ranked or looked up: those fields keep their defaults (none, -1, false).
  PlanInfo info;
  info.mode = document.mode;
  info.engine_id = document.engine.engine_id;
  info.knobs = document.engine.knobs;
  info.numerical_notes = document.numerical_notes;
  info.behavior_notes = document.behavior_notes;
  info.workspace_size = *workspace;
  info.candidates_tried = 1;
  info.deserialized = true;
  info.plan_from_document = document.cudnn_plan.has_value();
  return assemble(graph, request, std::move(*topology), std::move(*plan), std::move(info));
}

Result<std::unique_ptr<const BuiltGraph>> BuiltGraph::assemble(const GraphView& graph,
                                                               const BuildRequest& request,
                                                               Topology topology,
                                                               backend::ExecutionPlan plan,
                                                               PlanInfo info) {
  auto built =
      std::make_unique<BuiltGraph>(std::move(topology.lowered), std::move(topology.graph),
                                   std::move(plan), std::move(info), std::move(topology.cache));
  auto workspace_rows = built->lay_out_workspace_tensors(graph);
  if (!workspace_rows) {
    return std::unexpected(workspace_rows.error());
  }
  built->assemble_io(graph, std::move(*workspace_rows));
  if (request.override_shape) {
    built->enable_overrides(topology.native_override);
  }
  built->device_ = device_of_handle(request.handle, "serialize (the GPU the plan was built on)");
  return built;
}

Result<CuDevice> device_of_handle(cudnnHandle_t handle, std::string_view what) {
  auto stream = backend::get_stream(handle);
  if (!stream) {
    return std::unexpected(cudnn_error(stream.error(), std::string(what) + ": stream"));
  }
  return device_of(*stream, what);
}

Result<std::vector<BuiltGraph::IoEntry>> BuiltGraph::lay_out_workspace_tensors(
    const GraphView& graph) {
  // Workspace tensors, each at a 256-byte boundary of the caller's workspace, before cuDNN's.
  std::vector<IoEntry> rows;
  for (const auto& node : graph.nodes) {
    for (const TensorAttributes* t : node->workspace_tensors()) {
      const auto uid = t->uid();
      const auto count = element_count(t->dim());
      const auto type = t->data_type();
      const auto bytes = count && type ? checked_mul(*count, size_of(*type)) : std::nullopt;
      if (!uid || !bytes) {
        return make_error(ErrorCode::InvalidState, "build: workspace tensor " + t->describe() +
                                                       " has no uid or no settled layout");
      }
      rows.push_back({*uid, t->describe(), false, 0, tensor_workspace_});
      constexpr std::int64_t alignment = 256;
      tensor_workspace_ += (*bytes + alignment - 1) / alignment * alignment;
    }
  }
  // What execute needs: the workspace tensors, then cuDNN's own.
  info_.workspace_size += tensor_workspace_;
  return rows;
}

void BuiltGraph::assemble_io(const GraphView& graph, std::vector<IoEntry> workspace_rows) {
  std::vector<IoEntry> io;
  for (const auto& t : graph.tensors) {
    if (const auto uid = t->uid(); uid && !t->is_virtual()) {  // validate() gave every one
      IoEntry entry{*uid, t->describe(), t->is_pass_by_value(), t->int_value().value_or(0)};
      if (const auto value = t->value()) {
        std::memcpy(&entry.bits, &*value, sizeof(float));
      }
      io.push_back(std::move(entry));
    }
  }
  std::ranges::move(workspace_rows, std::back_inserter(io));
  std::ranges::sort(io, {}, &IoEntry::uid);
  values_ = std::make_unique<std::int64_t[]>(io.size());
  for (std::size_t i = 0; i < io.size(); ++i) {
    io_uids_.push_back(io[i].uid);
    io_names_.push_back(std::move(io[i].name));
    by_value_.push_back(io[i].by_value);
    values_[i] = io[i].bits;
    workspace_offsets_.push_back(io[i].workspace_offset);
  }
}

void BuiltGraph::enable_overrides(bool native_override) {
  override_enabled_ = true;
  native_workspace_ = backend::has_workspace_size_for();
  info_.override_path = native_override ? "operation graph override flag (cuDNN >= 9.21)"
                                        : "dynamic-shape graph (cuDNN < 9.21)";
  info_.override_workspace_path =
      native_workspace_ ? "cudnnGetExecutionPlanWorkspaceSize (cuDNN >= 9.23)"
                        : "a plan built for the override shapes with the same engine config";
}

Result<std::shared_ptr<const CheckedOverrides>> BuiltGraph::check(const Overrides& overrides,
                                                                  const GraphView& graph) const {
  if (auto known = memo_.find(overrides)) {
    return known;
  }
  auto layout = check_overrides(overrides, graph.tensors, graph.nodes);
  if (!layout) {
    return std::unexpected(layout.error());
  }
  auto checked = std::make_shared<CheckedOverrides>(OverrideLists(overrides), std::move(*layout));
  memo_.insert(checked);
  return checked;
}

namespace {

// The data pointers of one execute, in the built graph's uid order: on the stack for the graphs
// people build (no allocation per call), on the heap past that.
class PointerSlots {
 public:
  explicit PointerSlots(std::size_t n) : n_(n) {
    if (n_ > inline_capacity) {
      heap_.resize(n_);
    }
  }
  [[nodiscard]] std::span<void*> get() noexcept {
    return n_ > inline_capacity ? std::span<void*>(heap_) : std::span<void*>(inline_.data(), n_);
  }

 private:
  static constexpr std::size_t inline_capacity = 16;
  std::size_t n_;
  std::array<void*, inline_capacity> inline_{};
  std::vector<void*> heap_;
};

// Every tensor is declared 16-byte aligned to cuDNN (detail/nodes/lowering.cpp), so a pointer
// off that boundary breaks the plan's premise. bench_alignment_probe measured what cuDNN 9.19.0
// and 9.28.1 (H200, session 30) do with one, a bf16 matmul + bias + ReLU with A, B, bias or Y
// moved 2, 4 or 8 bytes: execute() returned success every time, and then either the device
// reported "misaligned address" at the next synchronize (the CUDA context lost) or, through
// heuristics Fallback's engine with A or B moved, about 3,000 of 4,096 outputs came back wrong.
constexpr std::uintptr_t tensor_alignment = 16;
constexpr const char* misaligned_consequence =
    "every tensor is declared 16-byte aligned to cuDNN, which returns success on such a "
    "pointer and then computes wrong values or faults on the device (measured on cuDNN 9.19 "
    "and 9.28.1): pass an aligned pointer (a copy of the data)";

std::uintptr_t misalignment(const void* pointer) noexcept {
  return std::bit_cast<std::uintptr_t>(pointer) % tensor_alignment;
}

}  // namespace

Result<void> BuiltGraph::fill_pointers(const std::unordered_map<std::int64_t, void*>& variant_pack,
                                       std::span<void*> pointers) const {
  // One pass over the user's map (no hashing): each uid finds its slot in the sorted uid table.
  // A slot nobody filled keeps `unset`, which no caller's pointer can equal.
  static char unset_marker = 0;
  void* const unset = &unset_marker;
  std::ranges::fill(pointers, unset);
  for (const auto& [uid, pointer] : variant_pack) {
    const auto it = std::ranges::lower_bound(io_uids_, uid);
    if (it == io_uids_.end() || *it != uid) {
      return make_error(ErrorCode::InvalidAttribute,
                        "execute: the variant pack names uid " + std::to_string(uid) +
                            ", which is no non-virtual tensor of this graph");
    }
    pointers[gsl::narrow_cast<std::size_t>(it - io_uids_.begin())] = pointer;
  }
  for (std::size_t i = 0; i < io_uids_.size(); ++i) {
    if (workspace_offsets_[i] >= 0) {
      if (pointers[i] != unset) {
        return make_error(ErrorCode::InvalidAttribute,
                          "execute: the variant pack names uid " + std::to_string(io_uids_[i]) +
                              ", but tensor " + io_names_[i] +
                              " lives in the workspace dnngraph gives it; leave it out");
      }
      continue;  // place_workspace_tensors() points it into the workspace
    }
    if (by_value_[i]) {
      if (pointers[i] != unset) {
        return make_error(ErrorCode::InvalidAttribute,
                          "execute: the variant pack names uid " + std::to_string(io_uids_[i]) +
                              ", but tensor " + io_names_[i] +
                              " is passed by value (its value was fixed at build); leave it out");
      }
      pointers[i] = &values_[i];  // cuDNN reads a by-value tensor through a host pointer
      continue;
    }
    if (pointers[i] == unset) {
      return make_error(
          ErrorCode::MissingTensor,
          "execute: the variant pack has no device pointer for tensor " + io_names_[i]);
    }
    if (pointers[i] == nullptr) {
      return make_error(ErrorCode::NullPointer,
                        "execute: the device pointer for tensor " + io_names_[i] + " is null");
    }
    if (const auto off = misalignment(pointers[i]); off != 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        "execute: the device pointer for tensor " + io_names_[i] + " is " +
                            std::to_string(off) + " byte(s) past a " +
                            std::to_string(tensor_alignment) + "-byte boundary; " +
                            misaligned_consequence);
    }
  }
  return {};
}

void* BuiltGraph::place_workspace_tensors(void* workspace, std::span<void*> pointers) const {
  if (tensor_workspace_ == 0 || workspace == nullptr) {
    return workspace;
  }
  auto* base = static_cast<std::byte*>(workspace);
  for (std::size_t i = 0; i < io_uids_.size(); ++i) {
    if (workspace_offsets_[i] >= 0) {
      pointers[i] = base + workspace_offsets_[i];
    }
  }
  return base + tensor_workspace_;
}

Result<void> BuiltGraph::check_workspace(cudnnHandle_t handle, void* workspace,
                                         const CheckedOverrides* checked,
                                         const GraphView& graph) const {
  if (workspace == nullptr && checked != nullptr) {
    // What these shapes need (a memoized query), not what the build shape needed.
    auto needed = checked->known_workspace();
    if (!needed) {
      auto queried = query_workspace(handle, *checked, graph);
      if (!queried) {
        return std::unexpected(queried.error());
      }
      needed = *queried;
    }
    if (*needed > 0) {
      return make_error(ErrorCode::NullPointer,
                        "execute: with these overrides the plan needs a workspace of " +
                            std::to_string(*needed) + " bytes, but the workspace pointer is null");
    }
  } else if (workspace == nullptr && info_.workspace_size > 0) {
    return make_error(ErrorCode::NullPointer, "execute: the plan needs a workspace of " +
                                                  std::to_string(info_.workspace_size) +
                                                  " bytes, but the workspace pointer is null");
  }
  if (tensor_workspace_ > 0 && workspace != nullptr) {
    // The workspace tensors lie at multiples of 256 bytes into it: aligned when it is.
    if (const auto off = misalignment(workspace); off != 0) {
      const auto it = std::ranges::find_if(workspace_offsets_, [](auto o) { return o >= 0; });
      const auto i = gsl::narrow_cast<std::size_t>(it - workspace_offsets_.begin());
      return make_error(ErrorCode::InvalidAttribute,
                        "execute: the workspace pointer is " + std::to_string(off) +
                            " byte(s) past a " + std::to_string(tensor_alignment) +
                            "-byte boundary, and tensor " + io_names_[i] +
                            " lives in the workspace; " + misaligned_consequence);
    }
  }
  return {};
}

Result<void> BuiltGraph::execute(cudnnHandle_t handle,
                                 const std::unordered_map<std::int64_t, void*>& variant_pack,
                                 void* workspace, const Overrides& overrides,
                                 const GraphView& graph) const {
  PointerSlots slots(io_uids_.size());
  const std::span<void*> pointers = slots.get();
  auto filled = fill_pointers(variant_pack, pointers);
  void* const cudnn_workspace = place_workspace_tensors(workspace, pointers);
  if (!filled) {
    // Overrides decide what the rest of the call means: their refusal comes first.
    if (!overrides.empty()) {
      if (auto ok = check(overrides, graph); !ok) {
        return std::unexpected(ok.error());
      }
    }
    return filled;
  }
  // The variant pack of an earlier call with the same pointers, workspace and override lists
  // (compared with the caller's spans: one lock, and the set the pack holds passed the checks
  // then), or a new one. It is ours alone until put back.
  auto entry =
      packs_.take([&](const PackEntry& e) { return e.serves(pointers, workspace, overrides); });
  std::shared_ptr<const CheckedOverrides> fresh;  // a set checked now, for a new pack
  const CheckedOverrides* checked = entry ? entry->overrides.get() : nullptr;
  if (!entry && !overrides.empty()) {
    auto ok = check(overrides, graph);
    if (!ok) {
      return std::unexpected(ok.error());
    }
    fresh = std::move(*ok);
    checked = fresh.get();
  }
  if (auto ok = check_workspace(handle, workspace, checked, graph); !ok) {
    if (entry) {
      packs_.put(std::move(*entry));
    }
    return ok;
  }
  if (!entry) {
    auto pack = make_variant_pack(io_uids_, pointers, cudnn_workspace,
                                  checked != nullptr ? &checked->lists : nullptr, "execute");
    if (!pack) {
      return std::unexpected(pack.error());
    }
    entry.emplace(PackEntry{.key = pack_key(pointers, workspace, overrides),
                            .overrides = std::move(fresh),
                            .pack = std::move(*pack)});
  }
  auto ran = cache_ ? KernelCacheAccess::execute_plan(*cache_, handle, plan_, entry->pack)
                    : backend::execute(handle, plan_, entry->pack);
  if (!ran) {
    // Not kept: a pack cuDNN refused once is not offered again.
    return std::unexpected(cudnn_error(ran.error(), "execute"));
  }
  packs_.put(std::move(*entry));
  return {};
}

Result<std::int64_t> BuiltGraph::workspace_size(cudnnHandle_t handle, const Overrides& overrides,
                                                const GraphView& graph) const {
  auto checked = check(overrides, graph);
  if (!checked) {
    return std::unexpected(checked.error());
  }
  if (auto known = (*checked)->known_workspace()) {
    return *known;
  }
  return query_workspace(handle, **checked, graph);
}

Result<std::int64_t> BuiltGraph::query_workspace(cudnnHandle_t handle,
                                                 const CheckedOverrides& checked,
                                                 const GraphView& graph) const {
  std::int64_t bytes = 0;
  if (native_workspace_) {
    // cuDNN >= 9.23 answers for a variant pack that carries the overrides; no data is read.
    std::vector<void*> no_data(io_uids_.size(), nullptr);
    for (std::size_t i = 0; i < no_data.size(); ++i) {
      if (by_value_[i]) {
        no_data[i] = &values_[i];
      }
    }
    auto pack = make_variant_pack(io_uids_, no_data, nullptr, &checked.lists, "get_workspace_size");
    if (!pack) {
      return std::unexpected(pack.error());
    }
    auto queried = backend::workspace_size_for(handle, plan_, *pack);
    if (!queried) {
      return std::unexpected(cudnn_error(queried.error(), "get_workspace_size"));
    }
    bytes = *queried;
  } else {
    // Before 9.23: a plan of the same engine config for the override shapes (through the
    // kernel cache: no compilation), lowered like build() with the checked layout, asked.
    auto lowered = lower_graph(graph, &checked.layout);
    if (!lowered) {
      return std::unexpected(lowered.error());
    }
    auto op_graph =
        make_operation_graph(handle, *lowered, {.dynamic_shape = true}, "get_workspace_size");
    if (!op_graph) {
      return std::unexpected(op_graph.error());
    }
    auto plan = plan_for_choice(*op_graph, handle, EngineChoice{info_.engine_id, info_.knobs},
                                cache_.get());
    if (!plan) {
      return make_error(plan.error().code,
                        "get_workspace_size: no plan of the built engine config for these "
                        "overrides: " +
                            plan.error().message);
    }
    auto workspace = plan->workspace_size();
    if (!workspace) {
      return std::unexpected(cudnn_error(workspace.error(), "get_workspace_size"));
    }
    bytes = *workspace;
  }
  // The workspace tensors come first (their build shapes: a graph with any takes no overrides
  // that change them, see Node::workspace_tensors).
  bytes += tensor_workspace_;
  // Two threads may both ask before either stores: they store the same answer.
  checked.workspace.store(bytes, std::memory_order_release);
  return bytes;
}

}  // namespace dnngraph::detail
