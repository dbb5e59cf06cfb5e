// Known cuDNN defects, measured: each entry names the cuDNN versions it applies to, what goes
// wrong, and which graphs and engine configs it hits. Plan choice skips a candidate an entry
// matches (and says so in a NoEngine error), so a defect measured as a wrong number or a driver
// failure becomes a refusal at build. Re-check every entry on each new cuDNN.
#pragma once

#include "api/plan.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dnngraph::detail {

// What the entries depend on, collected from a graph's nodes before plan choice.
struct GraphTraits {
  bool channels_first_conv_fprop = false;  // a conv_fprop whose X is not channels-last
  bool override_shapes = false;  // set_override_shape_enabled: shapes (and workspaces) vary
};

// A candidate as plan choice sees it: the engine config, and the workspace its plan needs
// (-1 before the plan is finalized).
struct Candidate {
  const EngineChoice& choice;
  std::int64_t workspace = -1;
};

struct KnownIssue {
  std::string_view id;
  std::int64_t first_affected;  // cudnnGetVersion() encoding, e.g. 92700
  std::int64_t first_fixed;     // 0: no fixed version measured yet
  std::string_view what;        // what goes wrong, and where it was measured
  bool (*applies)(const GraphTraits& graph, const Candidate& candidate);
};

// Every entry, for docs and tests.
[[nodiscard]] std::span<const KnownIssue> known_issues() noexcept;

// The entry that rules the candidate out on cuDNN `version`, or null.
[[nodiscard]] const KnownIssue* known_issue_for(const GraphTraits& graph,
                                                const Candidate& candidate,
                                                std::int64_t version) noexcept;

// "known cuDNN defect <id> (cuDNN 9.27.0 and later, not fixed as of the last measurement): <what>"
[[nodiscard]] std::string describe(const KnownIssue& issue);

}  // namespace dnngraph::detail
