// GPU test cases whose graph cuDNN may not run: the case's precondition builds the graph once
// (heuristics A, then Fallback; DNNGRAPH_TEST_HEURISTICS=B builds with B alone, so that a run of
// the suite measures B's choices rather than A's) and skips the case, with the Error as the
// reason, when cuDNN has no engine for it: a finding, reported as skipped, never as passed. The
// body then takes the built graph. Include after support/dnngraph.hpp and
// <boost/test/unit_test.hpp>.
#pragma once

#include "support/gpu_checks.hpp"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph::test {

struct BuiltCase {
  std::optional<Handle> handle;
  Graph graph;
  Result<void> built;
};

inline std::map<std::string, std::unique_ptr<BuiltCase>>& built_cases() {
  static std::map<std::string, std::unique_ptr<BuiltCase>> cases;
  return cases;
}

// Releases the cases no body took (a refusal a case only inspects, a precondition whose body
// builds again) when the test module ends, while the CUDA context is alive: the map's static
// destructor runs after the CUDA runtime's teardown, so their handles' device memory showed as
// leaked under compute-sanitizer's memcheck (gpu_conv_test, gpu_resample_test, cuDNN 9.19).
struct ReleaseBuiltCases {
  ReleaseBuiltCases() = default;
  ReleaseBuiltCases(const ReleaseBuiltCases&) = delete;
  ReleaseBuiltCases& operator=(const ReleaseBuiltCases&) = delete;
  ReleaseBuiltCases(ReleaseBuiltCases&&) = delete;
  ReleaseBuiltCases& operator=(ReleaseBuiltCases&&) = delete;
  ~ReleaseBuiltCases() { built_cases().clear(); }
};

// The heuristics the cases build with: A then Fallback, or the one mode DNNGRAPH_TEST_HEURISTICS
// names (A, B or Fallback). Any other value fails the run rather than silently testing A.
inline const std::vector<HeuristicMode>& case_heuristics() {
  static const std::vector<HeuristicMode> modes = [] {
    const char* chosen = std::getenv("DNNGRAPH_TEST_HEURISTICS");  // NOLINT(concurrency-mt-unsafe)
    if (chosen == nullptr || *chosen == '\0') {
      return std::vector<HeuristicMode>{HeuristicMode::A, HeuristicMode::Fallback};
    }
    for (const HeuristicMode mode : {HeuristicMode::A, HeuristicMode::B, HeuristicMode::Fallback}) {
      if (to_string(mode) == std::string_view(chosen)) {
        return std::vector<HeuristicMode>{mode};
      }
    }
    BOOST_FAIL("DNNGRAPH_TEST_HEURISTICS=" << chosen << ": expected A, B or Fallback");
    return std::vector<HeuristicMode>{};
  }();
  return modes;
}

// Builds make() once per key.
inline BuiltCase& build_case(const std::string& key, const std::function<Graph()>& make) {
  auto& slot = built_cases()[key];
  if (!slot) {
    slot = std::make_unique<BuiltCase>(BuiltCase{{}, make(), {}});
    auto handle = Handle::create();
    if (!handle) {
      slot->built = std::unexpected(handle.error());
    } else {
      slot->handle = std::move(*handle);
      slot->built = slot->graph.build(*slot->handle, case_heuristics());
    }
  }
  return *slot;
}

// The built case, out of the map (its handle and plan go when the body ends).
inline std::unique_ptr<BuiltCase> take_case(const std::string& key,
                                            const std::function<Graph()>& make) {
  build_case(key, make);
  auto node = built_cases().extract(key);
  return std::move(node.mapped());
}

// The built case for a body that runs it: requires that it built and has a plan, logs the plan,
// and gives the plan's workspace size.
struct TakenCase {
  std::unique_ptr<BuiltCase> built;
  std::int64_t workspace_size = 0;
};
inline TakenCase take_built_case(const std::string& key, const std::function<Graph()>& make) {
  TakenCase taken{take_case(key, make), 0};
  BOOST_REQUIRE_MESSAGE(taken.built->built.has_value(),
                        key << ": build failed: " << describe(taken.built->built));
  const auto info = taken.built->graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), key << ": plan_info: " << describe(info));
  BOOST_TEST_MESSAGE(key << ": plan: " << info->describe());
  taken.workspace_size = info->workspace_size;
  return taken;
}

// Skips the case when build() says NoEngine (or `refused` says so for another Error); any other
// build failure is left to the body, which fails on it.
inline boost::unit_test::precondition builds_or_skips(
    std::string key, std::function<Graph()> make,
    std::function<bool(const Error&)> refused = [](const Error&) { return false; }) {
  return boost::unit_test::precondition(
      [key = std::move(key), make = std::move(make),
       refused = std::move(refused)](boost::unit_test::test_unit_id) {
        const BuiltCase& b = build_case(key, make);
        if (!b.built && (b.built.error().code == ErrorCode::NoEngine || refused(b.built.error()))) {
          boost::test_tools::assertion_result result(false);
          result.message() << "finding: cuDNN does not run " << key << ": " << describe(b.built);
          built_cases().erase(key);  // the body will not run to take it
          return result;
        }
        return boost::test_tools::assertion_result(true);
      });
}

BOOST_TEST_GLOBAL_FIXTURE(ReleaseBuiltCases);

}  // namespace dnngraph::test

// A test case that builds `the_case` in its precondition (builds(the_case), defined by the test
// file) and checks it against the reference in its body (check_against_reference(the_case)).
#define DNNGRAPH_REFERENCE_CASE(test_name, the_case) \
  BOOST_AUTO_TEST_CASE(test_name, *builds(the_case)) { check_against_reference(the_case); }
