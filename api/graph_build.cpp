// dnngraph::Graph, the build and run part: build() checks what only it can, then hands the
// validated graph to detail::BuiltGraph; execute, workspace queries and override checks are
// answered by the built plan.
#include "api/graph.hpp"

#include "backend/features.hpp"
#include "detail/common/logging.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/graph/built_graph.hpp"
#include "detail/graph/graph_access.hpp"
#include "detail/graph/graph_builder.hpp"
#include "detail/graph/override_shapes.hpp"
#include "detail/graph/pipeline.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph {

using Builder = detail::GraphBuilder;

namespace {

// "'name': 3 nodes (matmul 'mm', ...), 5 tensors, dynamic shapes, kernel cache, modes A"
std::string build_summary(std::string_view name,
                          const std::vector<std::unique_ptr<detail::Node>>& nodes,
                          std::size_t tensors, bool dynamic, bool cache, bool overrides,
                          const std::vector<HeuristicMode>& modes) {
  std::string text = "'" + std::string(name) + "': " + std::to_string(nodes.size()) + " node(s) (";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    text += (i == 0 ? "" : ", ") + nodes[i]->describe();
  }
  text += "), " + std::to_string(tensors) + " tensor(s)";
  text += dynamic ? ", dynamic shapes" : "";
  text += cache ? ", kernel cache" : "";
  text += overrides ? ", override shapes" : "";
  text += ", heuristics";
  for (HeuristicMode mode : modes) {
    text += " " + std::string(to_string(mode));
  }
  return text;
}

// The error, also logged (info) with what failed.
std::unexpected<Error> logged_failure(std::string_view call, const Error& error) {
  detail::log_info([&] {
    return std::string(call) + " failed: " + std::string(to_string(error.code)) + ": " +
           error.message;
  });
  return std::unexpected(error);
}

// A kernel cache on a graph without dynamic shapes: its plans could never use it.
std::unexpected<Error> cache_needs_dynamic_shapes(std::string_view call) {
  return make_error(ErrorCode::InvalidAttribute,
                    std::string(call) +
                        ": a kernel cache applies only to dynamic-shape graphs; call "
                        "set_dynamic_shape_enabled(true) or remove the cache");
}

}  // namespace

Result<void> Graph::build(const Handle& handle, const std::vector<HeuristicMode>& modes) {
  return build(handle, modes, PlanPolicy{});
}

Result<void> Graph::build(const Handle& handle, const std::vector<HeuristicMode>& modes,
                          const PlanPolicy& policy) {
  return detail::logged_call(
      [&] { return build_checked(handle, modes, policy); },
      [&] {
        return "build " + build_summary(name_, nodes_, tensors_.size(), dynamic_shape_,
                                        kernel_cache_ != nullptr, override_shape_, modes);
      },
      [&] { return built_->info().describe(); });
}

Result<void> Graph::check_before_build(const Handle& handle, std::string_view call) {
  const std::string prefix = std::string(call) + ": ";
  if (kernel_cache_ && !dynamic_shape_) {
    return cache_needs_dynamic_shapes(call);
  }
  if (!deferred_error_) {
    if (auto complete = check_complete(); !complete) {
      return complete;
    }
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle,
                      prefix + "the Handle is empty; create one with Handle::create()");
  }
  // The variant pack's override attributes, in the headers compiled against and the library
  // loaded now.
  if (override_shape_ && !backend::available(backend::Feature::VariantPackOverrides)) {
    return std::unexpected(
        detail::version_too_old(backend::Feature::VariantPackOverrides,
                                std::string(call) + ": set_override_shape_enabled"));
  }
  if (nodes_.empty() && !deferred_error_) {
    return make_error(ErrorCode::InvalidAttribute, prefix + "the graph has no operations");
  }
  if (auto ok = validate(); !ok) {
    return ok;
  }
  // A node kind whose execute-time shapes cannot be checked would fail every execute with
  // overrides: refuse at build instead (the check on the build shapes is what execute runs).
  if (override_shape_) {
    if (auto checked = detail::check_overrides({}, tensors_, nodes_); !checked) {
      return make_error(checked.error().code,
                        prefix + "set_override_shape_enabled: " + checked.error().message +
                            ". Build without overrides: a static graph per shape, or a "
                            "dynamic-shape graph with a kernel cache");
    }
  }
  return {};
}

Result<void> Graph::build_checked(const Handle& handle, const std::vector<HeuristicMode>& modes,
                                  const PlanPolicy& policy) {
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (!is_known(modes[i])) {
      return make_error(ErrorCode::InvalidAttribute,
                        "build: heuristic mode " + std::to_string(i) + " has the value " +
                            std::to_string(static_cast<int>(modes[i])) +
                            ", which is none of A, B, Fallback");
    }
  }
  if (auto ok = check_before_build(handle, "build"); !ok) {
    return ok;
  }
  auto built = detail::BuiltGraph::build(Builder::view(*this), {.handle = handle.native(),
                                                                .modes = modes,
                                                                .cache = kernel_cache_,
                                                                .dynamic_shape = dynamic_shape_,
                                                                .cache_first = cache_first_,
                                                                .override_shape = override_shape_,
                                                                .policy = &policy});
  if (!built) {
    return std::unexpected(built.error());
  }
  built_ = std::move(*built);
  built_modes_ = modes;
  built_policy_ = policy;
  return {};
}

Result<std::int64_t> Graph::plan_count() const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "plan_count: the graph is not built");
  }
  const PlanInfo& info = built_->info();
  if (info.plan_count < 0) {
    return make_error(ErrorCode::InvalidState,
                      "plan_count: the build ranked no candidates (" +
                          std::string(info.deserialized ? "the plan came from deserialize(); "
                                                          "build() to rank candidates"
                                      : info.from_cached_config
                                          ? "it took a kernel cache's known config first; build "
                                            "with set_cache_first_plan_choice(false)"
                                          : "it built the pinned PlanPolicy::engine") +
                          ")");
  }
  return info.plan_count;
}

Result<void> Graph::build_plan_at(const Handle& handle, std::int64_t index) {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt,
                      "build_plan_at: the graph is not built; build() it first with the modes "
                      "and policy to rank candidates under");
  }
  PlanPolicy policy = built_policy_;
  policy.engine.reset();
  policy.plan_index = index;
  const std::vector<HeuristicMode> modes = built_modes_;
  auto built = build(handle, modes, policy);
  if (built) {
    built_policy_.plan_index.reset();  // what plan_count and the next call rank under
    built_policy_.engine.reset();
  }
  return built;
}

Result<std::int64_t> Graph::get_workspace_size() const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "get_workspace_size: the graph is not built");
  }
  return built_->info().workspace_size;
}

Result<PlanInfo> Graph::plan_info() const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "plan_info: the graph is not built");
  }
  return built_->info();
}

namespace {

Error overrides_not_enabled(std::string_view call) {
  return Error{ErrorCode::InvalidState, std::string(call) +
                                            ": shape overrides on a graph without "
                                            "set_override_shape_enabled(true)"};
}

}  // namespace

Result<void> Graph::check_overrides(
    std::span<const std::int64_t> override_uids,
    std::span<const std::vector<std::int64_t>> override_shapes,
    std::span<const std::vector<std::int64_t>> override_strides) const {
  // Before build too: the answer must be the one execute() would give.
  if (!override_shape_ || (built_ && !built_->override_enabled())) {
    return std::unexpected(overrides_not_enabled("check_overrides"));
  }
  if (auto ok = check_validated("check_overrides"); !ok) {
    return ok;
  }
  const detail::Overrides overrides{override_uids, override_shapes, override_strides};
  if (built_) {
    auto checked = built_->check(overrides, Builder::view(*this));
    if (!checked) {
      return logged_failure("check_overrides", checked.error());
    }
    return {};
  }
  auto checked = detail::check_overrides(overrides, tensors_, nodes_);
  if (!checked) {
    return logged_failure("check_overrides", checked.error());
  }
  return {};
}

Result<void> Graph::execute(const Handle& handle,
                            const std::unordered_map<std::int64_t, void*>& variant_pack,
                            void* workspace) const {
  return execute(handle, variant_pack, workspace, {}, {}, {});
}

Result<void> Graph::execute(const Handle& handle,
                            const std::unordered_map<std::int64_t, void*>& variant_pack,
                            void* workspace, std::span<const std::int64_t> override_uids,
                            std::span<const std::vector<std::int64_t>> override_shapes,
                            std::span<const std::vector<std::int64_t>> override_strides) const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "execute: the graph is not built; call build() first");
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle, "execute: the Handle is empty");
  }
  // Every call: a tensor edited since build() (dims, a by-value scalar, ...) would not take
  // effect, so the plan would run as built on buffers meant for the edit.
  if (auto ok = check_validated("execute"); !ok) {
    return ok;
  }
  const detail::Overrides overrides{override_uids, override_shapes, override_strides};
  if (!overrides.empty() && !built_->override_enabled()) {
    return std::unexpected(overrides_not_enabled("execute"));
  }
  auto ran =
      built_->execute(handle.native(), variant_pack, workspace, overrides, Builder::view(*this));
  if (!ran) {  // the error path only: a successful execute logs nothing
    return logged_failure("execute", ran.error());
  }
  return ran;
}

Result<std::int64_t> Graph::get_workspace_size(
    const Handle& handle, std::span<const std::int64_t> override_uids,
    std::span<const std::vector<std::int64_t>> override_shapes,
    std::span<const std::vector<std::int64_t>> override_strides) const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "get_workspace_size: the graph is not built");
  }
  const detail::Overrides overrides{override_uids, override_shapes, override_strides};
  if (overrides.empty()) {
    return built_->info().workspace_size;
  }
  if (!built_->override_enabled()) {
    return std::unexpected(overrides_not_enabled("get_workspace_size"));
  }
  if (auto ok = check_validated("get_workspace_size"); !ok) {
    return std::unexpected(ok.error());
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle, "get_workspace_size: the Handle is empty");
  }
  return built_->workspace_size(handle.native(), overrides, Builder::view(*this));
}

namespace detail {

Result<void> GraphAccess::build_kernel_cache(Graph& graph) {
  if (!graph.kernel_cache_) {
    return make_error(ErrorCode::InvalidState,
                      "build_kernel_cache: the graph has no kernel cache (set_kernel_cache)");
  }
  if (!graph.dynamic_shape_) {
    return cache_needs_dynamic_shapes("build");
  }
  if (auto ok = graph.validate(); !ok) {
    return ok;
  }
  const std::vector<HeuristicMode> no_modes;  // plan choice is not reached
  auto topology = bind_topology(Builder::view(graph), {.handle = nullptr,
                                                       .modes = no_modes,
                                                       .cache = graph.kernel_cache_,
                                                       .dynamic_shape = true,
                                                       .override_shape = graph.override_shape_});
  if (!topology) {
    return std::unexpected(topology.error());
  }
  return {};
}

}  // namespace detail
}  // namespace dnngraph
