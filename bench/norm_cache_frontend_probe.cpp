// What it checks: how cuDNN's kernel cache behaves for a dynamic-shape layernorm when the graph
// is built through NVIDIA's own cudnn-frontend, not through dnngraph. For each row count it builds
// a fresh layernorm graph that shares one cudnn_frontend::KernelCache with all the others (one
// cache per mode), times the build, reads the process RSS before and after it, runs the plan once
// and compares Y with a CPU layernorm.
//
// Why (issue 33): dnngraph's mixed soak saw a dynamic-shape layernorm on one shared kernel cache
// keep one entry per row count on cuDNN 9.28.1 (a few MiB of host memory each) and grow the heap
// on every build on 9.19 while keeping one entry. Measured with this probe on the H200 (session
// 23, docs/known-issues.md): cudnn-frontend shows both, so the behaviour is cuDNN's.
//
// The graph: X BFloat16 [rows, 256, 1, 1] channels-last (strides 256, 1, 256, 256), scale and bias
// Float [1, 256, 1, 1], epsilon 1e-5 passed by value, Y BFloat16 like X; the training mode also
// writes mean and inv_variance Float [rows, 1, 1, 1], the inference mode does not. io type
// BFloat16, intermediate and compute Float, dynamic shapes on. Heuristics mode A, and mode
// FALLBACK when A offers no engine config. Row counts, in this order: 64 64 65 100 333 600 65 100
// 1 64, then 401 to 420; first every row count in the inference mode, then in the training mode.
//
// One line per build:
//   mode rows build_ms rss_delta_kib rss_total_mib max_err [key=value ...]
// build_ms is validate() through build_plans(); rss_delta_kib is the RSS after build_plans()
// less the RSS before the graph was made; rss_total_mib is the RSS after build_plans(); max_err
// is max |Y - reference| (the reference in double from the same BFloat16 inputs). The key=value
// fields after it: kc_entries and kc_revision (KernelCache::size() and revision(), which need
// cuDNN 9.27 or newer both at compile time and at run time; "n/a" otherwise), stats_err
// (training: the worst of |mean - reference| and |inv_variance - reference| / reference), heur
// (A or FALLBACK), ws (workspace bytes) and the plan's name. With --json it also prints
// kc_json_bytes, the size of KernelCache::to_json() (cuDNN 9.10 or newer); off by default because
// the serialization itself allocates host memory and would blur the RSS figures. A failed row
// prints its error and the probe goes on with the next row. At the end of each mode: the RSS growth
// over the mode, and the growth after its first build (the first build of the process also loads
// cuDNN's engine libraries).
//
// Options: --json (above); --mode=inference, --mode=training or --mode=both (the default).
// Exit 0 when it ran (whatever the numbers), 77 when there is no CUDA device, 1 when no cuDNN
// handle could be made.
//
// Standalone: not part of the CMake build, whose frontend probes compile against the build's
// cuDNN headers (KernelCache::size() needs 9.27's); it shares frontend_probe.hpp's BFloat16 bits.
// Build it from the repository root with the frontend's headers (the nvidia-cudnn-frontend 1.32.0
// wheel's include/ folder, FE) and INC and LIB a cuDNN's include and lib folders (LIB that cuDNN's
// own: with 9.28 headers the frontend calls cudnnGetExecutionPlanWorkspaceSize, which 9.19's
// libcudnn.so.9 lacks):
//   clang++-19 -std=c++20 -O2 -I$FE -I$INC -I/usr/local/cuda/include -Ibench \
//     bench/norm_cache_frontend_probe.cpp -L$LIB -l:libcudnn.so.9 -L/usr/local/cuda/lib64 \
//     -l:libcudart_static.a -lnvrtc -ldl -lpthread -lrt -o norm_cache_probe
// and run it on the GPU machine with that cuDNN first on LD_LIBRARY_PATH:
//   LD_LIBRARY_PATH=$LIB:/usr/local/cuda/lib64 ./norm_cache_probe [--json]
// The first lines say which cuDNN it was compiled against and which one it loaded.
#include "frontend_probe.hpp"

#include <cudnn_frontend.h>

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace fe = cudnn_frontend;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t kChannels = 256;
constexpr float kEpsilon = 1e-5F;

// The process's resident set size in bytes, from /proc/self/statm (its second field, in pages);
// -1 when it cannot be read.
long long rss_bytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return -1;
  long long size = 0;
  long long resident = 0;
  const int read = std::fscanf(file, "%lld %lld", &size, &resident);
  std::fclose(file);
  if (read != 2) return -1;
  return resident * static_cast<long long>(sysconf(_SC_PAGESIZE));
}

std::uint16_t to_bf16(float value) { return dnngraph_bench::to_bits(value, true); }
float from_bf16(std::uint16_t bits) { return dnngraph_bench::from_bits(bits, true); }

bool cuda_ok(cudaError_t status, const char* what, std::string& error) {
  if (status == cudaSuccess) return true;
  error = std::string("CUDA ") + what + ": " + cudaGetErrorString(status);
  return false;
}

// Device memory freed when it goes out of scope.
struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  bool alloc(std::size_t bytes, std::string& error) {
    return cuda_ok(cudaMalloc(&ptr, std::max<std::size_t>(bytes, 1)), "malloc", error);
  }
};

struct Options {
  bool json = false;
  bool inference = true;
  bool training = true;
};

struct ModeTotals {
  long long rss_start = -1;
  long long rss_after_first = -1;
  long long rss_end = -1;
  int built = 0;
  int failed = 0;
};

// The result of one row: the fields of its line.
struct Row {
  bool ok = false;
  std::string error;
  double build_ms = 0.0;
  long long rss_before = -1;
  long long rss_after = -1;
  double max_err = -1.0;
  double stats_err = -1.0;
  const char* heur = "-";
  std::int64_t workspace = 0;
  std::string plan;
};

// Builds, runs and checks the layernorm for rows rows, with the kernel cache shared by its mode.
Row run_row(cudnnHandle_t handle, const std::shared_ptr<fe::KernelCache>& cache, bool training,
            std::int64_t rows) {
  Row row;
  row.rss_before = rss_bytes();

  fe::graph::Graph graph;
  dnngraph_bench::set_dynamic_bf16(graph, cache);

  const Dims x_dim = {rows, kChannels, 1, 1};
  const Dims x_stride = {kChannels, 1, kChannels, kChannels};
  const Dims sb_dim = {1, kChannels, 1, 1};
  const Dims sb_stride = {kChannels, 1, kChannels, kChannels};
  const Dims stat_dim = {rows, 1, 1, 1};
  const Dims stat_stride = {1, 1, 1, 1};

  auto x = graph.tensor(fe::graph::Tensor_attributes()
                            .set_name("X")
                            .set_dim(x_dim)
                            .set_stride(x_stride)
                            .set_data_type(fe::DataType_t::BFLOAT16));
  auto scale = graph.tensor(fe::graph::Tensor_attributes()
                                .set_name("scale")
                                .set_dim(sb_dim)
                                .set_stride(sb_stride)
                                .set_data_type(fe::DataType_t::FLOAT));
  auto bias = graph.tensor(fe::graph::Tensor_attributes()
                               .set_name("bias")
                               .set_dim(sb_dim)
                               .set_stride(sb_stride)
                               .set_data_type(fe::DataType_t::FLOAT));
  auto options = fe::graph::Layernorm_attributes()
                     .set_name("layernorm")
                     .set_forward_phase(training ? fe::NormFwdPhase_t::TRAINING
                                                 : fe::NormFwdPhase_t::INFERENCE)
                     .set_epsilon(kEpsilon);
  auto [y, mean, inv_variance] = graph.layernorm(x, scale, bias, options);
  y->set_output(true).set_dim(x_dim).set_stride(x_stride).set_data_type(fe::DataType_t::BFLOAT16);
  if (training) {
    mean->set_output(true)
        .set_dim(stat_dim)
        .set_stride(stat_stride)
        .set_data_type(fe::DataType_t::FLOAT);
    inv_variance->set_output(true)
        .set_dim(stat_dim)
        .set_stride(stat_stride)
        .set_data_type(fe::DataType_t::FLOAT);
  }

  // The frontend's build chain, timed as a whole; A's configs, else FALLBACK's.
  const auto start = std::chrono::steady_clock::now();
  fe::error_t status = graph.validate();
  if (status.is_good()) status = graph.build_operation_graph(handle);
  if (status.is_good()) {
    row.heur = "A";
    status = graph.create_execution_plans({fe::HeurMode_t::A});
    if (!status.is_good() || graph.get_execution_plan_count() == 0) {
      row.heur = "FALLBACK";
      status = graph.create_execution_plans({fe::HeurMode_t::FALLBACK});
    }
  }
  if (status.is_good()) status = graph.check_support();
  if (status.is_good()) status = graph.build_plans();
  const auto stop = std::chrono::steady_clock::now();
  row.build_ms = std::chrono::duration<double, std::milli>(stop - start).count();
  row.rss_after = rss_bytes();
  if (!status.is_good()) {
    row.error = "build: " + status.get_message();
    return row;
  }
  if (const auto named = graph.get_plan_name(row.plan); !named.is_good()) row.plan = "?";
  if (status = graph.get_workspace_size(row.workspace); !status.is_good()) {
    row.error = "get_workspace_size: " + status.get_message();
    return row;
  }

  // Inputs from a fixed seed (one per row count); X's rows each get their own offset and spread.
  const auto count = static_cast<std::size_t>(rows * kChannels);
  std::mt19937 random(1234U + static_cast<unsigned>(rows));
  std::uniform_real_distribution<float> unit(-1.0F, 1.0F);
  std::vector<std::uint16_t> x_host(count);
  for (std::int64_t n = 0; n < rows; ++n) {
    const float offset = 2.0F * unit(random);
    const float spread = 1.5F + unit(random);
    for (std::int64_t c = 0; c < kChannels; ++c) {
      x_host[static_cast<std::size_t>(n * kChannels + c)] = to_bf16(offset + spread * unit(random));
    }
  }
  std::vector<float> scale_host(kChannels);
  std::vector<float> bias_host(kChannels);
  for (auto& value : scale_host) value = 1.0F + 0.5F * unit(random);
  for (auto& value : bias_host) value = 0.5F * unit(random);

  DeviceBuffer x_dev, y_dev, scale_dev, bias_dev, mean_dev, inv_dev, workspace_dev;
  const std::size_t stat_bytes = static_cast<std::size_t>(rows) * sizeof(float);
  if (!x_dev.alloc(count * 2, row.error) || !y_dev.alloc(count * 2, row.error) ||
      !scale_dev.alloc(kChannels * sizeof(float), row.error) ||
      !bias_dev.alloc(kChannels * sizeof(float), row.error) ||
      !workspace_dev.alloc(static_cast<std::size_t>(row.workspace), row.error)) {
    return row;
  }
  if (training &&
      (!mean_dev.alloc(stat_bytes, row.error) || !inv_dev.alloc(stat_bytes, row.error))) {
    return row;
  }
  if (!cuda_ok(cudaMemcpy(x_dev.ptr, x_host.data(), count * 2, cudaMemcpyHostToDevice), "copy X",
               row.error) ||
      !cuda_ok(cudaMemcpy(scale_dev.ptr, scale_host.data(), kChannels * sizeof(float),
                          cudaMemcpyHostToDevice),
               "copy scale", row.error) ||
      !cuda_ok(cudaMemcpy(bias_dev.ptr, bias_host.data(), kChannels * sizeof(float),
                          cudaMemcpyHostToDevice),
               "copy bias", row.error) ||
      !cuda_ok(cudaMemset(y_dev.ptr, 0xFF, count * 2), "memset Y", row.error)) {
    return row;
  }

  std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*> pack = {
      {x, x_dev.ptr}, {scale, scale_dev.ptr}, {bias, bias_dev.ptr}, {y, y_dev.ptr}};
  if (training) {
    pack[mean] = mean_dev.ptr;
    pack[inv_variance] = inv_dev.ptr;
  }
  if (status = graph.execute(handle, pack, workspace_dev.ptr); !status.is_good()) {
    row.error = "execute: " + status.get_message();
    return row;
  }
  if (!cuda_ok(cudaDeviceSynchronize(), "synchronize", row.error)) return row;

  std::vector<std::uint16_t> y_host(count);
  std::vector<float> mean_host(training ? static_cast<std::size_t>(rows) : 0);
  std::vector<float> inv_host(mean_host.size());
  if (!cuda_ok(cudaMemcpy(y_host.data(), y_dev.ptr, count * 2, cudaMemcpyDeviceToHost), "copy Y",
               row.error)) {
    return row;
  }
  if (training &&
      (!cuda_ok(cudaMemcpy(mean_host.data(), mean_dev.ptr, stat_bytes, cudaMemcpyDeviceToHost),
                "copy mean", row.error) ||
       !cuda_ok(cudaMemcpy(inv_host.data(), inv_dev.ptr, stat_bytes, cudaMemcpyDeviceToHost),
                "copy inv_variance", row.error))) {
    return row;
  }

  // The reference in double, from the BFloat16 inputs; a NaN in Y (unwritten) counts as infinite.
  row.max_err = 0.0;
  row.stats_err = training ? 0.0 : -1.0;
  for (std::int64_t n = 0; n < rows; ++n) {
    double sum = 0.0;
    for (std::int64_t c = 0; c < kChannels; ++c) {
      sum += from_bf16(x_host[static_cast<std::size_t>(n * kChannels + c)]);
    }
    const double mu = sum / kChannels;
    double squares = 0.0;
    for (std::int64_t c = 0; c < kChannels; ++c) {
      const double d = from_bf16(x_host[static_cast<std::size_t>(n * kChannels + c)]) - mu;
      squares += d * d;
    }
    const double inv = 1.0 / std::sqrt(squares / kChannels + static_cast<double>(kEpsilon));
    for (std::int64_t c = 0; c < kChannels; ++c) {
      const auto at = static_cast<std::size_t>(n * kChannels + c);
      const double ref =
          (from_bf16(x_host[at]) - mu) * inv * scale_host[static_cast<std::size_t>(c)] +
          bias_host[static_cast<std::size_t>(c)];
      const double got = from_bf16(y_host[at]);
      const double err = std::isnan(got) ? INFINITY : std::fabs(got - ref);
      row.max_err = std::max(row.max_err, err);
    }
    if (training) {
      const auto at = static_cast<std::size_t>(n);
      const double mean_err = std::isnan(mean_host[at]) ? INFINITY : std::fabs(mean_host[at] - mu);
      const double inv_err =
          std::isnan(inv_host[at]) ? INFINITY : std::fabs(inv_host[at] - inv) / inv;  // relative
      row.stats_err = std::max({row.stats_err, mean_err, inv_err});
    }
  }
  row.ok = true;
  return row;
}

// " kc_entries=N kc_revision=N" (or n/a), and " kc_json_bytes=N" when asked. The first failure
// of each query is printed once, on its own line.
std::string cache_fields(const std::shared_ptr<fe::KernelCache>& cache, bool json) {
  static bool size_said = false;
  static bool revision_said = false;
  static bool json_said = false;
  std::string fields;
  std::int64_t value = 0;
  if (auto status = cache->size(value); status.is_good()) {
    fields += " kc_entries=" + std::to_string(value);
  } else {
    fields += " kc_entries=n/a";
    if (!size_said) std::printf("# KernelCache::size(): %s\n", status.get_message().c_str());
    size_said = true;
  }
  if (auto status = cache->revision(value); status.is_good()) {
    fields += " kc_revision=" + std::to_string(value);
  } else {
    fields += " kc_revision=n/a";
    if (!revision_said) {
      std::printf("# KernelCache::revision(): %s\n", status.get_message().c_str());
    }
    revision_said = true;
  }
  if (json) {
    std::string text;
    if (auto status = cache->to_json(text); status.is_good()) {
      fields += " kc_json_bytes=" + std::to_string(text.size());
    } else {
      fields += " kc_json_bytes=n/a";
      if (!json_said) std::printf("# KernelCache::to_json(): %s\n", status.get_message().c_str());
      json_said = true;
    }
  }
  return fields;
}

void run_mode(cudnnHandle_t handle, bool training, const Options& options) {
  const char* mode = training ? "training" : "inference";
  std::vector<std::int64_t> rows_list = {64, 64, 65, 100, 333, 600, 65, 100, 1, 64};
  for (std::int64_t rows = 401; rows <= 420; ++rows) rows_list.push_back(rows);

  auto cache = std::make_shared<fe::KernelCache>();
  ModeTotals totals;
  totals.rss_start = rss_bytes();
  std::printf("# mode rows build_ms rss_delta_kib rss_total_mib max_err [key=value ...]\n");
  for (std::size_t i = 0; i < rows_list.size(); ++i) {
    const std::int64_t rows = rows_list[i];
    Row row;
    try {
      row = run_row(handle, cache, training, rows);
    } catch (const std::exception& e) {
      row.ok = false;
      row.error = std::string("the frontend threw: ") + e.what();
    }
    const long long delta =
        (row.rss_before >= 0 && row.rss_after >= 0) ? (row.rss_after - row.rss_before) / 1024 : 0;
    const double total_mib = row.rss_after >= 0 ? row.rss_after / 1048576.0 : -1.0;
    if (row.ok) {
      ++totals.built;
      std::printf("%s %lld %.2f %lld %.1f %.3g", mode, static_cast<long long>(rows), row.build_ms,
                  delta, total_mib, row.max_err);
      std::string fields = cache_fields(cache, options.json);
      if (training) {
        char text[32];
        std::snprintf(text, sizeof text, " stats_err=%.3g", row.stats_err);
        fields += text;
      }
      std::printf("%s heur=%s ws=%lld plan=%s\n", fields.c_str(), row.heur,
                  static_cast<long long>(row.workspace), row.plan.c_str());
    } else {
      ++totals.failed;
      std::printf("%s %lld %.2f %lld %.1f error", mode, static_cast<long long>(rows), row.build_ms,
                  delta, total_mib);
      const std::string fields = cache->is_finalized() ? cache_fields(cache, options.json) : "";
      std::printf("%s: %s\n", fields.c_str(), row.error.c_str());
    }
    std::fflush(stdout);
    if (i == 0) totals.rss_after_first = rss_bytes();
  }
  totals.rss_end = rss_bytes();
  std::printf(
      "# %s: %d built, %d failed; RSS growth over the mode %.1f MiB (%.1f -> %.1f MiB), "
      "after its first build %.1f MiB over %zu builds",
      mode, totals.built, totals.failed, (totals.rss_end - totals.rss_start) / 1048576.0,
      totals.rss_start / 1048576.0, totals.rss_end / 1048576.0,
      (totals.rss_end - totals.rss_after_first) / 1048576.0, rows_list.size() - 1);
  std::printf("%s\n", cache->is_finalized() ? cache_fields(cache, options.json).c_str() : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      options.json = true;
    } else if (arg == "--mode=inference") {
      options.training = false;
    } else if (arg == "--mode=training") {
      options.inference = false;
    } else if (arg == "--mode=both") {
      options.inference = options.training = true;
    } else {
      std::fprintf(stderr, "usage: %s [--json] [--mode=inference|training|both]\n", argv[0]);
      return 2;
    }
  }

  int devices = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&devices);
      status != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: %s\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "none found");
    return 77;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    std::printf("# GPU 0: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  }
  std::printf("# cuDNN compiled against %d, loaded %zu; cudnn-frontend %d\n", CUDNN_VERSION,
              cudnnGetVersion(), CUDNN_FRONTEND_VERSION);
  cudnnHandle_t handle = nullptr;
  if (const cudnnStatus_t status = cudnnCreate(&handle); status != CUDNN_STATUS_SUCCESS) {
    std::printf("no cuDNN handle: %s\n", cudnnGetErrorString(status));
    return 1;
  }
  std::printf("# RSS after cudnnCreate: %.1f MiB\n", rss_bytes() / 1048576.0);
  if (options.inference) run_mode(handle, false, options);
  if (options.training) run_mode(handle, true, options);
  cudnnDestroy(handle);
  return 0;
}
