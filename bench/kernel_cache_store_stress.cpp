// Many processes, one KernelCacheStore folder (issue 33): N worker processes load and save
// continuously while the supervisor SIGKILLs one every few milliseconds, mid-save by
// preference, and starts another. At the end the folder is verified: every file loads, no entry
// a completed save reported is missing, no save waited past its patience without an error,
// killed writers' temporaries go at the next save, nothing was set aside as damaged.
//   bench_kernel_cache_store_stress --folder DIR --processes N --seconds S
//       [--kill-interval-ms M] [--seed X] [--patience-ms P] [--fresh] [--gpu]
// CPU mode (default): the documents are cuDNN's own for three dynamic-shape matmuls, built on
// the CPU (cuDNN 9.19 finalizes a kernel cache without a GPU), with synthetic entries of unique
// engine ids, saved through the store's merged save (detail::replace_merged). --gpu: the public
// API with real kernels (load_or_create, builds of matmul + bias + ReLU checked against the CPU,
// save_if_changed). Exit 0 when every check holds and at least one kill landed mid-save; 1
// otherwise; 77 when the CPU cannot build the documents or --gpu finds no CUDA device.
#include "api/graph.hpp"
#include "api/handle.hpp"
#include "api/kernel_cache.hpp"
#include "api/kernel_cache_store.hpp"
#include "bench/bf16_matmul.hpp"
#include "bench/matmul_graph.hpp"
#include "bench/timing.hpp"
#include "detail/cache/merged_save.hpp"
#include "detail/cache/store_files.hpp"
#include "detail/graph/graph_access.hpp"
#include "tests/support/synthetic_entry.hpp"

#include <boost/json.hpp>

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;
using dnngraph_bench::Clock;
using dnngraph_bench::ms_since;

constexpr int exit_skip = 77;
constexpr std::int64_t ids_per_worker = 100'000;  // engine ids: serial * this + counter

struct Options {
  fs::path folder;
  int processes = 4;
  double seconds = 10;
  int kill_interval_ms = -1;  // -1: 150 on the CPU, 2000 with --gpu (a GPU worker starts slowly)
  std::uint64_t seed = 1;
  int patience_ms = 5000;
  bool fresh = false;
  bool gpu = false;
};

// One worker's slot in memory shared with the supervisor (MAP_SHARED, mapped before the forks).
enum class State : int { Idle = 0, Saving = 1 };
struct Slot {
  std::atomic<int> state{0};
  std::atomic<std::int64_t> saves{0};
};
// Pointers into that mapping: the stop flag, then a slot per worker.
struct Shared {
  std::atomic<bool>* stop = nullptr;
  std::span<Slot> slots;
};

// The topologies a run saves: CPU mode matmuls of k 32, 48, 64; GPU mode matmul + bias + ReLU
// variants.
struct Topology {
  std::string name;
  std::int64_t k = 32;
  bool bias = true;
  bool relu = true;
};
std::vector<Topology> topologies(bool gpu) {
  if (gpu) {
    return {{"stress_mm_bias_relu", 64, true, true},
            {"stress_mm_bias", 64, true, false},
            {"stress_mm_relu", 64, false, true}};
  }
  return {{"stress_k32", 32}, {"stress_k48", 48}, {"stress_k64", 64}};
}

// An entry's identity in a document: engineId and knobChoices (the logged form).
std::string entry_token(const boost::json::value& entry) {
  const auto& key = entry.at("key");
  return std::to_string(key.at("engineId").to_number<std::int64_t>()) + "/" +
         boost::json::serialize(key.at("knobChoices"));
}

std::vector<std::string> tokens_of(std::string_view document) {
  std::vector<std::string> tokens;
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(document, ec);
  if (ec || !doc.is_object() || !doc.as_object().contains("kernel_cache")) {
    return tokens;
  }
  for (const auto& entry : doc.at("kernel_cache").as_array()) {
    tokens.push_back(entry_token(entry));
  }
  return tokens;
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A worker's log: one line per write(2) on an O_APPEND file, so a kill leaves whole lines (the
// supervisor ignores a last line without its '\n').
class Log {
 public:
  explicit Log(const fs::path& file)
      : fd_(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;
  ~Log() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  void line(std::string text) const {
    text += '\n';
    if (fd_ >= 0 && ::write(fd_, text.data(), text.size()) < 0) {
      std::perror("stress log");
    }
  }

 private:
  int fd_;
};

// What every worker shares: its slot, its serial (unique among all started), the options.
struct WorkerContext {
  const Options& options;
  Shared shared;
  int slot = 0;
  std::int64_t serial = 0;
  const std::vector<std::string>& base_documents;  // CPU mode: one per topology
};

// After a load: a file that was there must have loaded, with no warning.
void check_load(const dnngraph::StoredKernelCache& stored, bool existed, const std::string& name,
                const Log& log) {
  if (existed && (!stored.loaded || !stored.warning.empty())) {
    log.line("bad-load " + name + " " + (stored.warning.empty() ? "not loaded" : stored.warning));
  }
}

void log_save(const Log& log, const std::string& name, double elapsed_ms,
              const dnngraph::Result<std::vector<std::string>>& tokens) {
  std::string text;
  if (tokens) {
    text = "saved " + name + " " + std::to_string(elapsed_ms);
    for (const auto& token : *tokens) {
      text += " " + token;
    }
  } else {
    text = "error " + name + " " + std::to_string(elapsed_ms) + " " +
           std::string(dnngraph::to_string(tokens.error().code)) + " " + tokens.error().message;
  }
  log.line(std::move(text));
}

// CPU mode: base document + 1-3 fresh entries, merged into the key's file; 1 in 4 a load.
int cpu_worker(const WorkerContext& context, const Log& log) {
  const auto all = topologies(false);
  std::vector<std::string> names;
  for (const auto& topology : all) {
    auto name = dnngraph::KernelCacheStore::file_name({topology.name, "sm_90", 0});
    if (!name) {
      log.line("bad-load file_name " + name.error().message);
      return 1;
    }
    names.push_back(*name);
  }
  Slot& slot = context.shared.slots[static_cast<std::size_t>(context.slot)];
  std::mt19937_64 rng(context.options.seed * 7919 + static_cast<std::uint64_t>(context.serial));
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::int64_t counter = 0;
  while (!context.shared.stop->load() && counter + 3 < ids_per_worker) {
    const auto t = static_cast<std::size_t>(pick(0, static_cast<int>(all.size()) - 1));
    if (pick(0, 3) == 0) {
      const bool existed = fs::exists(context.options.folder / names[t]);
      auto stored = dnngraph::KernelCacheStore(context.options.folder)
                        .load_or_create({all[t].name, "sm_90", 0});
      if (!stored) {
        log.line("bad-load " + names[t] + " " + stored.error().message);
      } else {
        check_load(*stored, existed, names[t], log);
      }
    }
    boost::json::value doc = boost::json::parse(context.base_documents[t]);
    auto& entries = doc.at("kernel_cache").as_array();
    std::vector<std::string> tokens;
    for (int n = pick(1, 3); n > 0; --n) {
      const std::int64_t engine = context.serial * ids_per_worker + counter++;
      entries.push_back(dnngraph::testing::synthetic_entry(doc.at("operationGraph"), engine));
      tokens.push_back(entry_token(entries.back()));
    }
    const std::string text = boost::json::serialize(doc);
    slot.state = static_cast<int>(State::Saving);
    const auto start = Clock::now();
    auto kept = dnngraph::detail::replace_merged(
        context.options.folder, std::chrono::milliseconds(context.options.patience_ms), names[t],
        text, dnngraph::KernelCache::max_json_bytes);
    const double elapsed = ms_since(start);
    slot.state = static_cast<int>(State::Idle);
    if (kept) {
      slot.saves++;
      log_save(log, names[t], elapsed, tokens);
    } else {
      log_save(log, names[t], elapsed, std::unexpected(kept.error()));
    }
  }
  return 0;
}

// Builds the graph on `cache`, executes it once and checks 16 sampled outputs; empty when right,
// otherwise what went wrong.
std::string run_checked(const dnngraph::Handle& handle, const Topology& topology,
                        const dnngraph_bench::MatmulShape& s,
                        const std::shared_ptr<dnngraph::KernelCache>& cache, std::mt19937_64& rng) {
  using dnngraph_bench::to_bf16;
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto g = dnngraph_bench::matmul_graph(
      s, topology.bias,
      topology.relu ? std::optional(dnngraph::PointwiseMode::ReluFwd) : std::nullopt, cache);
  if (auto built = g.build(handle, {dnngraph::HeuristicMode::A}); !built) {
    return "build-failed " + built.error().message;
  }
  const auto count = [](std::int64_t n) { return static_cast<std::size_t>(n); };
  std::vector<std::uint16_t> a(count(s.b * s.m * s.k)), b(count(s.b * s.k * s.n)),
      bias(topology.bias ? count(s.n) : 0), y(count(s.b * s.m * s.n));
  for (auto* values : {&a, &b, &bias}) {
    for (auto& v : *values) {
      v = to_bf16(static_cast<float>(pick(-8, 8)) / 8.0F);
    }
  }
  const std::int64_t workspace = g.get_workspace_size().value_or(0);
  dnngraph_bench::DeviceBuffer da(a.size() * 2), db(b.size() * 2), dbias(bias.size() * 2 + 2),
      dy(y.size() * 2), dws(static_cast<std::size_t>(std::max<std::int64_t>(workspace, 1)));
  if (da.p == nullptr || db.p == nullptr || dbias.p == nullptr || dy.p == nullptr ||
      dws.p == nullptr) {
    return "execute-failed cudaMalloc";
  }
  cudaMemcpy(da.p, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db.p, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dbias.p, bias.data(), bias.size() * 2, cudaMemcpyHostToDevice);
  cudaMemset(dy.p, 0xFF, y.size() * 2);  // NaN: an element never written fails the check
  std::unordered_map<std::int64_t, void*> pack{{1, da.p}, {2, db.p}, {3, dy.p}};
  if (topology.bias) {
    pack.emplace(4, dbias.p);
  }
  if (auto ran = g.execute(handle, pack, dws.p); !ran) {
    return "execute-failed " + ran.error().message;
  }
  if (cudaMemcpy(y.data(), dy.p, y.size() * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
    return "execute-failed cudaMemcpy";
  }
  for (int sample = 0; sample < 16; ++sample) {
    const std::int64_t bi = pick(0, s.b - 1), i = pick(0, s.m - 1), j = pick(0, s.n - 1);
    const double ref = dnngraph_bench::matmul_reference(s, a, b, bias, topology.relu, bi, i, j);
    const double got = dnngraph_bench::from_bf16(y[count((bi * s.m + i) * s.n + j)]);
    if (!dnngraph_bench::close_to_reference(got, ref)) {
      return "wrong y[" + std::to_string(bi) + "," + std::to_string(i) + "," + std::to_string(j) +
             "] = " + std::to_string(got) + ", reference " + std::to_string(ref);
    }
  }
  return {};
}

// GPU mode: per cycle a new store and cache (below cuDNN 9.27 to_json answers once per cache),
// 1-3 checked builds, then save_if_changed; after a save that wrote, the file's entries are
// logged.
int gpu_worker(const WorkerContext& context, const Log& log) {
  auto handle = dnngraph::Handle::create();
  cudaDeviceProp properties{};
  if (!handle || cudaGetDeviceProperties(&properties, 0) != cudaSuccess) {
    log.line("bad-load no handle: " +
             (handle ? std::string("cudaGetDeviceProperties") : handle.error().message));
    return 1;
  }
  const std::string arch =
      "sm_" + std::to_string(properties.major) + std::to_string(properties.minor);
  const auto all = topologies(true);
  Slot& slot = context.shared.slots[static_cast<std::size_t>(context.slot)];
  std::mt19937_64 rng(context.options.seed * 7919 + static_cast<std::uint64_t>(context.serial));
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  while (!context.shared.stop->load()) {
    const Topology& topology = all[static_cast<std::size_t>(pick(0, 2))];
    dnngraph::KernelCacheStore store(context.options.folder,
                                     std::chrono::milliseconds(context.options.patience_ms));
    const dnngraph::KernelCacheKey key{topology.name, arch, 0};
    const std::string name = dnngraph::KernelCacheStore::file_name(key).value_or("?");
    const bool existed = fs::exists(context.options.folder / name);
    auto stored = store.load_or_create(key);
    if (!stored) {
      log.line("bad-load " + name + " " + stored.error().message);
      continue;
    }
    check_load(*stored, existed, name, log);
    // The first graph has the topology's fixed shape: a new cache's document takes the first
    // build's operation graph, and a save replaces a file of another graph rather than merging.
    const auto graphs = pick(1, 3);
    for (std::int64_t n = 0; n < graphs; ++n) {
      const dnngraph_bench::MatmulShape shape =
          n == 0 ? dnngraph_bench::MatmulShape{1, 64, 64, topology.k}
                 : dnngraph_bench::MatmulShape{pick(1, 4), 64 * pick(1, 8), 64 * pick(1, 8),
                                               64 * pick(1, 8)};
      if (auto failed = run_checked(*handle, topology, shape, stored->cache, rng);
          !failed.empty()) {
        log.line(failed);
      }
    }
    slot.state = static_cast<int>(State::Saving);
    const auto start = Clock::now();
    auto saved = store.save_if_changed(*stored->cache);
    const double elapsed = ms_since(start);
    slot.state = static_cast<int>(State::Idle);
    if (!saved) {
      log_save(log, name, elapsed, std::unexpected(saved.error()));
    } else if (*saved) {
      slot.saves++;
      log_save(log, name, elapsed, tokens_of(slurp(stored->path)));
    }
  }
  return 0;
}

fs::path log_folder(const Options& options) {
  fs::path logs = options.folder;
  logs += ".stress-logs";
  return logs;
}

[[noreturn]] void run_worker(const WorkerContext& context) {
  const Log log(log_folder(context.options) /
                ("worker-" + std::to_string(context.serial) + ".log"));
  _exit(context.options.gpu ? gpu_worker(context, log) : cpu_worker(context, log));
}

// Runs `job` in a child and hands back what it wrote to the pipe and its exit status; the
// supervisor itself loads neither CUDA nor cuDNN before its workers are forked.
std::pair<std::string, int> in_child(int (*job)(int)) {
  int fds[2];
  if (::pipe(fds) != 0) {
    return {"pipe failed", 1};
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    _exit(job(fds[1]));
  }
  ::close(fds[1]);
  std::string out;
  char buffer[1 << 16];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : 1};
}

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n <= 0) {
      return;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// CPU mode's base documents, built in a child: "<bytes>\n<document>" per topology; exit 77 with
// the reason when cuDNN cannot build them on this machine.
int build_base_documents(int fd) {
  for (const auto& topology : topologies(false)) {
    auto cache = std::make_shared<dnngraph::KernelCache>();
    dnngraph::Graph g;
    g.set_io_data_type(dnngraph::DataType::Half)
        .set_dynamic_shape_enabled(true)
        .set_kernel_cache(cache);
    const std::int64_t k = topology.k;
    auto a = g.tensor(dnngraph::TensorAttributes().set_name("A").set_uid(1).set_dim({1, 64, k}));
    auto b = g.tensor(dnngraph::TensorAttributes().set_name("B").set_uid(2).set_dim({1, k, 16}));
    g.matmul(a, b)->set_output(true).set_uid(3);
    auto built = dnngraph::detail::GraphAccess::build_kernel_cache(g);
    auto json =
        built ? cache->to_json() : dnngraph::Result<std::string>(std::unexpected(built.error()));
    if (!json) {
      write_all(fd, "cuDNN cannot build a kernel cache on the CPU here: " + json.error().message);
      return exit_skip;
    }
    write_all(fd, std::to_string(json->size()) + "\n" + *json);
  }
  return 0;
}

int probe_device(int fd) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    write_all(fd, "--gpu needs a CUDA device, and this machine has none");
    return exit_skip;
  }
  return 0;
}

// What the workers' logs say, summed.
struct Logged {
  std::int64_t saves = 0, bad_loads = 0, failures = 0, slow_saves = 0, lock_timeouts = 0;
  std::map<std::string, std::int64_t> errors;           // by error code
  std::map<std::string, std::set<std::string>> tokens;  // file name -> entries saved
  std::vector<std::string> examples;                    // the first few problems, to print
};

void note(Logged& logged, const std::string& line) {
  if (logged.examples.size() < 5) {
    logged.examples.push_back(line);
  }
}

void read_log(const fs::path& file, const Options& options, Logged& logged) {
  std::string text = slurp(file);
  text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);  // whole lines
  std::istringstream lines(text);
  const double allowed_ms = options.patience_ms + 1000.0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, name;
    double elapsed = 0;
    words >> kind >> name;
    if (kind == "saved") {
      words >> elapsed;
      logged.saves++;
      for (std::string token; words >> token;) {
        logged.tokens[name].insert(token);
      }
      if (elapsed > allowed_ms) {  // a save waited past its patience and said nothing
        logged.slow_saves++;
        note(logged, file.filename().string() + ": " + line.substr(0, 120));
      }
    } else if (kind == "error") {
      std::string code;
      words >> elapsed >> code;
      logged.errors[code]++;
      if (line.find("still locked") != std::string::npos) {
        logged.lock_timeouts++;
      } else {
        note(logged, file.filename().string() + ": " + line.substr(0, 200));
      }
    } else if (kind == "bad-load") {
      logged.bad_loads++;
      note(logged, file.filename().string() + ": " + line.substr(0, 200));
    } else {  // build-failed, execute-failed, wrong
      logged.failures++;
      note(logged, file.filename().string() + ": " + line.substr(0, 200));
    }
  }
}

struct FolderCount {
  std::int64_t temporaries = 0, damaged = 0, documents = 0, strays = 0;
};
FolderCount count_folder(const fs::path& folder) {
  FolderCount count;
  for (const auto& item : fs::directory_iterator(folder)) {
    const std::string name = item.path().filename().string();
    if (name.find(".json.tmp.") != std::string::npos) {
      count.temporaries++;
    } else if (name.ends_with(dnngraph::KernelCacheStore::damaged_suffix)) {
      count.damaged++;
    } else if (dnngraph::KernelCacheStore::key_of(name)) {
      count.documents++;
    } else if (name != ".dnngraph-cache.lock") {
      count.strays++;
    }
  }
  return count;
}

struct Run {
  std::int64_t started = 0, kills = 0, kills_mid_save = 0, crashes = 0;
  std::int64_t kills_leaving_temporary = 0;  // the victim's temporary was in the folder after it
};

pid_t start_worker(const Options& options, Shared shared, int slot, Run& run,
                   const std::vector<std::string>& base_documents) {
  shared.slots[static_cast<std::size_t>(slot)].state = static_cast<int>(State::Idle);
  const std::int64_t serial = ++run.started;
  const pid_t pid = ::fork();
  if (pid == 0) {
    run_worker(WorkerContext{options, shared, slot, serial, base_documents});
  }
  return pid;
}

// Whether a temporary of the writer `pid` (<file>.json.tmp.<pid>.<n>) is in the folder.
bool left_temporary(const fs::path& folder, pid_t pid) {
  const std::string mark = ".json.tmp." + std::to_string(pid) + ".";
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().find(mark) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// A worker that ended by itself before the stop (crashed, or exited with an error).
bool crashed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

void supervise(const Options& options, Shared shared, Run& run,
               const std::vector<std::string>& base_documents) {
  std::vector<pid_t> pids(static_cast<std::size_t>(options.processes));
  for (int s = 0; s < options.processes; ++s) {
    pids[static_cast<std::size_t>(s)] = start_worker(options, shared, s, run, base_documents);
  }
  std::mt19937_64 rng(options.seed);
  const auto deadline = Clock::now() + std::chrono::duration<double>(options.seconds);
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options.kill_interval_ms));
    for (int s = 0; s < options.processes; ++s) {  // any that ended by itself is replaced
      int status = 0;
      auto& pid = pids[static_cast<std::size_t>(s)];
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        run.crashes += crashed(status) ? 1 : 0;
        pid = start_worker(options, shared, s, run, base_documents);
      }
    }
    // Saving workers; those whose temporary is in the folder (writing it, under the lock) alone
    // when there are any, so kills land inside the write as well as in the wait for the lock.
    std::vector<int> saving, writing;
    for (int s = 0; s < options.processes; ++s) {
      if (shared.slots[static_cast<std::size_t>(s)].state.load() ==
          static_cast<int>(State::Saving)) {
        saving.push_back(s);
        if (left_temporary(options.folder, pids[static_cast<std::size_t>(s)])) {
          writing.push_back(s);
        }
      }
    }
    if (!writing.empty()) {
      saving = writing;
    }
    const bool mid_save = !saving.empty() && std::bernoulli_distribution(0.8)(rng);
    const int victim =
        mid_save ? saving[std::uniform_int_distribution<std::size_t>(0, saving.size() - 1)(rng)]
                 : std::uniform_int_distribution<int>(0, options.processes - 1)(rng);
    auto& pid = pids[static_cast<std::size_t>(victim)];
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    run.kills++;
    // Read once it is dead: the state it died in.
    if (shared.slots[static_cast<std::size_t>(victim)].state.load() ==
        static_cast<int>(State::Saving)) {
      run.kills_mid_save++;
      run.kills_leaving_temporary += left_temporary(options.folder, pid) ? 1 : 0;
    }
    pid = start_worker(options, shared, victim, run, base_documents);
  }
  *shared.stop = true;
  for (const pid_t pid : pids) {  // a worker finishes its save (at most its patience) and ends
    int status = 0;
    ::waitpid(pid, &status, 0);
    run.crashes += crashed(status) ? 1 : 0;
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_kernel_cache_store_stress --folder DIR --processes N --seconds S "
               "[--kill-interval-ms M] [--seed X] [--patience-ms P] [--fresh] [--gpu]\n");
  return 2;
}

std::optional<Options> parse(int argc, char* argv[]) {
  Options options;
  const std::span<char*> args(argv, static_cast<std::size_t>(argc));
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--fresh" || arg == "--gpu") {
      (arg == "--fresh" ? options.fresh : options.gpu) = true;
      continue;
    }
    if (i + 1 == args.size()) {
      return std::nullopt;  // an option without its value
    }
    const char* value = args[++i];
    if (arg == "--folder") {
      options.folder = value;
    } else if (arg == "--processes") {
      options.processes = std::atoi(value);
    } else if (arg == "--seconds") {
      options.seconds = std::atof(value);
    } else if (arg == "--kill-interval-ms") {
      options.kill_interval_ms = std::atoi(value);
    } else if (arg == "--seed") {
      options.seed = std::strtoull(value, nullptr, 10);
    } else if (arg == "--patience-ms") {
      options.patience_ms = std::atoi(value);
    } else {
      return std::nullopt;
    }
  }
  if (options.folder.empty() || options.processes < 1 || options.seconds <= 0) {
    return std::nullopt;
  }
  if (options.kill_interval_ms <= 0) {
    options.kill_interval_ms = options.gpu ? 2000 : 150;
  }
  return options;
}

// What a store folder or the stress logs may hold: the store's files (documents, set-aside
// ones, temporaries, the lock) and the workers' logs.
bool ours(const fs::path& file) {
  const std::string name = file.filename().string();
  return name == dnngraph::detail::lock_file_name || name.ends_with(".json") ||
         name.ends_with(".json.damaged") || name.find(".json.tmp.") != std::string::npos ||
         (name.starts_with("worker-") && name.ends_with(".log"));
}

// --fresh: empties the store folder and the logs folder of a run before, file by file; refuses
// (a message, nothing removed) when either holds anything else, so a mistyped --folder never
// deletes a user's files.
std::string empty_run_folders(const Options& options) {
  std::vector<fs::path> files;
  for (const fs::path& folder : {options.folder, log_folder(options)}) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(folder, ec))) {
      continue;
    }
    if (!fs::is_directory(fs::symlink_status(folder, ec))) {
      return folder.string() + " is not a folder; nothing removed";
    }
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
      if (!entry.is_regular_file(ec) || !ours(entry.path())) {
        return folder.string() + " holds " + entry.path().filename().string() +
               ", which no run of this program writes; nothing removed";
      }
      files.push_back(entry.path());
    }
  }
  for (const fs::path& file : files) {
    std::error_code ec;
    fs::remove(file, ec);
  }
  return {};
}

// Base documents from build_base_documents' output.
std::vector<std::string> split_documents(std::string_view text) {
  std::vector<std::string> documents;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const auto bytes =
        static_cast<std::size_t>(std::atoll(std::string(text.substr(0, newline)).c_str()));
    documents.emplace_back(text.substr(newline + 1, bytes));
    text.remove_prefix(newline + 1 + bytes);
  }
  return documents;
}

}  // namespace

int main(int argc, char* argv[]) {
  const auto parsed = parse(argc, argv);
  if (!parsed) {
    return usage();
  }
  const Options& options = *parsed;
  std::vector<std::string> base_documents;
  auto [said, code] = in_child(options.gpu ? probe_device : build_base_documents);
  if (code != 0) {
    std::printf("skipped: %s\n", said.c_str());
    return code == exit_skip ? exit_skip : 1;
  }
  if (!options.gpu) {
    base_documents = split_documents(said);
  }
  std::error_code ec;
  if (options.fresh) {
    if (auto refused = empty_run_folders(options); !refused.empty()) {
      std::fprintf(stderr, "bench_kernel_cache_store_stress: --fresh: %s\n", refused.c_str());
      return 2;
    }
  }
  fs::create_directories(options.folder, ec);
  fs::create_directories(log_folder(options), ec);
  const auto workers = static_cast<std::size_t>(options.processes);
  const std::size_t bytes = sizeof(Slot) * (workers + 1);  // the first slot's room holds the flag
  void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  static_assert(sizeof(std::atomic<bool>) <= sizeof(Slot) &&
                alignof(Slot) >= alignof(std::atomic<bool>));
  Slot* const slots = static_cast<Slot*>(mapped) + 1;
  std::uninitialized_value_construct_n(slots, workers);
  const Shared shared{new (mapped) std::atomic<bool>(false), std::span<Slot>(slots, workers)};
  std::printf(
      "store stress: %s mode, %d processes, %.0f s, a kill every %d ms, patience %d ms, "
      "folder %s\n",
      options.gpu ? "GPU" : "CPU", options.processes, options.seconds, options.kill_interval_ms,
      options.patience_ms, options.folder.c_str());
  std::fflush(stdout);
  Run run;
  supervise(options, shared, run, base_documents);

  Logged logged;
  for (const auto& item : fs::directory_iterator(log_folder(options))) {
    read_log(item.path(), options, logged);
  }
  const FolderCount before = count_folder(options.folder);
  // The next save cleans the killed writers' temporaries: one more merged save per file.
  std::int64_t final_save_errors = 0;
  for (const auto& item : fs::directory_iterator(options.folder)) {
    const std::string name = item.path().filename().string();
    if (dnngraph::KernelCacheStore::key_of(name)) {
      auto again = dnngraph::detail::replace_merged(
          options.folder, std::chrono::milliseconds(options.patience_ms), name, slurp(item.path()),
          dnngraph::KernelCache::max_json_bytes);
      final_save_errors += again ? 0 : 1;
    }
  }
  const FolderCount after = count_folder(options.folder);
  std::int64_t bad_files = 0, tracked = 0, found = 0;
  for (const auto& item : fs::directory_iterator(options.folder)) {
    const std::string name = item.path().filename().string();
    const auto key = dnngraph::KernelCacheStore::key_of(name);
    if (!key) {
      continue;
    }
    auto stored = dnngraph::KernelCacheStore(options.folder).load_or_create(*key);
    if (!stored || !stored->loaded || !stored->warning.empty()) {
      bad_files++;
      std::printf("  does not load: %s %s\n", name.c_str(),
                  stored ? stored->warning.c_str() : stored.error().message.c_str());
    }
  }
  for (const auto& [name, tokens] : logged.tokens) {
    const auto in_file = tokens_of(slurp(options.folder / name));
    const std::set<std::string> present(in_file.begin(), in_file.end());
    tracked += static_cast<std::int64_t>(tokens.size());
    for (const auto& token : tokens) {
      found += present.contains(token) ? 1 : 0;
    }
  }
  for (const auto& example : logged.examples) {
    std::printf("  %s\n", example.c_str());
  }
  std::string errors_text;
  boost::json::object errors_json;
  for (const auto& [error_code, n] : logged.errors) {
    errors_text += " " + error_code + " " + std::to_string(n);
    errors_json[error_code] = n;
  }
  std::printf(
      "processes started %lld, kills %lld (mid-save %lld, %lld of them leaving a temporary), "
      "workers that ended by themselves %lld\n",
      static_cast<long long>(run.started), static_cast<long long>(run.kills),
      static_cast<long long>(run.kills_mid_save),
      static_cast<long long>(run.kills_leaving_temporary), static_cast<long long>(run.crashes));
  std::printf(
      "completed saves %lld; errors:%s (lock timeouts %lld); saves past patience + 1 s "
      "%lld; bad loads %lld; GPU failures %lld\n",
      static_cast<long long>(logged.saves), errors_text.empty() ? " none" : errors_text.c_str(),
      static_cast<long long>(logged.lock_timeouts), static_cast<long long>(logged.slow_saves),
      static_cast<long long>(logged.bad_loads), static_cast<long long>(logged.failures));
  std::printf(
      "files %lld (%lld do not load, %lld strays); entries tracked %lld, found %lld; "
      "temporaries %lld before the last saves, %lld after; damaged %lld\n",
      static_cast<long long>(after.documents), static_cast<long long>(bad_files),
      static_cast<long long>(after.strays), static_cast<long long>(tracked),
      static_cast<long long>(found), static_cast<long long>(before.temporaries),
      static_cast<long long>(after.temporaries), static_cast<long long>(after.damaged));
  const bool invariants =
      bad_files == 0 && after.strays == 0 && found == tracked && after.temporaries == 0 &&
      after.damaged == 0 && before.damaged == 0 && logged.slow_saves == 0 &&
      logged.bad_loads == 0 && logged.failures == 0 && run.crashes == 0 && final_save_errors == 0 &&
      logged.errors.size() == (logged.lock_timeouts > 0 ? 1U : 0U) && logged.saves > 0;
  const bool proved = run.kills_mid_save > 0;
  const char* result = !invariants ? "FAILED" : proved ? "passed" : "INCONCLUSIVE";
  if (invariants && !proved) {
    std::printf("no kill landed mid-save: the run proved nothing (longer, or more processes)\n");
  }
  std::printf("result: %s\n", result);
  boost::json::object summary{{"mode", options.gpu ? "gpu" : "cpu"},
                              {"processes", options.processes},
                              {"seconds", options.seconds},
                              {"started", run.started},
                              {"kills", run.kills},
                              {"kills_mid_save", run.kills_mid_save},
                              {"kills_leaving_temporary", run.kills_leaving_temporary},
                              {"ended_by_themselves", run.crashes},
                              {"saves", logged.saves},
                              {"errors", errors_json},
                              {"lock_timeouts", logged.lock_timeouts},
                              {"slow_saves", logged.slow_saves},
                              {"bad_loads", logged.bad_loads},
                              {"gpu_failures", logged.failures},
                              {"files", after.documents},
                              {"files_not_loading", bad_files},
                              {"entries_tracked", tracked},
                              {"entries_found", found},
                              {"temporaries_before", before.temporaries},
                              {"temporaries_after", after.temporaries},
                              {"damaged", after.damaged},
                              {"result", result}};
  std::printf("%s\n", boost::json::serialize(summary).c_str());
  return invariants && proved ? 0 : 1;
}
