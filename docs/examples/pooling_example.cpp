// docs/operations.md's pooling example: 3x3 max pooling with stride 2 and padding 1 over an NHWC
// Float image batch, in training (it also writes the Int8 Index of each maximum), and its backward
// pass reading that Index. Without a CUDA device it validates and lowers both graphs; with one it
// runs the forward and checks Y against a CPU reference (a maximum is exact).
#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>  // the same API without the C++ module (g++ 13)
#endif

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::int64_t n = 4, c = 16, h = 15, w = 13;
constexpr std::int64_t ho = (h + 2 - 3) / 2 + 1, wo = (w + 2 - 3) / 2 + 1;

dnngraph::ResampleAttributes max_pool_3x3() {
  using namespace dnngraph;
  return ResampleAttributes()
      .set_name("pool")
      .set_mode(ResampleMode::MaxPool)
      .set_window({3, 3})
      .set_stride({2, 2})
      .set_padding({1, 1});
}

dnngraph::Graph forward() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  auto X = g.tensor(TensorAttributes()
                        .set_name("X")
                        .set_uid(1)
                        .set_dim({n, c, h, w})
                        .set_stride(channels_last_strides({n, c, h, w})));
  auto [Y, Index] = g.resample(X, max_pool_3x3().set_generate_index(true));
  Y->set_output(true).set_uid(2);      // [n, c, 8, 7], NHWC like X
  Index->set_output(true).set_uid(3);  // Int8, Y's dims and layout
  return g;
}

dnngraph::Graph backward() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  const auto tensor = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({n, c, ho, wo})
                        .set_stride(channels_last_strides({n, c, ho, wo})));
  };
  auto dY = tensor("dY", 1);
  auto Index = tensor("Index", 2);
  Index->set_data_type(DataType::Int8);
  // The forward's settings, and where each maximum was.
  auto dX = g.resample_backward(dY, ResampleBackwardAttributes()
                                        .set_name("pool_bwd")
                                        .set_mode(ResampleMode::MaxPool)
                                        .set_window({3, 3})
                                        .set_stride({2, 2})
                                        .set_padding({1, 1})
                                        .set_index(Index));
  dX->set_output(true).set_uid(3).set_dim({n, c, h, w});  // without X, dX's dims are ours to say
  return g;
}

}  // namespace

int main() {
  using namespace dnngraph;
  Graph fwd = forward();
  Graph bwd = backward();
  for (Graph* g : {&fwd, &bwd}) {
    auto lowered = g->lower();
    if (!lowered) {
      std::printf("lower failed: %s\n", lowered.error().message.c_str());
      return 1;
    }
    std::printf("lowered %zu tensors, %zu operations: %s\n", lowered->tensor_count,
                lowered->operation_count, lowered->operations.front().c_str());
  }
  auto handle = Handle::create();
  if (!handle) {
    std::printf("execution needs a CUDA device; none here (%s)\n", handle.error().message.c_str());
    return 0;
  }
  if (auto built = fwd.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}); !built) {
    std::printf("build failed: %s\n", built.error().message.c_str());
    return 1;
  }
  // X in NHWC memory order: distinct values, so no window holds a tie.
  std::vector<float> x(n * c * h * w);
  std::iota(x.begin(), x.end(), -0.5F * static_cast<float>(x.size()));
  std::ranges::shuffle(x, std::mt19937(5));
  const std::size_t y_count = n * c * ho * wo;
  void *dx = nullptr, *dy = nullptr, *di = nullptr, *workspace = nullptr;
  const std::int64_t ws = fwd.get_workspace_size().value_or(0);
  bool ok = cudaMalloc(&dx, x.size() * 4) == cudaSuccess &&
            cudaMalloc(&dy, y_count * 4) == cudaSuccess &&
            cudaMalloc(&di, y_count) == cudaSuccess &&
            (ws == 0 || cudaMalloc(&workspace, static_cast<std::size_t>(ws)) == cudaSuccess) &&
            cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess;
  const std::unordered_map<std::int64_t, void*> pack{{1, dx}, {2, dy}, {3, di}};
  if (ok) {
    if (auto ran = fwd.execute(*handle, pack, workspace); !ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
  }
  std::vector<float> y(y_count);
  ok = ok && cudaMemcpy(y.data(), dy, y_count * 4, cudaMemcpyDeviceToHost) == cudaSuccess;
  for (void* p : {dx, dy, di, workspace}) {
    cudaFree(p);
  }
  if (!ok) {
    std::printf("the GPU run failed\n");
    return 1;
  }
  // The reference: the maximum of each window's input elements (padding never wins).
  std::size_t wrong = 0;
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t i = 0; i < ho; ++i) {
      for (std::int64_t j = 0; j < wo; ++j) {
        for (std::int64_t k = 0; k < c; ++k) {
          float best = -std::numeric_limits<float>::infinity();
          for (std::int64_t r = i * 2 - 1; r <= i * 2 + 1; ++r) {
            for (std::int64_t q = j * 2 - 1; q <= j * 2 + 1; ++q) {
              if (r >= 0 && r < h && q >= 0 && q < w) {
                best = std::max(best, x[((b * h + r) * w + q) * c + k]);
              }
            }
          }
          wrong += y[((b * ho + i) * wo + j) * c + k] != best ? 1 : 0;
        }
      }
    }
  }
  std::printf("max pooling: %zu of %zu outputs differ from the reference\n", wrong, y_count);
  return wrong == 0 ? 0 : 1;
}
