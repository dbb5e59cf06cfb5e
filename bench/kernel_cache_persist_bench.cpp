// Persistence across processes: process 1 builds a dynamic fp16 topology (matmul + bias + ReLU,
// then NHWC conv 3x3 + bias + ReLU) and saves its KernelCache with to_json(); process 2 loads the
// document into a fresh cache and builds another shape of the topology; process 3 builds that
// shape cold. Each step is a child process of its own, so nothing compiled in one is in another.
// Then the same through a KernelCacheStore folder: process 4 builds and save_if_changed(),
// process 5 load_or_create()s and builds the other shape (the store's warm start).
// The driver's JIT cache (CUDA_CACHE_PATH) would make a "cold" process warm: the table is taken
// twice, with it isolated (every step a fresh empty CUDA_CACHE_PATH of its own: what the kernel
// cache alone gives) and kept (one CUDA_CACHE_PATH shared by the steps of a topology, empty at
// the topology's first step: a deployed server's restarts).
//   bench_kernel_cache_persist [isolated|kept]  all steps, side by side (both modes by default)
//   bench_kernel_cache_persist STEP TOPO FILE   one step (save|load|cold|store-save|store-load,
//                                               matmul|conv; FILE is the store's folder for the
//                                               store steps)
import dnngraph;

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Dims = std::vector<std::int64_t>;

dnngraph::Graph make_graph(bool conv, bool second_shape,
                           const std::shared_ptr<dnngraph::KernelCache>& kc) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(true).set_kernel_cache(kc);
  std::shared_ptr<TensorAttributes> y;
  std::shared_ptr<TensorAttributes> bias;
  if (conv) {
    const std::int64_t n = second_shape ? 4 : 1, hw = second_shape ? 28 : 56;
    const Dims xd{n, 64, hw, hw}, wd{64, 64, 3, 3}, bd{1, 64, 1, 1};
    auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(xd).set_stride(
        channels_last_strides(xd)));
    auto w = g.tensor(TensorAttributes().set_name("W").set_uid(2).set_dim(wd).set_stride(
        channels_last_strides(wd)));
    bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim(bd).set_stride(
        channels_last_strides(bd)));
    y = g.conv_fprop(x, w, ConvFpropAttributes().set_padding({1, 1}));
  } else {
    const std::int64_t m = second_shape ? 2048 : 1024, n = second_shape ? 512 : 1024;
    auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, m, 1024}));
    auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1024, n}));
    bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, n}));
    y = g.matmul(a, b);
  }
  auto d = g.pointwise(y, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd))
      ->set_output(true)
      .set_uid(3);
  return g;
}

int step(std::string_view what, bool conv, const std::string& file) {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("needs a CUDA device\n");
    return 77;
  }
  auto kc = std::make_shared<dnngraph::KernelCache>();
  const bool with_store = what.starts_with("store-");
  std::unique_ptr<dnngraph::KernelCacheStore> store;
  if (with_store) {
    store = std::make_unique<dnngraph::KernelCacheStore>(file);
    const dnngraph::KernelCacheKey key{conv ? "conv_bias_relu_fp16" : "matmul_bias_relu_fp16",
                                       "sm_90", 0};
    auto stored = store->load_or_create(key);
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
    std::ifstream in(file);
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (auto loaded = kc->from_json(json); !loaded) {
      std::printf("from_json: %s\n", loaded.error().message.c_str());
      return 1;
    }
  }
  auto g = make_graph(conv, what != "save" && what != "store-save", kc);
  const auto start = std::chrono::steady_clock::now();
  auto built = g.build(*handle, {dnngraph::HeuristicMode::A});
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!built) {
    std::printf("build: %s\n", built.error().message.c_str());
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
  std::printf("RESULT %.*s ms=%.3f hit=%d size=%lld  (%s)\n", static_cast<int>(what.size()),
              what.data(), ms, g.plan_info()->kernel_cache_hit ? 1 : 0,
              static_cast<long long>(kc->size().value_or(-1)), g.plan_info()->describe().c_str());
  return 0;
}

// A new empty folder under the system's temporary folder (for a CUDA_CACHE_PATH); empty on error.
std::string empty_folder(const char* what) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / (std::string("dnngraph-jit-") + what + "-XXXXXX"))
          .string();
  return mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
}

int table(const char* self, bool isolated) {
  std::printf("driver JIT cache %s\n",
              isolated ? "isolated: an empty CUDA_CACHE_PATH for every step"
                       : "kept: one CUDA_CACHE_PATH for a topology's steps, empty at its first");
  for (const char* topo : {"matmul", "conv"}) {
    const std::string kept = isolated ? std::string() : empty_folder(topo);
    const std::string file = std::string("/tmp/dnngraph-kernel-cache-") + topo + ".json";
    const std::string folder = std::string("/tmp/dnngraph-store-") + topo;
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
    double ms[5] = {-1, -1, -1, -1, -1};
    const std::array<const char*, 5> steps{"save", "load", "cold", "store-save", "store-load"};
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const std::string& where = i < 3 ? file : folder;
      const std::string jit = isolated ? empty_folder(steps[i]) : kept;
      if (jit.empty()) {
        std::fprintf(stderr,
                     "bench_kernel_cache_persist: no temporary folder for CUDA_CACHE_PATH\n");
        return 1;
      }
      std::string command = "CUDA_CACHE_PATH=" + jit;
      command.append(" ").append(self).append(" ").append(steps[i]).append(" ").append(topo);
      command.append(" ").append(where);
      std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
      std::array<char, 2048> line{};
      while (pipe && std::fgets(line.data(), line.size(), pipe.get()) != nullptr) {
        std::printf("  %s %s", topo, line.data());
        char name[16];
        double value = 0;
        if (std::sscanf(line.data(), "RESULT %15s ms=%lf", name, &value) == 2) {
          ms[i] = value;
        }
      }
      pipe.reset();  // the step has ended
      if (isolated) {
        std::filesystem::remove_all(jit, ignored);
      }
    }
    if (!isolated) {
      std::filesystem::remove_all(kept, ignored);
    }
    std::printf(
        "%s: first build in a new process %.1f ms with the saved cache, %.1f ms without: "
        "%.1fx\n",
        topo, ms[1], ms[2], ms[1] > 0 ? ms[2] / ms[1] : 0.0);
    std::printf(
        "%s: first build in a new process %.1f ms from a KernelCacheStore folder, %.1f ms "
        "without: "
        "%.1fx\n",
        topo, ms[4], ms[2], ms[4] > 0 ? ms[2] / ms[4] : 0.0);
  }
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc == 4) {
    return step(argv[1], std::string_view(argv[2]) == "conv", argv[3]);
  }
  const std::string_view mode = argc == 2 ? std::string_view(argv[1]) : std::string_view();
  if (argc > 2 || (argc == 2 && mode != "isolated" && mode != "kept")) {
    std::fprintf(stderr,
                 "usage: bench_kernel_cache_persist [isolated|kept]\n"
                 "       bench_kernel_cache_persist STEP TOPO FILE\n");
    return 2;
  }
  std::printf("kernel cache across processes, cuDNN %s, %s revision/size\n",
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str(),
              std::string(dnngraph::KernelCache::introspection_path()).c_str());
  int failed = 0;
  for (const bool isolated : {true, false}) {
    if (mode.empty() || (mode == "isolated") == isolated) {
      failed |= table(argv[0], isolated);
    }
  }
  return failed;
}
