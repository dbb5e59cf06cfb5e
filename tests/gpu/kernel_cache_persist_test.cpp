// The kernel cache persists for every node kind on a GPU (issue 35). Each graph of
// support/every_node_graphs.hpp is made dynamic-shape and built on the GPU with a KernelCache from
// a KernelCacheStore in a fresh folder, as users do: load_or_create, build, save_if_changed. Then
// another process (this binary again, from /proc/self/exe, running only its disabled case
// loaded_in_another_process/in_the_child) load_or_create()s every saved cache and builds the same
// graph on it. A kind cuDNN has no engine for under dynamic shapes is that kind's outcome (its
// cache is still saved and loaded); a kind the loaded cuDNN lacks is skipped, naming the version it
// needs. The test fails when a saved file is set aside or does not load, when the entries size()
// counted, the file holds and the other process loaded disagree, or when a build that worked in
// the first process fails on the loaded cache in the second. A cache hit there is reported, not
// required (cuDNN 9.19 did not serve loaded entries: docs/kernel-cache.md). Both processes build
// with the GPU tests' heuristics (support/built_cases.hpp, DNNGRAPH_TEST_HEURISTICS). One kind:
//   gpu_kernel_cache_persist_test --run_test=saved_in_one_process/for_conv_dgrad
//       --run_test=loaded_in_another_process/every_saved_cache_loads_and_rebuilds
#include <boost/json.hpp>
#include <boost/test/results_collector.hpp>
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include "api/dnngraph.hpp"
#include "detail/cudnn/known_issues.hpp"
#include "detail/graph/graph_access.hpp"

#include <array>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "support/built_cases.hpp"
#include "support/child_process.hpp"
#include "support/every_node_graphs.hpp"
#include "support/gpu_checks.hpp"
#include "support/scratch_files.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using dnngraph::test::describe;
using dnngraph::test::every_node::cases;
using dnngraph::test::every_node::full_name;
using dnngraph::test::every_node::NodeCase;
using dnngraph::test::every_node::NodeGraph;
using dnngraph::test::every_node::runs_here;

// The case the other process runs (disabled unless named), and how its report lines start.
constexpr std::string_view child_test = "loaded_in_another_process/in_the_child";
constexpr std::string_view report_prefix = "persist-child ";

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// "12.3" for 12.345.
std::string fixed(double value) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f", value);
  return text.data();
}

// "sm_90" for the current device.
const std::string& gpu_architecture() {
  static const std::string architecture = [] {
    int device = 0;
    int major = 0;
    int minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
      return std::string("sm_unknown");
    }
    return "sm_" + std::to_string(major * 10 + minor);
  }();
  return architecture;
}

// The store key of a graph: its case's name and label, as a file name may spell them.
dnngraph::KernelCacheKey key_of(const NodeCase& c, const NodeGraph& graph) {
  std::string topology = graph.label.empty() ? c.name : c.name + "." + graph.label;
  for (char& ch : topology) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0 && ch != '.' && ch != '-') {
      ch = '_';
    }
  }
  return {topology, gpu_architecture(), 0};
}

// The entries of a document as it lies in a file; -1 when it holds no kernel_cache array.
std::int64_t entries_in_file(const fs::path& path) {
  boost::system::error_code ec;
  const json::value document = json::parse(dnngraph::testing::slurp(path), ec);
  const json::object* top = ec ? nullptr : document.if_object();
  const json::value* entries = top == nullptr ? nullptr : top->if_contains("kernel_cache");
  return entries != nullptr && entries->is_array()
             ? static_cast<std::int64_t>(entries->as_array().size())
             : -1;
}

// A build as the first process saw it, and the file its cache went to.
struct Saved {
  std::string name;
  std::string topology;
  std::string build = "not run";  // "ok", or "CODE: message": cuDNN's refusal
  double build_ms = 0;
  std::int64_t entries = -1;  // size() after the build
  bool written = false;       // save_if_changed wrote the file
  std::int64_t entries_written = -1;
  // What another process loads: the entries, or none where from_json leaves a norm graph's out
  // (known issue kernel-cache-loaded-norm-crash).
  std::int64_t entries_expected_loaded = -1;
  std::uintmax_t bytes = 0;
};

std::vector<Saved>& saved() {
  static std::vector<Saved> all;
  return all;
}

// The first process's store, in a folder of its own (kept when a check failed).
dnngraph::KernelCacheStore& first_store() {
  static dnngraph::KernelCacheStore store(
      dnngraph::testing::scratch("kernel-cache-persist", "store"));
  return store;
}

// Builds the graph on a cache from the store and saves the cache, recording what happened. A
// failure ends this graph only: the case's other graphs (pointwise modes) still run.
void build_and_save(const NodeCase& c, const NodeGraph& graph, const dnngraph::Handle& handle) {
  const dnngraph::KernelCacheKey key = key_of(c, graph);
  Saved& s = saved().emplace_back(Saved{.name = full_name(c, graph), .topology = key.topology});
  dnngraph::KernelCacheStore& store = first_store();
  auto stored = store.load_or_create(key);
  if (!stored) {
    BOOST_ERROR("load_or_create: " << describe(stored));
    return;
  }
  BOOST_TEST(!stored->loaded, "a fresh folder already held " << stored->path);

  dnngraph::Graph g = graph.make();
  g.set_dynamic_shape_enabled(true).set_kernel_cache(stored->cache);
  const auto start = std::chrono::steady_clock::now();
  const auto built = g.build(handle, dnngraph::test::case_heuristics());
  s.build_ms = ms_since(start);
  s.build = describe(built);
  BOOST_TEST_MESSAGE(s.name << ": " << (built ? "built" : "cuDNN refused it") << " in "
                            << fixed(s.build_ms)
                            << " ms: " << (built ? g.plan_info()->describe() : s.build));
  if (!stored->cache->is_built()) {
    BOOST_ERROR("the build did not reach the kernel cache, so nothing persists: " << s.build);
    return;
  }
  const auto size = stored->cache->size();
  if (!size) {
    BOOST_ERROR("size(): " << describe(size));
    return;
  }
  s.entries = *size;

  const auto wrote = store.save_if_changed(*stored->cache);
  if (!wrote || !*wrote) {
    BOOST_ERROR("save_if_changed: " << (wrote ? "wrote nothing for a cache built for the first time"
                                              : describe(wrote)));
    return;
  }
  s.written = true;
  std::error_code ec;
  s.bytes = fs::file_size(stored->path, ec);
  s.entries_written = entries_in_file(stored->path);
  const std::string text = dnngraph::testing::slurp(stored->path);
  const bool norm = text.find("OPERATION_NORM_FORWARD_DESCRIPTOR") != std::string::npos ||
                    text.find("OPERATION_NORM_BACKWARD_DESCRIPTOR") != std::string::npos;
  s.entries_expected_loaded = norm && dnngraph::detail::workaround_needed(
                                          dnngraph::detail::Defect::KernelCacheLoadedNormCrash)
                                  ? 0
                                  : s.entries;
  BOOST_TEST(s.entries_written == s.entries,
             "the file holds " << s.entries_written << " entries; size() said " << s.entries);
}

// --- the other process ---

// Loads the stored cache of one graph and builds the graph on it again: the report line's fields.
json::object load_and_rebuild(const NodeGraph& graph, const dnngraph::KernelCacheKey& key,
                              dnngraph::KernelCacheStore& store, const dnngraph::Handle& handle) {
  json::object report{{"topology", key.topology}};
  auto stored = store.load_or_create(key);
  if (!stored) {
    report["error"] = "load_or_create: " + describe(stored);
    return report;
  }
  report["loaded"] = stored->loaded;
  report["warning"] = stored->warning;
  dnngraph::Graph g = graph.make();
  g.set_dynamic_shape_enabled(true).set_kernel_cache(stored->cache);
  // What the file brought: size() answers once the cache is bound to the graph's topology, which
  // needs no plan; the build below then finds it bound.
  const auto bound = dnngraph::detail::GraphAccess::build_kernel_cache(g);
  const auto loaded_entries = bound
                                  ? stored->cache->size()
                                  : dnngraph::Result<std::int64_t>(std::unexpected(bound.error()));
  report["entries"] = loaded_entries.value_or(-1);
  report["entries_error"] = loaded_entries ? "" : describe(loaded_entries);
  const auto start = std::chrono::steady_clock::now();
  const auto built = g.build(handle, dnngraph::test::case_heuristics());
  report["rebuild_ms"] = ms_since(start);
  report["rebuild"] = describe(built);
  report["hit"] = built && g.plan_info() && g.plan_info()->kernel_cache_hit;
  report["entries_after"] = stored->cache->size().value_or(-1);
  return report;
}

// Runs child_test in a new process of this binary over the store's folder.
dnngraph::testing::ChildOutcome run_child(const fs::path& folder) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    dnngraph::testing::ChildOutcome not_started;
    not_started.ended = "not started: /proc/self/exe: " + ec.message();
    return not_started;
  }
  // Its Boost.Test log goes to the pipe; no results report (the exit status is the verdict).
  return dnngraph::testing::run_process(
      {self.string(), "--run_test=" + std::string(child_test), "--log_level=test_suite",
       "--report_level=no", "--color_output=false", "--", folder.string()},
      dnngraph::testing::this_environment());
}

// The child's report lines by topology, the topology it started last, and the rest of its output
// (its Boost.Test log).
struct ChildReports {
  std::map<std::string, json::object> by_topology;
  std::string last_started;
  std::string log;
};

ChildReports parse_reports(const std::string& output) {
  ChildReports reports;
  std::size_t at = 0;
  while (at < output.size()) {
    std::size_t end = output.find('\n', at);
    end = end == std::string::npos ? output.size() : end;
    const std::string_view line(output.data() + at, end - at);
    at = end + 1;
    if (!line.starts_with(report_prefix)) {
      reports.log.append(line).append("\n");
      continue;
    }
    boost::system::error_code ec;
    json::value value = json::parse(line.substr(report_prefix.size()), ec);
    if (ec || !value.is_object()) {
      continue;
    }
    json::object& report = value.as_object();
    if (const json::value* started = report.if_contains("started"); started != nullptr) {
      reports.last_started = json::value_to<std::string>(*started);
    } else if (const json::value* topology = report.if_contains("topology"); topology != nullptr) {
      reports.by_topology[json::value_to<std::string>(*topology)] = std::move(report);
    }
  }
  return reports;
}

// --- the table ---

std::string text_of(const json::object& report, std::string_view field) {
  const json::value* v = report.if_contains(field);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}
std::int64_t number_of(const json::object& report, std::string_view field) {
  const json::value* v = report.if_contains(field);
  return v != nullptr && v->is_int64() ? v->as_int64() : -1;
}
double real_of(const json::object& report, std::string_view field) {
  const json::value* v = report.if_contains(field);
  return v != nullptr && v->is_number() ? v->to_number<double>() : -1;
}
bool flag_of(const json::object& report, std::string_view field) {
  const json::value* v = report.if_contains(field);
  return v != nullptr && v->is_bool() && v->as_bool();
}

// "NoEngine" of "NoEngine: no engine ...".
std::string code_of(const std::string& outcome) { return outcome.substr(0, outcome.find(':')); }

std::string shortened(std::string text, std::size_t most) {
  for (char& ch : text) {
    if (ch == '\n' || ch == '\t') {
      ch = ' ';
    }
  }
  return text.size() <= most ? text : text.substr(0, most) + "...";
}

void print_row(const std::string& name, const std::string& first, const std::string& entries,
               const std::string& bytes, const std::string& loaded,
               const std::string& loaded_entries, const std::string& rebuild) {
  std::array<char, 512> line{};
  std::snprintf(line.data(), line.size(), "%-58s %-18s %7s %9s %-9s %7s  %s", name.c_str(),
                first.c_str(), entries.c_str(), bytes.c_str(), loaded.c_str(),
                loaded_entries.c_str(), rebuild.c_str());
  std::cout << line.data() << "\n";
}

struct Counts {
  int skipped_cases = 0, saved = 0, with_entries = 0, refused = 0;
  int loaded = 0, set_aside = 0, not_loaded = 0, sizes_agree = 0;
  int hits = 0, misses = 0, refused_again = 0, rebuild_failed = 0;
};

// One saved cache: its row of the table, and the checks on what the other process saw.
void check_and_print(const Saved& s, const ChildReports& reports, Counts& counts) {
  const bool built = s.build == "ok";
  const std::string first =
      built ? "built " + fixed(s.build_ms) + " ms" : "refused: " + code_of(s.build);
  const std::string entries =
      s.entries_written == s.entries
          ? std::to_string(s.entries)
          : std::to_string(s.entries) + "/" + std::to_string(s.entries_written);
  counts.refused += built ? 0 : 1;
  if (!s.written) {
    print_row(s.name, first, entries, "-", "not saved", "-", "-");
    return;
  }
  ++counts.saved;
  counts.with_entries += s.entries > 0 ? 1 : 0;
  const auto found = reports.by_topology.find(s.topology);
  if (found == reports.by_topology.end()) {
    ++counts.not_loaded;
    print_row(s.name, first, entries, std::to_string(s.bytes), "no", "-",
              reports.last_started == s.topology ? "the other process died loading it"
                                                 : "the other process did not report it");
    BOOST_ERROR(s.name << ": the other process did not report loading " << s.topology);
    return;
  }
  const json::object& r = found->second;
  const std::string warning = text_of(r, "warning");
  const bool loaded = flag_of(r, "loaded") && warning.empty();
  counts.loaded += loaded ? 1 : 0;
  counts.set_aside += warning.empty() ? 0 : 1;
  counts.not_loaded += loaded || !warning.empty() ? 0 : 1;
  const std::int64_t loaded_entries = number_of(r, "entries");
  counts.sizes_agree +=
      loaded && loaded_entries == s.entries_expected_loaded && s.entries_written == s.entries ? 1
                                                                                              : 0;

  const std::string rebuild = text_of(r, "rebuild");
  const std::int64_t after = number_of(r, "entries_after");
  std::string rebuilt;
  if (rebuild != "ok") {
    const bool again = !built;
    counts.refused_again += again ? 1 : 0;
    counts.rebuild_failed += again ? 0 : 1;
    rebuilt = (again ? "refused again: " : "FAILED: ") + code_of(rebuild);
  } else if (s.entries > 0) {
    const bool hit = flag_of(r, "hit") && after == loaded_entries;
    counts.hits += hit ? 1 : 0;
    counts.misses += hit ? 0 : 1;
    rebuilt = (hit ? "hit "
                   : "no hit (" + std::to_string(loaded_entries) + " -> " + std::to_string(after) +
                         " entries) ") +
              fixed(real_of(r, "rebuild_ms")) + " ms";
  } else {
    rebuilt = "built " + fixed(real_of(r, "rebuild_ms")) + " ms (" + std::to_string(after) +
              " entries; none saved)";
  }
  print_row(s.name, first, entries, std::to_string(s.bytes),
            loaded ? "yes" : (warning.empty() ? "no" : "set aside"), std::to_string(loaded_entries),
            rebuilt);
  if (!built) {
    std::cout << "    cuDNN: " << shortened(s.build, 200) << "\n";
  }

  BOOST_TEST_CONTEXT(s.name) {
    BOOST_TEST(text_of(r, "error").empty(), text_of(r, "error"));
    BOOST_TEST(warning.empty(), "the other process set the file aside: " << warning);
    BOOST_TEST(flag_of(r, "loaded"), "the other process did not load the file");
    BOOST_TEST(loaded_entries == s.entries_expected_loaded,
               "entries loaded " << loaded_entries << " (" << text_of(r, "entries_error")
                                 << "), saved " << s.entries << ", expected to load "
                                 << s.entries_expected_loaded);
    BOOST_TEST((!built || rebuild == "ok"),
               "built in the first process, not on the loaded cache: " << rebuild);
  }
}

// saved_in_one_process/for_conv_dgrad, ...: one case per entry of the table, registered before
// the suite below, so they run first.
const auto* const saving =
    dnngraph::test::every_node::register_cases("saved_in_one_process", [](const NodeCase& c) {
      auto handle = dnngraph::Handle::create();
      BOOST_TEST_REQUIRE(handle.has_value(), "Handle::create: " << describe(handle));
      dnngraph::test::every_node::for_each_graph(
          c, [&](const NodeGraph& graph) { build_and_save(c, graph, *handle); });
    });
}  // namespace

BOOST_AUTO_TEST_SUITE(loaded_in_another_process)

BOOST_AUTO_TEST_CASE(every_saved_cache_loads_and_rebuilds) {
  const fs::path& folder = first_store().folder();
  std::cout << "kernel cache persistence per node kind: cuDNN "
            << dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()) << " ("
            << dnngraph::KernelCache::introspection_path() << " counters), " << gpu_architecture()
            << ", store " << folder.string() << "\n";
  std::cout << std::flush;  // before the other process writes to the standard error they share
  const dnngraph::testing::ChildOutcome child = run_child(folder);
  const ChildReports reports = parse_reports(child.output);
  if (child.ended == "exit 77") {
    // Not its log: it says "skipped: no CUDA device", which CTest would take for this test's skip.
    BOOST_ERROR("the other process found no CUDA device (exit 77)");
  } else {
    BOOST_TEST(child.ended == "exit 0", "the other process ended with " << child.ended
                                                                        << "; its log:\n"
                                                                        << reports.log);
  }

  print_row("case", "first process", "entries", "bytes", "loaded", "entries", "second process");
  Counts counts;
  for (const NodeCase& c : cases()) {
    if (!runs_here(c)) {
      ++counts.skipped_cases;
      std::cout << c.name << ": skipped: " << dnngraph::backend::too_old_message(*c.needs) << "\n";
      continue;
    }
    for (const NodeGraph& graph : c.graphs) {
      const std::string topology = key_of(c, graph).topology;
      for (const Saved& s : saved()) {
        if (s.topology == topology) {
          check_and_print(s, reports, counts);
        }
      }
    }
  }
  std::cout << "summary: " << counts.saved << " caches saved (" << counts.with_entries
            << " with entries), " << counts.refused << " builds refused by cuDNN, "
            << counts.skipped_cases << " cases skipped (cuDNN too old); in another process "
            << counts.loaded << " loaded, " << counts.set_aside << " set aside, "
            << counts.not_loaded << " not loaded, " << counts.sizes_agree
            << " with as many entries as saved; rebuilt " << counts.hits << " as hits, "
            << counts.misses << " without, " << counts.refused_again << " refused again, "
            << counts.rebuild_failed << " failed\n";

  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    BOOST_TEST(entry.path().extension() != ".damaged", "set aside: " << entry.path());
  }
  const auto& results = boost::unit_test::results_collector.results(
      boost::unit_test::framework::current_test_case().p_id);
  if (results.passed()) {
    fs::remove_all(folder, ec);
  } else {
    std::cout << "the store is kept: " << folder.string() << "\n";
  }
}

// The other process: over the folder given after "--", every stored cache of a case that runs
// here, loaded and built on again; one report line each, after a line naming it (so a crash
// points at the cache that caused it).
BOOST_AUTO_TEST_CASE(in_the_child, *boost::unit_test::disabled()) {
  const auto& master = boost::unit_test::framework::master_test_suite();
  BOOST_TEST_REQUIRE(master.argc == 2, "usage: --run_test=" << child_test << " -- FOLDER");
  dnngraph::KernelCacheStore store(master.argv[1]);
  auto handle = dnngraph::Handle::create();
  BOOST_TEST_REQUIRE(handle.has_value(), "Handle::create: " << describe(handle));
  for (const NodeCase& c : cases()) {
    if (!runs_here(c)) {
      continue;
    }
    for (const NodeGraph& graph : c.graphs) {
      const dnngraph::KernelCacheKey key = key_of(c, graph);
      const auto name = dnngraph::KernelCacheStore::file_name(key);
      std::error_code ec;
      if (!name || !fs::exists(store.folder() / *name, ec)) {
        continue;  // the first process did not save it
      }
      // Flushed at once: the line before a crash names the cache it happened on.
      std::cout << report_prefix << json::serialize(json::object{{"started", key.topology}}) << "\n"
                << std::flush;
      std::cout << report_prefix << json::serialize(load_and_rebuild(graph, key, store, *handle))
                << "\n"
                << std::flush;
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
