// The dynamic-shape bf16 matmul graph the kernel cache benches build on a shared KernelCache:
// Y [b, m, n] = activation(A [b, m, k] x B [b, k, n] + bias [1, 1, n]), bias and activation each
// optional, Float compute. Uids: A 1, B 2, Y 3, bias 4. Include where dnngraph's names are
// declared (after `import dnngraph;` or the api/ headers).
#pragma once

#include "bf16_matmul.hpp"

#include <memory>
#include <optional>

namespace dnngraph_bench {

inline dnngraph::Graph matmul_graph(const MatmulShape& s, bool bias,
                                    std::optional<dnngraph::PointwiseMode> activation,
                                    const std::shared_ptr<dnngraph::KernelCache>& cache) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(true).set_kernel_cache(cache);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({s.b, s.m, s.k}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({s.b, s.k, s.n}));
  auto y = g.matmul(a, b);
  if (bias) {
    auto added = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, s.n}));
    y = g.pointwise(y, added, PointwiseAttributes().set_mode(PointwiseMode::Add));
  }
  if (activation) {
    y = g.pointwise(y, PointwiseAttributes().set_mode(*activation));
  }
  y->set_output(true).set_uid(3);
  return g;
}

}  // namespace dnngraph_bench
