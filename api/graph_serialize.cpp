// dnngraph::Graph, the plan-document part: serialize() writes the built plan with what it was
// made for (cuDNN, GPU, graph key); deserialize() checks those against this process and graph,
// then takes the plan without plan choice (detail::BuiltGraph::load).
#include "api/graph.hpp"

#include "backend/version.hpp"
#include "detail/common/cuda_driver.hpp"
#include "detail/common/logging.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/graph/built_graph.hpp"
#include "detail/graph/graph_builder.hpp"
#include "detail/plan/plan_document.hpp"

#include <string>
#include <vector>

namespace dnngraph {

using Builder = detail::GraphBuilder;

namespace {

Error no_override_plans(std::string_view call) {
  return Error{ErrorCode::InvalidState,
               std::string(call) +
                   ": plans of graphs with set_override_shape_enabled are not serialized (their "
                   "execute-time paths are not measured from a document); build() them"};
}

}  // namespace

Result<std::string> Graph::serialize() const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "serialize: the graph is not built; call build() first");
  }
  if (built_->override_enabled()) {
    return std::unexpected(no_override_plans("serialize"));
  }
  if (auto ok = check_validated("serialize"); !ok) {
    return std::unexpected(ok.error());
  }
  auto key = key_of_validated(true);
  if (!key) {
    return std::unexpected(key.error());
  }
  auto gpu = built_->gpu();
  if (!gpu) {
    return std::unexpected(gpu.error());
  }
  const PlanInfo& info = built_->info();
  detail::PlanDocument document{.cudnn_version = backend::runtime_version(),
                                .gpu = std::move(*gpu),
                                .key = std::move(*key),
                                .dynamic_shape = dynamic_shape_,
                                .mode = info.mode,
                                .engine = info.choice(),
                                .numerical_notes = info.numerical_notes,
                                .behavior_notes = info.behavior_notes,
                                .cudnn_plan = std::nullopt};
  // Engines that give no plan document (cudnn-frontend's notes: only runtime-compiled ones
  // serialize) are saved by their config, which deserialize() finalizes again.
  if (auto text = built_->plan_document()) {
    document.cudnn_plan = std::move(*text);
  } else {
    detail::log_info([&] {
      return "serialize: cuDNN gave no plan document for engine " + std::to_string(info.engine_id) +
             " (" + text.error().to_string() + "); the document keeps the engine config";
    });
  }
  return detail::to_json(document);
}

Result<void> Graph::deserialize(const Handle& handle, std::string_view text) {
  return detail::logged_call([&] { return deserialize_checked(handle, text); },
                             [&] { return "deserialize '" + name_ + "'"; },
                             [&] { return built_->info().describe(); });
}

Result<void> Graph::deserialize_checked(const Handle& handle, std::string_view text) {
  if (override_shape_) {
    return std::unexpected(no_override_plans("deserialize"));
  }
  if (auto ok = check_before_build(handle, "deserialize"); !ok) {
    return ok;
  }
  auto document = detail::parse_plan_document(text);
  if (!document) {
    return std::unexpected(document.error());
  }
  if (const std::int64_t loaded = backend::runtime_version(); document->cudnn_version != loaded) {
    return make_error(ErrorCode::InvalidState,
                      "deserialize: the plan was made with cuDNN " +
                          backend::version_string(document->cudnn_version) + "; cuDNN " +
                          backend::version_string(loaded) +
                          " is loaded: build() instead (plans do not move between versions)");
  }
  auto device = detail::device_of_handle(handle.native(), "deserialize");
  auto gpu = device ? detail::identity_of(*device, "deserialize")
                    : Result<detail::GpuIdentity>(std::unexpected(device.error()));
  if (!gpu) {
    return std::unexpected(gpu.error());
  }
  if (*gpu != document->gpu) {
    return make_error(ErrorCode::InvalidState,
                      "deserialize: the plan was made on " + detail::describe(document->gpu) +
                          "; the handle's GPU is " + detail::describe(*gpu) + ": build() instead");
  }
  auto key = key_of_validated(true);
  if (!key) {
    return std::unexpected(key.error());
  }
  if (*key != document->key) {
    return make_error(ErrorCode::InvalidAttribute,
                      "deserialize: this graph's key() is " + *key + ", the document's " +
                          document->key +
                          ": describe the graph that was serialized (the same tensors, uids, "
                          "dims, strides, types, nodes and settings), or build() this one");
  }
  const std::vector<HeuristicMode> modes{document->mode};
  auto built = detail::BuiltGraph::load(Builder::view(*this),
                                        {.handle = handle.native(),
                                         .modes = modes,
                                         .cache = kernel_cache_,
                                         .dynamic_shape = dynamic_shape_,
                                         .cache_first = cache_first_,
                                         .override_shape = false,
                                         .policy = nullptr},
                                        *document);
  if (!built) {
    return std::unexpected(built.error());
  }
  built_ = std::move(*built);
  built_modes_ = modes;
  built_policy_ = PlanPolicy{};
  return {};
}

}  // namespace dnngraph
