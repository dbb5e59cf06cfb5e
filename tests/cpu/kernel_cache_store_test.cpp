// KernelCacheStore without a GPU: file names from keys, loading, damaged files set aside, and
// writers in several threads and processes (one killed mid-save) never leaving a bad file.
#define BOOST_TEST_MODULE kernel_cache_store
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/kernel_cache_documents.hpp"
#include "support/scratch_files.hpp"

import dnngraph;

namespace fs = std::filesystem;
using dnngraph::KernelCacheKey;
using dnngraph::KernelCacheStore;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh folder per case under the build's temporary space.
fs::path scratch(const std::string& name) { return dnngraph::testing::scratch("store", name); }

using dnngraph::testing::slurp;

// The key the stored 9.19 documents belong to.
const KernelCacheKey key{"matmul_fp16", "sm_90", 91900};

// Files the store leaves besides its documents: temporaries of writers that died.
int count_temporaries(const fs::path& folder) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    n += contains(entry.path().filename().string(), ".tmp.") ? 1 : 0;
  }
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_file_name_carries_topology_cudnn_version_and_architecture) {
  auto name = KernelCacheStore::file_name({"mlp_fp16", "sm_90", 92700});
  BOOST_TEST_REQUIRE(name.has_value());
  BOOST_TEST(*name == "mlp_fp16--cudnn-9.27.0--sm_90.json");
  auto back = KernelCacheStore::key_of(*name);
  BOOST_TEST_REQUIRE(back.has_value());
  const KernelCacheKey parsed = back.value_or(KernelCacheKey{});
  BOOST_TEST(parsed.topology == "mlp_fp16");
  BOOST_TEST(parsed.gpu_architecture == "sm_90");
  BOOST_TEST(parsed.cudnn_version == 92700);
  BOOST_TEST(!KernelCacheStore::key_of("notes.txt").has_value());
  BOOST_TEST(!KernelCacheStore::key_of(*name + ".damaged").has_value());
}

BOOST_AUTO_TEST_CASE(a_key_without_a_version_takes_the_loaded_cudnn) {
  auto name = KernelCacheStore::file_name({"t", "sm_90", 0});
  BOOST_TEST_REQUIRE(name.has_value());
  BOOST_TEST(contains(*name, dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version())),
             *name);
}

BOOST_AUTO_TEST_CASE(a_key_that_cannot_name_a_file_is_refused_naming_the_part) {
  for (const auto& [topology, arch, why] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"a/b", "sm_90", "contains '/'"},
           {"", "sm_90", "is empty"},
           {".hidden", "sm_90", "starts with '.'"},
           {"a--b", "sm_90", "separator"},
           {"ok", "sm 90", "gpu_architecture"}}) {
    auto name = KernelCacheStore::file_name({topology, arch, 91900});
    BOOST_TEST_REQUIRE(!name.has_value());
    BOOST_TEST((name.error().code == dnngraph::ErrorCode::InvalidAttribute));
    BOOST_TEST(contains(name.error().message, why), name.error().message);
  }
}

BOOST_AUTO_TEST_CASE(no_file_gives_a_new_empty_cache_and_makes_the_folder) {
  const fs::path folder = scratch("new") / "nested";
  KernelCacheStore store(folder);
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value(), (stored ? "" : stored.error().message));
  BOOST_TEST(!stored->loaded);
  BOOST_TEST(stored->warning.empty());
  BOOST_TEST(!stored->cache->is_built());
  BOOST_TEST(fs::is_directory(folder));
  BOOST_TEST(stored->path == folder / "matmul_fp16--cudnn-9.19.0--sm_90.json");
  // No build used it: nothing to save, nothing written.
  auto saved = store.save_if_changed(*stored->cache);
  BOOST_TEST_REQUIRE(saved.has_value());
  BOOST_TEST(!*saved);
  BOOST_TEST(!fs::exists(stored->path));
}

BOOST_AUTO_TEST_CASE(a_cache_with_no_entries_round_trips_through_the_store,
                     *boost::unit_test::precondition(dnngraph::testing::loaded_cudnn_is_9_19)) {
  const fs::path folder = scratch("round-trip");
  {
    KernelCacheStore store(folder);
    auto written = store.write(key, dnngraph::testing::matmul);
    BOOST_TEST_REQUIRE(written.has_value(), (written ? "" : written.error().message));
  }
  BOOST_TEST(slurp(folder / "matmul_fp16--cudnn-9.19.0--sm_90.json") == dnngraph::testing::matmul);
  KernelCacheStore store(folder);
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value());
  BOOST_TEST(stored->loaded);
  BOOST_TEST(stored->warning.empty(), stored->warning);
  auto files = store.list();
  BOOST_TEST_REQUIRE(files.has_value());
  BOOST_TEST_REQUIRE(files->size() == 1U);
  BOOST_TEST(files->front().key.topology == "matmul_fp16");
  BOOST_TEST(files->front().bytes == dnngraph::testing::matmul.size());
}

BOOST_AUTO_TEST_CASE(a_damaged_file_is_set_aside_reported_and_never_stops_the_load) {
  const fs::path folder = scratch("damaged");
  fs::create_directories(folder);
  const fs::path file = folder / "matmul_fp16--cudnn-9.19.0--sm_90.json";
  const std::string half =
      dnngraph::testing::matmul.substr(0, dnngraph::testing::matmul.size() / 2);
  std::ofstream(file) << half;
  KernelCacheStore store(folder);
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value());
  BOOST_TEST(!stored->loaded);
  BOOST_TEST(!stored->cache->is_built());
  BOOST_TEST(contains(stored->warning, "is damaged (InvalidJson"), stored->warning);
  BOOST_TEST(contains(stored->warning, "set aside as"), stored->warning);
  BOOST_TEST(!fs::exists(file));
  BOOST_TEST(slurp(folder / "matmul_fp16--cudnn-9.19.0--sm_90.json.damaged") == half);
  // The next load finds no file and says nothing; the damaged one is not listed.
  auto again = store.load_or_create(key);
  BOOST_TEST_REQUIRE(again.has_value());
  BOOST_TEST(again->warning.empty(), again->warning);
  BOOST_TEST(store.list()->empty());
}

BOOST_AUTO_TEST_CASE(write_refuses_a_document_a_load_would_set_aside) {
  const fs::path folder = scratch("refuse");
  KernelCacheStore store(folder);
  auto written = store.write(key, R"({"not": "a cache"})");
  BOOST_TEST_REQUIRE(!written.has_value());
  BOOST_TEST((written.error().code == dnngraph::ErrorCode::InvalidJson));
  BOOST_TEST(!fs::exists(folder / "matmul_fp16--cudnn-9.19.0--sm_90.json"));
}

BOOST_AUTO_TEST_CASE(save_if_changed_refuses_a_cache_the_store_did_not_hand_out) {
  KernelCacheStore store(scratch("foreign"));
  dnngraph::KernelCache foreign;
  auto saved = store.save_if_changed(foreign);
  BOOST_TEST_REQUIRE(!saved.has_value());
  BOOST_TEST((saved.error().code == dnngraph::ErrorCode::InvalidState));
}

BOOST_AUTO_TEST_CASE(eight_threads_writing_one_key_leave_a_whole_document) {
  const fs::path folder = scratch("threads");
  const std::vector<std::string> documents{dnngraph::testing::matmul, dnngraph::testing::conv_relu};
  std::vector<std::thread> threads;
  threads.reserve(8);
  std::atomic<int> failures{0};
  std::mutex first_error_mutex;
  std::string first_error;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      KernelCacheStore store(folder);  // a store each, as separate programs would have
      for (int i = 0; i < 25; ++i) {
        auto written = store.write(key, documents[static_cast<std::size_t>((t + i) % 2)]);
        if (!written) {
          ++failures;
          const std::scoped_lock lock(first_error_mutex);
          if (first_error.empty()) {
            first_error = written.error().message;
          }
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  BOOST_TEST(failures.load() == 0, "first failure: " << first_error);
  const std::string last = slurp(folder / "matmul_fp16--cudnn-9.19.0--sm_90.json");
  BOOST_TEST((last == documents[0] || last == documents[1]));
  BOOST_TEST(count_temporaries(folder) == 0);
}

BOOST_AUTO_TEST_CASE(eight_processes_saving_at_once_leave_a_loadable_file) {
  const fs::path folder = scratch("processes");
  const std::vector<std::string> documents{dnngraph::testing::matmul, dnngraph::testing::conv_relu,
                                           dnngraph::testing::reduction};
  std::vector<pid_t> children;
  for (int p = 0; p < 8; ++p) {
    const pid_t pid = ::fork();
    BOOST_TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
      KernelCacheStore store(folder);
      int failed = 0;
      for (int i = 0; i < 20; ++i) {
        failed += store.write(key, documents[static_cast<std::size_t>((p + i) % 3)]) ? 0 : 1;
      }
      ::_exit(failed == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  const std::string last = slurp(folder / "matmul_fp16--cudnn-9.19.0--sm_90.json");
  BOOST_TEST((last == documents[0] || last == documents[1] || last == documents[2]));
  BOOST_TEST(count_temporaries(folder) == 0);
  // The file is one whole document (above); whether cuDNN takes it needs the cuDNN that wrote
  // the stored documents (another refuses every 9.19 document, whole or not).
  if (cudnnGetVersion() / 100 != 919) {
    BOOST_TEST_MESSAGE("the load is not tried: the stored documents are cuDNN 9.19's");
    return;
  }
  KernelCacheStore store(folder);
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value());
  BOOST_TEST(stored->warning.empty(), stored->warning);  // whole, never set aside
}

BOOST_AUTO_TEST_CASE(a_writer_killed_mid_save_leaves_the_last_good_file) {
  const fs::path folder = scratch("killed");
  const fs::path file = folder / "matmul_fp16--cudnn-9.19.0--sm_90.json";
  const std::vector<std::string> documents{dnngraph::testing::matmul, dnngraph::testing::conv_relu};
  {
    KernelCacheStore store(folder);
    BOOST_TEST_REQUIRE(store.write(key, documents[0]).has_value());
  }
  std::mt19937 random(15);
  std::uniform_int_distribution<int> delay_us(0, 20000);
  for (int round = 0; round < 20; ++round) {
    const pid_t pid = ::fork();
    BOOST_TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
      KernelCacheStore store(folder);
      for (int i = 0;; ++i) {
        [[maybe_unused]] auto written =
            store.write(key, documents[static_cast<std::size_t>(i % 2)]);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string now = slurp(file);
    BOOST_TEST((now == documents[0] || now == documents[1]), "round " << round);
  }
  // A killed writer may leave its temporary file behind (prune removes it); the store ignores it.
  BOOST_TEST_MESSAGE(count_temporaries(folder) << " temporaries left by killed writers");
  KernelCacheStore store(folder);
  BOOST_TEST(store.list()->size() == 1U);
}
