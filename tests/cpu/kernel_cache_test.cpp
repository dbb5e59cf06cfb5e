// KernelCache without a GPU: errors before build, from_json checks, and the locking contract
// exercised from many threads (run under the tsan preset).
#define BOOST_TEST_MODULE kernel_cache
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/kernel_cache_documents.hpp"

#include "support/dnngraph.hpp"

namespace {

// A document cuDNN 9.19 wrote for a dynamic matmul graph (see docs/kernel-cache.md).
const std::string& well_formed = dnngraph::testing::matmul;

// The well-formed document with another kernel_cache array.
std::string with_entries(const std::string& entries) {
  std::string document = well_formed;
  const std::string empty = R"("kernel_cache":[])";
  document.replace(document.find(empty), empty.size(), R"("kernel_cache":)" + entries);
  return document;
}

bool message_has(const dnngraph::Error& e, const std::string& text) {
  return e.message.find(text) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(revision_before_build_is_an_error) {
  dnngraph::KernelCache kc;
  auto revision = kc.revision();
  BOOST_REQUIRE(!revision);
  BOOST_TEST((revision.error().code == dnngraph::ErrorCode::InvalidState));
  BOOST_TEST(message_has(revision.error(), "revision() before the cache is built"));
}

BOOST_AUTO_TEST_CASE(size_before_build_is_an_error) {
  dnngraph::KernelCache kc;
  auto size = kc.size();
  BOOST_REQUIRE(!size);
  BOOST_TEST((size.error().code == dnngraph::ErrorCode::InvalidState));
  BOOST_TEST(message_has(size.error(), "size()"));
}

BOOST_AUTO_TEST_CASE(to_json_before_build_is_an_error) {
  dnngraph::KernelCache kc;
  auto json = kc.to_json();
  BOOST_REQUIRE(!json);
  BOOST_TEST((json.error().code == dnngraph::ErrorCode::InvalidState));
}

BOOST_AUTO_TEST_CASE(from_json_accepts_a_well_formed_document_once,
                     *boost::unit_test::precondition(dnngraph::testing::loaded_cudnn_is_9_19)) {
  dnngraph::KernelCache kc;
  auto first = kc.from_json(well_formed);
  BOOST_TEST_INFO((first ? std::string("ok") : first.error().message));
  BOOST_REQUIRE(first.has_value());
  auto second = kc.from_json(well_formed);
  BOOST_REQUIRE(!second);
  BOOST_TEST((second.error().code == dnngraph::ErrorCode::InvalidState));
  BOOST_TEST(message_has(second.error(), "already loaded"));
  // Loading does not build: introspection still waits for the first Graph::build.
  BOOST_TEST(!kc.is_built());
  BOOST_TEST(!kc.revision().has_value());
}

struct MalformedCase {
  const char* name;
  std::string document;
  const char* expected_text;
};

BOOST_AUTO_TEST_CASE(from_json_rejects_malformed_documents_and_stays_unloaded,
                     *boost::unit_test::precondition(dnngraph::testing::loaded_cudnn_is_9_19)) {
  const std::vector<MalformedCase> cases = {
      {"empty", "", "does not parse"},
      {"not JSON", "kernel cache", "does not parse"},
      {"truncated", well_formed.substr(0, well_formed.size() / 2), "does not parse"},
      {"not an object", "[1, 2, 3]", "the document: expected an object"},
      {"no kernel_cache", R"({"not": "a cache"})", "not: expected only the members"},
      {"kernel_cache of wrong type", with_entries(R"({"key": 1})"),
       "kernel_cache: expected an array"},
      {"entry without key", with_entries(R"([{"value": []}])"),
       "kernel_cache[0].key: expected a member"},
      {"entry with non-object key", with_entries(R"([{"key": 3, "value": []}])"),
       "kernel_cache[0].key: expected an object"},
      {"second entry broken", with_entries(R"([{"key": {"type": 0}, "value": []}, 7])"),
       "kernel_cache[1]: expected an object"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      dnngraph::KernelCache kc;
      auto loaded = kc.from_json(c.document);
      BOOST_REQUIRE(!loaded);
      BOOST_TEST((loaded.error().code == dnngraph::ErrorCode::InvalidJson));
      BOOST_TEST(message_has(loaded.error(), c.expected_text), loaded.error().message);
      // The cache is as it was: a good document still loads.
      BOOST_TEST(kc.from_json(well_formed).has_value());
    }
  }
}

BOOST_AUTO_TEST_CASE(from_json_rejects_an_oversized_document_before_parsing,
                     *boost::unit_test::precondition(dnngraph::testing::loaded_cudnn_is_9_19)) {
  dnngraph::KernelCache kc;
  std::string huge(dnngraph::KernelCache::max_json_bytes + 1, ' ');
  auto loaded = kc.from_json(huge);
  BOOST_REQUIRE(!loaded);
  BOOST_TEST((loaded.error().code == dnngraph::ErrorCode::InvalidJson));
  BOOST_TEST(message_has(loaded.error(), "larger than the limit"));
  BOOST_TEST(kc.from_json(well_formed).has_value());
}

BOOST_AUTO_TEST_CASE(concurrent_from_json_loads_exactly_once,
                     *boost::unit_test::precondition(dnngraph::testing::loaded_cudnn_is_9_19)) {
  auto kc = std::make_shared<dnngraph::KernelCache>();
  constexpr int threads = 8;
  std::atomic<int> loaded{0};
  std::atomic<int> refused{0};
  std::atomic<int> other{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      while (!go.load()) {
      }
      for (int round = 0; round < 20; ++round) {
        auto r = kc->from_json(well_formed);
        if (r) {
          ++loaded;
        } else if (r.error().code == dnngraph::ErrorCode::InvalidState) {
          ++refused;
        } else {
          ++other;
        }
        // Readers at the same time: all must see "not built".
        if (kc->revision().has_value() || kc->size().has_value() || kc->is_built()) {
          ++other;
        }
      }
    });
  }
  go = true;
  for (auto& t : pool) {
    t.join();
  }
  BOOST_TEST(loaded.load() == 1);
  BOOST_TEST(refused.load() == threads * 20 - 1);
  BOOST_TEST(other.load() == 0);
}

BOOST_AUTO_TEST_CASE(introspection_path_is_named) {
  const auto path = dnngraph::KernelCache::introspection_path();
  BOOST_TEST((path == "library" || path == "native"));
}

BOOST_AUTO_TEST_CASE(a_kernel_cache_on_a_graph_without_dynamic_shapes_is_an_error_at_build) {
  auto kc = std::make_shared<dnngraph::KernelCache>();
  dnngraph::Graph g;
  g.set_io_data_type(dnngraph::DataType::Half).set_kernel_cache(kc);
  auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_dim({1, 64, 32}));
  auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_dim({1, 32, 16}));
  g.matmul(a, b)->set_output(true);
  dnngraph::Handle no_device;  // the cache check comes first, so no GPU is needed
  auto built = g.build(no_device, {dnngraph::HeuristicMode::A});
  BOOST_REQUIRE(!built);
  BOOST_TEST((built.error().code == dnngraph::ErrorCode::InvalidAttribute));
  BOOST_TEST(message_has(built.error(), "set_dynamic_shape_enabled(true)"));
  BOOST_TEST(!kc->is_built());
  BOOST_TEST(kc->descriptors_created() == 0);
}
