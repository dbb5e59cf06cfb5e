// Persistence across processes: process 1 builds a dynamic topology (fp16 matmul + bias + ReLU,
// fp16 NHWC conv 3x3 + bias + ReLU, bf16 layernorm inference over 256 features), fills its
// KernelCache to N entries and saves it with to_json(); process 2 loads the document into a fresh
// cache and builds another shape of the topology; process 3 builds that shape cold. Each step is
// a child process of its own, so nothing compiled in one is in another. Then the same through a
// KernelCacheStore folder: process 4 builds, fills and save_if_changed()s, process 5
// load_or_create()s and builds the other shape (the store's warm start). A row per topology and
// N; its verdict is issue 33's: the document's load plus the first build no slower than cold.
// N entries: after the first build, build_plan_at(1, 2, ...) over the ranked candidates until
// size() reaches N or they run out (a runtime-compiled candidate that builds inserts its kernel;
// one that fails is skipped); the row says how many it reached.
// The driver's JIT cache (CUDA_CACHE_PATH) would make a "cold" process warm: the table is taken
// twice, with it isolated (every step a fresh empty CUDA_CACHE_PATH of its own: what the kernel
// cache alone gives) and kept (a deployed server's restarts: save and store-save start from an
// empty CUDA_CACHE_PATH; load and cold each get a copy of save's as save left it, store-load one
// of store-save's, so load and cold find the same driver cache and neither sees the other's).
//   bench_kernel_cache_persist [isolated|kept] [--entries 1,2,10]
//                              [--topologies matmul,conv,layernorm] [--repeat N]
//       all steps of every row (both modes, those entry counts and topologies by default);
//       --repeat N (1 to 20, default 1) runs the load and cold steps N times each, alternately,
//       each in a new process with its own JIT folder as the mode says, and compares their
//       medians: a build that compiles varies by tens of percent from one process to the next,
//       more than the document's load costs, so one pair of processes cannot answer the question
//   bench_kernel_cache_persist STEP TOPO FILE N
//       one step, internal (the table runs it): STEP save|load|cold|store-save|store-load, TOPO
//       matmul|conv|layernorm, FILE the document (the store's folder for the store steps), N the
//       entries save and store-save fill the cache to (the other steps take it and ignore it).
//       Prints one line "RESULT STEP ms=<build> doc_ms=<load> doc_again_ms=<load> hit=0|1
//       size=<entries> ...": the load step times from_json twice, the second time into another
//       cache, to tell what the document costs from what cuDNN's first use of the GPU in a
//       process costs (a cold build pays that too); the JSON line gives it as load_doc_again_ms.
// Exit 77 without a CUDA device, 1 when a step failed, 2 for a bad command line.
import dnngraph;

#include "arguments.hpp"
#include "child_steps.hpp"
#include "persist_graphs.hpp"
#include "rank_test.hpp"
#include "timing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace {

using dnngraph_bench::Clock;
using dnngraph_bench::exit_no_device;
using dnngraph_bench::field;
using dnngraph_bench::fixed;
using dnngraph_bench::JsonLine;
using dnngraph_bench::ms_since;
using dnngraph_bench::persist::name_of;
using dnngraph_bench::persist::store_name_of;
using dnngraph_bench::persist::Topology;

// Attention has no dynamic-shape graph to load a kernel cache into (persist_graphs.hpp).
constexpr std::array all_topologies{Topology::Matmul, Topology::Conv, Topology::Layernorm};

std::optional<Topology> topology_named(std::string_view name) {
  return dnngraph_bench::persist::topology_named(name, all_topologies);
}

// After the first build: candidates 1, 2, ... in heuristics order until the cache holds
// `entries` or they run out. Prints what it reached; returns false only for an error of the
// cache itself.
bool fill(dnngraph::Graph& g, const dnngraph::Handle& handle, const dnngraph::KernelCache& kc,
          std::int64_t entries) {
  const auto start = Clock::now();
  auto size = kc.size();
  auto count = g.plan_count();
  if (!count) {
    std::printf("plan_count: %s\n", count.error().message.c_str());
  }
  std::int64_t tried = 0, skipped = 0;
  for (std::int64_t i = 1; size && count && i < *count && *size < entries; ++i) {
    ++tried;
    if (auto built = g.build_plan_at(handle, i); !built) {
      ++skipped;
    }
    size = kc.size();
  }
  if (!size) {
    std::printf("size: %s\n", size.error().message.c_str());
    return false;
  }
  std::printf("FILL asked=%lld reached=%lld candidates=%lld tried=%lld skipped=%lld ms=%.1f\n",
              static_cast<long long>(entries), static_cast<long long>(*size),
              static_cast<long long>(count.value_or(-1)), static_cast<long long>(tried),
              static_cast<long long>(skipped), ms_since(start));
  return true;
}

int step(std::string_view what, Topology topo, const std::string& file, std::int64_t entries) {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("needs a CUDA device\n");
    return exit_no_device;
  }
  const bool saves = what == "save" || what == "store-save";
  auto kc = std::make_shared<dnngraph::KernelCache>();
  const bool with_store = what.starts_with("store-");
  std::unique_ptr<dnngraph::KernelCacheStore> store;
  // The document's load: reading the file and from_json, or load_or_create (both read and
  // parse the document); 0 for the steps that load none.
  double doc_ms = 0;
  double doc_again_ms = 0;  // load: the same document again, into another cache
  if (with_store) {
    const auto start = Clock::now();
    store = std::make_unique<dnngraph::KernelCacheStore>(file);
    const dnngraph::KernelCacheKey key{std::string(store_name_of(topo)), "sm_90", 0};
    auto stored = store->load_or_create(key);
    doc_ms = ms_since(start);
    if (!stored) {
      std::printf("load_or_create: %s\n", stored.error().message.c_str());
      return 1;
    }
    if (stored->loaded != (what == "store-load") || !stored->warning.empty()) {
      std::printf("load_or_create: loaded %d, warning '%s'\n", stored->loaded ? 1 : 0,
                  stored->warning.c_str());
      return 1;
    }
    kc = stored->cache;
  }
  if (what == "load") {
    const auto start = Clock::now();
    std::ifstream in(file);
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto loaded = kc->from_json(json);
    doc_ms = ms_since(start);
    if (!loaded) {
      std::printf("from_json: %s\n", loaded.error().message.c_str());
      return 1;
    }
    // The same text into another cache: what the document itself costs, against the first
    // load's, which may also pay cuDNN's first use of the GPU in this process (a cold build
    // pays that too).
    const auto again_start = Clock::now();
    auto again = std::make_shared<dnngraph::KernelCache>()->from_json(json);
    doc_again_ms = ms_since(again_start);
    if (!again) {
      std::printf("from_json again: %s\n", again.error().message.c_str());
      return 1;
    }
  }
  auto g = dnngraph_bench::persist::graph_of(topo, !saves, kc);
  const auto start = Clock::now();
  auto built = g.build(*handle, {dnngraph::HeuristicMode::A});
  const double ms = ms_since(start);
  if (!built) {
    std::printf("build: %s\n", built.error().message.c_str());
    return 1;
  }
  const auto info = g.plan_info();  // the first build's plan (fill() moves the graph on)
  if (saves && !fill(g, *handle, *kc, entries)) {
    return 1;
  }
  if (what == "save") {
    auto json = kc->to_json();
    if (!json) {
      std::printf("to_json: %s\n", json.error().message.c_str());
      return 1;
    }
    std::ofstream(file) << *json;
  }
  if (with_store) {
    auto saved = store->save_if_changed(*kc);
    if (!saved) {
      std::printf("save_if_changed: %s\n", saved.error().message.c_str());
      return 1;
    }
    std::printf("store: save_if_changed wrote %d\n", *saved ? 1 : 0);
  }
  std::printf("RESULT %.*s ms=%.3f doc_ms=%.3f doc_again_ms=%.3f hit=%d size=%lld  (%s)\n",
              static_cast<int>(what.size()), what.data(), ms, doc_ms, doc_again_ms,
              info && info->kernel_cache_hit ? 1 : 0,
              static_cast<long long>(kc->size().value_or(-1)),
              info ? info->describe().c_str() : "no plan info");
  return 0;
}

// ---- the table: every step of a row in a child process -------------------------------------

// What one step's child printed on its RESULT (and FILL) line.
struct StepResult {
  bool ok = false;            // a RESULT line came and the child exited 0
  double ms = -1;             // the first build
  double doc_ms = 0;          // loading the document before it
  double doc_again_ms = 0;    // load: loading it again into another cache
  bool hit = false;           // the first build's plan came from the kernel cache
  std::int64_t size = -1;     // entries after the step
  std::int64_t reached = -1;  // save steps: entries the fill reached
  [[nodiscard]] double first_ms() const { return doc_ms + ms; }
};

struct Child {
  StepResult result;
  int exit_code = 1;
};

Child run_step(const char* self, std::string_view what, Topology topo, const std::string& where,
               std::int64_t entries, const std::string& jit) {
  std::string command = "CUDA_CACHE_PATH=" + jit;
  command.append(" ").append(self).append(" ").append(what).append(" ").append(name_of(topo));
  command.append(" ").append(where).append(" ").append(std::to_string(entries));
  const auto output = dnngraph_bench::run_child(
      command, std::string(name_of(topo)) + " " + std::to_string(entries));
  Child child;
  child.exit_code = output.exit_code;
  bool got_result = false;
  for (const std::string_view line : output.lines) {
    if (line.starts_with("FILL ")) {
      child.result.reached = static_cast<std::int64_t>(field(line, "reached").value_or(-1));
    } else if (line.starts_with("RESULT ")) {
      got_result = true;
      child.result.ms = field(line, "ms").value_or(-1);
      child.result.doc_ms = field(line, "doc_ms").value_or(0);
      child.result.doc_again_ms = field(line, "doc_again_ms").value_or(0);
      child.result.hit = field(line, "hit").value_or(0) != 0;
      child.result.size = static_cast<std::int64_t>(field(line, "size").value_or(-1));
    }
  }
  child.result.ok = got_result && child.exit_code == 0;
  return child;
}

struct Row {
  Topology topology = Topology::Matmul;
  std::int64_t asked = 0;
  int repeat = 1;
  // load and cold: the median of the runs (by load + first build, and by build), every run kept
  StepResult save, load, cold, store_save, store_load;
  std::vector<StepResult> loads, colds;
};

// The median run by `key` (the lower middle one of an even count); a failed run makes the
// result failed.
template <class Key>
StepResult median_of(std::vector<StepResult> runs, Key key) {
  if (runs.empty()) {
    return {};
  }
  const bool all_ok = std::ranges::all_of(runs, &StepResult::ok);
  std::ranges::sort(runs, {}, key);
  StepResult median = runs[(runs.size() - 1) / 2];
  median.ok = all_ok;
  return median;
}

// Runs a row's five steps. The exit code of a step that could not run at all (77: no device).
int run_row(const char* self, bool isolated, Row& row) {
  const std::string tag = std::string(name_of(row.topology)) + "-" + std::to_string(row.asked);
  const std::string file = dnngraph_bench::scratch_path("kernel-cache-" + tag) + ".json";
  const std::string folder = dnngraph_bench::scratch_path("store-" + tag);
  std::error_code ignored;
  std::filesystem::remove(file, ignored);  // a failed save must not leave an older document
  std::filesystem::remove_all(folder, ignored);
  dnngraph_bench::JitFolders jit_folders(isolated, tag);
  // save, then load and cold `repeat` times in turn, then the store's pair (its load step saves
  // what it compiled, so it runs once, against the folder store-save left).
  row.loads.assign(static_cast<std::size_t>(row.repeat), StepResult{});
  row.colds.assign(static_cast<std::size_t>(row.repeat), StepResult{});
  std::vector<std::pair<std::string_view, StepResult*>> steps{{"save", &row.save}};
  for (std::size_t i = 0; i < row.loads.size(); ++i) {
    steps.emplace_back("load", &row.loads[i]);
    steps.emplace_back("cold", &row.colds[i]);
  }
  steps.emplace_back("store-save", &row.store_save);
  steps.emplace_back("store-load", &row.store_load);
  int code = 0;
  for (const auto& [what, result] : steps) {
    const std::string jit =
        jit_folders.next(what, what.ends_with("save") ? dnngraph_bench::JitFolders::Step::Save
                                                      : dnngraph_bench::JitFolders::Step::Restart);
    if (jit.empty()) {
      std::fprintf(stderr, "bench_kernel_cache_persist: no temporary folder for CUDA_CACHE_PATH\n");
      return 1;
    }
    const Child child = run_step(self, what, row.topology,
                                 what.starts_with("store-") ? folder : file, row.asked, jit);
    *result = child.result;
    if (child.exit_code == exit_no_device) {
      code = exit_no_device;
      break;
    }
  }
  std::filesystem::remove(file, ignored);
  std::filesystem::remove_all(folder, ignored);
  row.load = median_of(row.loads, &StepResult::first_ms);
  row.cold = median_of(row.colds, &StepResult::ms);
  return code;
}

// Every run's load + first build (`first`) or cold build, in run order, joined by `separator`:
// "361.2 368.0 380.4" for the table, "361.234,368.012,380.407" for the JSON line.
std::string runs_joined(const std::vector<StepResult>& runs, bool first, const char* separator,
                        const char* format, const char* failed) {
  std::string text;
  for (const StepResult& r : runs) {
    text += (&r == runs.data() ? "" : separator) +
            (r.ok ? fixed(first ? r.first_ms() : r.ms, format) : std::string(failed));
  }
  return text;
}

std::string runs_json(const std::vector<StepResult>& runs, bool first) {
  return "[" + runs_joined(runs, first, ",", "%.3f", "null") + "]";
}

// "10", or "10 asked, 7 reached" when a save step's fill fell short ("?": the step failed).
std::string entries_text(const Row& r) {
  const auto reached = [](const StepResult& s) {
    return s.reached >= 0 ? std::to_string(s.reached) : std::string("?");
  };
  std::string asked = std::to_string(r.asked);
  if (r.save.reached == r.asked && r.store_save.reached == r.asked) {
    return asked;
  }
  std::string text = asked + " asked, " + reached(r.save) + " reached";
  if (r.store_save.reached != r.save.reached) {
    text += " (store " + reached(r.store_save) + ")";
  }
  return text;
}

// "12.3 (0.4+11.9) hit": the document's load plus the first build, then each.
std::string warm_text(const StepResult& s) {
  if (!s.ok) {
    return "failed";
  }
  return fixed(s.first_ms(), "%.1f") + " (" + fixed(s.doc_ms, "%.1f") + "+" + fixed(s.ms, "%.1f") +
         ")" + (s.hit ? " hit" : "");
}

std::string cold_text(const StepResult& s) {
  return s.ok ? fixed(s.ms, "%.1f") + (s.hit ? " hit" : "") : std::string("failed");
}

std::string ratio_text(const StepResult& warm, const StepResult& cold) {
  if (!warm.ok || !cold.ok || warm.first_ms() <= 0) {
    return "-";
  }
  return fixed(cold.ms / warm.first_ms(), "%.2fx");
}

// Issue 33's question: the document's load plus the first build no slower than cold.
std::optional<bool> no_slower(const StepResult& warm, const StepResult& cold) {
  if (!warm.ok || !cold.ok) {
    return std::nullopt;
  }
  return warm.first_ms() <= cold.ms;
}

// With the load and cold steps run several times (--repeat 2 or more): the one-sided exact rank
// test's p-value that load + first build is slower than cold (rank_test.hpp); nullopt with one
// run each or a failed run. "Measurably slower" is p < 0.05 (5 and 5 runs, all the loads slower
// than every cold: p = 1/252).
std::optional<double> slower_p(const Row& r) {
  if (r.loads.size() < 2 || r.colds.size() < 2 || !std::ranges::all_of(r.loads, &StepResult::ok) ||
      !std::ranges::all_of(r.colds, &StepResult::ok)) {
    return std::nullopt;
  }
  std::vector<double> loads, colds;
  for (const StepResult& s : r.loads) loads.push_back(s.first_ms());
  for (const StepResult& s : r.colds) colds.push_back(s.ms);
  return dnngraph_bench::rank_p_greater(loads, colds);
}
constexpr double measurably = 0.05;

const char* verdict_text(std::optional<bool> verdict) {
  if (!verdict) {
    return "no result (a step failed)";
  }
  return *verdict ? "yes" : "no";
}

// One row as one line of JSON; null for what a failed step did not give.
std::string json_line(const Row& r, bool isolated) {
  JsonLine json;
  const auto ms = [](const StepResult& s, double value) {
    return s.ok ? fixed(value) : std::string("null");
  };
  const auto hit = [](const StepResult& s) { return s.ok ? std::optional(s.hit) : std::nullopt; };
  json.add("topology", JsonLine::quoted(name_of(r.topology)));
  json.add("entries_asked", std::to_string(r.asked));
  json.add("entries_reached", std::to_string(r.save.reached));
  json.add("store_entries_reached", std::to_string(r.store_save.reached));
  json.add("jit", isolated ? "\"isolated\"" : "\"kept\"");
  json.add("load_ms", ms(r.load, r.load.first_ms()));
  json.add("load_doc_ms", ms(r.load, r.load.doc_ms));
  json.add("load_doc_again_ms", ms(r.load, r.load.doc_again_ms));
  json.add("load_hit", JsonLine::flag(hit(r.load)));
  json.add("load_size", std::to_string(r.load.size));
  json.add("store_load_ms", ms(r.store_load, r.store_load.first_ms()));
  json.add("store_doc_ms", ms(r.store_load, r.store_load.doc_ms));
  json.add("store_load_hit", JsonLine::flag(hit(r.store_load)));
  json.add("store_load_size", std::to_string(r.store_load.size));
  json.add("cold_ms", ms(r.cold, r.cold.ms));
  json.add("cold_hit", JsonLine::flag(hit(r.cold)));
  json.add("repeat", std::to_string(r.repeat));
  json.add("load_runs_ms", runs_json(r.loads, true));
  json.add("cold_runs_ms", runs_json(r.colds, false));
  json.add("load_no_slower", JsonLine::flag(no_slower(r.load, r.cold)));
  json.add("store_load_no_slower", JsonLine::flag(no_slower(r.store_load, r.cold)));
  const std::optional<double> p = slower_p(r);
  json.add("load_slower_p", p ? fixed(*p, "%.4f") : std::string("null"));
  json.add("load_measurably_slower",
           JsonLine::flag(p ? std::optional(*p < measurably) : std::nullopt));
  return json.text();
}

void print_rows(const std::vector<Row>& rows, bool isolated) {
  const char* format = "%-10s %-24s %-24s %-24s %-12s %-10s %s\n";
  std::printf("\n");
  std::printf(format, "topology", "entries", "load ms (doc+build)", "store ms (doc+build)",
              "cold ms", "cold/load", "cold/store");
  for (const Row& r : rows) {
    std::printf(format, name_of(r.topology), entries_text(r).c_str(), warm_text(r.load).c_str(),
                warm_text(r.store_load).c_str(), cold_text(r.cold).c_str(),
                ratio_text(r.load, r.cold).c_str(), ratio_text(r.store_load, r.cold).c_str());
  }
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%s, entries %s: load + first build <= cold: %s; store + first build <= cold: %s\n",
                name_of(r.topology), entries_text(r).c_str(),
                verdict_text(no_slower(r.load, r.cold)),
                verdict_text(no_slower(r.store_load, r.cold)));
  }
  if (!rows.empty() && rows.front().repeat > 1) {
    std::printf("\nload and cold: medians of %d runs each (above); every run, in order:\n",
                rows.front().repeat);
    for (const Row& r : rows) {
      const std::optional<double> p = slower_p(r);
      const std::string slower =
          p ? fixed(*p, *p < measurably ? "yes (p = %.4f)" : "no (p = %.4f)") : "no result";
      std::printf(
          "%s, entries %s: load + first build %s; cold %s; measurably slower (rank test, "
          "p < %.2f): %s\n",
          name_of(r.topology), entries_text(r).c_str(),
          runs_joined(r.loads, true, " ", "%.1f", "failed").c_str(),
          runs_joined(r.colds, false, " ", "%.1f", "failed").c_str(), measurably, slower.c_str());
    }
  }
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%s\n", json_line(r, isolated).c_str());
  }
}

struct Options {
  std::optional<bool> isolated;  // nullopt: both modes
  std::vector<std::int64_t> entries{1, 2, 10};
  std::vector<Topology> topologies{all_topologies.begin(), all_topologies.end()};
  int repeat = 1;
};

std::optional<std::int64_t> entry_count(std::string_view text) {
  return dnngraph_bench::whole_number(text, 1, 1000);
}

std::optional<Options> parse_options(int argc, char* argv[]) {
  Options options;
  const std::array<dnngraph_bench::ListOption, 3> lists{{
      {"--entries", dnngraph_bench::list_into(options.entries, entry_count)},
      {"--topologies", dnngraph_bench::list_into(options.topologies, topology_named)},
      {"--repeat",
       [&options](std::string_view text) {
         const auto count = dnngraph_bench::whole_number(text, 1, 20);
         options.repeat = count ? static_cast<int>(*count) : options.repeat;
         return count.has_value();
       }},
  }};
  const bool read = dnngraph_bench::parse_table_options(argc, argv, options.isolated, lists);
  return read ? std::optional(options) : std::nullopt;
}

bool is_step(std::string_view what) {
  return what == "save" || what == "load" || what == "cold" || what == "store-save" ||
         what == "store-load";
}

int table(const char* self, bool isolated, const Options& options) {
  std::vector<Row> rows;
  for (const Topology topo : options.topologies) {
    for (const std::int64_t entries : options.entries) {
      Row row;
      row.topology = topo;
      row.asked = entries;
      row.repeat = options.repeat;
      rows.push_back(row);
    }
  }
  const auto failed = [](const Row& row) {
    return !row.save.ok || !row.load.ok || !row.cold.ok || !row.store_save.ok || !row.store_load.ok;
  };
  return dnngraph_bench::run_table(
      "bench_kernel_cache_persist", isolated, std::move(rows),
      [&](Row& row) { return run_row(self, isolated, row); }, failed,
      [isolated](const std::vector<Row>& done) { print_rows(done, isolated); });
}

// --rank-test-check (CTest, no GPU): rank_test.hpp's p-values against ones counted by hand.
int rank_test_check() {
  struct Known {
    std::vector<double> slower, faster;
    double p;
  };
  const std::array<Known, 5> known{{
      {{6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}, 1.0 / 252},  // every load slower: 1 arrangement of 252
      {{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, 1.0},        // every load faster
      {{4, 5, 6}, {1, 2, 3}, 1.0 / 20},
      {{1, 3, 5}, {2, 4, 6}, 16.0 / 20},  // U = 3 of 9; U 0-9 counted 1 1 2 3 3 3 3 2 1 1
      {{2, 3}, {1, 2}, 1.0 / 6},  // U = 3.5 with a tie: compared as U >= 4 (U 0-4: 1 1 2 1 1)
  }};
  bool all = true;
  for (const Known& k : known) {
    const double p = dnngraph_bench::rank_p_greater(k.slower, k.faster);
    const bool right = std::abs(p - k.p) < 1e-12;
    std::printf("rank test: p %.6f, expected %.6f: %s\n", p, k.p, right ? "right" : "WRONG");
    all = all && right;
  }
  return all ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc == 2 && std::string_view(argv[1]) == "--rank-test-check") {
    return rank_test_check();
  }
  if (argc == 5 && is_step(argv[1])) {
    const auto topo = topology_named(argv[2]);
    const auto entries = entry_count(argv[4]);
    if (topo && entries) {
      return step(argv[1], *topo, argv[3], *entries);
    }
  }
  const auto options = argc > 1 && is_step(argv[1]) ? std::nullopt : parse_options(argc, argv);
  if (!options) {
    std::fprintf(
        stderr,
        "usage: bench_kernel_cache_persist [isolated|kept] [--entries 1,2,10]\n"
        "                                  [--topologies matmul,conv,layernorm] [--repeat N]\n"
        "       bench_kernel_cache_persist STEP TOPO FILE N   (one step, internal)\n");
    return 2;
  }
  std::printf("kernel cache across processes, cuDNN %s, %s revision/size\n",
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str(),
              std::string(dnngraph::KernelCache::introspection_path()).c_str());
  return dnngraph_bench::each_jit_mode(
      options->isolated, [&](bool isolated) { return table(argv[0], isolated, *options); });
}
