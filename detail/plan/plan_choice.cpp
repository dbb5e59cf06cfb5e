// Plan choice: try the configs of each heuristics mode in rank order; keep the first that builds.
#include "detail/plan/plan_choice.hpp"

#include "backend/engine_heuristics.hpp"
#include "backend/features.hpp"
#include "detail/cache/kernel_cache_access.hpp"
#include "detail/common/in_order.hpp"
#include "detail/common/logging.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/cudnn/enums.hpp"
#include "detail/cudnn/known_issues.hpp"
#include "detail/plan/plan_filter.hpp"

#include <gsl/util>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

namespace dnngraph {

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
  if (auto ok = in_order([&] { return engine->set_operation_graph(graph); },
                         [&] { return engine->set_global_index(choice.engine_id); },
                         [&] { return engine->finalize(); });
      !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  std::vector<backend::KnobChoice> knobs;
  for (const auto& [type, value] : choice.knobs) {
    auto knob = backend::KnobChoice::create();
    if (!knob) {
      return std::unexpected(std::move(knob.error()));
    }
    if (auto ok =
            in_order([&] { return knob->set_knob_type(static_cast<cudnnBackendKnobType_t>(type)); },
                     [&] { return knob->set_knob_value(value); }, [&] { return knob->finalize(); });
        !ok) {
      return std::unexpected(std::move(ok.error()));
    }
    knobs.push_back(std::move(*knob));
  }
  auto config = backend::EngineConfig::create();
  if (!config) {
    return std::unexpected(std::move(config.error()));
  }
  if (auto ok = in_order([&] { return config->set_engine(*engine); },
                         when(!knobs.empty(), [&] { return config->set_knob_choices(knobs); }),
                         [&] { return config->finalize(); });
      !ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return config;
}

struct MadePlan {
  backend::ExecutionPlan plan;
  bool cache_hit = false;  // the cache held the config's kernel before: nothing compiled
  bool finalized = true;   // false: only_if_held and the cache did not hold it (no plan made)
};

// The inner result is this config's plan, or why it did not build: the next candidate may. The
// outer error is the kernel cache's (KernelCacheAccess::finalize_plan): not about this config, so
// plan choice stops on it rather than take a cache that cannot answer for a miss.
using PlanAttempt = backend::Expected<MadePlan>;

// With only_if_held (a cache given), a config whose kernel the cache does not hold is not
// finalized: the attempt answers a MadePlan with finalized false, after one lookup.
Result<PlanAttempt> make_plan(cudnnHandle_t handle, const backend::EngineConfig& config,
                              KernelCache* cache, bool only_if_held = false) {
  auto plan = backend::ExecutionPlan::create();
  if (!plan) {
    return PlanAttempt(std::unexpected(std::move(plan.error())));
  }
  auto ok = in_order([&] { return plan->set_handle(handle); },
                     [&] { return plan->set_engine_config(config); });
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
  const bool finalized = !only_if_held || **hit;
  return PlanAttempt(MadePlan{std::move(*plan), **hit, finalized});
}

backend::Expected<std::vector<backend::EngineConfig>> ranked_configs(
    const backend::OperationGraph& graph, HeuristicMode mode) {
  auto heuristics = backend::EngineHeuristics::create();
  if (!heuristics) {
    return std::unexpected(std::move(heuristics.error()));
  }
  auto ok = in_order([&] { return heuristics->set_operation_graph(graph); },
                     [&] { return heuristics->set_mode(to_cudnn(mode)); },
                     [&] { return heuristics->finalize(); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return heuristics->results();
}

// What cuDNN says of a config's engine, in the API's note types. A note value this build does not
// know (a newer cuDNN's) names nothing a policy can exclude: it is left out.
backend::Expected<EngineNotes> notes_of(const backend::EngineConfig& config) {
  auto engine = config.engine();
  if (!engine) {
    return std::unexpected(std::move(engine.error()));
  }
  auto numerical = engine->numerical_notes();
  if (!numerical) {
    return std::unexpected(std::move(numerical.error()));
  }
  auto behavior = engine->behavior_notes();
  if (!behavior) {
    return std::unexpected(std::move(behavior.error()));
  }
  EngineNotes notes;
  for (cudnnBackendNumericalNote_t raw : *numerical) {
    if (const auto note = static_cast<NumericalNote>(raw); is_known(note)) {
      notes.numerical.push_back(note);
    }
  }
  for (cudnnBackendBehaviorNote_t raw : *behavior) {
    if (const auto note = static_cast<BehaviorNote>(raw); is_known(note)) {
      notes.behavior.push_back(note);
    }
  }
  return notes;
}

// A candidate that passed the policy's filters: its config, what it is and where it came from.
struct Ranked {
  backend::EngineConfig config;
  EngineChoice choice;
  EngineNotes notes;
  HeuristicMode mode;
  bool from_cached_config = false;
  std::string label;  // "heuristics A, engine 7, knobs {KERNEL_CFG=22}"
};

// Tries candidates in order and keeps the first plan that finalizes; remembers what failed and
// what the policy filtered out.
class PlanSearch {
 public:
  PlanSearch(const PlanRequest& request, const PlanPolicy& policy)
      : request_(request), policy_(policy) {}

  // The config as a candidate, or nullopt when its notes cannot be read or the policy filters
  // it out (noted either way). `known`: the choice it was made from, when not described from it.
  [[nodiscard]] std::optional<Ranked> rank(backend::EngineConfig config, HeuristicMode mode,
                                           std::string_view origin, const EngineChoice* known,
                                           bool from_cached_config = false) {
    EngineChoice choice = known != nullptr ? *known : describe_config(config);
    const std::string label = std::string(origin) + ", " + to_string(choice);
    auto notes = notes_of(config);
    if (!notes) {
      note(label + ": its engine's notes could not be read: " + notes.error().to_string());
      return std::nullopt;
    }
    if (auto why = filtered_out(policy_, choice, *notes)) {
      filter(label + ": filtered out, " + *why);
      return std::nullopt;
    }
    return Ranked{
        std::move(config), std::move(choice), std::move(*notes), mode, from_cached_config, label};
  }

  // A plan from the candidate, or nullopt (the failure is noted). Errors that are not about
  // this candidate (the kernel cache's, reading the workspace size) are returned. With
  // only_if_held (a cache is given), a candidate whose kernel the cache does not hold is skipped
  // before its plan finalizes, after one lookup (the one a held plan's finalize takes): nullopt,
  // nothing noted, not counted, and missed() true until the next attempt. A lookup that fails
  // is the cache's error, never a miss.
  [[nodiscard]] Result<std::optional<ChosenPlan>> attempt(const Ranked& candidate,
                                                          bool only_if_held = false) {
    missed_ = false;
    if (refused(candidate.label, Candidate{candidate.choice, -1, candidate.notes.numerical})) {
      ++attempts_;
      return std::optional<ChosenPlan>{};
    }
    auto attempted = make_plan(request_.handle, candidate.config, request_.cache,
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
      note(candidate.label + ": " + made.error().to_string());
      return std::optional<ChosenPlan>{};
    }
    auto workspace = made->plan.workspace_size();
    if (!workspace) {
      return std::unexpected(cudnn_error(workspace.error(), "build: workspace size"));
    }
    if (refused(candidate.label,
                Candidate{candidate.choice, *workspace, candidate.notes.numerical})) {
      return std::optional<ChosenPlan>{};
    }
    if (auto why = over_workspace(policy_, *workspace)) {
      filter(candidate.label + ": filtered out, " + *why);
      return std::optional<ChosenPlan>{};
    }
    PlanInfo info;
    info.mode = candidate.mode;
    info.engine_id = candidate.choice.engine_id;
    info.knobs = candidate.choice.knobs;
    info.numerical_notes = candidate.notes.numerical;
    info.behavior_notes = candidate.notes.behavior;
    info.from_cached_config = candidate.from_cached_config;
    info.kernel_cache_hit = made->cache_hit;
    info.workspace_size = *workspace;
    info.candidates_tried = attempts_;
    if (request_.cache != nullptr) {
      KernelCacheAccess::remember(*request_.cache, candidate.choice);
    }
    log_debug([&] { return "plan choice: chose " + candidate.label + ": " + info.describe(); });
    return std::optional<ChosenPlan>{ChosenPlan{std::move(made->plan), std::move(info)}};
  }

  // A candidate skipped and why: kept for the NoEngine error, and logged (debug).
  void note(std::string_view line) {
    tried_.emplace_back(line);
    log_debug([&] { return "plan choice: skipped " + std::string(line); });
  }
  // A candidate the policy filtered out and why: kept for the NoEngine error, logged (debug).
  void filter(std::string_view line) {
    filtered_.emplace_back(line);
    log_debug([&] { return "plan choice: " + std::string(line); });
  }

  // Whether a known cuDNN defect rules the candidate out on the loaded cuDNN (noted if so).
  [[nodiscard]] bool refused(const std::string& candidate, const Candidate& c) {
    const KnownIssue* issue = known_issue_for(request_.traits, c, backend::loaded_version());
    if (issue != nullptr) {
      note(candidate + ": refused, " + describe(*issue));
    }
    return issue != nullptr;
  }
  [[nodiscard]] Error no_engine() const { return no_engine_error(attempts_, tried_, filtered_); }
  [[nodiscard]] const std::vector<std::string>& filtered() const noexcept { return filtered_; }
  // Whether the last attempt was skipped as a kernel cache miss (only_if_held).
  [[nodiscard]] bool missed() const noexcept { return missed_; }

 private:
  const PlanRequest& request_;
  const PlanPolicy& policy_;
  std::vector<std::string> tried_;     // one line per failed candidate, for the NoEngine error
  std::vector<std::string> filtered_;  // one line per candidate the policy filtered out
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

namespace {

// The first attempt that built, the search's error, or nullopt to go on.
using Step = Result<std::optional<ChosenPlan>>;

// The pinned config of policy.engine: built as given, or a NoEngine error naming it.
Result<ChosenPlan> choose_pinned(const PlanRequest& request, PlanSearch& search,
                                 const EngineChoice& pinned) {
  auto config = make_config(request.graph, pinned);
  if (!config) {
    return make_error(ErrorCode::NoEngine, "build: cuDNN refused the pinned engine config (" +
                                               to_string(pinned) +
                                               ") on this graph: " + config.error().to_string());
  }
  auto ranked = search.rank(std::move(*config), request.modes.front(), "pinned config", &pinned);
  if (ranked) {
    auto chosen = search.attempt(*ranked);
    if (!chosen) {
      return std::unexpected(chosen.error());
    }
    if (std::optional<ChosenPlan>& found = *chosen; found.has_value()) {
      return std::move(*found);
    }
  }
  return std::unexpected(search.no_engine());
}

// Known configs whose kernel the cache holds for this graph: no heuristics, no compile.
Step choose_known(const PlanRequest& request, PlanSearch& search) {
  for (const EngineChoice& known : KernelCacheAccess::known_configs(*request.cache)) {
    const std::string origin = "cached config, engine " + std::to_string(known.engine_id);
    auto config = make_config(request.graph, known);
    if (!config) {  // not applicable to this shape: heuristics rank what is
      search.note(origin + ": not applicable to this graph: " + config.error().to_string());
      continue;
    }
    auto ranked = search.rank(std::move(*config), request.modes.front(), "cached config", &known,
                              /*from_cached_config=*/true);
    if (!ranked) {
      continue;
    }
    // Only if the cache holds its kernel for this graph: one lookup, then the plan.
    auto chosen = search.attempt(*ranked, /*only_if_held=*/true);
    if (!chosen || chosen->has_value()) {
      return chosen;
    }
    if (search.missed()) {
      log_debug(
          [&] { return "plan choice: " + origin + ": not in the kernel cache for this graph"; });
    }  // a miss would compile: let heuristics rank it
  }
  return std::optional<ChosenPlan>{};
}

// Every mode's configs in heuristics order, duplicates (the same engine and knobs ranked by an
// earlier mode) removed, the policy's filters applied. `ends[m]`: where mode m's part ends.
std::vector<Ranked> rank_all(const PlanRequest& request, PlanSearch& search,
                             std::vector<std::size_t>& ends) {
  std::vector<Ranked> ranked;
  std::vector<EngineChoice> seen;
  for (HeuristicMode mode : request.modes) {
    const std::string origin = "heuristics " + std::string(to_string(mode));
    auto configs = ranked_configs(request.graph, mode);
    if (!configs) {
      search.note(origin + ": " + configs.error().to_string());
    } else if (configs->empty()) {
      search.note(origin + ": no engine config");
    } else {
      log_debug([&] {
        std::string line =
            "plan choice: " + origin + " ranked " + std::to_string(configs->size()) + " config(s):";
        for (const backend::EngineConfig& config : *configs) {
          line += " engine " + std::to_string(describe_config(config).engine_id) + ",";
        }
        line.pop_back();
        return line;
      });
      for (backend::EngineConfig& config : *configs) {
        const EngineChoice choice = describe_config(config);
        if (std::ranges::find(seen, choice) != seen.end()) {
          continue;
        }
        seen.push_back(choice);
        if (auto candidate = search.rank(std::move(config), mode, origin, &choice)) {
          ranked.push_back(std::move(*candidate));
        }
      }
    }
    ends.push_back(ranked.size());
  }
  return ranked;
}

}  // namespace

Result<ChosenPlan> choose_plan(const PlanRequest& request) {
  if (request.modes.empty() && !(request.policy != nullptr && request.policy->engine)) {
    return make_error(ErrorCode::InvalidAttribute, "build: no heuristic mode given");
  }
  static const PlanPolicy no_policy;
  const PlanPolicy& policy = request.policy != nullptr ? *request.policy : no_policy;
  if (auto ok = check_policy(policy); !ok) {
    return std::unexpected(ok.error());
  }
  PlanSearch search(request, policy);
  if (policy.engine) {
    return choose_pinned(request, search, *policy.engine);
  }
  // With cache_first, configs the cache already compiled go first; a plan_index names a place
  // in heuristics order, so no reordering applies to it.
  const bool cache_first = request.cache != nullptr && request.cache_first && !policy.plan_index;
  if (cache_first) {
    auto chosen = choose_known(request, search);
    if (!chosen) {
      return std::unexpected(chosen.error());
    }
    if (std::optional<ChosenPlan>& found = *chosen; found.has_value()) {
      return std::move(*found);
    }
  }
  std::vector<std::size_t> ends;
  const std::vector<Ranked> ranked = rank_all(request, search, ends);
  const auto count = gsl::narrow_cast<std::int64_t>(ranked.size());
  const auto chose = [&](ChosenPlan& found, std::size_t index) -> Result<ChosenPlan> {
    found.info.plan_count = count;
    found.info.plan_index = gsl::narrow_cast<std::int64_t>(index);
    found.info.heuristics_queries = gsl::narrow_cast<std::int64_t>(request.modes.size());
    return std::move(found);
  };
  const auto try_at = [&](std::size_t index) -> Step { return search.attempt(ranked[index]); };
  if (policy.plan_index) {
    if (*policy.plan_index >= count) {
      Error error = search.no_engine();
      return make_error(ErrorCode::InvalidAttribute,
                        "build: plan_index " + std::to_string(*policy.plan_index) +
                            " is out of range: " + std::to_string(count) +
                            " candidate(s) after the plan policy's filters; " + error.message);
    }
    // In 0..count-1: check_policy refused a negative index, the test above one past the end.
    const auto index = gsl::narrow_cast<std::size_t>(*policy.plan_index);
    auto chosen = try_at(index);
    if (!chosen) {
      return std::unexpected(chosen.error());
    }
    if (std::optional<ChosenPlan>& found = *chosen; found.has_value()) {
      return chose(*found, index);
    }
    return std::unexpected(search.no_engine());
  }
  // Within each mode's part: with cache_first, configs whose kernel the cache holds go first,
  // each group in heuristics order. The cache is asked lazily, as far as the search gets: the
  // first held config usually builds, and after from_json each lookup is costly (H200, cuDNN
  // 9.19: asking for every config of heuristics A added 16 ms to a 96 ms first build).
  // A held config's lookup is the one its plan's finalize takes (only_if_held): one lookup per
  // config, not one to ask and one more to finalize.
  std::size_t begin = 0;
  for (const std::size_t end : ends) {
    std::vector<bool> tried(end - begin, false);  // by the first pass (held, or refused)
    for (int pass = cache_first ? 0 : 1; pass < 2; ++pass) {
      for (std::size_t i = begin; i < end; ++i) {
        if (pass == 1 && tried[i - begin]) {
          continue;  // the first pass tried it: held configs there, the rest here
        }
        auto chosen = pass == 0 ? search.attempt(ranked[i], /*only_if_held=*/true) : try_at(i);
        if (!chosen) {
          return std::unexpected(chosen.error());
        }
        if (std::optional<ChosenPlan>& found = *chosen; found.has_value()) {
          return chose(*found, i);
        }
        tried[i - begin] = pass == 0 && !search.missed();
      }
    }
    begin = end;
  }
  return std::unexpected(search.no_engine());
}

}  // namespace detail
}  // namespace dnngraph
