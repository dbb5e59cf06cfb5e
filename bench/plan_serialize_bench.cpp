// A server that starts without building (issue 33): the first call of a new process from a saved
// plan, against a cold build and a kernel cache's load. Process 1 (`save`) builds a graph
// (heuristics A), runs it once on fixed inputs and saves the plan (Graph::serialize()), for a
// dynamic-shape graph its KernelCache (to_json()), and the output's bytes. Then each in a new
// process of its own: `cold` builds the same graph and runs it once; `cache` (dynamic graphs)
// loads the kernel cache document first; `plan` loads the saved plan (Graph::deserialize()) and
// runs it once. Each step times the document's load, build() or deserialize(), and the first
// execute() up to the device's synchronize (the Handle's creation, the same in every step, apart)
// and reports PlanInfo::heuristics_queries. `plan` must make no heuristics query, say
// deserialized, and write the saving process's output bit for bit (unless cuDNN notes the
// engine nondeterministic: then a difference is said, not failed); the others' outputs are
// compared too and said, not judged (another engine config is not wrong). Every output must be
// finite and not all zero.
// Topologies (bench/persist_graphs.hpp): fp16 matmul + bias + ReLU, fp16 NHWC conv 3x3 + bias +
// ReLU, bf16 layernorm inference, each static (no dynamic shapes, no kernel cache: what a saved
// plan is for) and dynamic (on a KernelCache); static bf16 causal attention [2, 8, 1024, 128].
// The driver's JIT cache (CUDA_CACHE_PATH) would make a "cold" process warm: the table is taken
// twice, isolated (every step a fresh empty CUDA_CACHE_PATH) and kept (save starts from an empty
// one; cold, cache and plan each get a copy of it as save left it), as
// bench_kernel_cache_persist does.
//   bench_plan_serialize [isolated|kept] [--topologies matmul,conv,layernorm,sdpa]
//                        [--kinds static,dynamic]
//       all steps of every row (both modes, all topologies and kinds by default; attention is
//       static only)
//   bench_plan_serialize STEP TOPO KIND FILE
//       one step, internal (the table runs it): STEP save|cold|cache|plan, TOPO
//       matmul|conv|layernorm|sdpa, KIND static|dynamic (cache: dynamic only), FILE the plan
//       document (FILE.cache the kernel cache's, FILE.out the saved output). Prints one line
//       "RESULT STEP ms=<build or deserialize> doc_ms=<load> exec_ms=<first execute> heur=<n>
//       ..." (equal=0|1 but in save).
// Exit 77 without a CUDA device, 1 when a step failed or a check did not hold, 2 for a bad
// command line.
import dnngraph;

#include <cuda_runtime_api.h>

#include "child_steps.hpp"
#include "persist_graphs.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "timing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <expected>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using dnngraph::DataType;
using dnngraph::test::DeviceBuffer;
using dnngraph_bench::Clock;
using dnngraph_bench::exit_no_device;
using dnngraph_bench::field;
using dnngraph_bench::fixed;
using dnngraph_bench::JsonLine;
using dnngraph_bench::ms_since;
using dnngraph_bench::persist::all_topologies;
using dnngraph_bench::persist::name_of;
using dnngraph_bench::persist::Topology;

enum class Kind : std::uint8_t { Static, Dynamic };
enum class Step : std::uint8_t { Save, Cold, Cache, Plan };

constexpr std::array all_kinds{Kind::Static, Kind::Dynamic};
constexpr std::array all_steps{Step::Save, Step::Cold, Step::Cache, Step::Plan};

constexpr const char* name_of(Kind k) { return k == Kind::Static ? "static" : "dynamic"; }

constexpr const char* name_of(Step s) {
  switch (s) {
    case Step::Save: return "save";
    case Step::Cold: return "cold";
    case Step::Cache: return "cache";
    case Step::Plan: return "plan";
  }
  return "?";
}

template <class T, std::size_t N>
std::optional<T> named(std::string_view name, const std::array<T, N>& among) {
  for (const T item : among) {
    if (std::string_view(name_of(item)) == name) {
      return item;
    }
  }
  return std::nullopt;
}

std::optional<Topology> topology_named(std::string_view name) {
  return dnngraph_bench::persist::topology_named(name, all_topologies);
}

// Attention is static only: no cuDNN serves dynamic-shape attention (docs/known-issues.md,
// sdpa-dynamic-shape), so there is no kernel cache to load for it.
bool has_row(Topology t, Kind k) { return t != Topology::Sdpa || k == Kind::Static; }

// ---- one step, in its own process ------------------------------------------------------------

// Every build here, save's and the others': heuristics A, the first plan that finalizes.
const std::vector<dnngraph::HeuristicMode> build_modes{dnngraph::HeuristicMode::A};

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out.flush());
}

// Elements from the first to the last a tensor's dims and strides reach.
std::size_t elements_spanned(const dnngraph::TensorAttributes& t) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < t.dim().size() && i < t.stride().size(); ++i) {
    last += (t.dim()[i] - 1) * t.stride()[i];
  }
  return static_cast<std::size_t>(last + 1);
}

// Device memory for every tensor execute() reads and writes: the inputs hold values drawn from
// a generator seeded with their uid (the same bits in every process of this binary), the output
// 0xFF bytes (NaN in fp16, bf16 and fp32), so an element the plan does not write fails the check.
struct Buffers {
  std::vector<DeviceBuffer> owned;
  std::unordered_map<std::int64_t, void*> pack;
  std::size_t output = 0;  // index in owned
  DataType output_type = DataType::Float;
};

// After validate(); "" and the buffers, or why not.
std::string make_buffers(const dnngraph::Graph& g, Buffers& buffers) {
  using dnngraph_bench::persist::output_uid;
  auto io = g.io_tensors();
  if (!io) {
    return "io_tensors: " + io.error().message;
  }
  bool has_output = false;
  for (const auto& t : *io) {
    const auto type = t->data_type();
    const auto uid = t->uid();
    if (!type || !uid ||
        (*type != DataType::Half && *type != DataType::BFloat16 && *type != DataType::Float)) {
      return "tensor " + t->describe() + ": not an fp16, bf16 or fp32 tensor with a uid";
    }
    const std::size_t count = elements_spanned(*t);
    std::expected<DeviceBuffer, std::string> buffer;
    if (*uid == output_uid) {
      buffer = DeviceBuffer::allocate(count * static_cast<std::size_t>(dnngraph::size_of(*type)));
      if (buffer) {
        if (auto filled = buffer->fill_bytes(0xFF); !filled) {
          return filled.error();
        }
      }
      buffers.output = buffers.owned.size();
      buffers.output_type = *type;
      has_output = true;
    } else {
      std::mt19937 rng(static_cast<std::mt19937::result_type>(*uid));
      buffer = DeviceBuffer::copy_of(dnngraph::test::random_tensor(*type, count, rng).bytes);
    }
    if (!buffer) {
      return "tensor " + t->describe() + ": " + buffer.error();
    }
    buffers.pack.emplace(*uid, buffer->get());
    buffers.owned.push_back(std::move(*buffer));
  }
  return has_output ? "" : "no tensor of uid " + std::to_string(output_uid) + " to write";
}

// "" when every element is finite and one is not zero, else what is wrong.
std::string check_output(DataType type, std::span<const std::byte> bytes) {
  const std::vector<float> values = dnngraph::test::decode(type, bytes);
  const auto bad = std::ranges::find_if(values, [](float v) { return !std::isfinite(v); });
  if (bad != values.end()) {
    return "element " + std::to_string(bad - values.begin()) + " of " +
           std::to_string(values.size()) + " is " + std::to_string(*bad);
  }
  if (std::ranges::all_of(values, [](float v) { return v == 0; })) {
    return "all " + std::to_string(values.size()) + " elements are zero";
  }
  return "";
}

// "" when equal, else where the bytes first differ.
std::string compare_bytes(std::span<const std::byte> got, std::string_view saved) {
  if (got.size() != saved.size()) {
    return std::to_string(got.size()) + " bytes against the saved " + std::to_string(saved.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != static_cast<std::byte>(saved[i])) {
      return "byte " + std::to_string(i) + " of " + std::to_string(got.size()) + " differs";
    }
  }
  return "";
}

// What a step measured, printed on its RESULT line.
struct Measured {
  double handle_ms = 0;  // Handle::create (the CUDA context and cuDNN's load), apart
  double doc_ms = 0;     // reading the document and, for cache, from_json
  double ms = 0;         // build() or deserialize()
  double exec_ms = 0;    // the first execute() and the device's synchronize
};

int fail(const char* what, const std::string& why) {
  std::printf("%s: %s\n", what, why.c_str());
  return 1;
}

// Writes the plan, the kernel cache's document (dynamic) and the output next to `file`.
int save(const dnngraph::Graph& g, const dnngraph::KernelCache* kc, const std::string& file,
         std::span<const std::byte> output) {
  const auto start = Clock::now();
  auto plan = g.serialize();
  const double serialize_ms = ms_since(start);
  if (!plan) {
    return fail("serialize", plan.error().message);
  }
  if (!write_file(file, *plan)) {
    return fail("save", "cannot write " + file);
  }
  std::int64_t cache_bytes = 0;
  if (kc != nullptr) {
    auto json = kc->to_json();
    if (!json) {
      return fail("to_json", json.error().message);
    }
    if (!write_file(file + ".cache", *json)) {
      return fail("save", "cannot write " + file + ".cache");
    }
    cache_bytes = static_cast<std::int64_t>(json->size());
  }
  const std::string_view out(reinterpret_cast<const char*>(output.data()), output.size());
  if (!write_file(file + ".out", out)) {
    return fail("save", "cannot write " + file + ".out");
  }
  std::printf("SAVED serialize_ms=%.3f bytes=%lld cache_bytes=%lld out_bytes=%lld\n", serialize_ms,
              static_cast<long long>(plan->size()), static_cast<long long>(cache_bytes),
              static_cast<long long>(output.size()));
  return 0;
}

// The document a step loads before it builds, timed into m.doc_ms: cache, the kernel cache's
// (into kc); plan, the plan's (returned). "" or why not.
std::string load_document(Step what, const std::string& file, dnngraph::KernelCache* kc,
                          std::optional<std::string>& plan, Measured& m) {
  const auto start = Clock::now();
  if (what == Step::Cache) {
    const auto json = read_file(file + ".cache");
    if (!json) {
      return "cannot read " + file + ".cache";
    }
    if (auto loaded = kc->from_json(*json); !loaded) {
      return "from_json: " + loaded.error().message;
    }
  } else if (what == Step::Plan) {
    plan = read_file(file);
    if (!plan) {
      return "cannot read " + file;
    }
  }
  m.doc_ms = ms_since(start);
  return "";
}

// The first execute on the buffers, timed up to the device's synchronize into m.exec_ms (the
// workspace allocated before, untimed); the output's bytes downloaded into `output`. "" or why
// not.
std::string first_execute(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                          const Buffers& buffers, Measured& m, std::vector<std::byte>& output) {
  auto workspace_size = g.get_workspace_size();
  if (!workspace_size) {
    return "get_workspace_size: " + workspace_size.error().message;
  }
  auto workspace = DeviceBuffer::allocate(static_cast<std::size_t>(*workspace_size));
  if (!workspace) {
    return "workspace: " + workspace.error();
  }
  const auto start = Clock::now();
  auto ran = g.execute(handle, buffers.pack, workspace->get());
  auto synced = dnngraph::test::cuda_check(cudaDeviceSynchronize(), "after execute");
  m.exec_ms = ms_since(start);
  if (!ran) {
    return "execute: " + ran.error().message;
  }
  if (!synced) {
    return synced.error();
  }
  const DeviceBuffer& device = buffers.owned[buffers.output];
  output.resize(device.size_bytes());
  if (auto read = device.download(std::span(output)); !read) {
    return "output: " + read.error();
  }
  return "";
}

// cuDNN's note that the engine's bits may differ from run to run: then no two processes' outputs
// need be equal.
bool nondeterministic(const dnngraph::PlanInfo& info) {
  return std::ranges::find(info.numerical_notes, dnngraph::NumericalNote::Nondeterministic) !=
         info.numerical_notes.end();
}

// The RESULT line (equal=0|1 but in save; the plan document's size in plan).
void print_result(Step what, const Measured& m, const dnngraph::PlanInfo& info,
                  const std::string& differs, const std::optional<std::string>& plan) {
  std::printf(
      "RESULT %s ms=%.3f doc_ms=%.3f exec_ms=%.3f total_ms=%.3f handle_ms=%.3f heur=%lld "
      "deserialized=%d from_document=%d hit=%d nondeterministic=%d",
      name_of(what), m.ms, m.doc_ms, m.exec_ms, m.doc_ms + m.ms + m.exec_ms, m.handle_ms,
      static_cast<long long>(info.heuristics_queries), info.deserialized ? 1 : 0,
      info.plan_from_document ? 1 : 0, info.kernel_cache_hit ? 1 : 0,
      nondeterministic(info) ? 1 : 0);
  if (what != Step::Save) {
    std::printf(" equal=%d", differs.empty() ? 1 : 0);
  }
  if (plan) {
    std::printf(" bytes=%lld", static_cast<long long>(plan->size()));
  }
  std::printf("  (%s)\n", info.describe().c_str());
}

// The step's checks after its RESULT line: 1 when one failed (each says why), else 0. An output
// other than the saving process's fails only the plan step, and only with a deterministic engine
// (a cold build may take another config; the line says so).
int judge(Step what, const dnngraph::PlanInfo& info, const std::string& wrong,
          const std::string& differs) {
  int code = 0;
  if (!wrong.empty()) {
    code = fail("output", wrong);
  }
  if (!differs.empty() && what == Step::Plan && !nondeterministic(info)) {
    code = fail("output", differs + " from the saving process's");
  } else if (!differs.empty()) {
    std::printf("note: output %s from the saving process's (%s)\n", differs.c_str(),
                info.describe().c_str());
  }
  if (what == Step::Plan && info.heuristics_queries != 0) {
    code = fail("plan", "deserialize() made " + std::to_string(info.heuristics_queries) +
                            " heuristics queries; a saved plan needs none");
  }
  if (what == Step::Plan && !info.deserialized) {
    code = fail("plan", "PlanInfo::deserialized is false after deserialize()");
  }
  return code;
}

int step(Step what, Topology topo, Kind kind, const std::string& file) {
  Measured m;
  const auto start = Clock::now();
  auto handle = dnngraph::Handle::create();
  m.handle_ms = ms_since(start);
  if (!handle) {
    std::printf("needs a CUDA device\n");
    return exit_no_device;
  }
  auto kc = kind == Kind::Dynamic ? std::make_shared<dnngraph::KernelCache>() : nullptr;
  auto g = dnngraph_bench::persist::graph_of(topo, false, kc);
  // The buffers first, outside the timing: a server holds its memory before the first call.
  if (auto valid = g.validate(); !valid) {
    return fail("validate", valid.error().message);
  }
  Buffers buffers;
  if (auto made = make_buffers(g, buffers); !made.empty()) {
    return fail("buffers", made);
  }
  std::optional<std::string> plan;
  if (auto loaded = load_document(what, file, kc.get(), plan, m); !loaded.empty()) {
    return fail(name_of(what), loaded);
  }
  const auto build_start = Clock::now();
  auto built = plan ? g.deserialize(*handle, *plan) : g.build(*handle, build_modes);
  m.ms = ms_since(build_start);
  if (!built) {
    return fail(plan ? "deserialize" : "build", built.error().message);
  }
  auto info = g.plan_info();
  if (!info) {
    return fail("plan_info", info.error().message);
  }
  std::vector<std::byte> output;
  if (auto ran = first_execute(g, *handle, buffers, m, output); !ran.empty()) {
    return fail(name_of(what), ran);
  }
  const std::string wrong = check_output(buffers.output_type, output);
  std::string differs;
  if (what == Step::Save) {
    if (!wrong.empty()) {
      return fail("output", wrong);  // nothing to save that later steps could be compared with
    }
    if (const int saved = save(g, kc.get(), file, output); saved != 0) {
      return saved;
    }
  } else {
    const auto saved = read_file(file + ".out");
    differs = saved ? compare_bytes(output, *saved) : "cannot read " + file + ".out";
  }
  print_result(what, m, *info, differs, plan);
  return judge(what, *info, wrong, differs);
}

// ---- the table: every step of a row in a child process -------------------------------------

// What one step's child printed on its RESULT (and SAVED) line.
struct StepResult {
  bool ran = false;  // a RESULT line came
  int exit_code = 1;
  double handle_ms = -1, doc_ms = 0, ms = -1, exec_ms = -1;
  std::int64_t heur = -1;
  bool deserialized = false, hit = false;
  bool from_document = false;     // deserialized from cuDNN's plan document, not the engine config
  bool nondeterministic = false;  // cuDNN's note on the engine: bits may differ run to run
  std::optional<bool> equal;      // not in save
  std::int64_t bytes = -1;        // plan: the document it loaded; save: the one it wrote
  std::int64_t cache_bytes = -1;
  double serialize_ms = -1;
  [[nodiscard]] bool ok() const { return ran && exit_code == 0; }
  // The first call: the document's load, build or deserialize, the first execute.
  [[nodiscard]] double first_ms() const { return doc_ms + ms + exec_ms; }
};

StepResult run_step(const char* self, Step what, Topology topo, Kind kind, const std::string& file,
                    const std::string& jit) {
  std::string command = "CUDA_CACHE_PATH=" + jit;
  command.append(" ").append(self).append(" ").append(name_of(what)).append(" ");
  command.append(name_of(topo)).append(" ").append(name_of(kind)).append(" ").append(file);
  const auto child =
      dnngraph_bench::run_child(command, std::string(name_of(topo)) + " " + name_of(kind));
  StepResult r;
  r.exit_code = child.exit_code;
  const auto whole = [](std::string_view line, std::string_view key) {
    return static_cast<std::int64_t>(field(line, key).value_or(-1));
  };
  for (const std::string_view line : child.lines) {
    if (line.starts_with("SAVED ")) {
      r.bytes = whole(line, "bytes");
      r.cache_bytes = whole(line, "cache_bytes");
      r.serialize_ms = field(line, "serialize_ms").value_or(-1);
    } else if (line.starts_with("RESULT ")) {
      r.ran = true;
      r.handle_ms = field(line, "handle_ms").value_or(-1);
      r.doc_ms = field(line, "doc_ms").value_or(0);
      r.ms = field(line, "ms").value_or(-1);
      r.exec_ms = field(line, "exec_ms").value_or(-1);
      r.heur = whole(line, "heur");
      r.deserialized = field(line, "deserialized").value_or(0) != 0;
      r.from_document = field(line, "from_document").value_or(0) != 0;
      r.hit = field(line, "hit").value_or(0) != 0;
      r.nondeterministic = field(line, "nondeterministic").value_or(0) != 0;
      if (const auto equal = field(line, "equal")) {
        r.equal = *equal != 0;
      }
      if (what == Step::Plan) {
        r.bytes = whole(line, "bytes");
      }
    }
  }
  return r;
}

struct Row {
  Topology topology = Topology::Matmul;
  Kind kind = Kind::Static;
  std::array<StepResult, all_steps.size()> steps;
  [[nodiscard]] const StepResult& operator[](Step s) const {
    return steps[static_cast<std::size_t>(s)];
  }
  [[nodiscard]] bool failed() const {
    return std::ranges::any_of(all_steps, [this](Step s) {
      return (s != Step::Cache || kind == Kind::Dynamic) && !(*this)[s].ok();
    });
  }
};

// Runs a row's steps: save, cold, cache (dynamic), plan. The exit code of a step that could not
// run at all (77: no device), else 0.
int run_row(const char* self, bool isolated, Row& row) {
  const std::string tag = std::string(name_of(row.topology)) + "-" + name_of(row.kind);
  const std::string file = dnngraph_bench::scratch_path("plan-" + tag) + ".json";
  std::error_code ignored;
  for (const char* suffix : {"", ".cache", ".out"}) {
    std::filesystem::remove(file + suffix, ignored);  // a failed save must leave no older one
  }
  dnngraph_bench::JitFolders jit_folders(isolated, tag);
  int code = 0;
  for (const Step what : all_steps) {
    if (what == Step::Cache && row.kind == Kind::Static) {
      continue;
    }
    const std::string jit = jit_folders.next(
        name_of(what), what == Step::Save ? dnngraph_bench::JitFolders::Step::Save
                                          : dnngraph_bench::JitFolders::Step::Restart);
    if (jit.empty()) {
      std::fprintf(stderr, "bench_plan_serialize: no temporary folder for CUDA_CACHE_PATH\n");
      return 1;
    }
    auto& result = row.steps[static_cast<std::size_t>(what)];
    result = run_step(self, what, row.topology, row.kind, file, jit);
    if (result.exit_code == exit_no_device) {
      code = exit_no_device;
      break;
    }
  }
  for (const char* suffix : {"", ".cache", ".out"}) {
    std::filesystem::remove(file + suffix, ignored);  // the attention output alone is 4 MiB
  }
  return code;
}

// "12.3 (0.4+10.2+1.7) h2": the first call, then the document's load, build or deserialize and
// the first execute, and the heuristics queries; a kernel cache hit, and where a deserialized
// plan came from (cuDNN's plan document, or the engine config finalized again); "failed" when
// the step printed no result.
std::string step_text(const StepResult& s) {
  if (!s.ran) {
    return "failed";
  }
  return fixed(s.first_ms(), "%.1f") + " (" + fixed(s.doc_ms, "%.1f") + "+" + fixed(s.ms, "%.1f") +
         "+" + fixed(s.exec_ms, "%.1f") + ") h" + std::to_string(s.heur) + (s.hit ? " hit" : "") +
         (!s.deserialized   ? ""
          : s.from_document ? " doc"
                            : " config");
}

// The cold first call over this one's: above 1, the document made the first call faster.
std::optional<double> speedup(const StepResult& s, const StepResult& cold) {
  if (!s.ran || !cold.ran || s.first_ms() <= 0) {
    return std::nullopt;
  }
  return cold.first_ms() / s.first_ms();
}

std::string speedup_text(const StepResult& s, const StepResult& cold) {
  const auto x = speedup(s, cold);
  return x ? fixed(*x, "%.1fx") : std::string("-");
}

const char* equal_text(const StepResult& s) {
  if (!s.ran || !s.equal) {
    return "-";
  }
  return *s.equal ? "yes" : "no";
}

// "plan-first-call matmul static isolated: 3.1 ms vs cold 212.0 ms (68.4x), heuristics 0,
// bit-equal yes".
void print_verdict(const Row& r, Step what, const char* jit) {
  const StepResult& s = r[what];
  const StepResult& cold = r[Step::Cold];
  std::printf("%s-first-call %s %s %s: ", name_of(what), name_of(r.topology), name_of(r.kind), jit);
  if (!s.ran || !cold.ran) {
    std::printf("no result (the %s step failed)\n", s.ran ? "cold" : name_of(what));
    return;
  }
  std::printf("%.1f ms vs cold %.1f ms (%s), heuristics %lld, bit-equal %s%s%s\n", s.first_ms(),
              cold.first_ms(), speedup_text(s, cold).c_str(), static_cast<long long>(s.heur),
              equal_text(s), s.nondeterministic ? " (a nondeterministic engine)" : "",
              s.ok() ? "" : " (a check failed: the step's lines above say which)");
}

// One row as one line of JSON; null for what a failed step did not give.
std::string json_line(const Row& r, bool isolated) {
  JsonLine json;
  const auto number = [](const StepResult& s, double value) {
    return s.ran ? fixed(value) : std::string("null");
  };
  const auto count = [](const StepResult& s, std::int64_t value) {
    return s.ran && value >= 0 ? std::to_string(value) : std::string("null");
  };
  const auto step = [&](std::string_view name, const StepResult& s) {
    const std::string key(name);
    json.add(key + "_ms", number(s, s.first_ms()));
    if (name != "cold") {
      json.add(key + "_doc_ms", number(s, s.doc_ms));
    }
    json.add(key + (name == "plan" ? "_deserialize_ms" : "_build_ms"), number(s, s.ms));
    json.add(key + "_exec_ms", number(s, s.exec_ms));
    json.add(key + "_handle_ms", number(s, s.handle_ms));
    json.add(key + "_heuristics", count(s, s.heur));
    json.add(key + "_equal", JsonLine::flag(s.ran ? s.equal : std::nullopt));
    json.add(key + "_nondeterministic",
             JsonLine::flag(s.ran ? std::optional(s.nondeterministic) : std::nullopt));
    json.add(key + "_ok", JsonLine::flag(s.ok()));
  };
  const StepResult& save = r[Step::Save];
  const StepResult& plan = r[Step::Plan];
  json.add("topology", JsonLine::quoted(name_of(r.topology)));
  json.add("kind", JsonLine::quoted(name_of(r.kind)));
  json.add("jit", isolated ? "\"isolated\"" : "\"kept\"");
  json.add("save_heuristics", count(save, save.heur));
  json.add("serialize_ms", save.serialize_ms >= 0 ? fixed(save.serialize_ms) : std::string("null"));
  json.add("plan_bytes", count(save, save.bytes));
  json.add("cache_bytes", r.kind == Kind::Dynamic ? count(save, save.cache_bytes) : "null");
  step("cold", r[Step::Cold]);
  if (r.kind == Kind::Dynamic) {
    step("cache", r[Step::Cache]);
    json.add("cache_hit",
             JsonLine::flag(r[Step::Cache].ran ? std::optional(r[Step::Cache].hit) : std::nullopt));
  }
  step("plan", plan);
  json.add("plan_deserialized",
           JsonLine::flag(plan.ran ? std::optional(plan.deserialized) : std::nullopt));
  json.add("plan_from_document",
           JsonLine::flag(plan.ran ? std::optional(plan.from_document) : std::nullopt));
  const auto x = speedup(plan, r[Step::Cold]);
  json.add("plan_speedup", x ? fixed(*x) : std::string("null"));
  return json.text();
}

void print_rows(const std::vector<Row>& rows, bool isolated) {
  const char* jit = isolated ? "isolated" : "kept";
  // The Handle's creation (the CUDA context, cuDNN's load) comes before any first call, the same
  // in every step: the plan step's, apart.
  const char* format = "%-10s %-8s %-5s %-30s %-30s %-30s %-9s %-6s %-11s %s\n";
  std::printf("\n");
  std::printf(format, "topology", "kind", "save", "cold ms (doc+build+exec) heur",
              "cache ms (doc+build+exec) heur", "plan ms (doc+load+exec) heur", "cold/plan",
              "equal", "plan bytes", "handle ms");
  for (const Row& r : rows) {
    const StepResult& save = r[Step::Save];
    const StepResult& plan = r[Step::Plan];
    std::printf(format, name_of(r.topology), name_of(r.kind),
                save.ran ? ("h" + std::to_string(save.heur)).c_str() : "fail",
                step_text(r[Step::Cold]).c_str(),
                r.kind == Kind::Dynamic ? step_text(r[Step::Cache]).c_str() : "-",
                step_text(plan).c_str(), speedup_text(plan, r[Step::Cold]).c_str(),
                equal_text(plan), save.bytes >= 0 ? std::to_string(save.bytes).c_str() : "-",
                plan.ran ? fixed(plan.handle_ms, "%.1f").c_str() : "-");
  }
  std::printf("\n");
  for (const Row& r : rows) {
    print_verdict(r, Step::Plan, jit);
    if (r.kind == Kind::Dynamic) {
      print_verdict(r, Step::Cache, jit);
    }
  }
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%s\n", json_line(r, isolated).c_str());
  }
}

struct Options {
  std::optional<bool> isolated;  // nullopt: both modes
  std::vector<Topology> topologies{all_topologies.begin(), all_topologies.end()};
  std::vector<Kind> kinds{all_kinds.begin(), all_kinds.end()};
};

std::optional<Options> parse_options(int argc, char* argv[]) {
  Options options;
  const auto kind_named = [](std::string_view name) { return named(name, all_kinds); };
  const std::array<dnngraph_bench::ListOption, 2> lists{{
      {"--topologies", dnngraph_bench::list_into(options.topologies, topology_named)},
      {"--kinds", dnngraph_bench::list_into(options.kinds, kind_named)},
  }};
  const bool read = dnngraph_bench::parse_table_options(argc, argv, options.isolated, lists);
  return read ? std::optional(options) : std::nullopt;
}

int table(const char* self, bool isolated, const Options& options) {
  std::vector<Row> rows;
  for (const Topology topo : options.topologies) {
    for (const Kind kind : options.kinds) {
      if (has_row(topo, kind)) {
        Row row;
        row.topology = topo;
        row.kind = kind;
        rows.push_back(row);
      }
    }
  }
  return dnngraph_bench::run_table(
      "bench_plan_serialize", isolated, std::move(rows),
      [&](Row& row) { return run_row(self, isolated, row); },
      [](const Row& row) { return row.failed(); },
      [isolated](const std::vector<Row>& done) { print_rows(done, isolated); });
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_plan_serialize [isolated|kept] [--topologies "
               "matmul,conv,layernorm,sdpa]\n"
               "                            [--kinds static,dynamic]\n"
               "       bench_plan_serialize STEP TOPO KIND FILE   (one step, internal)\n");
  return 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc > 1 && named(argv[1], all_steps)) {
    const auto what = named(argv[1], all_steps);
    const auto topo = argc == 5 ? topology_named(argv[2]) : std::nullopt;
    const auto kind = argc == 5 ? named(argv[3], all_kinds) : std::nullopt;
    if (!topo || !kind || !has_row(*topo, *kind) ||
        (*what == Step::Cache && *kind == Kind::Static)) {
      return usage();
    }
    return step(*what, *topo, *kind, argv[4]);
  }
  const auto options = parse_options(argc, argv);
  if (!options) {
    return usage();
  }
  const bool any_row = std::ranges::any_of(options->topologies, [&](Topology t) {
    return std::ranges::any_of(options->kinds, [t](Kind k) { return has_row(t, k); });
  });
  if (!any_row) {
    std::fprintf(stderr, "bench_plan_serialize: no row: attention (sdpa) is static only\n");
    return 2;
  }
  std::printf("the first call from a saved plan, cuDNN %s\n",
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str());
  return dnngraph_bench::each_jit_mode(
      options->isolated, [&](bool isolated) { return table(argv[0], isolated, *options); });
}
