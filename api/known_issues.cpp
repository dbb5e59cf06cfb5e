// The table of known cuDNN defects. Each entry's text says where and how it was measured.
#include "api/known_issues.hpp"

#include "backend/version.hpp"

#include <array>

namespace dnngraph::detail {

namespace {

// cuDNN 9.27.0 on the H200 (runtime-fusion libraries): conv_fprop with channels-first X through
// engine 7 with a workspace wrote wrong numbers and returned success — NCHW [3,5,13,11] *
// [7,5,3,5]: 2,984 of 3,003 outputs wrong (KERNEL_CFG 29, 6,134 B); NCDHW 3x3x3: 16,298 of
// 16,384 (KERNEL_CFG 26, 32,896 B). cudnn-frontend 1.32 on the same libraries: the same. The
// channels-last twins ran exact through engine 7 without a workspace. On 9.19 heuristics chose
// engines 28 and 47 (exact); engine 7 there is unmeasured, so the entry holds for every version.
bool engine7_channels_first_conv(const GraphTraits& graph, const Candidate& candidate) {
  // With override shapes the workspace of a later shape is unknown here: refuse engine 7 outright.
  return graph.channels_first_conv_fprop && candidate.choice.engine_id == 7 &&
         (candidate.workspace > 0 || graph.override_shapes);
}

constexpr std::array<KnownIssue, 1> table{{
    {"engine7-channels-first-conv-fprop", 0, 0,
     "conv_fprop with a channels-first (NCHW/NCDHW) input through engine 7 with a workspace "
     "returns success and wrong numbers (measured on cuDNN 9.27.0, H200; channels-last is exact)",
     engine7_channels_first_conv},
}};

}  // namespace

std::span<const KnownIssue> known_issues() noexcept { return table; }

const KnownIssue* known_issue_for(const GraphTraits& graph, const Candidate& candidate,
                                  std::int64_t version) noexcept {
  for (const KnownIssue& issue : table) {
    const bool in_range =
        version >= issue.first_affected && (issue.first_fixed == 0 || version < issue.first_fixed);
    if (in_range && issue.applies(graph, candidate)) {
      return &issue;
    }
  }
  return nullptr;
}

std::string describe(const KnownIssue& issue) {
  std::string range = issue.first_affected == 0
                          ? "every cuDNN"
                          : "cuDNN " + backend::version_string(issue.first_affected) + " and later";
  range += issue.first_fixed == 0 ? ", no fixed version measured yet"
                                  : ", fixed in " + backend::version_string(issue.first_fixed);
  return "known cuDNN defect " + std::string(issue.id) + " (" + range +
         "): " + std::string(issue.what);
}

}  // namespace dnngraph::detail
