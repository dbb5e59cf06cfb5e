// Operation graphs the CPU finalizes without a GPU (cuDNN 9.19 needs no handle for them): one
// pointwise node on [1, 8, 16] floats; normal random numbers, which dnngraph never lowers. For
// kernel cache, store and plan choice tests and the fuzz harness, which need a real graph.
#pragma once

#include "backend/operation_graph.hpp"
#include "backend/operation_pointwise.hpp"
#include "backend/operation_rng.hpp"
#include "backend/pointwise.hpp"
#include "backend/rng.hpp"
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
  backend::Pointwise pointwise;
  backend::OperationPointwise operation;
  backend::OperationGraph graph;
};

// A packed tensor, [1, 8, 16] floats unless told otherwise.
inline backend::Expected<backend::Tensor> cpu_tensor(
    std::int64_t uid, cudnnDataType_t type = CUDNN_DATA_FLOAT,
    std::array<std::int64_t, 3> dims = std::array<std::int64_t, 3>{1, 8, 16}) {
  const std::array<std::int64_t, 3> strides{dims[1] * dims[2], dims[2], 1};
  auto tensor = backend::Tensor::create();
  if (!tensor) {
    return tensor;
  }
  auto ok = tensor->set_data_type(type);
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

// y = mode(x) (swish_beta for SWISH_FWD only), finalized; nullopt when cuDNN refused a step (it
// does not on cuDNN 9.19). The handle, where given, is the operation graph's (heuristics on a GPU
// read the device from it).
inline std::optional<CpuOperationGraph> pointwise_graph(cudnnPointwiseMode_t mode, bool dynamic,
                                                        double swish_beta = 1.0,
                                                        cudnnHandle_t handle = nullptr) {
  auto x = cpu_tensor(1);
  auto y = cpu_tensor(2);
  auto pointwise = backend::Pointwise::create();
  auto operation = backend::OperationPointwise::create();
  auto graph = backend::OperationGraph::create();
  if (!x || !y || !pointwise || !operation || !graph) {
    return std::nullopt;
  }
  auto ok = pointwise->set_mode(mode);
  if (ok) ok = pointwise->set_math_precision(CUDNN_DATA_FLOAT);
  if (ok && mode == CUDNN_POINTWISE_SWISH_FWD) ok = pointwise->set_swish_beta(swish_beta);
  if (ok) ok = pointwise->finalize();
  if (ok) ok = operation->set_pointwise(*pointwise);
  if (ok) ok = operation->set_x(*x);
  if (ok) ok = operation->set_y(*y);
  if (ok) ok = operation->finalize();
  const std::array<const backend::Operation*, 1> ops{&*operation};
  if (ok && handle != nullptr) ok = graph->set_handle(handle);
  if (ok) ok = graph->set_ops(ops);
  if (ok) ok = graph->set_dynamic_shape_enabled(dynamic);
  if (ok) ok = graph->finalize();
  if (!ok) {
    return std::nullopt;
  }
  return CpuOperationGraph{std::move(*x), std::move(*y), std::move(*pointwise),
                           std::move(*operation), std::move(*graph)};
}

// y = swish(x, beta), dynamic-shape: a graph to build a kernel cache against.
inline std::optional<CpuOperationGraph> swish_graph(double beta) {
  return pointwise_graph(CUDNN_POINTWISE_SWISH_FWD, true, beta);
}

// y = relu(x), static; with a handle on a GPU, a graph heuristics and plans take.
inline std::optional<CpuOperationGraph> relu_graph(cudnnHandle_t handle = nullptr) {
  return pointwise_graph(CUDNN_POINTWISE_RELU_FWD, false, 1.0, handle);
}

// Y [1, 8, 16] = normal random numbers (mean 0, deviation 1) from Int64 seed and offset,
// dynamic-shape: a graph the kernel cache schema does not know (dnngraph's rng is Bernoulli).
struct NormalRngGraph {
  backend::Tensor y;
  backend::Tensor seed;
  backend::Tensor offset;
  backend::Rng rng;
  backend::OperationRng operation;
  backend::OperationGraph graph;
};

inline std::optional<NormalRngGraph> normal_rng_graph() {
  auto y = cpu_tensor(1);
  auto seed = cpu_tensor(2, CUDNN_DATA_INT64, {1, 1, 1});
  auto offset = cpu_tensor(3, CUDNN_DATA_INT64, {1, 1, 1});
  auto rng = backend::Rng::create();
  auto operation = backend::OperationRng::create();
  auto graph = backend::OperationGraph::create();
  if (!y || !seed || !offset || !rng || !operation || !graph) {
    return std::nullopt;
  }
  auto ok = rng->set_distribution(CUDNN_RNG_DISTRIBUTION_NORMAL);
  if (ok) ok = rng->set_normal_parameters(0.0, 1.0);
  if (ok) ok = rng->finalize();
  if (ok) ok = operation->set_y(*y);
  if (ok) ok = operation->set_rng(*rng);
  if (ok) ok = operation->set_seed(*seed);
  if (ok) ok = operation->set_offset(*offset);
  if (ok) ok = operation->finalize();
  const std::array<const backend::Operation*, 1> ops{&*operation};
  if (ok) ok = graph->set_ops(ops);
  if (ok) ok = graph->set_dynamic_shape_enabled(true);
  if (ok) ok = graph->finalize();
  if (!ok) {
    return std::nullopt;
  }
  return NormalRngGraph{std::move(*y),   std::move(*seed),      std::move(*offset),
                        std::move(*rng), std::move(*operation), std::move(*graph)};
}

}  // namespace dnngraph::testing
