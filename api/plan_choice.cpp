// Plan choice: try the configs of each heuristics mode in rank order; keep the first that builds.
#include "api/plan_choice.hpp"

#include "api/cudnn_error.hpp"
#include "api/lowering.hpp"
#include "backend/engine_heuristics.hpp"

#include <string>

namespace dnngraph {

namespace {

std::string knob_name(std::int64_t type) {
  switch (static_cast<cudnnBackendKnobType_t>(type)) {
    case CUDNN_KNOB_TYPE_SPLIT_K: return "SPLIT_K";
    case CUDNN_KNOB_TYPE_SWIZZLE: return "SWIZZLE";
    case CUDNN_KNOB_TYPE_TILE_SIZE: return "TILE_SIZE";
    case CUDNN_KNOB_TYPE_EDGE: return "EDGE";
    case CUDNN_KNOB_TYPE_KBLOCK: return "KBLOCK";
    case CUDNN_KNOB_TYPE_LDGA: return "LDGA";
    case CUDNN_KNOB_TYPE_LDGB: return "LDGB";
    case CUDNN_KNOB_TYPE_STAGES: return "STAGES";
    case CUDNN_KNOB_TYPE_KERNEL_CFG: return "KERNEL_CFG";
    case CUDNN_KNOB_TYPE_SPLIT_COLS: return "SPLIT_COLS";
    case CUDNN_KNOB_TYPE_TILE_ROWS: return "TILE_ROWS";
    case CUDNN_KNOB_TYPE_TILE_COLS: return "TILE_COLS";
    case CUDNN_KNOB_TYPE_WARP_SPEC_CFG: return "WARP_SPEC_CFG";
    default: return "knob" + std::to_string(type);
  }
}

}  // namespace

std::string PlanInfo::describe() const {
  std::string out = "engine " + std::to_string(engine_id) + " (heuristics " +
                    std::string(to_string(mode)) + ", knobs {";
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    out += (i == 0 ? "" : ", ") + knob_name(knobs[i].first) + "=" + std::to_string(knobs[i].second);
  }
  out += "}), workspace " + std::to_string(workspace_size) + " B, " +
         std::to_string(candidates_tried) + " candidate(s) tried";
  return out;
}

namespace detail {

namespace {

// Engine id and knobs of a config; a config that cannot describe itself gets id -1.
void describe_config(const backend::EngineConfig& config, PlanInfo& info) {
  if (auto engine = config.engine()) {
    info.engine_id = engine->global_index().value_or(-1);
  }
  info.knobs.clear();
  if (auto knobs = config.knob_choices()) {
    for (const auto& knob : *knobs) {
      auto type = knob.knob_type();
      auto value = knob.knob_value();
      if (type && value) {
        info.knobs.emplace_back(static_cast<std::int64_t>(*type), *value);
      }
    }
  }
}

backend::Expected<backend::ExecutionPlan> make_plan(cudnnHandle_t handle,
                                                    const backend::EngineConfig& config,
                                                    const backend::Descriptor* kernel_cache) {
  auto plan = backend::ExecutionPlan::create();
  if (!plan) {
    return plan;
  }
  auto ok = plan->set_handle(handle);
  if (ok) ok = plan->set_engine_config(config);
  if (ok && kernel_cache != nullptr) ok = plan->set_kernel_cache(*kernel_cache);
  if (ok) ok = plan->finalize();
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return plan;
}

backend::Expected<std::vector<backend::EngineConfig>> ranked_configs(
    const backend::OperationGraph& graph, HeuristicMode mode) {
  auto heuristics = backend::EngineHeuristics::create();
  if (!heuristics) {
    return std::unexpected(std::move(heuristics.error()));
  }
  auto ok = heuristics->set_operation_graph(graph);
  if (ok) ok = heuristics->set_mode(to_cudnn(mode));
  if (ok) ok = heuristics->finalize();
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return heuristics->results();
}

}  // namespace

Result<ChosenPlan> choose_plan(const backend::OperationGraph& graph, cudnnHandle_t handle,
                               const std::vector<HeuristicMode>& modes,
                               const backend::Descriptor* kernel_cache) {
  if (modes.empty()) {
    return make_error(ErrorCode::InvalidAttribute, "build: no heuristic mode given");
  }
  std::string tried;  // one line per failed candidate, for the NoEngine error
  std::int64_t attempts = 0;
  for (HeuristicMode mode : modes) {
    auto configs = ranked_configs(graph, mode);
    if (!configs) {
      tried += "\n  heuristics " + std::string(to_string(mode)) + ": " + configs.error().to_string();
      continue;
    }
    if (configs->empty()) {
      tried += "\n  heuristics " + std::string(to_string(mode)) + ": no engine config";
    }
    for (const backend::EngineConfig& config : *configs) {
      ++attempts;
      PlanInfo info;
      info.mode = mode;
      describe_config(config, info);
      auto plan = make_plan(handle, config, kernel_cache);
      if (!plan) {
        tried += "\n  heuristics " + std::string(to_string(mode)) + ", engine " +
                 std::to_string(info.engine_id) + ": " + plan.error().to_string();
        continue;
      }
      auto workspace = plan->workspace_size();
      if (!workspace) {
        return std::unexpected(cudnn_error(workspace.error(), "build: workspace size"));
      }
      info.workspace_size = *workspace;
      info.candidates_tried = attempts;
      return ChosenPlan{std::move(*plan), std::move(info)};
    }
  }
  return make_error(ErrorCode::NoEngine,
                    "build: no execution plan could be built for this graph (" +
                        std::to_string(attempts) + " engine config(s) tried):" + tried);
}

}  // namespace detail
}  // namespace dnngraph
