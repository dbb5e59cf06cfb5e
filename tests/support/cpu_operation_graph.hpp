// A dynamic-shape operation graph the CPU finalizes without a GPU (cuDNN 9.19 needs no handle
// for it): y = swish(x, beta) on [1, 8, 16] floats. For kernel cache tests and the fuzz harness,
// which need a real graph to build a cache against.
#pragma once

#include "backend/operation_graph.hpp"
#include "backend/operation_pointwise.hpp"
#include "backend/pointwise.hpp"
#include "backend/status.hpp"
#include "backend/tensor.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <utility>

namespace dnngraph::testing {

// The graph with the descriptors it was made from, kept alive together.
struct CpuOperationGraph {
  backend::Tensor x;
  backend::Tensor y;
  backend::Pointwise swish;
  backend::OperationPointwise operation;
  backend::OperationGraph graph;
};

inline backend::Expected<backend::Tensor> cpu_tensor(std::int64_t uid) {
  constexpr std::array<std::int64_t, 3> dims{1, 8, 16};
  constexpr std::array<std::int64_t, 3> strides{128, 16, 1};
  auto tensor = backend::Tensor::create();
  if (!tensor) {
    return tensor;
  }
  auto ok = tensor->set_data_type(CUDNN_DATA_FLOAT);
  if (ok) ok = tensor->set_dimensions(dims);
  if (ok) ok = tensor->set_strides(strides);
  if (ok) ok = tensor->set_unique_id(uid);
  if (ok) ok = tensor->set_byte_alignment(16);
  if (ok) ok = tensor->finalize();
  if (!ok) {
    return std::unexpected(ok.error());
  }
  return tensor;
}

// A finalized graph, or nullopt when cuDNN refused a step (it does not on cuDNN 9.19).
inline std::optional<CpuOperationGraph> swish_graph(double beta) {
  auto x = cpu_tensor(1);
  auto y = cpu_tensor(2);
  auto swish = backend::Pointwise::create();
  auto operation = backend::OperationPointwise::create();
  auto graph = backend::OperationGraph::create();
  if (!x || !y || !swish || !operation || !graph) {
    return std::nullopt;
  }
  auto ok = swish->set_mode(CUDNN_POINTWISE_SWISH_FWD);
  if (ok) ok = swish->set_math_precision(CUDNN_DATA_FLOAT);
  if (ok) ok = swish->set_swish_beta(beta);
  if (ok) ok = swish->finalize();
  if (ok) ok = operation->set_pointwise(*swish);
  if (ok) ok = operation->set_x(*x);
  if (ok) ok = operation->set_y(*y);
  if (ok) ok = operation->finalize();
  const std::array<const backend::Operation*, 1> ops{&*operation};
  if (ok) ok = graph->set_ops(ops);
  if (ok) ok = graph->set_dynamic_shape_enabled(true);
  if (ok) ok = graph->finalize();
  if (!ok) {
    return std::nullopt;
  }
  return CpuOperationGraph{std::move(*x), std::move(*y), std::move(*swish), std::move(*operation),
                           std::move(*graph)};
}

}  // namespace dnngraph::testing
