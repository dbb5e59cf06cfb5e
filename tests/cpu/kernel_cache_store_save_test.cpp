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
#include "detail/cache/kernel_cache_json.hpp"
#include "detail/graph/graph_access.hpp"

#include <boost/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/cpu_operation_graph.hpp"
#include "support/scratch_files.hpp"
#include "support/synthetic_entry.hpp"

namespace fs = std::filesystem;
using dnngraph::KernelCacheKey;
using dnngraph::KernelCacheStore;
using dnngraph::testing::slurp;

namespace {

fs::path scratch(const std::string& name) { return dnngraph::testing::scratch("save", name); }

// The loaded cuDNN's version: the documents saved are its own.
const KernelCacheKey key{"saved", "sm_90", 0};

// Y = A x B, dynamic-shape, with `cache`: its kernel cache built on the CPU. `k` changes the
// topology (the operation graph cuDNN serializes).
dnngraph::Result<void> build_matmul_cache(const std::shared_ptr<dnngraph::KernelCache>& cache,
                                          std::int64_t k = 32) {
  dnngraph::Graph g;
  g.set_io_data_type(dnngraph::DataType::Half)
      .set_dynamic_shape_enabled(true)
      .set_kernel_cache(cache);
  auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_uid(1).set_dim({1, 64, k}));
  auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_uid(2).set_dim({1, k, 16}));
  g.matmul(a, b)->set_output(true).set_uid(3);
  return dnngraph::detail::GraphAccess::build_kernel_cache(g);
}

// The engineId of each entry of a stored document, in order.
std::vector<std::int64_t> engines_of(const fs::path& file) {
  const boost::json::value doc = boost::json::parse(slurp(file));
  std::vector<std::int64_t> engines;
  for (const boost::json::value& entry : doc.at("kernel_cache").as_array()) {
    engines.push_back(entry.at("key").at("engineId").to_number<std::int64_t>());
  }
  return engines;
}

}  // namespace

// `document` with a synthetic entry per engine (a cache built on the CPU has none).
std::string with_entries(std::string_view document, const std::vector<std::int64_t>& engines) {
  boost::json::value doc = boost::json::parse(document);
  auto& entries = doc.at("kernel_cache").as_array();
  for (const std::int64_t engine : engines) {
    entries.push_back(dnngraph::testing::synthetic_entry(doc.at("operationGraph"), engine));
  }
  return boost::json::serialize(doc);
}

// A new store on `folder` (another process) loads the key's file without a warning.
void next_store_loads(const fs::path& folder) {
  KernelCacheStore store(folder);
  auto again = store.load_or_create(key);
  BOOST_TEST_REQUIRE(again.has_value());
  BOOST_TEST(again->loaded);
  BOOST_TEST(again->warning.empty(), again->warning);
}

// The document of a cache of build_matmul_cache(k), from a cache of its own.
std::string matmul_document(std::int64_t k = 32) {
  auto cache = std::make_shared<dnngraph::KernelCache>();
  BOOST_TEST_REQUIRE(build_matmul_cache(cache, k).has_value());
  return cache->to_json().value_or("");
}

// The store's cache for `key`, built, and then the key's file replaced by `document` as another
// process's save would (after this one loaded).
dnngraph::StoredKernelCache built_then_written_over(KernelCacheStore& store,
                                                    const std::string& document) {
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value());
  BOOST_TEST_REQUIRE(build_matmul_cache(stored->cache).has_value());
  KernelCacheStore other(store.folder());
  BOOST_TEST_REQUIRE(other.write(key, document).has_value());
  return *stored;
}

BOOST_AUTO_TEST_SUITE(merging)

BOOST_AUTO_TEST_CASE(a_save_keeps_the_entries_another_save_wrote_for_the_key) {
  const fs::path folder = scratch("merged");
  KernelCacheStore store(folder);
  // Another process saved the same topology, with two kernels, after this one loaded.
  const auto stored = built_then_written_over(store, with_entries(matmul_document(), {7, 9}));
  auto saved = store.save_if_changed(*stored.cache);
  BOOST_TEST_REQUIRE(saved.has_value(), (saved ? "" : saved.error().message));
  BOOST_TEST(*saved);
  BOOST_TEST(engines_of(stored.path) == (std::vector<std::int64_t>{7, 9}));
  next_store_loads(folder);
}

BOOST_AUTO_TEST_CASE(a_save_replaces_a_file_of_another_topology_under_the_key) {
  KernelCacheStore store(scratch("replaced"));
  const auto stored = built_then_written_over(store, with_entries(matmul_document(48), {7}));
  BOOST_TEST_REQUIRE(store.save_if_changed(*stored.cache).value_or(false));
  const std::string written = slurp(stored.path);
  BOOST_TEST(written.find("[1,64,48]") == std::string::npos);
  BOOST_TEST(written.find("[1,64,32]") != std::string::npos);
  BOOST_TEST(engines_of(stored.path).empty());
}

BOOST_AUTO_TEST_CASE(documents_merge_by_entry_key_within_the_limit) {
  const std::string empty = matmul_document();
  const std::string ours = with_entries(empty, {7});
  auto merged = dnngraph::detail::merge_cache_documents(ours, with_entries(empty, {9, 7, 11}),
                                                        dnngraph::KernelCache::max_json_bytes);
  BOOST_TEST_REQUIRE(merged.has_value());
  BOOST_TEST(merged->added == 2);
  const fs::path file = scratch("merge") / "doc.json";
  fs::create_directories(file.parent_path());
  {
    std::ofstream(file) << merged->text;
  }
  BOOST_TEST(engines_of(file) == (std::vector<std::int64_t>{7, 9, 11}));
  // Larger than the limit: ours alone.
  auto capped =
      dnngraph::detail::merge_cache_documents(ours, with_entries(empty, {9}), ours.size());
  BOOST_TEST_REQUIRE(capped.has_value());
  BOOST_TEST(capped->added == 0);
  BOOST_TEST(capped->text == ours);
  // A damaged file: ours alone; a damaged `ours`: an error.
  BOOST_TEST(dnngraph::detail::merge_cache_documents(ours, "{", 1 << 20)->added == 0);
  BOOST_TEST(!dnngraph::detail::merge_cache_documents("{", ours, 1 << 20).has_value());
}

BOOST_AUTO_TEST_SUITE_END()

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
  next_store_loads(folder);
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
