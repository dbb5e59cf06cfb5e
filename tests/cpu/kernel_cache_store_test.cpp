// KernelCacheStore without a GPU: file names from keys, loading, damaged files set aside, and
// writers in several threads and processes (one killed mid-save) never leaving a bad file.
#define BOOST_TEST_MODULE kernel_cache_store
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/kernel_cache_documents.hpp"
#include "support/scratch_files.hpp"

#include "support/dnngraph.hpp"

namespace fs = std::filesystem;
using dnngraph::KernelCacheKey;
using dnngraph::KernelCacheStore;

namespace {

// The store's lock file in its folder (docs/kernel-cache.md).
const std::string lock_file = ".dnngraph-cache.lock";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh folder per case under the build's temporary space.
fs::path scratch(const std::string& name) { return dnngraph::testing::scratch("store", name); }

using dnngraph::testing::slurp;

// The key the stored 9.19 documents belong to.
const KernelCacheKey key{"matmul_fp16", "sm_90", 91900};
// The lock patience of the tests that write from many threads or processes at once: they check
// the files, and a loaded machine must not turn their waits into errors.
constexpr std::chrono::milliseconds patient{std::chrono::minutes(2)};

// The file of `key` in `folder`.
fs::path file_of(const fs::path& folder) {
  return folder / "matmul_fp16--cudnn-9.19.0--sm_90.json";
}

// Loads `key` from a folder where something other than a document sits under its name: the load
// succeeds with an empty cache and a warning that names `why`, the thing is set aside (kept as
// it is, renamed), and the next load finds nothing and says nothing.
void expect_set_aside(const fs::path& folder, const std::string& why) {
  KernelCacheStore store(folder);
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value(), (stored ? "" : stored.error().message));
  BOOST_TEST(!stored->loaded);
  BOOST_TEST(contains(stored->warning, why), stored->warning);
  BOOST_TEST(contains(stored->warning, "set aside as"), stored->warning);
  std::error_code ec;
  BOOST_TEST(!fs::exists(fs::symlink_status(file_of(folder), ec)));
  BOOST_TEST(fs::exists(fs::symlink_status(file_of(folder).string() + ".damaged", ec)));
  auto again = store.load_or_create(key);
  BOOST_TEST_REQUIRE(again.has_value());
  BOOST_TEST(again->warning.empty(), again->warning);
}

// Files the store leaves besides its documents: temporaries of writers that died.
int count_temporaries(const fs::path& folder) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    n += contains(entry.path().filename().string(), ".tmp.") ? 1 : 0;
  }
  return n;
}

}  // namespace

namespace {

// Sets (or with nullptr unsets) an environment variable for a scope, restoring it after.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;
  ScopedVariable(ScopedVariable&&) = delete;
  ScopedVariable& operator=(ScopedVariable&&) = delete;
  ~ScopedVariable() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_default_folder_follows_the_environment) {
  ScopedVariable cache_dir("DNNGRAPH_CACHE_DIR", "/srv/caches/dnngraph");
  ScopedVariable xdg("XDG_CACHE_HOME", "/home/u/.xdg");
  ScopedVariable home("HOME", "/home/u");
  BOOST_TEST(KernelCacheStore::default_folder().value() == fs::path("/srv/caches/dnngraph"));
  {
    ScopedVariable empty("DNNGRAPH_CACHE_DIR", "");  // empty counts as unset
    BOOST_TEST(KernelCacheStore::default_folder().value() == fs::path("/home/u/.xdg/dnngraph"));
    ScopedVariable no_xdg("XDG_CACHE_HOME", nullptr);
    BOOST_TEST(KernelCacheStore::default_folder().value() == fs::path("/home/u/.cache/dnngraph"));
    ScopedVariable no_home("HOME", nullptr);
    const auto none = KernelCacheStore::default_folder();
    BOOST_REQUIRE(!none.has_value());
    BOOST_TEST((none.error().code == dnngraph::ErrorCode::InvalidState));
    BOOST_TEST(none.error().message.find("DNNGRAPH_CACHE_DIR") != std::string::npos);
  }
  BOOST_TEST(KernelCacheStore::default_folder().value() == fs::path("/srv/caches/dnngraph"));
}

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

BOOST_AUTO_TEST_CASE(a_key_whose_file_name_would_be_too_long_to_write_is_refused) {
  // 128 characters each were accepted; the name (277 characters) could never be created.
  const KernelCacheKey longest{std::string(128, 't'), std::string(128, 'a'), 91900};
  auto name = KernelCacheStore::file_name(longest);
  BOOST_TEST_REQUIRE(!name.has_value());
  BOOST_TEST((name.error().code == dnngraph::ErrorCode::InvalidAttribute));
  BOOST_TEST(contains(name.error().message, "has 277 characters, more than 229"),
             name.error().message);
}

BOOST_AUTO_TEST_CASE(the_longest_file_name_the_store_accepts_can_be_written_and_listed) {
  // 229 characters: "<topology>--cudnn-9.19.0--<arch>.json", 128 and 80 characters.
  const KernelCacheKey longest{std::string(128, 't'), std::string(80, 'a'), 91900};
  auto name = KernelCacheStore::file_name(longest);
  BOOST_TEST_REQUIRE(name.has_value(), (name ? "" : name.error().message));
  BOOST_TEST(name->size() == 229U);
  BOOST_TEST(!KernelCacheStore::file_name({longest.topology, std::string(81, 'a'), 91900}));
  const fs::path folder = scratch("longest");
  KernelCacheStore store(folder);
  auto written = store.write(longest, dnngraph::testing::matmul);
  BOOST_TEST_REQUIRE(written.has_value(), (written ? "" : written.error().message));
  auto files = store.list();
  BOOST_TEST_REQUIRE(files.has_value());
  BOOST_TEST_REQUIRE(files->size() == 1U);
  BOOST_TEST(files->front().key.topology == longest.topology);
}

BOOST_AUTO_TEST_CASE(every_key_the_store_accepts_round_trips_through_its_file_name) {
  // Parts from which names are made: the separators, the characters a file name cannot hold or
  // that mean something to a shell or a path ('/', '%', '.', ".."), bytes outside ASCII, and
  // the lengths around the limits.
  const std::vector<std::string> parts{"",
                                       "a",
                                       "Z9",
                                       ".",
                                       "..",
                                       "/",
                                       "%",
                                       "%2F",
                                       "-",
                                       "--",
                                       "_",
                                       "cudnn-",
                                       "--cudnn-9.19.0--",
                                       ".json",
                                       " ",
                                       "\xc3\xa9",
                                       "\xff",
                                       std::string(1, '\0'),
                                       std::string(100, 'x'),
                                       std::string(128, 'y'),
                                       std::string(129, 'z')};
  const std::vector<std::int64_t> versions{
      1, 99, 10000, 91900, 92700, 99999, std::numeric_limits<std::int64_t>::max(), -1, -91900};
  std::mt19937 random(35);
  std::uniform_int_distribution<std::size_t> pick(0, parts.size() - 1);
  std::uniform_int_distribution<int> length(1, 3);
  const auto name = [&] {
    std::string out;
    for (int i = length(random); i > 0; --i) {
      out += parts[pick(random)];
    }
    return out;
  };
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    const KernelCacheKey k{name(), name(), versions[static_cast<std::size_t>(i) % versions.size()]};
    auto file = KernelCacheStore::file_name(k);
    if (!file) {
      BOOST_TEST((file.error().code == dnngraph::ErrorCode::InvalidAttribute));
      continue;
    }
    ++accepted;
    BOOST_TEST(file->size() <= 229U);
    BOOST_TEST(file->find('/') == std::string::npos, *file);
    auto back = KernelCacheStore::key_of(*file);
    BOOST_TEST_REQUIRE(back.has_value(), *file);
    BOOST_TEST(back->topology == k.topology, *file);
    BOOST_TEST(back->gpu_architecture == k.gpu_architecture, *file);
    BOOST_TEST(back->cudnn_version == k.cudnn_version, *file);
  }
  BOOST_TEST_MESSAGE(accepted << " of 20000 generated keys accepted");
  BOOST_TEST(accepted > 100);
}

BOOST_AUTO_TEST_CASE(every_name_key_of_takes_is_the_file_name_of_its_key) {
  // Names shaped like the store's, <topology>--cudnn-<version>--<arch>.json, from pieces that
  // blur each boundary: dashes next to the separators, versions of other spellings and of a
  // major that overflows, characters no key holds.
  // Valid pieces repeat, so that some hundreds of the names are taken.
  const std::vector<std::string> name_parts{"a",  "a", "sm_90", "sm_90",  "-",       "-",
                                            "--", ".", "..",    "cudnn-", "9",       "/",
                                            "%",  " ", "\xff",  ".json",  "--cudnn-"};
  const std::vector<std::string> digits{"9",
                                        "0",
                                        "19",
                                        "9",
                                        "0",
                                        "19",
                                        "99",
                                        "09",
                                        "100",
                                        "+1",
                                        "-1",
                                        "1152921504606846985",
                                        "922337203685477"};
  const std::vector<std::string> dots{".", ".", ".", ".", "", "..", "-"};
  std::mt19937 random(35);
  const auto join = [&](const std::vector<std::string>& parts, int least, int most) {
    std::string out;
    for (int n = std::uniform_int_distribution<int>(least, most)(random); n > 0; --n) {
      out += parts[std::uniform_int_distribution<std::size_t>(0, parts.size() - 1)(random)];
    }
    return out;
  };
  int taken = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::string version = join(digits, 1, 2) + join(dots, 1, 1) + join(digits, 1, 1) +
                                join(dots, 1, 1) + join(digits, 1, 1);
    const std::string file = join(name_parts, 1, 3) + "--cudnn-" + version + "--" +
                             join(name_parts, 1, 3) + (i % 8 == 0 ? "" : ".json");
    auto k = KernelCacheStore::key_of(file);
    if (!k) {
      continue;
    }
    ++taken;
    auto again = KernelCacheStore::file_name(*k);
    BOOST_TEST_REQUIRE(again.has_value(), file);
    BOOST_TEST(*again == file);
  }
  BOOST_TEST_MESSAGE(taken << " of 200000 generated names taken as keys");
  BOOST_TEST(taken > 400);
}

BOOST_AUTO_TEST_CASE(names_the_old_parser_split_wrongly_round_trip_or_are_refused) {
  // An architecture starting with '-' made a name key_of refused; a topology ending with '-'
  // is taken as it was.
  for (const KernelCacheKey& k :
       {KernelCacheKey{"t", "-sm", 91900}, KernelCacheKey{"t-", "sm-", 91900},
        KernelCacheKey{"t-", "-", 91900}}) {
    auto file = KernelCacheStore::file_name(k);
    BOOST_TEST_REQUIRE(file.has_value());
    auto back = KernelCacheStore::key_of(*file);
    BOOST_TEST_REQUIRE(back.has_value(), *file);
    BOOST_TEST(back->topology == k.topology);
    BOOST_TEST(back->gpu_architecture == k.gpu_architecture);
  }
  // Other spellings of a version than the one file_name writes are no key's name.
  for (const char* file : {"t--cudnn-09.19.0--sm_90.json", "t--cudnn-9.019.0--sm_90.json",
                           "t--cudnn-+9.19.0--sm_90.json", "t--cudnn--9.19.0--sm_90.json",
                           "t--cudnn-0.0.0--sm_90.json", "t--cudnn-9.19--sm_90.json"}) {
    BOOST_TEST(!KernelCacheStore::key_of(file).has_value(), file);
  }
}

BOOST_AUTO_TEST_CASE(a_file_name_with_a_huge_major_version_is_no_key) {
  // (2^60 + 9) * 10000 wraps to 90000 in int64: the name was listed as a 9.19 cache (and was
  // signed-overflow UB).
  const std::string file = "matmul_fp16--cudnn-1152921504606846985.19.0--sm_90.json";
  BOOST_TEST(!KernelCacheStore::key_of(file).has_value());
  const fs::path folder = scratch("huge-version");
  fs::create_directories(folder);
  std::ofstream(folder / file) << dnngraph::testing::matmul;
  KernelCacheStore store(folder);
  auto files = store.list();
  BOOST_TEST_REQUIRE(files.has_value());
  BOOST_TEST(files->empty());
  // The largest version int64 holds still names a file, and that name its key.
  const KernelCacheKey newest{"t", "sm_90", std::numeric_limits<std::int64_t>::max()};
  auto name = KernelCacheStore::file_name(newest);
  BOOST_TEST_REQUIRE(name.has_value());
  BOOST_TEST(*name == "t--cudnn-922337203685477.58.7--sm_90.json");
  BOOST_TEST(KernelCacheStore::key_of(*name).value_or(KernelCacheKey{}).cudnn_version ==
             newest.cudnn_version);
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

BOOST_AUTO_TEST_CASE(a_fifo_under_a_keys_name_is_set_aside_without_blocking_the_load,
                     *boost::unit_test::timeout(20)) {
  // The load opened the FIFO for reading and waited forever for a writer.
  const fs::path folder = scratch("fifo");
  fs::create_directories(folder);
  BOOST_TEST_REQUIRE(::mkfifo(file_of(folder).c_str(), 0644) == 0);
  expect_set_aside(folder, "is a FIFO; the store opens only regular files");
  BOOST_TEST(fs::is_fifo(file_of(folder).string() + ".damaged"));
}

BOOST_AUTO_TEST_CASE(a_file_larger_than_a_document_is_set_aside_unread) {
  // 300 MB were read (256 MiB of them) on every load and never set aside. Sparse: no disk used.
  const fs::path folder = scratch("large");
  fs::create_directories(folder);
  std::ofstream(file_of(folder)).close();
  fs::resize_file(file_of(folder), std::uintmax_t{300} << 20);
  expect_set_aside(folder, "has 314572800 bytes, more than the 268435456 a document may have");
  BOOST_TEST(fs::file_size(file_of(folder).string() + ".damaged") == std::uintmax_t{300} << 20);
  fs::remove_all(folder);
}

BOOST_AUTO_TEST_CASE(a_symbolic_link_under_a_keys_name_is_set_aside_never_followed) {
  // A link to /dev/zero was read up to the size limit on every load.
  for (const fs::path& target : {fs::path("/dev/zero"), fs::path("/nonexistent/dnngraph")}) {
    const fs::path folder = scratch("link");
    fs::create_directories(folder);
    fs::create_symlink(target, file_of(folder));
    expect_set_aside(folder, "is a symbolic link; the store opens only regular files");
    BOOST_TEST(fs::read_symlink(file_of(folder).string() + ".damaged") == target);
  }
}

BOOST_AUTO_TEST_CASE(a_symbolic_link_to_a_document_is_not_listed) {
  const fs::path folder = scratch("listed-link");
  fs::create_directories(folder);
  std::ofstream(folder / "elsewhere.txt") << dnngraph::testing::matmul;
  fs::create_symlink(folder / "elsewhere.txt", file_of(folder));
  KernelCacheStore store(folder);
  auto files = store.list();
  BOOST_TEST_REQUIRE(files.has_value());
  BOOST_TEST(files->empty());
}

BOOST_AUTO_TEST_CASE(a_lock_file_that_is_a_symbolic_link_is_refused_and_its_target_not_made) {
  // The lock was opened through the link with O_CREAT: it made the link's target.
  const fs::path folder = scratch("lock-link");
  const fs::path target = scratch("lock-target");
  fs::create_directories(folder);
  fs::create_symlink(target, folder / ".dnngraph-cache.lock");
  KernelCacheStore store(folder);
  auto written = store.write(key, dnngraph::testing::matmul);
  BOOST_TEST_REQUIRE(!written.has_value());
  BOOST_TEST((written.error().code == dnngraph::ErrorCode::IoFailure));
  BOOST_TEST(contains(written.error().message, ".dnngraph-cache.lock is a symbolic link"),
             written.error().message);
  BOOST_TEST(contains(written.error().message, "it is the store's lock file: remove it"),
             written.error().message);
  std::error_code ec;
  BOOST_TEST(!fs::exists(fs::symlink_status(target, ec)));
  BOOST_TEST(!fs::exists(file_of(folder)));
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
      KernelCacheStore store(folder, patient);  // a store each, as separate programs would have
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
      // What is checked is the file, not the lock's patience: on a loaded machine (TSan on two
      // busy cores) eight writers' waits passed the default 10 s once (session 29).
      KernelCacheStore store(folder, patient);
      for (int i = 0; i < 20; ++i) {
        if (auto written = store.write(key, documents[static_cast<std::size_t>((p + i) % 3)]);
            !written) {
          std::fprintf(stderr, "writer %d, write %d: %s\n", p, i, written.error().message.c_str());
          ::_exit(1);
        }
      }
      ::_exit(0);
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
  if (dnngraph::backend::lib::cudnnGetVersion() / 100 != 919) {
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
  // A killed writer may leave its temporary file behind; the store ignores it, and the next
  // writer removes it under the lock.
  BOOST_TEST_MESSAGE(count_temporaries(folder) << " temporaries left by killed writers");
  KernelCacheStore store(folder);
  BOOST_TEST(store.list()->size() == 1U);
  BOOST_TEST_REQUIRE(store.write(key, documents[0]).has_value());
  BOOST_TEST(count_temporaries(folder) == 0);
}

BOOST_AUTO_TEST_CASE(
    the_next_open_removes_killed_writers_temporaries_unless_a_writer_holds_the_lock) {
  const fs::path folder = scratch("orphans_at_open");
  fs::create_directories(folder);
  const std::string orphan = "matmul_fp16--cudnn-9.19.0--sm_90.json.tmp.4242.1";
  std::ofstream(folder / orphan) << "cut short";
  {
    // A writer holds the lock (its temporary may be live): the open leaves the folder alone.
    const int writer = ::open((folder / lock_file).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    BOOST_TEST_REQUIRE(writer >= 0);
    BOOST_TEST_REQUIRE(::flock(writer, LOCK_EX | LOCK_NB) == 0);
    KernelCacheStore store(folder);
    BOOST_TEST_REQUIRE(store.load_or_create(key).has_value());
    BOOST_TEST(fs::exists(folder / orphan));
    ::close(writer);  // releases the flock
  }
  KernelCacheStore store(folder);
  auto stored = store.load_or_create(key);
  BOOST_TEST_REQUIRE(stored.has_value());
  BOOST_TEST(!stored->loaded);
  BOOST_TEST(!fs::exists(folder / orphan));
}

BOOST_AUTO_TEST_CASE(an_open_without_temporaries_makes_no_lock_file) {
  const fs::path folder = scratch("no_lock_at_open");
  KernelCacheStore store(folder);
  BOOST_TEST_REQUIRE(store.load_or_create(key).has_value());
  BOOST_TEST(!fs::exists(folder / lock_file));
}

BOOST_AUTO_TEST_CASE(the_next_writer_removes_the_temporaries_of_killed_writers_only) {
  const fs::path folder = scratch("orphans");
  fs::create_directories(folder);
  const std::vector<std::string> orphans{"matmul_fp16--cudnn-9.19.0--sm_90.json.tmp.4242.1",
                                         "other--cudnn-9.28.1--sm_90.json.tmp.7.13"};
  const std::vector<std::string> kept{"notes.tmp.1.2", "a.json.tmp.12a.1", "a.json.tmp.1",
                                      ".json.tmp.1.2", "matmul_fp16--cudnn-9.19.0--sm_90.json.bak"};
  for (const auto& name : orphans) {
    std::ofstream(folder / name) << "cut short";
  }
  for (const auto& name : kept) {
    std::ofstream(folder / name) << "someone's";
  }
  KernelCacheStore store(folder);
  BOOST_TEST_REQUIRE(store.write(key, dnngraph::testing::matmul).has_value());
  for (const auto& name : orphans) {
    BOOST_TEST(!fs::exists(folder / name), name);
  }
  for (const auto& name : kept) {
    BOOST_TEST(fs::exists(folder / name), name);
  }
}
