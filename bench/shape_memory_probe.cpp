// Memory per build, dnngraph against cudnn-frontend (issue 33): the same work through each
// library in turn, one thread, to tell a cost per new shape (bounded by the shapes a server
// meets) from a cost per build (a leak), and dnngraph's from cuDNN's. Three graphs (--graph):
// - matmul (the default): the mixed soak's matmul_bias_relu (bf16 Y = ReLU(A x B + bias), Float
//   compute, heuristics A), dynamic shapes on one kernel cache; shapes of the soak's range (b 1-4;
//   m, n, k 64-512 in steps of 64), 16 elements of Y checked against the CPU per build;
// - matmul_static: the same graph static, on no cache: each build compiles its kernel;
// - matmul_deserialized: that static graph's plan saved once per shape before any reading
//   (dnngraph's serialize(), the frontend's own), each round's plan taken from its document
//   (deserialize()), as a server that starts from saved plans does;
// - sdpa: the soak's sdpa_static, static attention (bf16 forward, Float compute, no stats,
//   causal top-left or not, heuristics A then Fallback, no cache: no cuDNN serves dynamic-shape
//   attention); b 1, 2, 4; h 1, 2, 4, 8; s 64-512 in steps of 32; d 64, 128; 4 rows of O
//   checked against the CPU per build.
// A warm-up shape, then N distinct shapes in a fixed order, executed once each, then the same N
// again P times. Memory is read after the warm-up and after each pass: RSS, malloc in use, the
// process's GPU memory (nvidia-smi; device-wide when it does not list the process).
// Session 26 on the H200 (docs/known-issues.md, docs/kernel-cache.md): cuDNN 9.28.1
// keeps ~476 KiB of host and 32-64 KiB of GPU memory per static matmul build and ~815-830 KiB and
// 85 KiB per static attention build, the same shapes again alike, through dnngraph and the
// frontend alike; 9.19.0 keeps none, and the dynamic matmul served by the kernel cache none on
// either version.
//   bench_shape_memory_probe dnngraph|frontend [--graph matmul|matmul_static|matmul_deserialized|
//       sdpa] [--shapes N] [--passes P]  N 1 to 2047 for the matmuls, 1 to 719 for sdpa (default
//       512), P 0 to 20 (default 2)
// Prints "# ..." lines (one per pass: builds, cache hits (dnngraph's plan_info; the frontend has
// no such query), the median build, memory before and after, KiB per build) and one JSON line.
// Exit 0 when every build, execute and check passed, 1 otherwise, 2 for a bad command line, 77
// without a CUDA device.
#include "api/dnngraph.hpp"
#include "bench/arguments.hpp"
#include "bench/frontend_probe.hpp"
#include "bench/matmul_graph.hpp"
#include "bench/soak_support.hpp"
#include "bench/timing.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using dnngraph_bench::Clock;
using dnngraph_bench::MatmulShape;
using dnngraph_bench::ms_since;

constexpr int checked_per_build = 16;

// Every shape of the soak's matmul range in a fixed shuffled order; the first is the warm-up.
std::vector<MatmulShape> shapes_in_order(std::size_t count) {
  std::vector<MatmulShape> all;
  for (std::int64_t b = 1; b <= 4; ++b) {
    for (std::int64_t m = 1; m <= 8; ++m) {
      for (std::int64_t n = 1; n <= 8; ++n) {
        for (std::int64_t k = 1; k <= 8; ++k) all.push_back({b, 64 * m, 64 * n, 64 * k});
      }
    }
  }
  std::mt19937 rng(25);  // NOLINT(cert-msc32-c,cert-msc51-cpp): a fixed order, the same every run
  std::ranges::shuffle(all, rng);
  all.resize(count);
  return all;
}

// One build's inputs on the host (multiples of 1/8, exact in bf16) and the output read back.
struct MatmulData {
  std::vector<std::uint16_t> a, b, bias, y;
  MatmulData(const MatmulShape& s, std::mt19937& rng) {
    const auto eighths = [&](std::int64_t count, int range) {
      std::uniform_int_distribution<int> pick(-range, range);
      std::vector<std::uint16_t> v(static_cast<std::size_t>(count));
      for (auto& x : v) x = dnngraph_bench::to_bf16(static_cast<float>(pick(rng)) / 8.0F);
      return v;
    };
    a = eighths(s.b * s.m * s.k, 8);
    b = eighths(s.b * s.k * s.n, 8);
    bias = eighths(s.n, 16);
    y.assign(static_cast<std::size_t>(s.b * s.m * s.n), 0xFFFF);
  }
};

// Device copies of a build's bf16 inputs and its output (NaN until written), as a uid -> pointer
// pack; the output read back into its host vector.
class DeviceData {
 public:
  using Input = std::pair<std::int64_t, const std::vector<std::uint16_t>*>;
  DeviceData(std::vector<Input> inputs, std::int64_t output_uid, std::vector<std::uint16_t>& output)
      : inputs_(std::move(inputs)), output_uid_(output_uid), output_(output) {
    for (const auto& [uid, host] : inputs_) {
      buffers_.push_back(std::make_unique<dnngraph_bench::DeviceBuffer>(host->size() * 2));
    }
    buffers_.push_back(std::make_unique<dnngraph_bench::DeviceBuffer>(output.size() * 2));
  }
  [[nodiscard]] std::string upload() const {
    if (std::ranges::any_of(buffers_, [](const auto& buffer) { return buffer->p == nullptr; })) {
      return "cudaMalloc failed";
    }
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const std::vector<std::uint16_t>& host = *inputs_[i].second;
      if (cudaMemcpy(buffers_[i]->p, host.data(), host.size() * 2, cudaMemcpyHostToDevice) !=
          cudaSuccess) {
        return "upload failed";
      }
    }
    return cudaMemset(buffers_.back()->p, 0xFF, output_.size() * 2) == cudaSuccess
               ? ""
               : "upload failed";
  }
  [[nodiscard]] std::unordered_map<std::int64_t, void*> pack() const {
    std::unordered_map<std::int64_t, void*> pack{{output_uid_, buffers_.back()->p}};
    for (std::size_t i = 0; i < inputs_.size(); ++i) pack.emplace(inputs_[i].first, buffers_[i]->p);
    return pack;
  }
  [[nodiscard]] std::string download() const {
    return cudaMemcpy(output_.data(), buffers_.back()->p, output_.size() * 2,
                      cudaMemcpyDeviceToHost) == cudaSuccess
               ? ""
               : "download failed";
  }

 private:
  std::vector<Input> inputs_;
  std::int64_t output_uid_;
  std::vector<std::uint16_t>& output_;
  std::vector<std::unique_ptr<dnngraph_bench::DeviceBuffer>> buffers_;  // the inputs', the output's
};

// What one build of a shape came to.
struct Outcome {
  std::string error;  // what failed, "" when built and ran
  double build_ms = 0;
  bool hit = false;    // dnngraph: the plan came from the kernel cache
  bool wrong = false;  // ran, and a checked element is off the CPU's
};

// The rest of a build once built: upload, execute on a workspace of the size the graph asks,
// read the output back. `execute` runs the graph on a pack; "" or what failed.
template <class Execute>
void upload_run_download(const DeviceData& device, Execute execute, Outcome& out) {
  if (out.error = device.upload(); !out.error.empty()) return;
  if (out.error = execute(device.pack()); !out.error.empty()) return;
  out.error = device.download();
}

// dnngraph's execute of a built graph, as the probe's libraries share it.
std::string dnngraph_execute(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                             const std::unordered_map<std::int64_t, void*>& pack) {
  const dnngraph_bench::DeviceBuffer workspace(
      static_cast<std::size_t>(std::max<std::int64_t>(g.get_workspace_size().value_or(0), 1)));
  if (auto ran = g.execute(handle, pack, workspace.p); !ran) {
    return "execute: " + ran.error().message;
  }
  return cudaDeviceSynchronize() == cudaSuccess ? "" : "synchronize failed";
}

// ---- matmul + bias + ReLU: the two libraries, the same graph --------------------------------

DeviceData matmul_device(MatmulData& d) {
  return DeviceData({{1, &d.a}, {2, &d.b}, {4, &d.bias}}, 3, d.y);
}

// How a matmul round gets its plan: dynamic shapes on one kernel cache (--graph matmul); a
// static graph built with no cache, each build compiling its kernel as a static attention does
// (--graph matmul_static); or that static graph's plan saved once per shape before the passes
// and each round's taken from the saved document (--graph matmul_deserialized: what a server
// that starts from saved plans does; dnngraph's deserialize(), the frontend's own).
enum class MatmulForm { Dynamic, Static, Deserialized };

// The saved document of shape s among `saved` (filled by prepare() for every shape it runs).
template <class Document>
const Document* saved_for(const std::vector<std::pair<MatmulShape, Document>>& saved,
                          const MatmulShape& s) {
  const auto at = std::ranges::find(saved, s, &std::pair<MatmulShape, Document>::first);
  return at == saved.end() ? nullptr : &at->second;
}

struct DnngraphRun {
  dnngraph::Handle handle;
  MatmulForm form = MatmulForm::Dynamic;
  std::shared_ptr<dnngraph::KernelCache> cache = std::make_shared<dnngraph::KernelCache>();
  std::vector<std::pair<MatmulShape, std::string>> saved;  // Deserialized: serialize()'s documents

  [[nodiscard]] dnngraph::Graph graph_of(const MatmulShape& s) const {
    dnngraph::Graph g =
        dnngraph_bench::matmul_graph(s, true, dnngraph::PointwiseMode::ReluFwd, cache);
    if (form != MatmulForm::Dynamic) g.set_dynamic_shape_enabled(false).set_kernel_cache(nullptr);
    return g;
  }
  // Deserialized: each shape built once and its plan serialized; "" or what failed.
  std::string prepare(const std::vector<MatmulShape>& shapes) {
    for (const MatmulShape& s : shapes) {
      dnngraph::Graph g = graph_of(s);
      if (auto built = g.build(handle, {dnngraph::HeuristicMode::A}); !built) {
        return "build to save: " + built.error().message;
      }
      auto document = g.serialize();
      if (!document) return "serialize: " + document.error().message;
      saved.emplace_back(s, std::move(*document));
    }
    return "";
  }

  Outcome operator()(const MatmulShape& s, MatmulData& d) const {
    Outcome out;
    dnngraph::Graph g = graph_of(s);
    const std::string* document = saved_for(saved, s);
    if (form == MatmulForm::Deserialized && document == nullptr) return {.error = "not saved"};
    const auto start = Clock::now();
    auto built = form == MatmulForm::Deserialized ? g.deserialize(handle, *document)
                                                  : g.build(handle, {dnngraph::HeuristicMode::A});
    out.build_ms = ms_since(start);
    if (!built) return {.error = "build: " + built.error().message};
    const auto info = g.plan_info();
    out.hit = info && info->kernel_cache_hit;
    upload_run_download(
        matmul_device(d), [&](const auto& pack) { return dnngraph_execute(g, handle, pack); }, out);
    return out;
  }
};

struct FrontendRun {
  cudnnHandle_t handle = nullptr;
  MatmulForm form = MatmulForm::Dynamic;
  std::shared_ptr<dnngraph_bench::fe::KernelCache> cache =
      std::make_shared<dnngraph_bench::fe::KernelCache>();
  std::vector<std::pair<MatmulShape, std::vector<std::uint8_t>>> saved;  // serialize()'s blobs

  void describe(dnngraph_bench::fe::graph::Graph& graph, const MatmulShape& s) const {
    namespace fe = dnngraph_bench::fe;
    if (form == MatmulForm::Dynamic) {
      dnngraph_bench::set_dynamic_bf16(graph, cache);
    } else {
      graph.set_io_data_type(fe::DataType_t::BFLOAT16)
          .set_intermediate_data_type(fe::DataType_t::FLOAT)
          .set_compute_data_type(fe::DataType_t::FLOAT);
    }
    const auto tensor = [&](const char* name, std::int64_t uid, const dnngraph_bench::Dims& dims) {
      const dnngraph_bench::Dims strides = dnngraph_bench::packed(dims);
      return graph.tensor(fe::graph::Tensor_attributes()
                              .set_name(name)
                              .set_uid(uid)
                              .set_dim(dims)
                              .set_stride(strides)
                              .set_data_type(fe::DataType_t::BFLOAT16));
    };
    auto a = tensor("A", 1, {s.b, s.m, s.k});
    auto b = tensor("B", 2, {s.b, s.k, s.n});
    auto bias = tensor("bias", 4, {1, 1, s.n});
    auto product = graph.matmul(a, b, fe::graph::Matmul_attributes().set_name("matmul"));
    auto added = graph.pointwise(
        product, bias, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
    auto y = graph.pointwise(
        added, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
    y->set_output(true).set_uid(3).set_data_type(fe::DataType_t::BFLOAT16);
  }
  // Deserialized: each shape built once and its plan serialized; "" or what failed.
  std::string prepare(const std::vector<MatmulShape>& shapes) {
    for (const MatmulShape& s : shapes) {
      dnngraph_bench::fe::graph::Graph graph;
      describe(graph, s);
      const dnngraph_bench::Built built =
          dnngraph_bench::build(graph, handle, {dnngraph_bench::fe::HeurMode_t::A});
      if (!built.ok) return "build to save: " + built.error;
      std::vector<std::uint8_t> blob;
      if (auto status = graph.serialize(blob); !status.is_good()) {
        return "serialize: " + status.get_message();
      }
      saved.emplace_back(s, std::move(blob));
    }
    return "";
  }

  Outcome operator()(const MatmulShape& s, MatmulData& d) const {
    Outcome out;
    dnngraph_bench::fe::graph::Graph graph;
    const std::vector<std::uint8_t>* blob = saved_for(saved, s);
    if (form == MatmulForm::Deserialized && blob == nullptr) return {.error = "not saved"};
    if (form != MatmulForm::Deserialized) describe(graph, s);
    const auto start = Clock::now();
    dnngraph_bench::Built built;
    if (form == MatmulForm::Deserialized) {
      auto status = graph.deserialize(handle, *blob);
      built.ok = status.is_good();
      built.error = status.get_message();
    } else {
      built = dnngraph_bench::build(graph, handle, {dnngraph_bench::fe::HeurMode_t::A});
    }
    out.build_ms = ms_since(start);
    if (!built.ok) return {.error = "build: " + built.error};
    upload_run_download(
        matmul_device(d), [&](auto pack) { return dnngraph_bench::execute(graph, handle, pack); },
        out);
    return out;
  }
};

// Y checked at 16 random elements against the CPU: false at the first one off.
bool matmul_right(const MatmulShape& s, const MatmulData& d, std::mt19937& rng) {
  std::uniform_int_distribution<std::int64_t> pick_b(0, s.b - 1), pick_i(0, s.m - 1),
      pick_j(0, s.n - 1);
  for (int c = 0; c < checked_per_build; ++c) {
    const std::int64_t bi = pick_b(rng), i = pick_i(rng), j = pick_j(rng);
    const double ref = dnngraph_bench::matmul_reference(s, d.a, d.b, d.bias, true, bi, i, j);
    const double got =
        dnngraph_bench::from_bf16(d.y[static_cast<std::size_t>((bi * s.m + i) * s.n + j)]);
    if (!dnngraph_bench::close_to_reference(got, ref)) return false;
  }
  return true;
}

std::string matmul_text(const MatmulShape& s) {
  return "[b " + std::to_string(s.b) + " m " + std::to_string(s.m) + " n " + std::to_string(s.n) +
         " k " + std::to_string(s.k) + "]";
}

// ---- static attention: the two libraries, the same graph ------------------------------------

struct AttentionShape {
  std::int64_t b, h, s, d;
  bool causal;
  [[nodiscard]] std::vector<std::int64_t> dims() const { return {b, h, s, d}; }
  [[nodiscard]] float scale() const { return 1.0F / std::sqrt(static_cast<float>(d)); }
};

// Every attention shape of the range in a fixed shuffled order; the first is the warm-up.
std::vector<AttentionShape> attention_shapes_in_order(std::size_t count) {
  std::vector<AttentionShape> all;
  for (const std::int64_t b : {1, 2, 4}) {
    for (const std::int64_t h : {1, 2, 4, 8}) {
      for (std::int64_t s = 64; s <= 512; s += 32) {
        for (const std::int64_t d : {64, 128}) {
          for (const bool causal : {false, true}) all.push_back({b, h, s, d, causal});
        }
      }
    }
  }
  std::mt19937 rng(26);  // NOLINT(cert-msc32-c,cert-msc51-cpp): a fixed order, the same every run
  std::ranges::shuffle(all, rng);
  all.resize(std::min(count, all.size()));
  return all;
}
constexpr std::int64_t attention_shape_count = std::int64_t{3} * 4 * 15 * 2 * 2;  // b h s d causal

// Q, K, V (multiples of 1/8 in [-1, 1], exact in bf16) and O read back; layout b, h, s, d packed.
struct AttentionData {
  std::vector<std::uint16_t> q, k, v, o;
  AttentionData(const AttentionShape& a, std::mt19937& rng) {
    const auto count = static_cast<std::size_t>(a.b * a.h * a.s * a.d);
    std::uniform_int_distribution<int> pick(-8, 8);
    for (auto* x : {&q, &k, &v}) {
      x->resize(count);
      for (auto& e : *x) e = dnngraph_bench::to_bf16(static_cast<float>(pick(rng)) / 8.0F);
    }
    o.assign(count, 0xFFFF);
  }
};

DeviceData attention_device(AttentionData& d) {
  return DeviceData({{1, &d.q}, {2, &d.k}, {3, &d.v}}, 4, d.o);
}

struct DnngraphAttention {
  dnngraph::Handle handle;

  Outcome operator()(const AttentionShape& a, AttentionData& d) const {
    Outcome out;
    dnngraph::Graph g;
    g.set_io_data_type(dnngraph::DataType::BFloat16)
        .set_compute_data_type(dnngraph::DataType::Float);
    const auto tensor = [&](const char* name, std::int64_t uid) {
      return g.tensor(dnngraph::TensorAttributes().set_name(name).set_uid(uid).set_dim(a.dims()));
    };
    dnngraph::SdpaAttributes attributes;
    attributes.set_name("attn").set_attn_scale(a.scale()).set_generate_stats(false);
    attributes.set_causal_mask(a.causal);
    auto [o, stats] = g.sdpa(tensor("Q", 1), tensor("K", 2), tensor("V", 3), attributes);
    o->set_name("O").set_uid(4).set_output(true);
    const auto start = Clock::now();
    auto built = g.build(handle, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback});
    out.build_ms = ms_since(start);
    if (!built) return {.error = "build: " + built.error().message};
    upload_run_download(
        attention_device(d), [&](const auto& pack) { return dnngraph_execute(g, handle, pack); },
        out);
    return out;
  }
};

struct FrontendAttention {
  cudnnHandle_t handle = nullptr;

  Outcome operator()(const AttentionShape& a, AttentionData& d) const {
    namespace fe = dnngraph_bench::fe;
    Outcome out;
    fe::graph::Graph graph;
    graph.set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    const dnngraph_bench::Dims dims = a.dims();
    const dnngraph_bench::Dims strides = dnngraph_bench::packed(dims);
    const auto tensor = [&](const char* name, std::int64_t uid) {
      return graph.tensor(
          fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
              strides));
    };
    auto q = tensor("Q", 1);
    auto k = tensor("K", 2);
    auto v = tensor("V", 3);
    auto [o, stats] = graph.sdpa(q, k, v,
                                 fe::graph::SDPA_attributes()
                                     .set_name("attn")
                                     .set_generate_stats(false)
                                     .set_causal_mask(a.causal)
                                     .set_attn_scale(a.scale()));
    o->set_output(true).set_dim(dims).set_stride(strides).set_uid(4);
    const auto start = Clock::now();
    const dnngraph_bench::Built built =
        dnngraph_bench::build(graph, handle, {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
    out.build_ms = ms_since(start);
    if (!built.ok) return {.error = "build: " + built.error};
    upload_run_download(
        attention_device(d),
        [&](auto pack) { return dnngraph_bench::execute(graph, handle, pack); }, out);
    return out;
  }
};

// 4 random rows of O (every column) against softmax(scale Q K^T) V in double, causal rows
// seeing keys 0..i: false at the first element off by more than 0.01 + 1% (two bf16 roundings,
// of P and of O, are within 0.4%), or not written (NaN).
bool attention_right(const AttentionShape& a, const AttentionData& d, std::mt19937& rng) {
  std::uniform_int_distribution<std::int64_t> pick_bh(0, a.b * a.h - 1), pick_i(0, a.s - 1);
  const auto at = [](std::int64_t index) { return static_cast<std::size_t>(index); };
  const auto value = [&](const std::vector<std::uint16_t>& x, std::int64_t index) {
    return static_cast<double>(dnngraph_bench::from_bf16(x[at(index)]));
  };
  for (int row = 0; row < 4; ++row) {
    const std::int64_t base = pick_bh(rng) * a.s * a.d;
    const std::int64_t i = pick_i(rng);
    const std::int64_t keys = a.causal ? i + 1 : a.s;
    std::vector<double> p(static_cast<std::size_t>(keys));
    for (std::int64_t j = 0; j < keys; ++j) {
      double score = 0;
      for (std::int64_t t = 0; t < a.d; ++t) {
        score += value(d.q, base + i * a.d + t) * value(d.k, base + j * a.d + t);
      }
      p[at(j)] = score * a.scale();
    }
    const double top = *std::ranges::max_element(p);
    double sum = 0;
    for (double& x : p) sum += (x = std::exp(x - top));
    for (std::int64_t t = 0; t < a.d; ++t) {
      double ref = 0;
      for (std::int64_t j = 0; j < keys; ++j) ref += p[at(j)] * value(d.v, base + j * a.d + t);
      ref /= sum;
      const double got = value(d.o, base + i * a.d + t);
      if (!(std::abs(got - ref) <= 0.01 + 0.01 * std::abs(ref))) return false;
    }
  }
  return true;
}

std::string attention_text(const AttentionShape& a) {
  return "[b " + std::to_string(a.b) + " h " + std::to_string(a.h) + " s " + std::to_string(a.s) +
         " d " + std::to_string(a.d) + (a.causal ? " causal]" : "]");
}

// One library over one graph's shapes: shape i built, run and checked. `Library` is one of the
// runs above; `Inputs`, `right` and `text` are its graph's data, check and shape text.
using Runner = std::function<Outcome(std::size_t, std::mt19937&)>;

template <class Inputs, class Library, class Shape, class Right, class Text>
Runner runner(const Library& library, std::vector<Shape> shapes, Right right, Text text) {
  return [&library, shapes = std::move(shapes), right, text](std::size_t i, std::mt19937& rng) {
    const Shape& s = shapes[i];
    Inputs d(s, rng);
    Outcome out = library(s, d);
    if (!out.error.empty()) {
      out.error = text(s) + " " + out.error;
    } else {
      out.wrong = !right(s, d, rng);
    }
    return out;
  };
}

// ---- passes and their memory ----------------------------------------------------------------

struct Memory {
  std::int64_t rss_kib = 0;
  std::int64_t malloc_kib = 0;
  std::int64_t gpu_mib = -1;
  bool gpu_own = false;  // gpu_mib is this process's (nvidia-smi lists it), else the device's
};

Memory memory_now() {
  cudaDeviceSynchronize();
  const std::int64_t own = dnngraph_bench::gpu_own_mib();
  return {dnngraph_bench::rss_kib(), dnngraph_bench::malloc_in_use_bytes() >> 10,
          own >= 0 ? own : dnngraph_bench::gpu_used_mib(), own >= 0};
}

struct Pass {
  int builds = 0;
  int hits = 0;
  int failures = 0;
  int wrong = 0;
  std::vector<double> build_ms;
  Memory before, after;

  [[nodiscard]] double per_build_kib(std::int64_t Memory::* field, double scale = 1.0) const {
    return builds == 0 ? 0.0 : double(after.*field - before.*field) * scale / builds;
  }
};

// One build of shape i: run, check, count.
void one(const Runner& run, std::size_t i, std::mt19937& rng, Pass& pass) {
  const Outcome out = run(i, rng);
  ++pass.builds;
  pass.build_ms.push_back(out.build_ms);
  pass.hits += out.hit ? 1 : 0;
  if (!out.error.empty()) {
    if (++pass.failures <= 3) std::printf("# %s\n", out.error.c_str());  // the first few
    return;
  }
  pass.wrong += out.wrong ? 1 : 0;
}

std::string pass_json(const Pass& p) {
  char text[512];
  std::snprintf(text, sizeof text,
                "{\"builds\":%d,\"cache_hits\":%d,\"failures\":%d,\"wrong\":%d,"
                "\"build_ms_median\":%.3f,\"rss_kib_per_build\":%.1f,\"malloc_kib_per_build\":%.1f,"
                "\"gpu_kib_per_build\":%.1f}",
                p.builds, p.hits, p.failures, p.wrong, dnngraph_bench::median(p.build_ms),
                p.per_build_kib(&Memory::rss_kib), p.per_build_kib(&Memory::malloc_kib),
                p.per_build_kib(&Memory::gpu_mib, 1024.0));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  std::optional<std::int64_t> shapes = 512;
  std::optional<std::int64_t> passes = 2;
  std::string_view graph = "matmul";
  bool ok_args = !args.empty() && (args[0] == "dnngraph" || args[0] == "frontend");
  for (std::size_t i = 1; ok_args && i < args.size(); i += 2) {
    const std::string_view value = i + 1 < args.size() ? args[i + 1] : std::string_view();
    ok_args =
        !value.empty() && (args[i] == "--shapes" || args[i] == "--passes" || args[i] == "--graph");
    if (!ok_args) break;
    if (args[i] == "--shapes") {
      shapes = dnngraph_bench::whole_number(value, 1, 2047);
    } else if (args[i] == "--passes") {
      passes = dnngraph_bench::whole_number(value, 0, 20);
    } else {
      graph = value;
      ok_args = graph == "matmul" || graph == "matmul_static" || graph == "matmul_deserialized" ||
                graph == "sdpa";
    }
  }
  const bool sdpa = graph == "sdpa";
  const MatmulForm form = graph == "matmul"          ? MatmulForm::Dynamic
                          : graph == "matmul_static" ? MatmulForm::Static
                                                     : MatmulForm::Deserialized;
  if (!ok_args || !shapes || !passes || (sdpa && *shapes >= attention_shape_count)) {
    std::fprintf(stderr,
                 "usage: bench_shape_memory_probe dnngraph|frontend [--graph "
                 "matmul|matmul_static|matmul_deserialized|sdpa] [--shapes 1-2047 (matmul), 1-%lld "
                 "(sdpa)] [--passes 0-20]\n",
                 static_cast<long long>(attention_shape_count - 1));
    return 2;
  }
  const std::string_view library = args[0];
  const auto shape_count = static_cast<int>(*shapes);  // 1-2047 and 0-20: checked above
  const auto pass_count = static_cast<int>(*passes);
  std::printf(
      "# shape memory probe: %.*s, %.*s, cuDNN %zu (cudnn-frontend %d headers), %d shapes, %d "
      "passes again\n",
      static_cast<int>(library.size()), library.data(), static_cast<int>(graph.size()),
      graph.data(), cudnnGetVersion(), CUDNN_FRONTEND_VERSION, shape_count, pass_count);
  if (!dnngraph_bench::cuda_device_present()) return 77;

  const auto order_size = static_cast<std::size_t>(shape_count) + 1;
  std::optional<DnngraphRun> dnngraph_matmul;
  std::optional<FrontendRun> frontend_matmul;
  std::optional<DnngraphAttention> dnngraph_attention;
  std::optional<FrontendAttention> frontend_attention;
  cudnnHandle_t fe_handle = nullptr;
  Runner run;
  const auto matmul_runner = [&](const auto& library_run) {
    return runner<MatmulData>(library_run, shapes_in_order(order_size), matmul_right, matmul_text);
  };
  const auto attention_runner = [&](const auto& library_run) {
    return runner<AttentionData>(library_run, attention_shapes_in_order(order_size),
                                 attention_right, attention_text);
  };
  if (library == "dnngraph") {
    auto handle = dnngraph::Handle::create();
    if (!handle) {
      std::printf("# no handle: %s\n", handle.error().message.c_str());
      return 1;
    }
    if (sdpa) {
      run = attention_runner(dnngraph_attention.emplace(DnngraphAttention{std::move(*handle)}));
    } else {
      run = matmul_runner(dnngraph_matmul.emplace(
          DnngraphRun{.handle = std::move(*handle), .form = form, .saved = {}}));
    }
  } else {
    fe_handle = dnngraph_bench::open_handle();
    if (fe_handle == nullptr) return 1;
    run = sdpa ? attention_runner(frontend_attention.emplace(FrontendAttention{fe_handle}))
               : matmul_runner(frontend_matmul.emplace(
                     FrontendRun{.handle = fe_handle, .form = form, .saved = {}}));
  }

  if (!sdpa && form == MatmulForm::Deserialized) {  // the plans saved before any reading
    const std::vector<MatmulShape> shapes = shapes_in_order(order_size);
    const std::string failed =
        dnngraph_matmul ? dnngraph_matmul->prepare(shapes) : frontend_matmul->prepare(shapes);
    if (!failed.empty()) {
      std::printf("# saving the plans: %s\n", failed.c_str());
      return 1;
    }
  }
  std::mt19937 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible data
  Pass warm_up;
  warm_up.before = memory_now();
  one(run, 0, rng, warm_up);
  warm_up.after = memory_now();
  std::vector<Pass> all;
  for (int p = 0; p <= pass_count; ++p) {
    Pass pass;
    pass.before = memory_now();
    for (std::size_t i = 1; i < order_size; ++i) one(run, i, rng, pass);
    pass.after = memory_now();
    std::printf(
        "# pass %d (%s): %d builds, %d cache hits, %d failed, %d wrong, median build %.2f "
        "ms | RSS %lld -> %lld MiB, malloc %lld -> %lld MiB, GPU %lld -> %lld MiB | KiB "
        "per build: RSS %.1f, malloc %.1f, GPU %.1f\n",
        p, p == 0 ? "new shapes" : "the same shapes again", pass.builds, pass.hits, pass.failures,
        pass.wrong, dnngraph_bench::median(pass.build_ms),
        static_cast<long long>(pass.before.rss_kib >> 10),
        static_cast<long long>(pass.after.rss_kib >> 10),
        static_cast<long long>(pass.before.malloc_kib >> 10),
        static_cast<long long>(pass.after.malloc_kib >> 10),
        static_cast<long long>(pass.before.gpu_mib), static_cast<long long>(pass.after.gpu_mib),
        pass.per_build_kib(&Memory::rss_kib), pass.per_build_kib(&Memory::malloc_kib),
        pass.per_build_kib(&Memory::gpu_mib, 1024.0));
    all.push_back(std::move(pass));
  }
  // The passes again as one: their first reading to their last.
  Pass again;
  for (std::size_t p = 1; p < all.size(); ++p) {
    again.builds += all[p].builds;
    again.hits += all[p].hits;
    again.failures += all[p].failures;
    again.wrong += all[p].wrong;
    again.build_ms.insert(again.build_ms.end(), all[p].build_ms.begin(), all[p].build_ms.end());
  }
  if (all.size() > 1) {
    again.before = all[1].before;
    again.after = all.back().after;
  }
  int failures = warm_up.failures + warm_up.wrong;
  for (const Pass& p : all) failures += p.failures + p.wrong;
  std::printf(
      "{\"library\":\"%.*s\",\"graph\":\"%.*s\",\"cudnn\":%zu,\"shapes\":%d,\"passes_again\":%d,"
      "\"gpu_scope\":\"%s\",\"warm_up\":%s,\"new\":%s,\"again\":%s,\"ok\":%s}\n",
      static_cast<int>(library.size()), library.data(), static_cast<int>(graph.size()),
      graph.data(), cudnnGetVersion(), shape_count, pass_count,
      all.back().after.gpu_own ? "process" : "device", pass_json(warm_up).c_str(),
      pass_json(all[0]).c_str(), pass_json(again).c_str(), failures == 0 ? "true" : "false");
  run = nullptr;
  frontend_matmul.reset();
  dnngraph_matmul.reset();
  frontend_attention.reset();
  dnngraph_attention.reset();
  if (fe_handle != nullptr) cudnnDestroy(fe_handle);
  return failures == 0 ? 0 : 1;
}
