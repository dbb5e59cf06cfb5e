// KernelCacheStore::save_if_changed with caches built on the CPU (cuDNN 9.19 finalizes kernel
// caches without a GPU): it writes cuDNN's document when from_json takes it, and refuses one
// from_json would refuse, writing nothing and leaving the stored file as it was (issue 35: the
// next process set such a file aside as damaged, so the cache never persisted).
#define BOOST_TEST_MODULE kernel_cache_store_save
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"
#include "api/kernel_cache.hpp"
#include "api/kernel_cache_store.hpp"
#include "detail/cache/kernel_cache_access.hpp"
#include "detail/graph/graph_access.hpp"

#include <filesystem>
#include <memory>
#include <string>

#include "support/cpu_operation_graph.hpp"
#include "support/scratch_files.hpp"

namespace fs = std::filesystem;
using dnngraph::KernelCacheKey;
using dnngraph::KernelCacheStore;
using dnngraph::testing::slurp;

namespace {

fs::path scratch(const std::string& name) { return dnngraph::testing::scratch("save", name); }

// The loaded cuDNN's version: the documents saved are its own.
const KernelCacheKey key{"saved", "sm_90", 0};

// Y = A x B, dynamic-shape, with `cache`: its kernel cache built on the CPU.
dnngraph::Result<void> build_matmul_cache(const std::shared_ptr<dnngraph::KernelCache>& cache) {
  dnngraph::Graph g;
  g.set_io_data_type(dnngraph::DataType::Half)
      .set_dynamic_shape_enabled(true)
      .set_kernel_cache(cache);
  auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_uid(1).set_dim({1, 64, 32}));
  auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_uid(2).set_dim({1, 32, 16}));
  g.matmul(a, b)->set_output(true).set_uid(3);
  return dnngraph::detail::GraphAccess::build_kernel_cache(g);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_built_cache_is_saved_and_the_next_store_loads_it) {
  const fs::path folder = scratch("saved");
  {
    KernelCacheStore store(folder);
    auto stored = store.load_or_create(key);
    BOOST_TEST_REQUIRE(stored.has_value());
    auto built = build_matmul_cache(stored->cache);
    BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
    auto saved = store.save_if_changed(*stored->cache);
    BOOST_TEST_REQUIRE(saved.has_value(), (saved ? "" : saved.error().message));
    BOOST_TEST(*saved);
  }
  KernelCacheStore store(folder);
  auto again = store.load_or_create(key);
  BOOST_TEST_REQUIRE(again.has_value());
  BOOST_TEST(again->loaded);
  BOOST_TEST(again->warning.empty(), again->warning);
}

BOOST_AUTO_TEST_CASE(a_document_from_json_would_refuse_is_not_saved_and_the_file_stays) {
  const fs::path folder = scratch("refused");
  KernelCacheStore store(folder);
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value());
  BOOST_TEST_REQUIRE(!stored->loaded);
  auto graph = dnngraph::testing::normal_rng_graph();
  BOOST_TEST_REQUIRE(graph.has_value(), "cuDNN did not finalize the normal rng graph on the CPU");
  auto built = dnngraph::detail::KernelCacheAccess::build(*stored->cache, graph->graph);
  BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
  // Another process saved a good document for the key meanwhile.
  auto other = std::make_shared<dnngraph::KernelCache>();
  BOOST_TEST_REQUIRE(build_matmul_cache(other).has_value());
  const std::string good_document = other->to_json().value_or("");
  BOOST_TEST_REQUIRE(store.write(key, good_document).has_value());

  auto saved = store.save_if_changed(*stored->cache);
  BOOST_TEST_REQUIRE(!saved.has_value());
  BOOST_TEST((saved.error().code == dnngraph::ErrorCode::InvalidJson));
  const std::string& why = saved.error().message;
  BOOST_TEST(why.find("not saved: from_json would refuse") != std::string::npos, why);
  BOOST_TEST(why.find("operationGraph.nodes[0]") != std::string::npos, why);
  BOOST_TEST(why.find("is left as it was") != std::string::npos, why);
  BOOST_TEST(slurp(stored->path) == good_document);
}
