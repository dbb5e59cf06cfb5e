// What the cudnn-frontend probes (bench/*_frontend_probe.cpp) share: a cuDNN handle on a CUDA
// device, a device buffer, the frontend's build chain under chosen heuristics modes (or one
// candidate, or one pinned engine config, from the command line), one execute with its
// workspace, Half/BFloat16 bits, and the worst error against a CPU reference. Only for programs
// built with cudnn-frontend's headers (dnngraph_add_frontend_probe in CMakeLists.txt).
#pragma once

#include <cudnn_frontend.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace dnngraph_bench {

namespace fe = cudnn_frontend;
using Dims = std::vector<std::int64_t>;

inline bool cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::printf("CUDA %s: %s\n", what, cudaGetErrorString(status));
    return false;
  }
  return true;
}

// Whether a CUDA device is there; if not, a line saying why (a probe that exits 77 then, as
// skipped, checks this before open_handle).
inline bool cuda_device_present() {
  int devices = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&devices);
      status != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "none found");
    return false;
  }
  return true;
}

// A cuDNN handle on the current CUDA device, or nullptr after a line saying why (no CUDA device,
// no handle): a probe exits nonzero then, as for any setup failure.
inline cudnnHandle_t open_handle() {
  if (!cuda_device_present()) {
    return nullptr;
  }
  cudnnHandle_t handle = nullptr;
  if (const cudnnStatus_t status = cudnnCreate(&handle); status != CUDNN_STATUS_SUCCESS) {
    std::printf("no cuDNN handle: %s\n", cudnnGetErrorString(status));
    return nullptr;
  }
  return handle;
}

// Device memory for one probe run; freed when it goes out of scope.
struct Device {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit Device(std::size_t size) : bytes(size) { cuda_ok(cudaMalloc(&ptr, size), "malloc"); }
  // A buffer holding a copy of host.
  template <class T>
  explicit Device(const std::vector<T>& host) : Device(host.size() * sizeof(T)) {
    cuda_ok(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "copy");
  }
  ~Device() { cudaFree(ptr); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  Device(Device&&) = delete;
  Device& operator=(Device&&) = delete;

  // Every byte set to value (0xFF: NaN in every floating type, FP8 included, as the GPU tests
  // fill outputs, so that an element never written cannot pass).
  [[nodiscard]] bool fill(int value) const {
    return cuda_ok(cudaMemset(ptr, value, bytes), "memset");
  }

  // The first count elements of the buffer.
  template <class T>
  [[nodiscard]] std::vector<T> read(std::size_t count) const {
    std::vector<T> host(count);
    cuda_ok(cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost), "copy");
    return host;
  }
};

// The kernel cache probes' graph settings: BFloat16 tensors, Float intermediates and compute,
// dynamic shapes on, kernels kept in `cache`.
inline void set_dynamic_bf16(fe::graph::Graph& graph,
                             const std::shared_ptr<fe::KernelCache>& cache) {
  graph.set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT)
      .set_dynamic_shape_enabled(true)
      .set_kernel_cache(cache);
}

// Packed (row-major) strides of dims, their element count, and the memory offset of the element
// whose row-major index is `logical` in a tensor of those dims and strides.
inline Dims packed(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size() - 1; i > 0; --i) {
    strides[i - 1] = strides[i] * dims[i];
  }
  return strides;
}
inline std::size_t element_count(const Dims& dims) {
  std::size_t n = 1;
  for (const std::int64_t d : dims) n *= static_cast<std::size_t>(d);
  return n;
}
inline std::size_t offset(const Dims& dims, const Dims& strides, std::size_t logical) {
  std::size_t at = 0;
  for (std::size_t i = dims.size(); i-- > 0;) {
    const auto extent = static_cast<std::size_t>(dims[i]);
    at += (logical % extent) * static_cast<std::size_t>(strides[i]);
    logical /= extent;
  }
  return at;
}

// The cases a probe's arguments name (by each case's `key`), all of them when none; nullopt
// after a line naming one it does not know.
template <class Case, std::size_t N>
std::optional<std::vector<const Case*>> select_cases(const std::array<Case, N>& cases,
                                                     const std::vector<std::string>& names) {
  std::vector<const Case*> chosen;
  for (const Case& c : cases) {
    if (names.empty()) chosen.push_back(&c);
  }
  for (const std::string& name : names) {
    const auto* c =
        std::find_if(cases.begin(), cases.end(), [&](const Case& k) { return name == k.key; });
    if (c == cases.end()) {
      std::printf("unknown case or option %s; the cases:", name.c_str());
      for (const Case& k : cases) std::printf(" %s", k.key);
      std::printf("\n");
      return std::nullopt;
    }
    chosen.push_back(c);
  }
  return chosen;
}

inline const char* mode_name(fe::HeurMode_t mode) {
  switch (mode) {
    case fe::HeurMode_t::A: return "A";
    case fe::HeurMode_t::B: return "B";
    case fe::HeurMode_t::FALLBACK: return "Fallback";
    case fe::HeurMode_t::OPENSOURCE: return "OpenSource";
  }
  return "?";
}

// The engine configs a probe builds from, as its command line says (parse_plan_choice): the
// heuristics' configs under `modes`, the first that builds (the frontend's HEURISTICS_CHOICE, as
// dnngraph's build) or the one at `index`; or with `engine`, that one engine config and its
// knobs (what a dnngraph test's PlanInfo printed, say), with no heuristics query.
struct PlanChoice {
  std::vector<fe::HeurMode_t> modes{fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK};
  std::optional<std::int64_t> index;
  std::optional<std::int64_t> engine;
  std::map<fe::KnobType_t, std::int64_t> knobs;
  bool zero_workspace = false;  // memset the workspace to 0 before execute (else as allocated)
  bool every = false;           // --every: each config of the ranked list in turn (build_and_check)
};

// A knob type's name as the frontend serializes it (KERNEL_CFG, TILE_M, ...), and the type of
// such a name (NOT_SET for one it does not know). Its JSON mapping (utils/serialize.h) lives in
// namespace cudnn_frontend::graph, out of reach of argument-dependent lookup: called by name.
inline std::string knob_name(fe::KnobType_t type) {
  nlohmann::json name;
  fe::graph::to_json(name, type);
  return name.is_string() ? name.get<std::string>() : "knob?";
}
inline fe::KnobType_t knob_type(const std::string& name) {
  fe::KnobType_t type = fe::KnobType_t::NOT_SET;
  fe::graph::from_json(nlohmann::json(name), type);
  return type;
}

// "engine 7, knobs {KERNEL_CFG=22, STAGES=2}": dnngraph's PlanInfo form, which parse_engine reads.
inline std::string engine_text(std::int64_t engine,
                               const std::map<fe::KnobType_t, std::int64_t>& knobs) {
  std::string text = "engine " + std::to_string(engine) + ", knobs {";
  for (const auto& [type, value] : knobs) {
    text += (text.back() == '{' ? "" : ", ") + knob_name(type) + "=" + std::to_string(value);
  }
  return text + "}";
}

// An engine config from its text into choice: dnngraph's PlanInfo form ("engine 7, knobs
// {KERNEL_CFG=22, knob26=1}": knob names, or knob<N> with N a cudnnBackendKnobType_t) or the
// frontend's plan name ("eng7_k24=22_k26=1": k<N>, N a cudnnBackendKnobType_t). False after a
// line saying what could not be read (SPLIT_K, KBLOCK, LDGA, LDGB: deprecated knobs the
// frontend cannot set).
inline bool parse_engine(const std::string& text, PlanChoice& choice) {
  static const std::regex engine_id(R"(^\s*eng(?:ine)?\s*(\d+))");
  static const std::regex knob(R"((?:^|[\s,{_])(knob|k|[A-Z][A-Z_]*[A-Z])(\d*)=(-?\d+))");
  std::smatch id;
  if (!std::regex_search(text, id, engine_id)) {
    std::printf(
        "--engine \"%s\": expected \"engine 7, knobs {KERNEL_CFG=22}\" or \"eng7_k24=22\"\n",
        text.c_str());
    return false;
  }
  choice.engine = std::stoll(id[1].str());
  choice.knobs.clear();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), knob); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1].str();
    const std::string number = (*it)[2].str();
    fe::KnobType_t type = fe::KnobType_t::NOT_SET;
    if ((name == "k" || name == "knob") && !number.empty()) {
      type = fe::convert_from_backend_knob_type(
          static_cast<cudnnBackendKnobType_t>(std::stoi(number)));
    } else if (number.empty()) {
      type = knob_type(name);
    }
    if (type == fe::KnobType_t::NOT_SET) {
      std::printf(
          "--engine: knob %s%s is no knob the frontend can set (leave it out, or find the "
          "config among the heuristics' and use --index)\n",
          name.c_str(), number.c_str());
      return false;
    }
    choice.knobs[type] = std::stoll((*it)[3].str());
  }
  return true;
}

// Reads the plan options off a probe's command line, leaving the other arguments in `rest`:
// --heuristics A|B|Fallback|A,Fallback (default A,Fallback, as dnngraph's GPU tests), --index N
// (the candidate at N of that ranked list), --engine TEXT (parse_engine; no heuristics query),
// --zero-workspace, and where `every_allowed` (a probe that runs through build_and_check)
// --every. nullopt after a line saying what was wrong.
inline std::optional<PlanChoice> parse_plan_choice(int argc, char** argv,
                                                   std::vector<std::string>& rest,
                                                   bool every_allowed = false) {
  PlanChoice choice;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--zero-workspace") {
      choice.zero_workspace = true;
      continue;
    }
    if (arg == "--every" && every_allowed) {
      choice.every = true;
      continue;
    }
    if (arg != "--heuristics" && arg != "--index" && arg != "--engine") {
      rest.push_back(arg);
      continue;
    }
    if (i + 1 == argc) {
      std::printf("%s needs a value\n", arg.c_str());
      return std::nullopt;
    }
    const std::string value = argv[++i];
    if (arg == "--engine" && !parse_engine(value, choice)) {
      return std::nullopt;
    }
    if (arg == "--index") {
      std::int64_t index = -1;
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), index);
      if (error != std::errc() || end != value.data() + value.size() || index < 0) {
        std::printf("--index %s: expected a candidate index, 0 or more\n", value.c_str());
        return std::nullopt;
      }
      choice.index = index;
    }
    if (arg == "--heuristics") {
      choice.modes.clear();
      std::stringstream names(value);
      for (std::string name; std::getline(names, name, ',');) {
        const auto known = {fe::HeurMode_t::A, fe::HeurMode_t::B, fe::HeurMode_t::FALLBACK};
        const auto* mode = std::find_if(known.begin(), known.end(),
                                        [&](fe::HeurMode_t m) { return name == mode_name(m); });
        if (mode == known.end()) {
          std::printf("--heuristics %s: expected A, B, Fallback or a list such as A,Fallback\n",
                      value.c_str());
          return std::nullopt;
        }
        choice.modes.push_back(*mode);
      }
    }
  }
  if (choice.engine && choice.index) {
    std::printf("--engine and --index: one or the other\n");
    return std::nullopt;
  }
  if (choice.every && (choice.engine || choice.index)) {
    std::printf("--every builds each candidate in turn: not with --index or --engine\n");
    return std::nullopt;
  }
  return choice;
}

// "heuristics A, Fallback, the first that builds" or "engine 7, knobs {...} (pinned)", and
// ", workspace zeroed" when so: the line a probe prints first.
inline std::string describe(const PlanChoice& choice) {
  std::string text;
  if (choice.engine) {
    text = engine_text(*choice.engine, choice.knobs) + " (pinned, no heuristics query)";
  } else {
    text = "heuristics ";
    for (const fe::HeurMode_t mode : choice.modes) {
      text += std::string(text.back() == ' ' ? "" : ", ") + mode_name(mode);
    }
    text += choice.index   ? ", candidate #" + std::to_string(*choice.index)
            : choice.every ? std::string(", every candidate in turn")
                           : std::string(", the first that builds");
  }
  return text + (choice.zero_workspace ? ", workspace zeroed" : "");
}

struct Built {
  bool ok = false;
  std::int64_t configs = 0;          // engine configs offered (the heuristics', or the pinned one)
  std::vector<std::string> offered;  // their plan names, in ranked order
  std::string plan;                  // the chosen plan's name, once built
  std::string engine;                // the chosen config as engine_text writes it
  std::int64_t workspace = 0;        // the chosen plan's, bytes
  std::string error;                 // the frontend's message, when not built
};

// validate, the operation graph, the engine configs (the heuristics' under the choice's modes,
// or the pinned one), the support check and the plans (or the one candidate chosen): the
// frontend's own build chain, stopped at the first error (or exception).
inline Built build_chosen(fe::graph::Graph& graph, cudnnHandle_t handle, const PlanChoice& choice) {
  Built built;
  try {
    auto status = graph.validate();
    if (status.is_good()) status = graph.build_operation_graph(handle);
    if (status.is_good()) {
      status = choice.engine ? graph.create_execution_plan(
                                   *choice.engine, {choice.knobs.begin(), choice.knobs.end()})
                             : graph.create_execution_plans(choice.modes);
    }
    if (status.is_good()) built.configs = graph.get_execution_plan_count();
    for (std::int64_t i = 0; status.is_good() && i < built.configs; ++i) {
      (void)graph.get_plan_name_at_index(i, built.offered.emplace_back());
    }
    if (status.is_good()) {
      status = choice.index ? graph.build_plan_at_index(*choice.index) : graph.check_support();
    }
    if (status.is_good() && !choice.index) status = graph.build_plans();
    if (status.is_good()) status = graph.get_plan_name(built.plan);
    if (status.is_good()) status = graph.get_workspace_size(built.workspace);
    const auto at = std::find(built.offered.begin(), built.offered.end(), built.plan);
    std::int64_t engine = -1;
    std::unordered_map<fe::KnobType_t, std::int64_t> knobs;
    if (status.is_good() && at != built.offered.end() &&
        graph.get_engine_and_knobs_at_index(at - built.offered.begin(), engine, knobs).is_good()) {
      built.engine = engine_text(engine, {knobs.begin(), knobs.end()});
    }
    built.ok = status.is_good();
    built.error = built.ok ? "" : status.get_message();
  } catch (const std::exception& e) {
    built.ok = false;
    built.error = std::string("the frontend threw: ") + e.what();
  }
  return built;
}

// The chain above under modes, the first config that builds.
inline Built build(fe::graph::Graph& graph, cudnnHandle_t handle,
                   const std::vector<fe::HeurMode_t>& modes) {
  PlanChoice choice;
  choice.modes = modes;
  return build_chosen(graph, handle, choice);
}

// Prints "built (N engine configs offered, plan P = engine E, knobs {...}, workspace W B)" and
// `then` (by default "; ", to go on with), or "not built (N engine configs offered): why" ending
// the line; true when built.
inline bool print_built(const Built& built, const char* then = "; ") {
  if (!built.ok) {
    std::printf("not built (%lld engine configs offered): %s\n",
                static_cast<long long>(built.configs), built.error.c_str());
    return false;
  }
  std::printf("built (%lld engine configs offered, plan %s = %s, workspace %lld B)%s",
              static_cast<long long>(built.configs), built.plan.c_str(), built.engine.c_str(),
              static_cast<long long>(built.workspace), then);
  return true;
}

// build_chosen, then its line and one line per engine config offered, in ranked order
// ("  #0 eng7_k24=22 <- built"); true when built.
inline bool build_and_print(fe::graph::Graph& graph, cudnnHandle_t handle,
                            const PlanChoice& choice) {
  const Built built = build_chosen(graph, handle, choice);
  const bool ok = print_built(built, "\n");
  for (std::size_t i = 0; i < built.offered.size(); ++i) {
    std::printf("  #%zu %s%s\n", i, built.offered[i].c_str(),
                ok && built.offered[i] == built.plan ? " <- built" : "");
  }
  return ok;
}

// With the choice's `every` unset: build_and_print, then `check` (on the built graph: executes,
// prints its comparison, returns whether right) and the line's end; true when both held. With
// `every`: each engine config of the ranked list at its index, on a graph `describe` makes for
// it, then `check`: one line per candidate, printed and flushed as it ends with its seconds, so
// that under a tool the candidate that never ends is the one after the last line. A candidate
// cuDNN refuses at its build is shown, not a failure (a ranked config may fail to finalize);
// true when some config was offered and every built one checked right.
template <class Describe, class Check>
bool build_and_check(cudnnHandle_t handle, const PlanChoice& choice, Describe describe,
                     Check check) {
  if (!choice.every) {
    fe::graph::Graph graph;
    describe(graph);
    const bool ok = build_and_print(graph, handle, choice) && check(graph);
    std::printf("\n");
    return ok;
  }
  bool all = true;
  std::int64_t count = 1;
  for (std::int64_t i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    PlanChoice at = choice;
    at.index = i;
    fe::graph::Graph graph;
    describe(graph);
    const Built built = build_chosen(graph, handle, at);
    if (i == 0) {
      count = built.configs;
      all = count > 0;
    }
    std::printf("  candidate %lld of %lld: ", static_cast<long long>(i),
                static_cast<long long>(count));
    if (built.ok) {
      std::printf("%s, workspace %lld B; ", built.engine.c_str(),
                  static_cast<long long>(built.workspace));
      all = check(graph) && all;
    } else {
      std::printf("not built: %s", built.error.c_str());
    }
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    std::printf(" (%.1f s)\n", seconds.count());
    std::fflush(stdout);
  }
  return all;
}

// A probe's main over its cases: reads the plan options (--every where `every_allowed`) and the
// case names (2 when wrong), prints "# cudnn-frontend V, cuDNN V: <what>; <plan choice>", exits
// 77 without a CUDA device, then runs each chosen case on one handle: 0 when every run returned
// true, else 1.
template <class Case, std::size_t N, class Run>
int run_cases(int argc, char** argv, const char* what, const std::array<Case, N>& cases, Run run,
              bool every_allowed = false) {
  std::vector<std::string> names;
  const std::optional<PlanChoice> choice = parse_plan_choice(argc, argv, names, every_allowed);
  const auto chosen = select_cases(cases, names);
  if (!choice || !chosen) {
    return 2;
  }
  std::printf("# cudnn-frontend %d, cuDNN %zu: %s; %s\n", CUDNN_FRONTEND_VERSION, cudnnGetVersion(),
              what, describe(*choice).c_str());
  if (!cuda_device_present()) {
    return 77;
  }
  cudnnHandle_t handle = open_handle();
  if (handle == nullptr) {
    return 1;
  }
  bool all = true;
  for (const Case* c : *chosen) {
    all = run(handle, *c, *choice) && all;
  }
  cudnnDestroy(handle);
  return all ? 0 : 1;
}

// Execute-time override shapes: uids with their new dims and strides; empty: the build shapes.
struct Overrides {
  std::vector<std::int64_t> uids;
  std::vector<Dims> shapes, strides;
};

// Asks the workspace (with the overrides, if any), executes once (on a workspace of zeros with
// zero_workspace, else as cudaMalloc left it) and waits; "" when that all succeeded, else what
// failed and the frontend's or CUDA's message.
inline std::string execute(fe::graph::Graph& graph, cudnnHandle_t handle,
                           std::unordered_map<std::int64_t, void*>& pack,
                           const Overrides& overrides = {}, bool zero_workspace = false) {
  const bool overridden = !overrides.uids.empty();
  std::int64_t workspace_size = 0;
  if (auto ws = overridden ? graph.get_workspace_size(handle, workspace_size, overrides.uids,
                                                      overrides.shapes, overrides.strides)
                           : graph.get_workspace_size(workspace_size);
      !ws.is_good()) {
    return "workspace: " + ws.get_message();
  }
  Device workspace(static_cast<std::size_t>(workspace_size) + 1);
  if (zero_workspace && !workspace.fill(0)) {
    return "workspace: memset failed";
  }
  if (auto ran = overridden ? graph.execute(handle, pack, workspace.ptr, overrides.uids,
                                            overrides.shapes, overrides.strides)
                            : graph.execute(handle, pack, workspace.ptr);
      !ran.is_good()) {
    return "execute: " + ran.get_message();
  }
  if (const cudaError_t sync = cudaDeviceSynchronize(); sync != cudaSuccess) {
    return std::string("synchronize: ") + cudaGetErrorString(sync);
  }
  return "";
}

// Half or BFloat16 bits of v (rounded to nearest even), and the value of such bits. All-ones
// bits (what memset 0xFF writes) are a NaN in both types, and in Float.
inline std::uint16_t to_bits(float v, bool bf16) {
  std::uint16_t bits = 0;
  if (bf16) {
    const __nv_bfloat16 b = __float2bfloat16(v);
    std::memcpy(&bits, &b, 2);
  } else {
    const __half h = __float2half(v);
    std::memcpy(&bits, &h, 2);
  }
  return bits;
}
inline float from_bits(std::uint16_t bits, bool bf16) {
  if (bf16) {
    __nv_bfloat16 b;
    std::memcpy(&b, &bits, 2);
    return __bfloat162float(b);
  }
  __half h;
  std::memcpy(&h, &bits, 2);
  return __half2float(h);
}
inline float round_trip(float v, bool bf16) { return from_bits(to_bits(v, bf16), bf16); }

// The worst |got - want| over the elements compared; a NaN is counted apart, never as small.
// add_within also counts the elements beyond abs + rel |want| (a NaN among them).
struct Worst {
  std::size_t compared = 0;
  std::size_t nan = 0;
  std::size_t outside = 0;
  double max_error = 0;
  void add(double got, double want) {
    ++compared;
    if (std::isnan(got) || std::isnan(want)) {
      ++nan;
    } else {
      max_error = std::max(max_error, std::abs(got - want));
    }
  }
  void add_within(double got, double want, double abs, double rel) {
    add(got, want);
    outside += std::abs(got - want) <= abs + rel * std::abs(want) ? 0 : 1;
  }
  [[nodiscard]] bool within(double tolerance) const { return nan == 0 && max_error <= tolerance; }
};

}  // namespace dnngraph_bench
