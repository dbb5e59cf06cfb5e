// Memory per shape, dnngraph against cudnn-frontend (issue 33). Session 25's mixed soak on cuDNN
// 9.28.1 without layernorm grew for all its 420 s (RSS 355 -> 1,623 MiB, malloc in use 82 -> 1,347
// MiB, the process's GPU memory 608 -> 750 MiB) while each dynamic topology's cache kept one entry
// and served every build; on 9.19 the same soak stays flat, and session 24's 9.28.1 soak, whose
// threads had met nearly every shape of the range by then, grew little late in its run. This
// probe tells a cost per new shape (bounded by the shapes a server meets) from a cost per build
// (a leak), and dnngraph's from cuDNN's, with the same work through each library in turn:
// one thread builds the soak's matmul_bias_relu (bf16 Y = ReLU(A x B + bias), Float compute,
// dynamic shapes, heuristics A) on one kernel cache for a warm-up shape and then N distinct shapes
// of the soak's range (b 1-4; m, n, k 64-512 in steps of 64; a fixed order), executes each once
// and checks 16 elements against the CPU; then the same N shapes again, P times. Memory is read
// after the warm-up and after each pass: RSS, malloc in use, the process's GPU memory (nvidia-smi;
// device-wide when it does not list the process).
//   bench_shape_memory_probe dnngraph|frontend [--shapes N] [--passes P]
//       N 1 to 2047 (default 512), P 0 to 20 (default 2)
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
struct Data {
  std::vector<std::uint16_t> a, b, bias, y;
  Data(const MatmulShape& s, std::mt19937& rng) {
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

// Device copies of the inputs and a NaN-filled Y, as a uid -> pointer pack (A 1, B 2, Y 3, bias 4).
struct DeviceData {
  dnngraph_bench::DeviceBuffer a, b, bias, y;
  explicit DeviceData(const Data& d)
      : a(d.a.size() * 2), b(d.b.size() * 2), bias(d.bias.size() * 2), y(d.y.size() * 2) {}
  [[nodiscard]] std::string upload(const Data& d) const {
    if (a.p == nullptr || b.p == nullptr || bias.p == nullptr || y.p == nullptr) {
      return "cudaMalloc failed";
    }
    const bool ok =
        cudaMemcpy(a.p, d.a.data(), d.a.size() * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(b.p, d.b.data(), d.b.size() * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
        cudaMemcpy(bias.p, d.bias.data(), d.bias.size() * 2, cudaMemcpyHostToDevice) ==
            cudaSuccess &&
        cudaMemset(y.p, 0xFF, d.y.size() * 2) == cudaSuccess;
    return ok ? "" : "upload failed";
  }
  [[nodiscard]] std::unordered_map<std::int64_t, void*> pack() const {
    return {{1, a.p}, {2, b.p}, {3, y.p}, {4, bias.p}};
  }
  [[nodiscard]] std::string download(Data& d) const {
    return cudaMemcpy(d.y.data(), y.p, d.y.size() * 2, cudaMemcpyDeviceToHost) == cudaSuccess
               ? ""
               : "download failed";
  }
};

// What one build of a shape came to.
struct Outcome {
  std::string error;  // what failed, "" when built and ran
  double build_ms = 0;
  bool hit = false;  // dnngraph: the plan came from the kernel cache
};

// ---- the two libraries, the same graph ------------------------------------------------------

struct DnngraphRun {
  dnngraph::Handle handle;
  std::shared_ptr<dnngraph::KernelCache> cache = std::make_shared<dnngraph::KernelCache>();

  Outcome operator()(const MatmulShape& s, Data& d) const {
    Outcome out;
    dnngraph::Graph g =
        dnngraph_bench::matmul_graph(s, true, dnngraph::PointwiseMode::ReluFwd, cache);
    const auto start = Clock::now();
    auto built = g.build(handle, {dnngraph::HeuristicMode::A});
    out.build_ms = ms_since(start);
    if (!built) return {.error = "build: " + built.error().message};
    const auto info = g.plan_info();
    out.hit = info && info->kernel_cache_hit;
    const DeviceData device(d);
    if (out.error = device.upload(d); !out.error.empty()) return out;
    const dnngraph_bench::DeviceBuffer workspace(
        static_cast<std::size_t>(std::max<std::int64_t>(g.get_workspace_size().value_or(0), 1)));
    if (auto ran = g.execute(handle, device.pack(), workspace.p); !ran) {
      return {.error = "execute: " + ran.error().message};
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return {.error = "synchronize failed"};
    out.error = device.download(d);
    return out;
  }
};

struct FrontendRun {
  cudnnHandle_t handle = nullptr;
  std::shared_ptr<dnngraph_bench::fe::KernelCache> cache =
      std::make_shared<dnngraph_bench::fe::KernelCache>();

  Outcome operator()(const MatmulShape& s, Data& d) const {
    namespace fe = dnngraph_bench::fe;
    Outcome out;
    fe::graph::Graph graph;
    dnngraph_bench::set_dynamic_bf16(graph, cache);
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
    const auto start = Clock::now();
    const dnngraph_bench::Built built = dnngraph_bench::build(graph, handle, {fe::HeurMode_t::A});
    out.build_ms = ms_since(start);
    if (!built.ok) return {.error = "build: " + built.error};
    const DeviceData device(d);
    if (out.error = device.upload(d); !out.error.empty()) return out;
    auto pack = device.pack();
    if (out.error = dnngraph_bench::execute(graph, handle, pack); !out.error.empty()) return out;
    out.error = device.download(d);
    return out;
  }
};

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

using Runner = std::function<Outcome(const MatmulShape&, Data&)>;

// One build of a shape: run, check 16 elements of Y, count.
void one(const Runner& run, const MatmulShape& s, std::mt19937& rng, Pass& pass) {
  Data d(s, rng);
  const Outcome out = run(s, d);
  ++pass.builds;
  pass.build_ms.push_back(out.build_ms);
  pass.hits += out.hit ? 1 : 0;
  if (!out.error.empty()) {
    if (++pass.failures <= 3) {  // the first few failures of a pass, by shape
      std::printf("# [b %lld m %lld n %lld k %lld] %s\n", static_cast<long long>(s.b),
                  static_cast<long long>(s.m), static_cast<long long>(s.n),
                  static_cast<long long>(s.k), out.error.c_str());
    }
    return;
  }
  std::uniform_int_distribution<std::int64_t> pick_b(0, s.b - 1), pick_i(0, s.m - 1),
      pick_j(0, s.n - 1);
  for (int c = 0; c < checked_per_build; ++c) {
    const std::int64_t bi = pick_b(rng), i = pick_i(rng), j = pick_j(rng);
    const double ref = dnngraph_bench::matmul_reference(s, d.a, d.b, d.bias, true, bi, i, j);
    const double got =
        dnngraph_bench::from_bf16(d.y[static_cast<std::size_t>((bi * s.m + i) * s.n + j)]);
    if (!dnngraph_bench::close_to_reference(got, ref)) {
      ++pass.wrong;
      break;
    }
  }
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
  bool ok_args = !args.empty() && (args[0] == "dnngraph" || args[0] == "frontend");
  for (std::size_t i = 1; ok_args && i < args.size(); i += 2) {
    const std::string_view value = i + 1 < args.size() ? args[i + 1] : std::string_view();
    ok_args = !value.empty() && (args[i] == "--shapes" || args[i] == "--passes");
    if (!ok_args) break;
    if (args[i] == "--shapes") {
      shapes = dnngraph_bench::whole_number(value, 1, 2047);
    } else {
      passes = dnngraph_bench::whole_number(value, 0, 20);
    }
  }
  if (!ok_args || !shapes || !passes) {
    std::fprintf(stderr,
                 "usage: bench_shape_memory_probe dnngraph|frontend [--shapes 1-2047] "
                 "[--passes 0-20]\n");
    return 2;
  }
  const std::string_view library = args[0];
  const auto shape_count = static_cast<int>(*shapes);  // 1-2047 and 0-20: checked above
  const auto pass_count = static_cast<int>(*passes);
  std::printf(
      "# shape memory probe: %.*s, cuDNN %zu (cudnn-frontend %d headers), %d shapes, %d "
      "passes again\n",
      static_cast<int>(library.size()), library.data(), cudnnGetVersion(), CUDNN_FRONTEND_VERSION,
      shape_count, pass_count);
  if (!dnngraph_bench::cuda_device_present()) return 77;

  Runner run;
  std::optional<DnngraphRun> dnngraph_run;
  std::optional<FrontendRun> frontend_run;
  cudnnHandle_t fe_handle = nullptr;
  if (library == "dnngraph") {
    auto handle = dnngraph::Handle::create();
    if (!handle) {
      std::printf("# no handle: %s\n", handle.error().message.c_str());
      return 1;
    }
    dnngraph_run.emplace(DnngraphRun{std::move(*handle)});
    run = std::cref(*dnngraph_run);
  } else {
    fe_handle = dnngraph_bench::open_handle();
    if (fe_handle == nullptr) return 1;
    frontend_run.emplace(FrontendRun{fe_handle});
    run = std::cref(*frontend_run);
  }

  const std::vector<MatmulShape> order = shapes_in_order(static_cast<std::size_t>(shape_count) + 1);
  std::mt19937 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): reproducible data
  Pass warm_up;
  warm_up.before = memory_now();
  one(run, order[0], rng, warm_up);
  warm_up.after = memory_now();
  std::vector<Pass> all;
  for (int p = 0; p <= pass_count; ++p) {
    Pass pass;
    pass.before = memory_now();
    for (std::size_t i = 1; i < order.size(); ++i) one(run, order[i], rng, pass);
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
      "{\"library\":\"%.*s\",\"cudnn\":%zu,\"shapes\":%d,\"passes_again\":%d,"
      "\"gpu_scope\":\"%s\",\"warm_up\":%s,\"new\":%s,\"again\":%s,\"ok\":%s}\n",
      static_cast<int>(library.size()), library.data(), cudnnGetVersion(), shape_count, pass_count,
      all.back().after.gpu_own ? "process" : "device", pass_json(warm_up).c_str(),
      pass_json(all[0]).c_str(), pass_json(again).c_str(), failures == 0 ? "true" : "false");
  frontend_run.reset();
  dnngraph_run.reset();
  if (fe_handle != nullptr) cudnnDestroy(fe_handle);
  return failures == 0 ? 0 : 1;
}
