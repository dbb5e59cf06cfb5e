// Plan choice: try the configs of each heuristics mode in rank order; keep the first that builds.
#include "api/plan_choice.hpp"

#include "api/cudnn_error.hpp"
#include "api/kernel_cache_access.hpp"
#include "api/known_issues.hpp"
#include "api/logging.hpp"
#include "api/lowering.hpp"
#include "backend/engine_heuristics.hpp"
#include "backend/features.hpp"

#include <optional>
#include <string>
#include <string_view>

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
  out += "})";
  if (from_cached_config) {
    out += ", from the kernel cache's known configs";
  }
  if (kernel_cache_hit) {
    out += ", kernel cache hit";
  }
  out += ", workspace " + std::to_string(workspace_size) + " B, " +
         std::to_string(candidates_tried) + " candidate(s) tried";
  return out;
}

namespace detail {

namespace {

// Engine id and knobs of a config; a config that cannot describe itself gets id -1.
EngineChoice describe_config(const backend::EngineConfig& config) {
  EngineChoice choice;
  if (auto engine = config.engine()) {
    choice.engine_id = engine->global_index().value_or(-1);
  }
  if (auto knobs = config.knob_choices()) {
    for (const auto& knob : *knobs) {
      auto type = knob.knob_type();
      auto value = knob.knob_value();
      if (type && value) {
        choice.knobs.emplace_back(static_cast<std::int64_t>(*type), *value);
      }
    }
  }
  return choice;
}

// The same engine and knobs on another operation graph of the topology.
backend::Expected<backend::EngineConfig> make_config(const backend::OperationGraph& graph,
                                                     const EngineChoice& choice) {
  auto engine = backend::Engine::create();
  if (!engine) {
    return std::unexpected(std::move(engine.error()));
  }
  auto ok = engine->set_operation_graph(graph);
  if (ok) ok = engine->set_global_index(choice.engine_id);
  if (ok) ok = engine->finalize();
  std::vector<backend::KnobChoice> knobs;
  for (const auto& [type, value] : choice.knobs) {
    if (!ok) {
      break;
    }
    auto knob = backend::KnobChoice::create();
    if (!knob) {
      return std::unexpected(std::move(knob.error()));
    }
    ok = knob->set_knob_type(static_cast<cudnnBackendKnobType_t>(type));
    if (ok) ok = knob->set_knob_value(value);
    if (ok) ok = knob->finalize();
    knobs.push_back(std::move(*knob));
  }
  auto config = backend::EngineConfig::create();
  if (!config) {
    return std::unexpected(std::move(config.error()));
  }
  if (ok) ok = config->set_engine(*engine);
  if (ok && !knobs.empty()) ok = config->set_knob_choices(knobs);
  if (ok) ok = config->finalize();
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return config;
}

struct MadePlan {
  backend::ExecutionPlan plan;
  bool cache_hit = false;  // the cache held the config's kernel before: nothing compiled
  bool finalized = true;   // false: only_if_held, and the cache did not hold the kernel
};

// The inner result is this config's plan, or why it did not build: the next candidate may. The
// outer error is the kernel cache's (KernelCacheAccess::finalize_plan): not about this config, so
// plan choice stops on it rather than take a cache that cannot answer for a miss.
using PlanAttempt = backend::Expected<MadePlan>;

// With only_if_held (a cache is given), a config whose kernel the cache does not hold comes
// back unfinalized (MadePlan::finalized false): asked and finalized with one lookup.
Result<PlanAttempt> make_plan(cudnnHandle_t handle, const backend::EngineConfig& config,
                              KernelCache* cache, bool only_if_held = false) {
  auto plan = backend::ExecutionPlan::create();
  if (!plan) {
    return PlanAttempt(std::unexpected(std::move(plan.error())));
  }
  auto ok = plan->set_handle(handle);
  if (ok) ok = plan->set_engine_config(config);
  if (!ok) {
    return PlanAttempt(std::unexpected(std::move(ok.error())));
  }
  if (cache == nullptr) {
    if (auto finalized = plan->finalize(); !finalized) {
      return PlanAttempt(std::unexpected(std::move(finalized.error())));
    }
    return PlanAttempt(MadePlan{std::move(*plan), false});
  }
  auto hit = KernelCacheAccess::finalize_plan(*cache, *plan, config, only_if_held);
  if (!hit) {
    return std::unexpected(hit.error());
  }
  if (!*hit) {
    return PlanAttempt(std::unexpected(std::move(hit->error())));
  }
  const bool finalized = **hit || !only_if_held;
  return PlanAttempt(MadePlan{std::move(*plan), **hit, finalized});
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

// Tries candidates in order and keeps the first plan that finalizes; remembers what failed.
class PlanSearch {
 public:
  explicit PlanSearch(const PlanRequest& request) : request_(request) {}

  // A plan from config, or nullopt (the failure is noted). Errors that are not about this
  // candidate (the kernel cache's, reading the workspace size) are returned. With only_if_held
  // (a cache is given), a config whose kernel the cache does not hold is skipped before its
  // plan finalizes: nullopt, nothing noted, and missed() true until the next attempt. A lookup
  // that fails is the cache's error, never a miss.
  [[nodiscard]] Result<std::optional<ChosenPlan>> attempt(const backend::EngineConfig& config,
                                                          PlanInfo info, std::string_view origin,
                                                          bool only_if_held = false) {
    missed_ = false;
    const EngineChoice choice = info.from_cached_config ? EngineChoice{info.engine_id, info.knobs}
                                                        : describe_config(config);
    info.engine_id = choice.engine_id;
    info.knobs = choice.knobs;
    const std::string candidate =
        std::string(origin) + ", engine " + std::to_string(choice.engine_id);
    if (refused(candidate, Candidate{choice})) {
      ++attempts_;
      return std::optional<ChosenPlan>{};
    }
    auto attempted = make_plan(request_.handle, config, request_.cache,
                               only_if_held && request_.cache != nullptr);
    if (!attempted) {
      return std::unexpected(attempted.error());
    }
    PlanAttempt& made = *attempted;
    if (made && !made->finalized) {
      missed_ = true;
      return std::optional<ChosenPlan>{};
    }
    ++attempts_;
    if (!made) {
      note(candidate + ": " + made.error().to_string());
      return std::optional<ChosenPlan>{};
    }
    info.kernel_cache_hit = made->cache_hit;
    auto workspace = made->plan.workspace_size();
    if (!workspace) {
      return std::unexpected(cudnn_error(workspace.error(), "build: workspace size"));
    }
    if (refused(candidate, Candidate{choice, *workspace})) {
      return std::optional<ChosenPlan>{};
    }
    info.workspace_size = *workspace;
    info.candidates_tried = attempts_;
    if (request_.cache != nullptr) {
      KernelCacheAccess::remember(*request_.cache, choice);
    }
    log_debug([&] { return "plan choice: chose " + candidate + ": " + info.describe(); });
    return std::optional<ChosenPlan>{ChosenPlan{std::move(made->plan), std::move(info)}};
  }

  // A candidate skipped and why: kept for the NoEngine error, and logged (debug).
  void note(std::string_view line) {
    tried_ += "\n  " + std::string(line);
    log_debug([&] { return "plan choice: skipped " + std::string(line); });
  }

  // Whether a known cuDNN defect rules the candidate out on the loaded cuDNN (noted if so).
  [[nodiscard]] bool refused(const std::string& candidate, const Candidate& c) {
    const KnownIssue* issue = known_issue_for(request_.traits, c, backend::loaded_version());
    if (issue != nullptr) {
      note(candidate + ": refused, " + describe(*issue));
    }
    return issue != nullptr;
  }
  // Whether the last attempt was skipped as a kernel cache miss (only_if_held).
  [[nodiscard]] bool missed() const noexcept { return missed_; }
  [[nodiscard]] Error no_engine() const {
    return Error{ErrorCode::NoEngine, "build: no execution plan could be built for this graph (" +
                                          std::to_string(attempts_) +
                                          " engine config(s) tried):" + tried_};
  }

 private:
  const PlanRequest& request_;
  std::string tried_;  // one line per failed candidate, for the NoEngine error
  std::int64_t attempts_ = 0;
  bool missed_ = false;
};

}  // namespace

Result<backend::ExecutionPlan> plan_for_choice(const backend::OperationGraph& graph,
                                               cudnnHandle_t handle, const EngineChoice& choice,
                                               KernelCache* cache) {
  auto config = make_config(graph, choice);
  if (!config) {
    return std::unexpected(
        cudnn_error(config.error(), "engine config " + std::to_string(choice.engine_id)));
  }
  auto attempted = make_plan(handle, *config, cache);
  if (!attempted) {
    return std::unexpected(attempted.error());
  }
  if (PlanAttempt& made = *attempted; !made) {
    return std::unexpected(
        cudnn_error(made.error(), "plan of engine " + std::to_string(choice.engine_id)));
  }
  return std::move((*attempted)->plan);
}

Result<ChosenPlan> choose_plan(const PlanRequest& request) {
  if (request.modes.empty()) {
    return make_error(ErrorCode::InvalidAttribute, "build: no heuristic mode given");
  }
  PlanSearch search(request);
  const bool cache_first = request.cache != nullptr && request.cache_first;
  if (cache_first) {
    // Known configs whose kernel the cache holds for this graph: no heuristics, no compile.
    for (const EngineChoice& known : KernelCacheAccess::known_configs(*request.cache)) {
      const std::string origin = "cached config, engine " + std::to_string(known.engine_id);
      auto config = make_config(request.graph, known);
      if (!config) {  // not applicable to this shape: heuristics rank what is
        search.note(origin + ": not applicable to this graph: " + config.error().to_string());
        continue;
      }
      PlanInfo info;
      info.mode = request.modes.front();
      info.engine_id = known.engine_id;
      info.knobs = known.knobs;
      info.from_cached_config = true;
      // Only if the cache holds its kernel for this graph: one lookup, then the plan.
      auto chosen = search.attempt(*config, std::move(info), "cached config", true);
      if (!chosen) {
        return std::unexpected(chosen.error());
      }
      if (std::optional<ChosenPlan>& found = *chosen; found.has_value()) {
        return std::move(*found);
      }
      if (search.missed()) {
        log_debug(
            [&] { return "plan choice: " + origin + ": not in the kernel cache for this graph"; });
      }  // a miss would compile: let heuristics rank it
    }
  }
  for (HeuristicMode mode : request.modes) {
    const std::string origin = "heuristics " + std::string(to_string(mode));
    auto configs = ranked_configs(request.graph, mode);
    if (!configs) {
      search.note(origin + ": " + configs.error().to_string());
      continue;
    }
    if (configs->empty()) {
      search.note(origin + ": no engine config");
    }
    log_debug([&] {
      std::string line =
          "plan choice: " + origin + " ranked " + std::to_string(configs->size()) + " config(s):";
      for (const backend::EngineConfig& config : *configs) {
        line += " engine " + std::to_string(describe_config(config).engine_id) + ",";
      }
      line.pop_back();
      return line;
    });
    // With cache_first, configs whose kernel the cache holds go first, each group in
    // heuristics order. The cache is asked lazily, as far as the search gets: the first held
    // config usually builds, and after from_json each lookup is costly (H200, cuDNN 9.19:
    // asking for every config of heuristics A added 16 ms to a 96 ms first build).
    // A held config's lookup is the one its plan's finalize takes (only_if_held): one lookup
    // per config, not one to ask and one more to finalize.
    const auto try_config = [&](const backend::EngineConfig& config,
                                bool only_if_held) -> Result<std::optional<ChosenPlan>> {
      PlanInfo info;
      info.mode = mode;
      return search.attempt(config, std::move(info), origin, only_if_held);
    };
    std::vector<bool> held(configs->size(), false);  // tried in the first pass
    if (cache_first) {
      for (std::size_t i = 0; i < configs->size(); ++i) {
        auto chosen = try_config((*configs)[i], true);
        if (!chosen) {
          return std::unexpected(chosen.error());
        }
        if (std::optional<ChosenPlan>& found = *chosen; found.has_value()) {
          return std::move(*found);
        }
        held[i] = !search.missed();
      }
    }
    for (std::size_t i = 0; i < configs->size(); ++i) {
      if (held[i]) {
        continue;  // tried above
      }
      auto chosen = try_config((*configs)[i], false);
      if (!chosen) {
        return std::unexpected(chosen.error());
      }
      if (std::optional<ChosenPlan>& found = *chosen; found.has_value()) {
        return std::move(*found);
      }
    }
  }
  return std::unexpected(search.no_engine());
}

}  // namespace detail
}  // namespace dnngraph
