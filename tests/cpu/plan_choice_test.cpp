// Plan choice with a kernel cache, on the CPU: what it skips it names. (A cache that cannot
// answer is an error, not a miss: tests/gpu/plan_choice_test.cpp, since the engine configs it
// would be asked about need a GPU.)
#define BOOST_TEST_MODULE plan_choice
#include <boost/test/unit_test.hpp>

#include "api/kernel_cache.hpp"
#include "detail/cache/kernel_cache_access.hpp"
#include "detail/plan/plan_choice.hpp"
#include "support/cpu_operation_graph.hpp"

#include <cudnn.h>

#include <string>
#include <vector>

BOOST_AUTO_TEST_CASE(a_known_config_that_does_not_apply_is_named_when_no_engine_is_found) {
  // At 7560227 it was skipped without a word. The cache is built, so its lookups answer: where
  // heuristics offer configs (a GPU), their plans fail at finalize without a handle and are
  // noted as well.
  auto graph = dnngraph::testing::relu_graph();
  if (!graph) {
    BOOST_FAIL("cuDNN did not finalize the ReLU graph on the CPU");
    return;
  }
  dnngraph::KernelCache cache;
  auto built = dnngraph::detail::KernelCacheAccess::build(cache, graph->graph);
  BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
  // No engine has this global index: its config applies to no graph.
  dnngraph::detail::KernelCacheAccess::remember(cache, dnngraph::EngineChoice{100000, {}});
  const std::vector<dnngraph::HeuristicMode> modes{dnngraph::HeuristicMode::Fallback};
  auto chosen = dnngraph::detail::choose_plan({.graph = graph->graph,
                                               .handle = nullptr,
                                               .modes = modes,
                                               .cache = &cache,
                                               .cache_first = true,
                                               .traits = {}});
  BOOST_TEST_REQUIRE(!chosen.has_value());
  BOOST_TEST((chosen.error().code == dnngraph::ErrorCode::NoEngine), chosen.error().message);
  BOOST_TEST(chosen.error().message.find(
                 "cached config, engine 100000: not applicable to this graph") != std::string::npos,
             chosen.error().message);
}

BOOST_AUTO_TEST_CASE(a_pinned_engine_cuDNN_refuses_is_no_engine_naming_engine_and_knobs) {
  auto graph = dnngraph::testing::relu_graph();
  BOOST_TEST_REQUIRE(graph.has_value());
  const std::vector<dnngraph::HeuristicMode> modes{dnngraph::HeuristicMode::A};
  const dnngraph::PlanPolicy policy{
      .engine = dnngraph::EngineChoice{100000, {{CUDNN_KNOB_TYPE_SPLIT_K, 2}}}};
  auto chosen = dnngraph::detail::choose_plan(
      {.graph = graph->graph, .handle = nullptr, .modes = modes, .traits = {}, .policy = &policy});
  BOOST_TEST_REQUIRE(!chosen.has_value());
  BOOST_TEST((chosen.error().code == dnngraph::ErrorCode::NoEngine), chosen.error().message);
  BOOST_TEST(chosen.error().message.find("engine 100000, knobs {SPLIT_K=2}") != std::string::npos,
             chosen.error().message);
}

BOOST_AUTO_TEST_CASE(a_plan_index_past_the_ranked_candidates_is_an_error_giving_the_count) {
  // Without a GPU the heuristics rank no config: every index is past the end.
  auto graph = dnngraph::testing::relu_graph();
  BOOST_TEST_REQUIRE(graph.has_value());
  const std::vector<dnngraph::HeuristicMode> modes{dnngraph::HeuristicMode::Fallback};
  const dnngraph::PlanPolicy policy{.plan_index = 100000};
  auto chosen = dnngraph::detail::choose_plan(
      {.graph = graph->graph, .handle = nullptr, .modes = modes, .traits = {}, .policy = &policy});
  BOOST_TEST_REQUIRE(!chosen.has_value());
  BOOST_TEST((chosen.error().code == dnngraph::ErrorCode::InvalidAttribute),
             chosen.error().message);
  BOOST_TEST(chosen.error().message.find("plan_index 100000 is out of range") != std::string::npos,
             chosen.error().message);
}

BOOST_AUTO_TEST_CASE(an_unusable_policy_stops_plan_choice_before_any_candidate) {
  auto graph = dnngraph::testing::relu_graph();
  BOOST_TEST_REQUIRE(graph.has_value());
  const std::vector<dnngraph::HeuristicMode> modes{dnngraph::HeuristicMode::A};
  const dnngraph::PlanPolicy policy{.max_workspace = -5};
  auto chosen = dnngraph::detail::choose_plan(
      {.graph = graph->graph, .handle = nullptr, .modes = modes, .traits = {}, .policy = &policy});
  BOOST_TEST_REQUIRE(!chosen.has_value());
  BOOST_TEST(chosen.error().message.find("max_workspace is -5 bytes") != std::string::npos,
             chosen.error().message);
}
