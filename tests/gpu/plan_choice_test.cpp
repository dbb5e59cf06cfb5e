// Plan choice with a kernel cache that cannot answer: its errors stop the build with the cache's
// Error, never count as a miss or as one more engine config that failed. A cache nobody built
// stands for any cache whose lookups fail (each of its lookups is an error before cuDNN is
// asked); Graph::build always builds its cache first, so these go through detail::choose_plan.
// The graph: y = relu(x) on [1, 8, 16] floats, static, with the handle set on it as build does.
#include <boost/test/unit_test.hpp>

#include "api/handle.hpp"
#include "api/kernel_cache.hpp"
#include "detail/plan/plan_choice.hpp"
#include "support/cpu_operation_graph.hpp"

#include <optional>
#include <string>
#include <vector>

namespace {

using dnngraph::ErrorCode;
using dnngraph::detail::choose_plan;

const std::vector<dnngraph::HeuristicMode> modes{dnngraph::HeuristicMode::A,
                                                 dnngraph::HeuristicMode::Fallback};

struct Setup {
  dnngraph::Handle handle;
  dnngraph::testing::CpuOperationGraph graph;

  [[nodiscard]] dnngraph::detail::PlanRequest request(dnngraph::KernelCache* cache,
                                                      bool cache_first) const {
    return {.graph = graph.graph,
            .handle = handle.native(),
            .modes = modes,
            .cache = cache,
            .cache_first = cache_first,
            .traits = {}};
  }
};

// The handle and the graph, or nullopt with the reason reported as a failure.
std::optional<Setup> setup() {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    BOOST_ERROR("Handle::create: " << handle.error().message);
    return std::nullopt;
  }
  auto graph = dnngraph::testing::relu_graph(handle->native());
  if (!graph) {
    BOOST_ERROR("cuDNN did not finalize the ReLU graph");
    return std::nullopt;
  }
  return Setup{std::move(*handle), std::move(*graph)};
}

// The result is the cache's error: InvalidState, saying what the cache was asked to do.
template <class T>
void check_cache_error(const dnngraph::Result<T>& result, const std::string& says) {
  BOOST_TEST_REQUIRE(!result.has_value());
  BOOST_TEST((result.error().code == ErrorCode::InvalidState), result.error().message);
  BOOST_TEST(result.error().message.find(says) != std::string::npos, result.error().message);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(plan_choice_with_a_kernel_cache_that_cannot_answer)

BOOST_AUTO_TEST_CASE(the_graph_has_a_plan_without_a_cache) {
  auto s = setup();
  if (!s) {
    return;
  }
  auto chosen = choose_plan(s->request(nullptr, true));
  BOOST_TEST(chosen.has_value(), (chosen ? "" : chosen.error().message));
}

BOOST_AUTO_TEST_CASE(a_lookup_that_fails_is_the_caches_error_not_a_miss) {
  // At 7560227 a failed lookup read as "not held", and plan choice went on past the cache.
  auto s = setup();
  if (!s) {
    return;
  }
  dnngraph::KernelCache cache;
  check_cache_error(choose_plan(s->request(&cache, true)),
                    "kernel cache: look up a config in it before the cache is built");
}

BOOST_AUTO_TEST_CASE(a_plan_the_cache_cannot_take_is_the_caches_error_not_the_configs) {
  // At 7560227 each candidate failed with CUDNN_STATUS_BAD_PARAM "a plan attached to a cache
  // that is not built" and the build ended in NoEngine, blaming every engine config.
  auto s = setup();
  if (!s) {
    return;
  }
  dnngraph::KernelCache cache;
  check_cache_error(choose_plan(s->request(&cache, false)),
                    "kernel cache: finalize a plan into it before the cache is built");
}

BOOST_AUTO_TEST_CASE(a_plan_rebuilt_for_a_known_config_reports_the_caches_error) {
  auto s = setup();
  if (!s) {
    return;
  }
  auto without_cache = choose_plan(s->request(nullptr, true));
  BOOST_TEST_REQUIRE(without_cache.has_value(),
                     (without_cache ? "" : without_cache.error().message));
  const dnngraph::EngineChoice choice{without_cache->info.engine_id, without_cache->info.knobs};
  dnngraph::KernelCache cache;
  check_cache_error(
      dnngraph::detail::plan_for_choice(s->graph.graph, s->handle.native(), choice, &cache),
      "kernel cache: finalize a plan into it before the cache is built");
}

BOOST_AUTO_TEST_SUITE_END()
