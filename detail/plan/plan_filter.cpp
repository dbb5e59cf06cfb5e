// The plan policy's filters: engine notes, engine ids and the workspace cap.
#include "detail/plan/plan_filter.hpp"

#include <algorithm>

namespace dnngraph::detail {

namespace {

// std::ranges::contains is C++23 but not in the libstdc++ we build with.
template <class Range, class T>
bool holds(const Range& range, const T& value) {
  return std::ranges::find(range, value) != std::ranges::end(range);
}

Error policy_error(std::string what) {
  return Error{ErrorCode::InvalidAttribute, "build: plan policy: " + std::move(what)};
}

}  // namespace

Result<void> check_policy(const PlanPolicy& policy) {
  for (std::size_t i = 0; i < policy.excluded_numerical_notes.size(); ++i) {
    if (!is_known(policy.excluded_numerical_notes[i])) {
      return std::unexpected(
          policy_error("excluded_numerical_notes[" + std::to_string(i) + "] has the value " +
                       std::to_string(static_cast<int>(policy.excluded_numerical_notes[i])) +
                       ", which is no NumericalNote"));
    }
  }
  for (std::size_t i = 0; i < policy.excluded_behavior_notes.size(); ++i) {
    if (!is_known(policy.excluded_behavior_notes[i])) {
      return std::unexpected(
          policy_error("excluded_behavior_notes[" + std::to_string(i) + "] has the value " +
                       std::to_string(static_cast<int>(policy.excluded_behavior_notes[i])) +
                       ", which is no BehaviorNote"));
    }
  }
  if (policy.max_workspace && *policy.max_workspace < 0) {
    return std::unexpected(policy_error(
        "max_workspace is " + std::to_string(*policy.max_workspace) + " bytes; expected >= 0"));
  }
  if (policy.plan_index && *policy.plan_index < 0) {
    return std::unexpected(
        policy_error("plan_index is " + std::to_string(*policy.plan_index) + "; expected >= 0"));
  }
  if (policy.plan_index && policy.engine) {
    return std::unexpected(policy_error("both plan_index (" + std::to_string(*policy.plan_index) +
                                        ") and engine (" + to_string(*policy.engine) +
                                        ") are set; set one"));
  }
  if (policy.engine && policy.engine->engine_id < 0) {
    return std::unexpected(policy_error(
        "engine has the id " + std::to_string(policy.engine->engine_id) + "; expected >= 0"));
  }
  return {};
}

std::optional<std::string> filtered_out(const PlanPolicy& policy, const EngineChoice& choice,
                                        const EngineNotes& notes) {
  if (holds(policy.excluded_engines, choice.engine_id)) {
    return "engine " + std::to_string(choice.engine_id) + " is excluded";
  }
  for (NumericalNote note : notes.numerical) {
    if (policy.deterministic && note == NumericalNote::Nondeterministic) {
      return "numerical note " + std::string(to_string(note)) + " (deterministic)";
    }
    if (holds(policy.excluded_numerical_notes, note)) {
      return "numerical note " + std::string(to_string(note)) + " is excluded";
    }
  }
  for (BehaviorNote note : notes.behavior) {
    if (holds(policy.excluded_behavior_notes, note)) {
      return "behavior note " + std::string(to_string(note)) + " is excluded";
    }
  }
  return std::nullopt;
}

std::optional<std::string> over_workspace(const PlanPolicy& policy, std::int64_t workspace) {
  if (policy.max_workspace && workspace > *policy.max_workspace) {
    return "workspace " + std::to_string(workspace) + " B is over max_workspace " +
           std::to_string(*policy.max_workspace) + " B";
  }
  return std::nullopt;
}

Error no_engine_error(std::int64_t attempts, std::span<const std::string> tried,
                      std::span<const std::string> filtered) {
  std::string message = "build: no execution plan could be built for this graph (" +
                        std::to_string(attempts) + " engine config(s) tried";
  if (!filtered.empty()) {
    message += ", " + std::to_string(filtered.size()) + " filtered out by the plan policy";
  }
  message += "):";
  for (const std::string& line : tried) {
    message += "\n  " + line;
  }
  for (const std::string& line : filtered) {
    message += "\n  " + line;
  }
  return Error{ErrorCode::NoEngine, std::move(message)};
}

}  // namespace dnngraph::detail
