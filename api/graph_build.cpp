// dnngraph::Graph, the build and run part: build() checks what only it can, then hands the
// validated graph to detail::BuiltGraph; execute, workspace queries and override checks are
// answered by the built plan.
#include "api/graph.hpp"

#include "api/built_graph.hpp"
#include "api/cudnn_error.hpp"
#include "api/override_shapes.hpp"
#include "api/pipeline.hpp"
#include "backend/features.hpp"

namespace dnngraph {

Result<void> Graph::build(const Handle& handle, const std::vector<HeuristicMode>& modes) {
  if (kernel_cache_ && !dynamic_shape_) {
    return make_error(ErrorCode::InvalidAttribute,
                      "build: a kernel cache applies only to dynamic-shape graphs; call "
                      "set_dynamic_shape_enabled(true) or remove the cache");
  }
  if (!deferred_error_) {
    if (auto complete = check_complete(); !complete) {
      return complete;
    }
  }
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (!is_known(modes[i])) {
      return make_error(ErrorCode::InvalidAttribute,
                        "build: heuristic mode " + std::to_string(i) + " has the value " +
                            std::to_string(static_cast<int>(modes[i])) +
                            ", which is none of A, B, Fallback");
    }
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle,
                      "build: the Handle is empty; create one with Handle::create()");
  }
  // The variant pack's override attributes, in the headers compiled against and the library
  // loaded now.
  if (override_shape_ && !backend::available(backend::Feature::VariantPackOverrides)) {
    return std::unexpected(detail::version_too_old(backend::Feature::VariantPackOverrides,
                                                   "build: set_override_shape_enabled"));
  }
  if (nodes_.empty() && !deferred_error_) {
    return make_error(ErrorCode::InvalidAttribute, "build: the graph has no operations");
  }
  if (auto ok = validate(); !ok) {
    return ok;
  }
  auto built = detail::BuiltGraph::build(view(), {.handle = handle.native(),
                                                  .modes = modes,
                                                  .cache = kernel_cache_,
                                                  .dynamic_shape = dynamic_shape_,
                                                  .cache_first = cache_first_,
                                                  .override_shape = override_shape_});
  if (!built) {
    return std::unexpected(built.error());
  }
  built_ = std::move(*built);
  return {};
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
    auto checked = built_->check(overrides, view());
    if (!checked) {
      return std::unexpected(checked.error());
    }
    return {};
  }
  auto checked = detail::check_overrides(overrides, tensors_, nodes_);
  if (!checked) {
    return std::unexpected(checked.error());
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
  const detail::Overrides overrides{override_uids, override_shapes, override_strides};
  if (!overrides.empty()) {
    if (!built_->override_enabled()) {
      return std::unexpected(overrides_not_enabled("execute"));
    }
    if (auto ok = check_validated("execute"); !ok) {
      return ok;
    }
  }
  return built_->execute(handle.native(), variant_pack, workspace, overrides, view());
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
  return built_->workspace_size(handle.native(), overrides, view());
}

}  // namespace dnngraph
