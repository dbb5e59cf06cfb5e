// Plan choice with a kernel cache, on the CPU: what it skips it names. (A cache that cannot
// answer is an error, not a miss: tests/gpu/plan_choice_test.cpp, since the engine configs it
// would be asked about need a GPU.)
#define BOOST_TEST_MODULE plan_choice
#include <boost/test/unit_test.hpp>

#include "api/kernel_cache.hpp"
#include "api/kernel_cache_access.hpp"
#include "api/plan_choice.hpp"
#include "support/cpu_operation_graph.hpp"

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
