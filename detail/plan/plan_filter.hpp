// The plan policy's filters (internal to api/): whether a candidate engine config may be built,
// and why not. Pure functions of the policy and what cuDNN said of the candidate, so the rules
// are tested on made-up candidates without a GPU (tests/cpu/plan_filter_test.cpp).
#pragma once

#include "api/error.hpp"
#include "api/plan.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

// What cuDNN says of an engine (CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, _BEHAVIOR_NOTE).
struct EngineNotes {
  std::vector<NumericalNote> numerical;
  std::vector<BehaviorNote> behavior;
};

// The policy is usable: no unknown note value, no negative cap or index, not both plan_index and
// engine. The error names the field and the value.
[[nodiscard]] Result<void> check_policy(const PlanPolicy& policy);

// Why the policy skips this config before its plan is built ("numerical note Nondeterministic
// (deterministic)"), or nullopt when it may be built.
[[nodiscard]] std::optional<std::string> filtered_out(const PlanPolicy& policy,
                                                      const EngineChoice& choice,
                                                      const EngineNotes& notes);
// Why the policy skips a finalized plan needing `workspace` bytes, or nullopt.
[[nodiscard]] std::optional<std::string> over_workspace(const PlanPolicy& policy,
                                                        std::int64_t workspace);

// The NoEngine error of a plan choice that built nothing: `tried` lines say why each attempted
// candidate failed, `filtered` lines what the policy skipped and why.
[[nodiscard]] Error no_engine_error(std::int64_t attempts, std::span<const std::string> tried,
                                    std::span<const std::string> filtered);

}  // namespace dnngraph::detail
