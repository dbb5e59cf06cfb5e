// docs/override-shapes.md's example: build a matmul once on a cache shape, then run other
// shapes by passing them to get_workspace_size() and execute().
#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>  // the same API without the C++ module (g++ 13)
#endif

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  using namespace dnngraph;
  using Dims = std::vector<std::int64_t>;
  Graph g;
  g.set_io_data_type(DataType::Half)
      .set_compute_data_type(DataType::Float)
      .set_override_shape_enabled(true);  // chainable, before build
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, 1024, 1024}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1024, 1024}));
  g.matmul(a, b)->set_output(true).set_uid(3).set_name("C");

  // The real shapes of one run: A [4, 300, 512] x B [4, 512, 264] -> C [4, 300, 264].
  const std::vector<std::int64_t> uids{1, 2, 3};
  const std::vector<Dims> shapes{{4, 300, 512}, {4, 512, 264}, {4, 300, 264}};
  const std::vector<Dims> strides{packed_strides(shapes[0]), packed_strides(shapes[1]),
                                  packed_strides(shapes[2])};
  if (auto ok = g.validate(); !ok) {
    std::printf("validate: %s\n", ok.error().message.c_str());
    return 1;
  }
  // The same checks execute() makes, without a GPU: a wrong list is an Error, never a crash.
  const std::vector<Dims> wrong{{4, 300, 512}, {4, 256, 264}, {4, 300, 264}};
  auto refused = g.check_overrides(uids, wrong, strides);
  std::printf("inconsistent overrides: %s\n",
              refused ? "accepted?!" : refused.error().message.c_str());
  if (refused || !g.check_overrides(uids, shapes, strides)) {
    return 1;
  }

  auto handle = Handle::create();
  if (!handle) {
    std::printf("running needs a CUDA device; none here\n");
    return 0;
  }
  if (auto built = g.build(*handle, {HeuristicMode::A}); !built) {
    std::printf("build: %s\n", built.error().message.c_str());
    return 1;
  }
  std::printf("built on [1, 1024, 1024, 1024]: %s\n  overrides via %s\n",
              g.plan_info()->describe().c_str(), g.plan_info()->override_path.c_str());
  // Ask for the workspace of these shapes right before allocating it.
  auto ws = g.get_workspace_size(*handle, uids, shapes, strides);
  if (!ws) {
    std::printf("workspace: %s\n", ws.error().message.c_str());
    return 1;
  }
  void* buffers[4] = {};
  const std::size_t bytes[4] = {std::size_t{4} * 300 * 512 * 2, std::size_t{4} * 512 * 264 * 2,
                                std::size_t{4} * 300 * 264 * 2, static_cast<std::size_t>(*ws)};
  for (int i = 0; i < 4; ++i) {
    if (bytes[i] > 0 && cudaMalloc(&buffers[i], bytes[i]) != cudaSuccess) {
      return 1;
    }
  }
  cudaMemset(buffers[0], 0, bytes[0]);
  cudaMemset(buffers[1], 0, bytes[1]);
  auto ran = g.execute(*handle, {{1, buffers[0]}, {2, buffers[1]}, {3, buffers[2]}}, buffers[3],
                       uids, shapes, strides);
  const bool ok = ran && cudaDeviceSynchronize() == cudaSuccess;
  std::printf("ran [4, 300, 264, 512] with a %lld-byte workspace: %s\n",
              static_cast<long long>(*ws),
              ok    ? "ok"
              : ran ? "CUDA error"
                    : ran.error().message.c_str());
  for (void* p : buffers) {
    cudaFree(p);
  }
  return ok ? 0 : 1;
}
