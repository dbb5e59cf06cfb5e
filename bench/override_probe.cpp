// Diagnostic: which fused matmul graphs run with override shapes on the loaded cuDNN. Each
// topology (plain, bias, relu, bias_relu, scale) is built on the cache shape b=1, M=N=K=1024 with
// set_override_shape_enabled(true) under heuristics A, B and Fallback, then executed with
// overrides on every tensor and on all but the bias, and sampled against a CPU reference.
//   bench_override_probe              every topology, each in a child process of its own
//   bench_override_probe TOPOLOGY     one topology
import dnngraph;

#include <cuda_runtime_api.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using Dims = std::vector<std::int64_t>;
struct Shape {
  std::int64_t b, m, n, k;
};

std::uint16_t to_bf16(float v) {
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16);
}
float from_bf16(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

bool has_bias(std::string_view t) { return t == "bias" || t == "bias_relu"; }
bool has_relu(std::string_view t) { return t == "relu" || t == "bias_relu"; }

dnngraph::Graph make_graph(std::string_view topology) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  g.set_override_shape_enabled(true);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, 1024, 1024}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1024, 1024}));
  auto y = g.matmul(a, b);
  if (has_bias(topology)) {
    auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, 1024}));
    y = g.pointwise(y, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  }
  if (has_relu(topology)) {
    y = g.pointwise(y, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  }
  if (topology == "scale") {
    y = g.pointwise(y, g.tensor(0.5F), PointwiseAttributes().set_mode(PointwiseMode::Mul));
  }
  y->set_output(true).set_uid(3);
  return g;
}

Dims packed(const Dims& d) { return {d[1] * d[2], d[2], 1}; }

int run_topology(std::string_view topology) {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("needs a CUDA device\n");
    return 77;
  }
  const std::array<Shape, 4> shapes{
      {{1, 512, 512, 512}, {2, 1024, 1024, 1024}, {4, 256, 2048, 64}, {1, 2048, 1024, 1024}}};
  const std::size_t max_elems = std::size_t{2} * 1024 * 1024 * 2;
  void* p[5] = {};
  for (int i = 0; i < 4; ++i) {
    if (cudaMalloc(&p[i], max_elems * 2) != cudaSuccess) return 1;
  }
  std::mt19937 rng(7);
  auto value = [&](int lo, int hi) {
    return static_cast<float>(std::uniform_int_distribution<int>(lo, hi)(rng)) / 8.0F;
  };
  int wrong_or_failed = 0;
  for (auto mode : {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::B,
                    dnngraph::HeuristicMode::Fallback}) {
    auto g = make_graph(topology);
    auto built = g.build(*handle, {mode});
    const char* mode_name = mode == dnngraph::HeuristicMode::A   ? "A"
                            : mode == dnngraph::HeuristicMode::B ? "B"
                                                                 : "Fallback";
    if (!built) {
      std::printf("%s %s: build refused: %s\n", std::string(topology).c_str(), mode_name,
                  built.error().message.c_str());
      continue;
    }
    std::printf("%s %s: %s\n", std::string(topology).c_str(), mode_name,
                g.plan_info()->describe().c_str());
    for (bool with_bias : {true, false}) {
      if (!with_bias && !has_bias(topology)) continue;
      for (const Shape& s : shapes) {
        const Dims ad{s.b, s.m, s.k}, bd{s.b, s.k, s.n}, yd{s.b, s.m, s.n}, biasd{1, 1, s.n};
        std::vector<std::int64_t> uids{1, 2, 3};
        std::vector<Dims> dims{ad, bd, yd}, strides{packed(ad), packed(bd), packed(yd)};
        if (has_bias(topology) && with_bias) {
          uids.push_back(4);
          dims.push_back(biasd);
          strides.push_back(packed(biasd));
        }
        // The bias has the run's n (the build's 1024 when it is not overridden, which the
        // override check then requires of n).
        std::vector<std::uint16_t> a(ad[0] * ad[1] * ad[2]), b(bd[0] * bd[1] * bd[2]),
            bias(biasd[2]), y(yd[0] * yd[1] * yd[2]);
        for (auto& v : a) v = to_bf16(value(-8, 8));
        for (auto& v : b) v = to_bf16(value(-8, 8));
        for (auto& v : bias) v = to_bf16(value(-16, 16));
        cudaMemcpy(p[0], a.data(), a.size() * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(p[1], b.data(), b.size() * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(p[3], bias.data(), bias.size() * 2, cudaMemcpyHostToDevice);
        cudaMemset(p[2], 0xFF, max_elems * 2);
        char label[160];
        std::snprintf(label, sizeof label, "  %s %s overrides %s [%lld %lld %lld %lld]",
                      std::string(topology).c_str(), mode_name, with_bias ? "all" : "all but bias",
                      (long long)s.b, (long long)s.m, (long long)s.n, (long long)s.k);
        auto ws = g.get_workspace_size(*handle, uids, dims, strides);
        if (!ws) {
          std::printf("%s: workspace refused: %s\n", label, ws.error().message.c_str());
          continue;
        }
        if (*ws > 0 && cudaMalloc(&p[4], static_cast<std::size_t>(*ws)) != cudaSuccess) return 1;
        std::unordered_map<std::int64_t, void*> pack{{1, p[0]}, {2, p[1]}, {3, p[2]}};
        if (has_bias(topology)) pack[4] = p[3];
        auto ran = g.execute(*handle, pack, p[4], uids, dims, strides);
        const cudaError_t sync = cudaDeviceSynchronize();
        if (p[4] != nullptr) {
          cudaFree(p[4]);
          p[4] = nullptr;
        }
        if (!ran || sync != cudaSuccess) {
          ++wrong_or_failed;
          std::printf("%s: EXECUTE FAILED: %s %s\n", label, ran ? "" : ran.error().message.c_str(),
                      cudaGetErrorString(sync));
          continue;
        }
        cudaMemcpy(y.data(), p[2], y.size() * 2, cudaMemcpyDeviceToHost);
        double max_err = 0;
        int bad = 0;
        std::mt19937 pick(11);
        for (int i = 0; i < 512; ++i) {
          const auto draw = [&](std::int64_t n) { return static_cast<std::int64_t>(pick() % n); };
          const std::int64_t bi = draw(s.b), r = draw(s.m), c = draw(s.n);
          double ref = 0;
          for (std::int64_t l = 0; l < s.k; ++l) {
            ref += double(from_bf16(a[(bi * s.m + r) * s.k + l])) *
                   from_bf16(b[(bi * s.k + l) * s.n + c]);
          }
          if (has_bias(topology)) ref += from_bf16(bias[c]);
          if (has_relu(topology)) ref = std::max(ref, 0.0);
          if (topology == "scale") ref *= 0.5;
          const double got = from_bf16(y[(bi * s.m + r) * s.n + c]);
          const double err = std::abs(got - ref);
          if (!(err <= 0.01 * std::abs(ref) + 0.05)) ++bad;
          max_err = std::isnan(err) ? INFINITY : std::max(max_err, err);
        }
        if (bad > 0) ++wrong_or_failed;
        std::printf(
            "%s: workspace %lld B, %s (%d of 512 sampled outside tolerance, max abs error %g)\n",
            label, (long long)*ws, bad == 0 ? "exact" : "WRONG", bad, max_err);
      }
    }
  }
  for (void* q : p) cudaFree(q);
  return wrong_or_failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc == 2) {
    return run_topology(argv[1]);
  }
  std::printf("override shapes on fused graphs, cuDNN %s\n",
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str());
  int failures = 0;
  for (const char* topology : {"plain", "bias", "relu", "bias_relu", "scale"}) {
    const std::string command = std::string(argv[0]) + " " + topology + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    std::array<char, 4096> line{};
    while (pipe && std::fgets(line.data(), line.size(), pipe.get()) != nullptr) {
      std::fputs(line.data(), stdout);
    }
    const int status = pipe ? pclose(pipe.release()) : -1;
    if (status != 0) {
      ++failures;
      std::printf("%s: child exit status %d\n", topology, status);
    }
  }
  return failures == 0 ? 0 : 1;
}
