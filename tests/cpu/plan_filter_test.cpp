// The plan policy's filters on made-up candidates, and engine choices as text: what build()
// under a PlanPolicy may choose, without a GPU (tests/gpu/plan_control_test.cpp runs them on
// cuDNN's real candidates).
#define BOOST_TEST_MODULE plan_filter
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"
#include "api/plan.hpp"
#include "detail/plan/plan_filter.hpp"

#include <cudnn.h>

#include <string>
#include <vector>

using dnngraph::BehaviorNote;
using dnngraph::EngineChoice;
using dnngraph::NumericalNote;
using dnngraph::PlanPolicy;
using dnngraph::detail::EngineNotes;
using dnngraph::detail::filtered_out;

namespace {

const EngineChoice engine7{7, {{CUDNN_KNOB_TYPE_KERNEL_CFG, 22}}};

bool says(const std::optional<std::string>& reason, const std::string& part) {
  return reason && reason->find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_policy_keeps_every_candidate) {
  const EngineNotes notes{{NumericalNote::Nondeterministic, NumericalNote::TensorCore},
                          {BehaviorNote::RuntimeCompilation}};
  BOOST_TEST(!filtered_out(PlanPolicy{}, engine7, notes).has_value());
  BOOST_TEST(!dnngraph::detail::over_workspace(PlanPolicy{}, 1 << 30).has_value());
}

BOOST_AUTO_TEST_CASE(deterministic_skips_nondeterministic_engines_only) {
  const PlanPolicy policy{.deterministic = true};
  const auto reason = filtered_out(policy, engine7, {{NumericalNote::Nondeterministic}, {}});
  BOOST_TEST(says(reason, "numerical note Nondeterministic (deterministic)"), reason.value_or(""));
  BOOST_TEST(!filtered_out(policy, engine7, {{NumericalNote::TensorCore}, {}}).has_value());
}

BOOST_AUTO_TEST_CASE(an_excluded_numerical_note_skips_engines_that_have_it) {
  const PlanPolicy policy{.excluded_numerical_notes = {NumericalNote::DownConvertInputs,
                                                       NumericalNote::ReducedPrecisionReduction}};
  const auto reason = filtered_out(
      policy, engine7, {{NumericalNote::TensorCore, NumericalNote::ReducedPrecisionReduction}, {}});
  BOOST_TEST(says(reason, "numerical note ReducedPrecisionReduction is excluded"),
             reason.value_or(""));
  BOOST_TEST(!filtered_out(policy, engine7, {{NumericalNote::TensorCore}, {}}).has_value());
}

BOOST_AUTO_TEST_CASE(tensor_cores_can_be_excluded) {
  const PlanPolicy policy{.excluded_numerical_notes = {NumericalNote::TensorCore}};
  BOOST_TEST(says(filtered_out(policy, engine7, {{NumericalNote::TensorCore}, {}}),
                  "numerical note TensorCore is excluded"));
  BOOST_TEST(!filtered_out(policy, engine7, {}).has_value());
}

BOOST_AUTO_TEST_CASE(an_excluded_behavior_note_skips_engines_that_have_it) {
  const PlanPolicy policy{.excluded_behavior_notes = {BehaviorNote::RuntimeCompilation}};
  const auto reason = filtered_out(policy, engine7, {{}, {BehaviorNote::RuntimeCompilation}});
  BOOST_TEST(says(reason, "behavior note RuntimeCompilation is excluded"), reason.value_or(""));
  BOOST_TEST(
      !filtered_out(policy, engine7, {{}, {BehaviorNote::SupportsCudaGraphNativeApi}}).has_value());
}

BOOST_AUTO_TEST_CASE(an_excluded_engine_is_skipped_whatever_its_knobs) {
  const PlanPolicy policy{.excluded_engines = {7, 9}};
  BOOST_TEST(says(filtered_out(policy, engine7, {}), "engine 7 is excluded"));
  BOOST_TEST(says(filtered_out(policy, EngineChoice{7, {}}, {}), "engine 7 is excluded"));
  BOOST_TEST(!filtered_out(policy, EngineChoice{8, {}}, {}).has_value());
}

BOOST_AUTO_TEST_CASE(the_workspace_cap_skips_larger_plans_and_keeps_equal_ones) {
  const PlanPolicy policy{.max_workspace = 1024};
  BOOST_TEST(!dnngraph::detail::over_workspace(policy, 1024).has_value());
  BOOST_TEST(!dnngraph::detail::over_workspace(policy, 0).has_value());
  const auto reason = dnngraph::detail::over_workspace(policy, 1025);
  BOOST_TEST(says(reason, "workspace 1025 B is over max_workspace 1024 B"), reason.value_or(""));
}

BOOST_AUTO_TEST_CASE(a_policy_filtering_every_candidate_gives_no_engine_listing_each) {
  // Made-up candidates as cuDNN might rank them; the policy leaves none.
  const PlanPolicy policy{.excluded_numerical_notes = {NumericalNote::TensorCore},
                          .excluded_engines = {3},
                          .deterministic = true};
  struct Made {
    EngineChoice choice;
    EngineNotes notes;
  };
  const std::vector<Made> candidates{
      {{3, {}}, {}},
      {{7, {{CUDNN_KNOB_TYPE_SPLIT_K, 4}}}, {{NumericalNote::Nondeterministic}, {}}},
      {{11, {}}, {{NumericalNote::TensorCore}, {BehaviorNote::RuntimeCompilation}}},
  };
  std::vector<std::string> filtered;
  for (const Made& c : candidates) {
    if (auto why = filtered_out(policy, c.choice, c.notes)) {
      filtered.push_back("heuristics A, " + dnngraph::to_string(c.choice) + ": filtered out, " +
                         *why);
    }
  }
  BOOST_TEST_REQUIRE(filtered.size() == candidates.size());
  const dnngraph::Error error = dnngraph::detail::no_engine_error(0, {}, filtered);
  BOOST_TEST((error.code == dnngraph::ErrorCode::NoEngine));
  for (const std::string part :
       {"0 engine config(s) tried, 3 filtered out by the plan policy",
        "engine 3, knobs {}: filtered out, engine 3 is excluded",
        "engine 7, knobs {SPLIT_K=4}: filtered out, numerical note Nondeterministic "
        "(deterministic)",
        "engine 11, knobs {}: filtered out, numerical note TensorCore is excluded"}) {
    BOOST_TEST(error.message.find(part) != std::string::npos, part << " in: " << error.message);
  }
}

BOOST_AUTO_TEST_CASE(an_unusable_policy_is_an_error_naming_the_field) {
  const auto check = [](const PlanPolicy& policy, const std::string& part) {
    auto ok = dnngraph::detail::check_policy(policy);
    BOOST_TEST_REQUIRE(!ok.has_value(), part);
    BOOST_TEST((ok.error().code == dnngraph::ErrorCode::InvalidAttribute));
    BOOST_TEST(ok.error().message.find(part) != std::string::npos, ok.error().message);
  };
  check({.max_workspace = -1}, "max_workspace is -1 bytes; expected >= 0");
  check({.plan_index = -2}, "plan_index is -2; expected >= 0");
  check({.plan_index = 0, .engine = EngineChoice{7, {}}}, "both plan_index (0) and engine");
  check({.engine = EngineChoice{-1, {}}}, "engine has the id -1");
  check({.excluded_numerical_notes = {static_cast<NumericalNote>(77)}},
        "excluded_numerical_notes[0] has the value 77");
  check({.excluded_behavior_notes = {static_cast<BehaviorNote>(40)}},
        "excluded_behavior_notes[0] has the value 40");
  BOOST_TEST(dnngraph::detail::check_policy({.deterministic = true, .plan_index = 3}).has_value());
}

BOOST_AUTO_TEST_CASE(an_engine_choice_reads_back_from_its_text) {
  const EngineChoice choice{42, {{CUDNN_KNOB_TYPE_KERNEL_CFG, 22}, {CUDNN_KNOB_TYPE_SPLIT_K, -1}}};
  const std::string text = dnngraph::to_string(choice);
  BOOST_TEST(text == "engine 42, knobs {KERNEL_CFG=22, SPLIT_K=-1}");
  auto parsed = dnngraph::parse_engine_choice(text);
  BOOST_TEST_REQUIRE(parsed.has_value(), (parsed ? "" : parsed.error().message));
  BOOST_TEST((*parsed == choice));
}

BOOST_AUTO_TEST_CASE(an_engine_choice_reads_from_plan_info_describe) {
  dnngraph::PlanInfo info;
  info.engine_id = 7;
  info.knobs = {{CUDNN_KNOB_TYPE_TILE_SIZE, 3}, {999, 5}};
  info.numerical_notes = {NumericalNote::TensorCore};
  info.workspace_size = 128;
  auto parsed = dnngraph::parse_engine_choice(info.describe());
  BOOST_TEST_REQUIRE(parsed.has_value(), (parsed ? "" : parsed.error().message));
  BOOST_TEST((*parsed == info.choice()), info.describe());
  BOOST_TEST(info.describe().find("notes {TensorCore}") != std::string::npos, info.describe());
  auto empty = dnngraph::parse_engine_choice("engine 0, knobs {}");
  BOOST_TEST_REQUIRE(empty.has_value());
  BOOST_TEST((*empty == EngineChoice{0, {}}));
}

BOOST_AUTO_TEST_CASE(malformed_engine_choice_text_is_an_error_saying_where) {
  for (const std::string text : {"", "engine", "engine x", "engine 7", "engine 7, knobs {FOO=1}",
                                 "engine 7, knobs {SPLIT_K 1}", "engine 7, knobs {SPLIT_K=}",
                                 "engine 7, knobs {SPLIT_K=1", "engine -3, knobs {}"}) {
    auto parsed = dnngraph::parse_engine_choice(text);
    BOOST_TEST_REQUIRE(!parsed.has_value(), text);
    BOOST_TEST((parsed.error().code == dnngraph::ErrorCode::InvalidAttribute));
    BOOST_TEST(parsed.error().message.find("at character") != std::string::npos,
               parsed.error().message);
  }
}

// Graph::autotune's refusals before any GPU work, and the report's text and ratio.
BOOST_AUTO_TEST_CASE(autotune_refuses_bad_options_and_an_unbuilt_graph) {
  dnngraph::Graph g;
  const dnngraph::Handle none;
  auto bad =
      g.autotune(none, {}, nullptr, 0, {.warmup = -1, .iterations = 20, .max_candidates = 8});
  BOOST_TEST_REQUIRE(!bad.has_value());
  BOOST_TEST((bad.error().code == dnngraph::ErrorCode::InvalidAttribute));
  BOOST_TEST(bad.error().message.find("warmup -1") != std::string::npos);
  auto no_iterations = g.autotune(none, {}, nullptr, 0, {.warmup = 0, .iterations = 0});
  BOOST_TEST(
      (!no_iterations && no_iterations.error().code == dnngraph::ErrorCode::InvalidAttribute));
  auto null_workspace = g.autotune(none, {}, nullptr, 1024);
  BOOST_TEST(
      (!null_workspace && null_workspace.error().code == dnngraph::ErrorCode::InvalidAttribute));
  auto unbuilt = g.autotune(none, {}, nullptr, 0);
  BOOST_TEST_REQUIRE(!unbuilt.has_value());
  BOOST_TEST((unbuilt.error().code == dnngraph::ErrorCode::NotBuilt));
  BOOST_TEST(unbuilt.error().message.find("autotune: ") == 0U);
}

BOOST_AUTO_TEST_CASE(an_autotune_report_names_each_row_and_the_chosen_one) {
  dnngraph::AutotuneReport report;
  report.rows.push_back({0, EngineChoice{7, {{CUDNN_KNOB_TYPE_KERNEL_CFG, 22}}}, 0, 0.5, ""});
  report.rows.push_back({1, EngineChoice{3, {}}, 4096, 0.25, ""});
  report.rows.push_back({2, EngineChoice{}, 0, std::nullopt, "build failed: NoEngine: x"});
  report.chosen_index = 1;
  BOOST_TEST(report.speedup_over_first().value_or(0) == 2.0);
  const std::string text = report.describe();
  BOOST_TEST(text.find("#0 engine 7, knobs {KERNEL_CFG=22}: 0.5000 ms (workspace 0 B)\n") !=
             std::string::npos);
  BOOST_TEST(text.find("#1 engine 3") != std::string::npos);
  BOOST_TEST(text.find("0.2500 ms (workspace 4096 B) <- chosen\n") != std::string::npos);
  BOOST_TEST(text.find("#2 engine -1") != std::string::npos);
  BOOST_TEST(text.find("not timed, build failed: NoEngine: x") != std::string::npos);
}
