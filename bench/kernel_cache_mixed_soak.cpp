// Mixed soak (issue 33): N threads, each with its own Handle, pick a topology at random round
// after round for S seconds, build a graph of it at a random shape, execute it and check the
// result against a CPU reference. Dynamic-shape topologies (matmul + bias + ReLU, GELU or SiLU in
// bf16; conv_fprop 3x3 + bias + ReLU, fp16 NHWC; layernorm training and inference in bf16) each
// have one KernelCache shared by every thread: a cache binds to the topology of its first build,
// so the process keeps a table topology -> cache, as users share caches. Static attention (sdpa
// forward, bf16, causal or not) is built per shape by the thread, on no cache: no cuDNN serves
// dynamic-shape attention (docs/known-issues.md, sdpa-dynamic-shape).
//   bench_kernel_cache_mixed_soak THREADS SECONDS [--topologies NAME,NAME...] [--shape-pool N]
//       [--keep-static]
// --topologies runs only those (the names the lines print: matmul_bias_relu, matmul_bias_gelu,
// matmul_bias_silu, conv_bias_relu, layernorm_training, layernorm_inference, sdpa_static), to
// tell which of them a growth comes from. --shape-pool N (1 to 100000) draws each dynamic
// topology's shapes from N fixed ones (the same ranges, the same N for every thread and run)
// instead of the whole range (matmul 2,048 shapes each, conv 5,476, layernorm 600), and growth
// is judged after the last new shape as after the caches' last change: a pool tells a cost per
// new shape from one per build. (On cuDNN 9.28.1 each static attention build keeps about 0.8 MiB
// of host memory, cuDNN's, so a 9.28.1 run with sdpa_static grows however small the pool:
// docs/kernel-cache.md, bench_shape_memory_probe.) --keep-static has each thread build each
// attention shape once and run that graph in its later rounds, as a server should there.
// At start the main thread builds each topology once (each attention shape): what the loaded
// cuDNN refuses is printed as "refused: <topology>: <error>" and left out, not a failure. Every
// 10 s one line: counts, RSS, malloc's bytes in use, device memory, live cuDNN descriptors (all,
// and execution plans) made through dnngraph, each cache's revision and size; at the end one
// JSON line. Exit 0 only with no build or execute failure, no wrong result and no memory growth.
// Growth rule: judged on the samples after warm-up (the first 60 s, or the first quarter of a
// shorter run) and after the last change of the caches' total entry count: a cache that gains an
// entry holds a compiled kernel more, which is what it is for, not a leak (on cuDNN 9.28.1 a
// dynamic layernorm keeps one entry per row count); with --shape-pool also after the last shape
// of the pool met for the first time. Those samples are cut in thirds; memory grew
// when the last third's maximum exceeds the first third's by more than the larger of 10% and a
// floor, 64 MiB for RSS and malloc in use, 256 MiB for the device (read device-wide; up to 8
// threads hold buffers and workspaces of tens of MiB at any moment). Maxima, not means: the
// allocator and cuDNN's lazily loaded kernels make RSS step and jitter, and a leak shows as a
// rising ceiling; at the ~100 builds/s of a mixed soak, 1 KiB per build leaks 60 MiB in 10
// minutes. Fewer than 3 such samples leave growth unjudged, and the run is not clean when the
// caches were still growing then (nothing left to judge on). RSS growing while malloc in use and
// the live descriptors stay flat points below dnngraph's allocations (cuDNN's own mappings, the
// allocator's arenas). Exit 77 without a CUDA device.
import dnngraph;

#include <cuda_runtime_api.h>
#include <boost/json.hpp>

// backend::live_count: how many cuDNN descriptors dnngraph holds, a diagnostic the public API
// does not offer (bench/side_by_side.cpp reads the backend layer too).
#include "arguments.hpp"
#include "backend/descriptor.hpp"
#include "bf16_matmul.hpp"
#include "matmul_graph.hpp"
#include "soak_support.hpp"
#include "support/conv_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reference.hpp"
#include "support/sdpa_reference.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <expected>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using dnngraph::test::DeviceBuffer;
using dnngraph_bench::say;
using Dims = std::vector<std::int64_t>;
using Rng = std::mt19937;

enum class Topology : std::uint8_t {
  MatmulRelu,
  MatmulGelu,
  MatmulSilu,
  ConvRelu,
  LayernormTraining,
  LayernormInference,
  Attention,
};
constexpr std::size_t topology_count = 7;
constexpr std::array<Topology, topology_count> all_topologies{
    Topology::MatmulRelu, Topology::MatmulGelu,        Topology::MatmulSilu,
    Topology::ConvRelu,   Topology::LayernormTraining, Topology::LayernormInference,
    Topology::Attention};

constexpr const char* name_of(Topology t) {
  switch (t) {
    case Topology::MatmulRelu: return "matmul_bias_relu";
    case Topology::MatmulGelu: return "matmul_bias_gelu";
    case Topology::MatmulSilu: return "matmul_bias_silu";
    case Topology::ConvRelu: return "conv_bias_relu";
    case Topology::LayernormTraining: return "layernorm_training";
    case Topology::LayernormInference: return "layernorm_inference";
    case Topology::Attention: return "sdpa_static";
  }
  return "?";
}
constexpr std::size_t index_of(Topology t) { return static_cast<std::size_t>(t); }
constexpr bool is_dynamic(Topology t) { return t != Topology::Attention; }

// Each graph is executed this many times before its output is read: more launches per build.
constexpr int executes_per_graph = 4;
// Outputs (matmul) or rows (layernorm) checked per graph; conv and attention compare every
// element, since their shared references compute the whole output anyway.
constexpr int samples_per_graph = 16;
constexpr int norm_rows_per_graph = 4;
constexpr int messages_per_kind = 5;  // of each failure kind per topology, the first few print

// One topology's counts, summed over the threads.
struct Tally {
  std::atomic<std::int64_t> builds{0}, hits{0}, executes{0}, checked{0};
  std::atomic<std::int64_t> build_failures{0}, execute_failures{0}, wrong{0};
};

// What every thread shares: read-only once the threads start, except the tallies (atomics) and
// the caches (a KernelCache locks itself).
struct Soak {
  std::array<std::shared_ptr<dnngraph::KernelCache>, topology_count> caches;  // dynamic ones
  std::array<Tally, topology_count> tallies;
  std::vector<Topology> running;                    // not refused at start
  std::vector<dnngraph::test::SdpaCase> attention;  // the attention shapes not refused
  std::atomic<std::int64_t> handle_failures{0};     // threads that got no Handle
  // --shape-pool: N shapes per dynamic topology (0: the whole range) and which of them have been
  // met (a flag per topology and pool index).
  std::int64_t shape_pool = 0;
  std::array<std::vector<std::atomic<bool>>, topology_count> met;
  bool keep_static = false;  // --keep-static: each thread builds each attention shape once
};

// How many of the pools' shapes have been met so far (0 without a pool).
std::int64_t shapes_met(const Soak& soak) {
  std::int64_t count = 0;
  for (const auto& flags : soak.met) {
    for (const std::atomic<bool>& flag : flags) count += flag ? 1 : 0;
  }
  return count;
}

std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// The generator a round draws its shape from: one seeded from the thread's own, or with
// --shape-pool for a dynamic topology one seeded by the topology and an index of the pool, which
// always gives that index's shape (and marks the index met).
Rng shape_source(Soak& soak, Topology t, Rng& rng) {
  if (soak.shape_pool == 0 || !is_dynamic(t)) return Rng(static_cast<std::uint32_t>(rng()));
  const std::int64_t index = pick(rng, 0, soak.shape_pool - 1);
  soak.met[index_of(t)][static_cast<std::size_t>(index)] = true;
  return Rng(static_cast<std::uint32_t>(index_of(t) * 1'000'003 + index));
}

// ---- Running a built graph ----------------------------------------------------------------

struct Input {
  std::int64_t uid;
  std::span<const std::byte> bytes;
};
struct Output {
  std::int64_t uid;
  std::span<std::byte> bytes;  // filled with what the device wrote
};

// Uploads the inputs, fills each output with NaN (an element never written fails its check),
// executes g executes_per_graph times and downloads the outputs. "" on success, else why not.
std::string execute_and_read(const Graph& g, const dnngraph::Handle& handle,
                             std::span<const Input> inputs, std::span<const Output> outputs,
                             Tally& tally) {
  std::unordered_map<std::int64_t, void*> pack;
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(inputs.size() + outputs.size() + 1);
  for (const Input& in : inputs) {
    auto buffer = DeviceBuffer::copy_of(in.bytes);
    if (!buffer) return buffer.error();
    pack.emplace(in.uid, buffer->get());
    buffers.push_back(std::move(*buffer));
  }
  for (const Output& out : outputs) {
    auto buffer = DeviceBuffer::allocate(out.bytes.size());
    if (!buffer) return buffer.error();
    if (auto filled = buffer->fill_bytes(0xFF); !filled) return filled.error();
    pack.emplace(out.uid, buffer->get());
    buffers.push_back(std::move(*buffer));
  }
  const std::int64_t workspace_size = g.get_workspace_size().value_or(0);
  auto workspace = DeviceBuffer::allocate(static_cast<std::size_t>(workspace_size));
  if (!workspace) return workspace.error();
  for (int e = 0; e < executes_per_graph; ++e) {
    tally.executes++;
    if (auto ran = g.execute(handle, pack, workspace->get()); !ran) {
      return "execute: " + ran.error().message;
    }
  }
  if (auto synced = dnngraph::test::cuda_check(cudaDeviceSynchronize(), "after execute"); !synced) {
    return synced.error();
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const DeviceBuffer& device = buffers[inputs.size() + i];
    if (auto read = device.download(outputs[i].bytes); !read) return read.error();
  }
  return "";
}

// The round's verdict: built (and whether from the cache), ran, and how many checked values
// were wrong; each failure printed for the first few of its kind.
struct Round {
  Topology topology;
  int thread;
  std::string shape;  // for the messages
  Tally& tally;

  [[nodiscard]] bool built(const dnngraph::Result<void>& r, const Graph& g) const {
    tally.builds++;
    if (!r) {
      if (tally.build_failures++ < messages_per_kind) {
        say("thread %d: %s %s: build: %s\n", thread, name_of(topology), shape.c_str(),
            r.error().message.c_str());
      }
      return false;
    }
    if (auto info = g.plan_info(); info && info->kernel_cache_hit) tally.hits++;
    return true;
  }
  [[nodiscard]] bool ran(const std::string& failure) const {
    if (failure.empty()) return true;
    if (tally.execute_failures++ < messages_per_kind) {
      say("thread %d: %s %s: %s\n", thread, name_of(topology), shape.c_str(), failure.c_str());
    }
    return false;
  }
  void checked(std::size_t count, const std::string& wrong) const {
    tally.checked += static_cast<std::int64_t>(count);
    if (wrong.empty()) return;
    if (tally.wrong++ < messages_per_kind) {
      say("thread %d: WRONG %s %s: %s\n", thread, name_of(topology), shape.c_str(), wrong.c_str());
    }
  }
};

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}
template <class T>
std::span<std::byte> bytes_of(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}

// ---- matmul + bias + activation (bf16, dynamic) -------------------------------------------

PointwiseMode activation_of(Topology t) {
  return t == Topology::MatmulGelu   ? PointwiseMode::GeluFwd
         : t == Topology::MatmulSilu ? PointwiseMode::SwishFwd
                                     : PointwiseMode::ReluFwd;
}

dnngraph_bench::MatmulShape random_matmul_shape(Rng& rng) {
  return {pick(rng, 1, 4), 64 * pick(rng, 1, 8), 64 * pick(rng, 1, 8), 64 * pick(rng, 1, 8)};
}

void matmul_round(Topology t, const dnngraph::Handle& handle, const Soak& soak, Rng& rng,
                  Rng& shapes, Round& round) {
  using dnngraph_bench::to_bf16;
  const dnngraph_bench::MatmulShape s = random_matmul_shape(shapes);
  round.shape = "[b " + std::to_string(s.b) + " m " + std::to_string(s.m) + " n " +
                std::to_string(s.n) + " k " + std::to_string(s.k) + "]";
  const PointwiseMode activation = activation_of(t);
  Graph g = dnngraph_bench::matmul_graph(s, true, activation, soak.caches[index_of(t)]);
  if (!round.built(g.build(handle, {dnngraph::HeuristicMode::A}), g)) return;
  // Multiples of 1/8 up to 1 (2 for the bias): exact in bf16, exact products.
  const auto eighths = [&](std::size_t count, std::int64_t range) {
    std::vector<std::uint16_t> v(count);
    for (auto& x : v) x = to_bf16(static_cast<float>(pick(rng, -range, range)) / 8.0F);
    return v;
  };
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  const auto a = eighths(n(s.b * s.m * s.k), 8);
  const auto b = eighths(n(s.b * s.k * s.n), 8);
  const auto bias = eighths(n(s.n), 16);
  std::vector<std::uint16_t> y(n(s.b * s.m * s.n));
  const std::array inputs{Input{1, bytes_of(a)}, Input{2, bytes_of(b)}, Input{4, bytes_of(bias)}};
  const std::array outputs{Output{3, bytes_of(y)}};
  if (!round.ran(execute_and_read(g, handle, inputs, outputs, round.tally))) return;
  std::string wrong;
  for (int sample = 0; sample < samples_per_graph; ++sample) {
    const std::int64_t bi = pick(rng, 0, s.b - 1);
    const std::int64_t i = pick(rng, 0, s.m - 1);
    const std::int64_t j = pick(rng, 0, s.n - 1);
    const double pre = dnngraph_bench::matmul_reference(s, a, b, bias, false, bi, i, j);
    const double ref = dnngraph::test::pointwise_reference(activation, pre);
    const double got = dnngraph_bench::from_bf16(y[n((bi * s.m + i) * s.n + j)]);
    if (!dnngraph_bench::close_to_reference(got, ref) && wrong.empty()) {
      wrong = "Y[" + std::to_string(bi) + "," + std::to_string(i) + "," + std::to_string(j) +
              "] = " + std::to_string(got) + ", reference " + std::to_string(ref);
    }
  }
  round.checked(samples_per_graph, wrong);
}

// ---- conv_fprop 3x3 + bias + ReLU (fp16, NHWC, dynamic N, H, W) ----------------------------

constexpr std::int64_t conv_channels = 32;  // C = K

dnngraph::test::ConvCase conv_case(std::int64_t n, std::int64_t h, std::int64_t w) {
  using namespace dnngraph::test;
  ConvCase c{.name = "conv_bias_relu",
             .kind = ConvKind::Fprop,
             .type = DataType::Half,
             .layout = Layout::ChannelsLast,
             .problem = uniform_problem({n, conv_channels, h, w},
                                        {conv_channels, conv_channels, 3, 3}, 1, 1, 1),
             .bias_relu = true};
  return c;
}

Graph conv_graph(const dnngraph::test::ConvCase& c, const Soak& soak) {
  Graph g = dnngraph::test::make_conv_graph(c).graph;
  g.set_dynamic_shape_enabled(true).set_kernel_cache(soak.caches[index_of(Topology::ConvRelu)]);
  return g;
}

void conv_round(const dnngraph::Handle& handle, const Soak& soak, Rng& rng, Rng& shapes,
                Round& round) {
  using namespace dnngraph::test;
  const std::int64_t n = pick(shapes, 1, 4);
  const std::int64_t h = pick(shapes, 4, 40);
  const ConvCase c = conv_case(n, h, pick(shapes, 4, 40));
  round.shape = dnngraph::to_string(c.problem.x_dims);
  Graph g = conv_graph(c, soak);
  if (!round.built(g.build(handle, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback}),
                   g)) {
    return;
  }
  const ConvProblem& p = c.problem;
  const HostTensor x = random_tensor(c.type, element_count(p.x_dims), rng);
  const HostTensor w = random_tensor(c.type, element_count(p.w_dims), rng);
  const HostTensor bias = random_tensor(c.type, conv_channels, rng);
  std::vector<std::byte> y(element_count(p.y_dims()) * 2);
  const std::array inputs{Input{uid_input0, x.bytes}, Input{uid_input1, w.bytes},
                          Input{uid_bias, bias.bytes}};
  const std::array outputs{Output{uid_output, y}};
  if (!round.ran(execute_and_read(g, handle, inputs, outputs, round.tally))) return;
  const auto expected = reference_output(c, x.values, w.values, bias.values);
  const auto result = compare(decode(c.type, y), expected, conv_tolerance(c.type));
  round.checked(result.count, result.passed() ? "" : result.describe());
}

// ---- layernorm forward (bf16, dynamic rows, 256 features) ----------------------------------

constexpr std::int64_t norm_features = 256;
constexpr float norm_epsilon = 1e-5F;
constexpr std::int64_t uid_x = 1, uid_scale = 2, uid_norm_bias = 3;
constexpr std::int64_t uid_y = 10, uid_mean = 11, uid_inv_var = 12;

// X [rows, features, 1, 1] channels-last (each row contiguous), Float scale and bias.
Graph layernorm_graph(std::int64_t rows, dnngraph::NormFwdPhase phase,
                      const std::shared_ptr<dnngraph::KernelCache>& cache) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(true).set_kernel_cache(cache);
  const auto input = [&](const char* name, std::int64_t uid, const Dims& dims,
                         std::optional<DataType> type) {
    TensorAttributes t;
    t.set_name(name).set_uid(uid).set_dim(dims).set_stride(channels_last_strides(dims));
    if (type) t.set_data_type(*type);
    return g.tensor(t);
  };
  const Dims parameter{1, norm_features, 1, 1};
  auto x = input("X", uid_x, {rows, norm_features, 1, 1}, std::nullopt);
  auto scale = input("scale", uid_scale, parameter, DataType::Float);
  auto bias = input("bias", uid_norm_bias, parameter, DataType::Float);
  auto [y, mean, inv_var] =
      g.layernorm(x, scale, bias,
                  LayernormAttributes().set_name("ln").set_forward_phase(phase).set_epsilon(
                      g.tensor(norm_epsilon)));
  y->set_output(true).set_uid(uid_y);
  if (phase == NormFwdPhase::Training) {
    mean->set_output(true).set_uid(uid_mean);
    inv_var->set_output(true).set_uid(uid_inv_var);
  }
  return g;
}

// Tolerances argued in tests/gpu/norm_test.cpp: Y rounds to bf16 once; the Float statistics of
// a one-pass variance lose a few bits to cancellation.
constexpr dnngraph::test::Tolerance norm_y_tolerance{.abs = 3e-2, .rel = 1e-2};
constexpr dnngraph::test::Tolerance norm_statistic_tolerance{.abs = 1e-5, .rel = 5e-4};

void layernorm_round(Topology t, const dnngraph::Handle& handle, const Soak& soak, Rng& rng,
                     Rng& shapes, Round& round) {
  using namespace dnngraph::test;
  const bool training = t == Topology::LayernormTraining;
  const std::int64_t rows = pick(shapes, 1, 600);
  round.shape = "[rows " + std::to_string(rows) + "]";
  Graph g = layernorm_graph(
      rows, training ? dnngraph::NormFwdPhase::Training : dnngraph::NormFwdPhase::Inference,
      soak.caches[index_of(t)]);
  if (!round.built(g.build(handle, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback}),
                   g)) {
    return;
  }
  const auto row = static_cast<std::size_t>(norm_features);
  const auto count = static_cast<std::size_t>(rows) * row;
  const HostTensor x = random_tensor(DataType::BFloat16, count, rng);
  const HostTensor scale = random_tensor(DataType::Float, row, rng);
  const HostTensor bias = random_tensor(DataType::Float, row, rng);
  std::vector<std::byte> y(count * 2);
  std::vector<float> mean(static_cast<std::size_t>(rows));
  std::vector<float> inv_var(static_cast<std::size_t>(rows));
  const std::array inputs{Input{uid_x, x.bytes}, Input{uid_scale, scale.bytes},
                          Input{uid_norm_bias, bias.bytes}};
  std::vector<Output> outputs{Output{uid_y, y}};
  if (training) {
    outputs.push_back({uid_mean, bytes_of(mean)});
    outputs.push_back({uid_inv_var, bytes_of(inv_var)});
  }
  if (!round.ran(execute_and_read(g, handle, inputs, outputs, round.tally))) return;
  const std::vector<float> y_got = decode(DataType::BFloat16, y);
  std::size_t checked = 0;
  std::string wrong;
  for (int sample = 0; sample < norm_rows_per_graph; ++sample) {
    const auto r = static_cast<std::size_t>(pick(rng, 0, rows - 1));
    const std::span<const float> in = std::span(x.values).subspan(r * row, row);
    double mu = 0;
    for (const float v : in) mu += v;
    mu /= static_cast<double>(row);
    double var = 0;
    for (const float v : in) var += (v - mu) * (v - mu);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(row) + norm_epsilon);
    std::vector<double> expected(row);
    for (std::size_t i = 0; i < row; ++i) {
      expected[i] = (in[i] - mu) * inv * scale.values[i] + bias.values[i];
    }
    auto result = compare(std::span(y_got).subspan(r * row, row), expected, norm_y_tolerance);
    if (training) {
      const std::array<float, 2> got{mean[r], inv_var[r]};
      const std::array<double, 2> stats{mu, inv};
      const auto s = compare(got, stats, norm_statistic_tolerance);
      checked += s.count;
      if (!s.passed() && result.passed()) result = s;
    }
    checked += row;
    if (!result.passed() && wrong.empty()) {
      wrong = "row " + std::to_string(r) + ": " + result.describe();
    }
  }
  round.checked(checked, wrong);
}

// ---- static attention (sdpa forward, bf16) -------------------------------------------------

constexpr std::int64_t uid_q = 1, uid_k = 2, uid_v = 3, uid_o = 4;

// The shapes the threads draw from: b, h, s, d 64 and 128, causal (top-left) or not.
std::vector<dnngraph::test::SdpaCase> attention_shapes() {
  using dnngraph::DiagonalAlignment;
  const auto shape = [](std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d,
                        bool causal) {
    return dnngraph::test::SdpaCase{
        .name = "sdpa",
        .type = DataType::BFloat16,
        .b = b,
        .h_q = h,
        .h_k = h,
        .s_q = s,
        .s_kv = s,
        .d = d,
        .causal = causal ? std::optional(DiagonalAlignment::TopLeft) : std::nullopt,
        .stats = false,
        .len_q = {},  // equal lengths: no padding mask
        .len_kv = {}};
  };
  return {shape(1, 4, 128, 64, false), shape(2, 2, 256, 64, true), shape(2, 4, 64, 128, false),
          shape(1, 2, 200, 128, true), shape(4, 2, 96, 64, true),  shape(1, 8, 128, 128, false)};
}

Graph attention_graph(const dnngraph::test::SdpaCase& c) {
  Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  auto q = g.tensor(TensorAttributes().set_name("Q").set_uid(uid_q).set_dim(c.q_dims()));
  auto k = g.tensor(TensorAttributes().set_name("K").set_uid(uid_k).set_dim(c.kv_dims()));
  auto v = g.tensor(TensorAttributes().set_name("V").set_uid(uid_v).set_dim(c.kv_dims()));
  dnngraph::SdpaAttributes a;
  a.set_name("attn").set_attn_scale(c.scale()).set_generate_stats(false);
  dnngraph::test::set_masks(c, g, a, 0, 0);  // no padding mask: the length uids go unused
  auto [o, stats] = g.sdpa(q, k, v, a);
  o->set_name("O").set_uid(uid_o).set_output(true);
  return g;
}

std::string attention_text(const dnngraph::test::SdpaCase& c) {
  return "[b " + std::to_string(c.b) + " h " + std::to_string(c.h_q) + " s " +
         std::to_string(c.s_q) + " d " + std::to_string(c.d) + (c.causal ? " causal]" : "]");
}

// `kept`: with --keep-static the thread's built graph of each attention shape (empty without),
// built on the shape's first round and run from then on, as a server on cuDNN 9.28.1 should
// (each static build keeps memory there: docs/known-issues.md); without, a build every round.
void attention_round(const dnngraph::Handle& handle, const Soak& soak, Rng& rng, Round& round,
                     std::vector<std::optional<Graph>>& kept) {
  using namespace dnngraph::test;
  const auto index =
      static_cast<std::size_t>(pick(rng, 0, static_cast<std::int64_t>(soak.attention.size()) - 1));
  const SdpaCase& c = soak.attention[index];
  round.shape = attention_text(c);
  std::optional<Graph> this_round;
  std::optional<Graph>& slot = kept.empty() ? this_round : kept[index];
  if (!slot) {
    Graph& fresh = slot.emplace(attention_graph(c));
    if (!round.built(
            fresh.build(handle, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback}),
            fresh)) {
      slot.reset();
      return;
    }
  }
  const Graph& g = *slot;
  const HostTensor q = random_tensor(c.type, element_count(c.q_dims()), rng);
  const HostTensor k = random_tensor(c.type, element_count(c.kv_dims()), rng);
  const HostTensor v = random_tensor(c.type, element_count(c.kv_dims()), rng);
  std::vector<std::byte> o(element_count(c.q_dims()) * 2);
  const std::array inputs{Input{uid_q, q.bytes}, Input{uid_k, k.bytes}, Input{uid_v, v.bytes}};
  const std::array outputs{Output{uid_o, o}};
  if (!round.ran(execute_and_read(g, handle, inputs, outputs, round.tally))) return;
  // Equal lengths, no padding: every row has a defined output (a causal row sees its diagonal).
  const SdpaExpected e = sdpa_reference(c, q.values, k.values, v.values);
  const auto result = compare(decode(c.type, o), e.o, o_tolerance(c.type));
  round.checked(result.count, result.passed() ? "" : result.describe());
}

// ---- The threads ---------------------------------------------------------------------------

void worker(int id, double seconds, Soak& soak) {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    say("thread %d: no handle: %s\n", id, handle.error().message.c_str());
    soak.handle_failures++;
    return;
  }
  Rng rng(static_cast<std::uint32_t>(4321 + id));
  std::vector<std::optional<Graph>> kept(soak.keep_static ? soak.attention.size() : 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const Topology t = soak.running[static_cast<std::size_t>(
        pick(rng, 0, static_cast<std::int64_t>(soak.running.size()) - 1))];
    Round round{t, id, "", soak.tallies[index_of(t)]};
    Rng shapes = shape_source(soak, t, rng);
    switch (t) {
      case Topology::MatmulRelu:
      case Topology::MatmulGelu:
      case Topology::MatmulSilu: matmul_round(t, *handle, soak, rng, shapes, round); break;
      case Topology::ConvRelu: conv_round(*handle, soak, rng, shapes, round); break;
      case Topology::LayernormTraining:
      case Topology::LayernormInference:
        layernorm_round(t, *handle, soak, rng, shapes, round);
        break;
      case Topology::Attention: attention_round(*handle, soak, rng, round, kept); break;
    }
  }
}

// Builds each topology once on the main thread (the dynamic ones on their shared cache, which
// warms it); what the loaded cuDNN refuses is printed and left out. Returns the refusals.
boost::json::object probe(const dnngraph::Handle& handle, Soak& soak,
                          const std::vector<Topology>& chosen) {
  boost::json::object refused;
  const auto accepted = [&](std::string_view what, const dnngraph::Result<void>& built) {
    if (built) return true;
    std::printf("refused: %s: %s\n", std::string(what).c_str(), built.error().message.c_str());
    refused[what] = built.error().message;
    return false;
  };
  const std::vector<dnngraph::HeuristicMode> modes{dnngraph::HeuristicMode::A,
                                                   dnngraph::HeuristicMode::Fallback};
  for (const Topology t : chosen) {
    if (is_dynamic(t)) soak.caches[index_of(t)] = std::make_shared<dnngraph::KernelCache>();
    bool ok = false;
    switch (t) {
      case Topology::MatmulRelu:
      case Topology::MatmulGelu:
      case Topology::MatmulSilu: {
        Graph g = dnngraph_bench::matmul_graph({1, 64, 64, 64}, true, activation_of(t),
                                               soak.caches[index_of(t)]);
        ok = accepted(name_of(t), g.build(handle, {dnngraph::HeuristicMode::A}));
        break;
      }
      case Topology::ConvRelu: {
        Graph g = conv_graph(conv_case(1, 16, 16), soak);
        ok = accepted(name_of(t), g.build(handle, modes));
        break;
      }
      case Topology::LayernormTraining:
      case Topology::LayernormInference: {
        Graph g =
            layernorm_graph(64,
                            t == Topology::LayernormTraining ? dnngraph::NormFwdPhase::Training
                                                             : dnngraph::NormFwdPhase::Inference,
                            soak.caches[index_of(t)]);
        ok = accepted(name_of(t), g.build(handle, modes));
        break;
      }
      case Topology::Attention:
        for (const dnngraph::test::SdpaCase& c : attention_shapes()) {
          Graph g = attention_graph(c);
          if (accepted(std::string(name_of(t)) + " " + attention_text(c), g.build(handle, modes))) {
            soak.attention.push_back(c);
          }
        }
        ok = !soak.attention.empty();
        break;
    }
    if (ok) soak.running.push_back(t);
  }
  return refused;
}

// ---- Memory growth -------------------------------------------------------------------------

struct Growth {
  bool judged = false;
  bool grew = false;
  std::int64_t first_max = -1, last_max = -1;  // MiB, of the first and last thirds
};

// One sampler tick (every 10 s).
struct Sample {
  int second = 0;
  std::int64_t rss_mib = 0, gpu_mib = 0, malloc_mib = 0;
  std::int64_t cache_entries = 0;  // every shared cache's size together
  std::int64_t shapes_met = 0;     // --shape-pool: the pools' shapes met so far
  std::int64_t live_plans = 0, live_descriptors = 0;
};

// The samples the growth rule judges: after warm-up, after the caches' last size change and
// after the last shape of a pool met for the first time.
std::span<const Sample> judged_samples(std::span<const Sample> samples, double warm_up) {
  std::size_t from = 0;
  while (from < samples.size() && samples[from].second < warm_up) ++from;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    if (samples[i].cache_entries != samples[i - 1].cache_entries ||
        samples[i].shapes_met != samples[i - 1].shapes_met) {
      from = std::max(from, i);
    }
  }
  return samples.subspan(from);
}

// The rule in the first comment: the last third's maximum against the first third's, by more
// than the larger of 10% and the floor.
Growth growth_of(std::span<const Sample> samples, std::int64_t Sample::* field,
                 std::int64_t floor_mib) {
  Growth g;
  if (samples.size() < 3) return g;
  const std::size_t third = samples.size() / 3;
  const auto max_of = [field](std::span<const Sample> part) {
    std::int64_t m = -1;
    for (const Sample& s : part) m = std::max(m, s.*field);
    return m;
  };
  g.judged = true;
  g.first_max = max_of(samples.first(third));
  g.last_max = max_of(samples.last(third));
  g.grew = g.last_max > g.first_max + std::max(g.first_max / 10, floor_mib);
  return g;
}

boost::json::object to_json(const Growth& g) {
  return {{"judged", g.judged},
          {"grew", g.grew},
          {"first_third_max", g.first_max},
          {"last_third_max", g.last_max}};
}

}  // namespace

// The topologies named in a comma-separated list, or nullopt when a name is none of them.
std::optional<std::vector<Topology>> topologies_named(std::string_view list) {
  std::vector<Topology> chosen;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    const auto* found =
        std::ranges::find_if(all_topologies, [&](Topology t) { return name == name_of(t); });
    if (found == all_topologies.end()) {
      return std::nullopt;
    }
    chosen.push_back(*found);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return chosen;
}

int main(int argc, char* argv[]) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 600.0;
  std::vector<Topology> chosen(all_topologies.begin(), all_topologies.end());
  std::int64_t shape_pool = 0;
  bool keep_static = false;
  bool usage = false;
  for (int i = 3; i < argc && !usage; ++i) {
    const std::string_view option = argv[i];
    if (option == "--keep-static") {
      keep_static = true;
      continue;
    }
    const char* value = i + 1 < argc ? argv[++i] : nullptr;
    if (value != nullptr && option == "--topologies") {
      const auto named = topologies_named(value);
      usage = !named || named->empty();
      if (!usage) chosen = *named;
    } else if (value != nullptr && option == "--shape-pool") {
      const auto pool = dnngraph_bench::whole_number(value, 1, 100'000);
      shape_pool = pool.value_or(0);
      usage = !pool;
    } else {
      usage = true;
    }
  }
  if (usage) {
    std::fprintf(stderr,
                 "usage: bench_kernel_cache_mixed_soak THREADS SECONDS [--topologies "
                 "NAME,NAME...] [--shape-pool 1-100000] [--keep-static]\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device\n");
    return 77;
  }
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("no handle: %s\n", handle.error().message.c_str());
    return 1;
  }
  const std::string cudnn = dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version());
  std::printf(
      "mixed soak: cuDNN %s, %d threads, %.0f s, one shared KernelCache per dynamic "
      "topology (%s revision/size), %d executes per graph\n",
      cudnn.c_str(), threads, seconds,
      std::string(dnngraph::KernelCache::introspection_path()).c_str(), executes_per_graph);
  Soak soak;
  soak.shape_pool = shape_pool;
  soak.keep_static = keep_static;
  for (auto& met : soak.met)
    met = std::vector<std::atomic<bool>>(static_cast<std::size_t>(shape_pool));
  const boost::json::object refused = probe(*handle, soak, chosen);
  if (soak.running.empty()) {
    std::printf("nothing to run: every topology refused\n");
    return 1;
  }
  std::string running;
  for (const Topology t : soak.running) running += std::string(" ") + name_of(t);
  std::printf("running:%s (%zu attention shapes%s)%s\n", running.c_str(), soak.attention.size(),
              keep_static ? ", each built once per thread" : "",
              shape_pool == 0 ? ""
                              : (", shapes of each dynamic topology from a pool of " +
                                 std::to_string(shape_pool))
                                    .c_str());

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t, seconds, std::ref(soak));
  // Sampled by the sampler thread alone; read after it is joined.
  const double warm_up = std::min(60.0, seconds / 4);
  std::vector<Sample> samples;
  std::atomic<bool> done{false};
  // GPU memory: the process's own where nvidia-smi lists it, else the device's (every
  // process's), decided at the first sample and kept for the run; written by the sampler alone.
  bool gpu_own = false;
  std::thread sampler([&] {
    int tick = 0;
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (++tick % 50 != 0) continue;
      const std::int64_t own_mib = samples.empty() || gpu_own ? dnngraph_bench::gpu_own_mib() : -1;
      gpu_own = samples.empty() ? own_mib >= 0 : gpu_own;
      Sample sample{
          .second = tick / 5,
          .rss_mib = dnngraph_bench::rss_kib() >> 10,
          .gpu_mib = gpu_own ? own_mib : dnngraph_bench::gpu_used_mib(),
          .malloc_mib = dnngraph_bench::malloc_in_use_mib(),
          .live_plans = dnngraph::backend::live_count(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR),
          .live_descriptors = dnngraph::backend::live_count_all()};
      std::int64_t builds = 0, executes = 0, checked = 0, failures = 0;
      for (const Tally& tally : soak.tallies) {
        builds += tally.builds;
        executes += tally.executes;
        checked += tally.checked;
        failures += tally.build_failures + tally.execute_failures + tally.wrong;
      }
      std::string caches;
      for (const Topology t : soak.running) {
        if (const auto& cache = soak.caches[index_of(t)]) {
          const std::int64_t size = cache->size().value_or(-1);
          sample.cache_entries += size;
          caches += " " + std::string(name_of(t)) + " " +
                    std::to_string(cache->revision().value_or(-1)) + "/" + std::to_string(size);
        }
      }
      sample.shapes_met = shapes_met(soak);
      samples.push_back(sample);
      if (shape_pool > 0) caches += " | pool shapes met " + std::to_string(sample.shapes_met);
      say("  t=%3d s builds %lld executes %lld checked %lld failures %lld | RSS %lld MiB malloc "
          "%lld MiB GPU (%s) %lld MiB | descriptors %lld plans %lld | revision/size%s\n",
          sample.second, static_cast<long long>(builds), static_cast<long long>(executes),
          static_cast<long long>(checked), static_cast<long long>(failures),
          static_cast<long long>(sample.rss_mib), static_cast<long long>(sample.malloc_mib),
          gpu_own ? "process" : "device", static_cast<long long>(sample.gpu_mib),
          static_cast<long long>(sample.live_descriptors),
          static_cast<long long>(sample.live_plans), caches.c_str());
    }
  });
  for (auto& t : pool) t.join();
  done = true;
  sampler.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::span<const Sample> judged = judged_samples(samples, warm_up);
  const Growth rss = growth_of(judged, &Sample::rss_mib, 64);
  const Growth malloced = growth_of(judged, &Sample::malloc_mib, 64);
  const Growth gpu = growth_of(judged, &Sample::gpu_mib, 256);
  // Caches that changed size (or pool shapes met first) within the last 3 samples leave nothing
  // to judge growth on.
  const bool caches_still_growing = judged.size() < 3 && samples.size() >= 3;
  bool clean = !rss.grew && !malloced.grew && !gpu.grew && !caches_still_growing;
  boost::json::object per_topology;
  for (const Topology t : soak.running) {
    const Tally& tally = soak.tallies[index_of(t)];
    boost::json::object o{{"builds", tally.builds.load()},
                          {"cache_hits", tally.hits.load()},
                          {"executes", tally.executes.load()},
                          {"checked", tally.checked.load()},
                          {"build_failures", tally.build_failures.load()},
                          {"execute_failures", tally.execute_failures.load()},
                          {"wrong", tally.wrong.load()}};
    if (const auto& cache = soak.caches[index_of(t)]) {
      o["cache_revision"] = cache->revision().value_or(-1);
      o["cache_size"] = cache->size().value_or(-1);
    }
    per_topology[name_of(t)] = std::move(o);
  }
  clean = clean && soak.handle_failures == 0;
  for (const Tally& tally : soak.tallies) {
    clean = clean && tally.build_failures == 0 && tally.execute_failures == 0 && tally.wrong == 0;
  }
  const boost::json::object summary{
      {"cudnn", cudnn},
      {"threads", threads},
      {"seconds", elapsed},
      {"topologies", std::move(per_topology)},
      {"refused", refused},
      {"rss_mib", to_json(rss)},
      {"malloc_mib", to_json(malloced)},
      {"gpu_mib", to_json(gpu)},
      {"gpu_scope", gpu_own ? "process" : "device"},
      {"judged_from_second", judged.empty() ? -1 : judged.front().second},
      {"caches_still_growing", caches_still_growing},
      {"shape_pool", shape_pool},
      {"pool_shapes_met", shapes_met(soak)},
      {"keep_static", keep_static},
      // After every worker's graphs are gone: what is left is the caches' and the probe's.
      {"live_descriptors_after_join", dnngraph::backend::live_count_all()},
      {"live_plans_after_join",
       dnngraph::backend::live_count(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)},
      {"clean", clean}};
  std::printf("%s\n", boost::json::serialize(summary).c_str());
  return clean ? 0 : 1;
}
