// The known-issues table: which candidates each measured cuDNN defect rules out, on which
// versions, and how the refusal reads. Plan choice consults it for every candidate.
#define BOOST_TEST_MODULE known_issues
#include <boost/test/unit_test.hpp>

#include "api/known_issues.hpp"

#include <string>

using dnngraph::EngineChoice;
using dnngraph::detail::Candidate;
using dnngraph::detail::GraphTraits;
using dnngraph::detail::known_issue_for;

namespace {

GraphTraits channels_first_conv() {
  GraphTraits traits;
  traits.channels_first_conv_fprop = true;
  return traits;
}

const EngineChoice engine7{7, {}};
const EngineChoice engine28{28, {}};

}  // namespace

BOOST_AUTO_TEST_CASE(every_entry_has_an_id_a_text_and_a_sane_version_range) {
  for (const auto& issue : dnngraph::detail::known_issues()) {
    BOOST_TEST(!issue.id.empty());
    BOOST_TEST(issue.what.find("measured") != std::string::npos);
    BOOST_TEST((issue.first_fixed == 0 || issue.first_fixed > issue.first_affected));
    BOOST_TEST(issue.applies != nullptr);
  }
}

BOOST_AUTO_TEST_CASE(engine7_with_a_workspace_on_a_channels_first_conv_is_refused_on_9_27) {
  const auto* issue = known_issue_for(channels_first_conv(), Candidate{engine7, 6134}, 92700);
  BOOST_TEST_REQUIRE(issue != nullptr);
  const std::string text = dnngraph::detail::describe(*issue);
  BOOST_TEST(text.find("engine 7") != std::string::npos);
  BOOST_TEST(text.find("NCHW") != std::string::npos);
  BOOST_TEST(text.find("9.27") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(engine7_is_kept_where_the_measurements_were_exact) {
  // The channels-last twins ran exact through engine 7 without a workspace.
  BOOST_TEST(known_issue_for(GraphTraits{}, Candidate{engine7, 6134}, 92700) == nullptr);
  BOOST_TEST(known_issue_for(channels_first_conv(), Candidate{engine7, 0}, 92700) == nullptr);
  BOOST_TEST(known_issue_for(channels_first_conv(), Candidate{engine28, 6134}, 92700) == nullptr);
}

BOOST_AUTO_TEST_CASE(before_the_plan_exists_only_an_override_graph_rules_engine7_out) {
  // Workspace -1: not known yet (checked again once the plan is finalized).
  BOOST_TEST(known_issue_for(channels_first_conv(), Candidate{engine7}, 92700) == nullptr);
  GraphTraits overrides = channels_first_conv();
  overrides.override_shapes = true;  // a later shape's workspace is unknown at build
  BOOST_TEST(known_issue_for(overrides, Candidate{engine7}, 92700) != nullptr);
  BOOST_TEST(known_issue_for(overrides, Candidate{engine7, 0}, 92700) != nullptr);
}
