// dnngraph's finding "cuDNN has no engine for the RNG operation outside attention" checked
// against the reference: cudnn-frontend's own rng node on the same cuDNN and GPU, in the two
// graphs dnngraph's GPU test builds: a Bernoulli mask alone (Float [1, 256, 384], p 0.75) and
// matmul dropout (Half [1, 256, 64] x [1, 64, 192], mask p 0.9, Y = A x B * mask * 1 / 0.9).
// Seed and offset are Int64 [1, 1, 1] tensors in device memory. For each graph and heuristics
// mode (A, then Fallback) it prints whether a plan was built (and how many engine configs the
// heuristics offered) or the frontend's error; a built mask is run once and its fraction of ones
// printed. Built only with cudnn-frontend's headers (DNNGRAPH_CUDNN_FRONTEND_INCLUDE).
#include "frontend_probe.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace fe = cudnn_frontend;

constexpr std::int64_t kUidSeed = 1, kUidOffset = 2, kUidA = 3, kUidB = 4, kUidY = 10;

std::shared_ptr<fe::graph::Graph> make(bool dropout) {
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(dropout ? fe::DataType_t::HALF : fe::DataType_t::FLOAT)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const auto key = [&](const char* name, std::int64_t uid) {
    return graph->tensor(fe::graph::Tensor_attributes()
                             .set_name(name)
                             .set_uid(uid)
                             .set_dim({1, 1, 1})
                             .set_stride({1, 1, 1})
                             .set_data_type(fe::DataType_t::INT64));
  };
  const std::int64_t m = 256, n = dropout ? 192 : 384, k = 64;
  auto mask = graph->rng(key("seed", kUidSeed), key("offset", kUidOffset),
                         fe::graph::Rng_attributes()
                             .set_name("mask")
                             .set_distribution(fe::RngDistribution_t::BERNOULLI)
                             .set_bernoulli_probability(dropout ? 0.9 : 0.75));
  mask->set_dim({1, m, n}).set_stride({m * n, n, 1});
  if (!dropout) {
    mask->set_output(true).set_uid(kUidY).set_data_type(fe::DataType_t::FLOAT);
    return graph;
  }
  auto a = graph->tensor(
      fe::graph::Tensor_attributes().set_name("A").set_uid(kUidA).set_dim({1, m, k}).set_stride(
          {m * k, k, 1}));
  auto b = graph->tensor(
      fe::graph::Tensor_attributes().set_name("B").set_uid(kUidB).set_dim({1, k, n}).set_stride(
          {k * n, n, 1}));
  auto product = graph->matmul(a, b, fe::graph::Matmul_attributes().set_name("mm"));
  product->set_data_type(fe::DataType_t::FLOAT);
  auto dropped = graph->pointwise(
      product, mask,
      fe::graph::Pointwise_attributes().set_name("drop").set_mode(fe::PointwiseMode_t::MUL));
  auto scale = graph->tensor(1.0F / 0.9F);
  auto y = graph->pointwise(
      dropped, scale,
      fe::graph::Pointwise_attributes().set_name("rescale").set_mode(fe::PointwiseMode_t::MUL));
  y->set_output(true).set_uid(kUidY);
  return graph;
}

void probe(cudnnHandle_t handle, bool dropout, fe::HeurMode_t mode, const char* mode_name) {
  const char* name = dropout ? "matmul dropout (Half)" : "mask alone (Float)";
  auto graph = make(dropout);
  const dnngraph_bench::Built built = dnngraph_bench::build(*graph, handle, {mode});
  if (!built.ok) {
    std::printf("%s, heuristics %s: not built (%lld engine configs offered): %s\n", name, mode_name,
                static_cast<long long>(built.configs), built.error.c_str());
    return;
  }
  std::printf("%s, heuristics %s: built (%lld engine configs offered)\n", name, mode_name,
              static_cast<long long>(built.configs));
  if (dropout) {
    return;
  }
  const std::size_t count = 256 * 384;
  void *seed = nullptr, *offset = nullptr, *y = nullptr, *workspace = nullptr;
  const std::int64_t seed_value = 1234, offset_value = 0;
  std::int64_t workspace_size = 0;
  if (!graph->get_workspace_size(workspace_size).is_good() || cudaMalloc(&seed, 8) != cudaSuccess ||
      cudaMalloc(&offset, 8) != cudaSuccess || cudaMalloc(&y, count * 4) != cudaSuccess ||
      cudaMalloc(&workspace, static_cast<std::size_t>(workspace_size) + 1) != cudaSuccess) {
    std::printf("  allocation failed\n");
    return;
  }
  cudaMemcpy(seed, &seed_value, 8, cudaMemcpyHostToDevice);
  cudaMemcpy(offset, &offset_value, 8, cudaMemcpyHostToDevice);
  std::unordered_map<std::int64_t, void*> pack{{kUidSeed, seed}, {kUidOffset, offset}, {kUidY, y}};
  auto ran = graph->execute(handle, pack, workspace);
  std::vector<float> host(count);
  cudaMemcpy(host.data(), y, count * 4, cudaMemcpyDeviceToHost);
  std::size_t ones = 0;
  for (const float v : host) ones += v == 1.0F ? 1 : 0;
  std::printf("  execute: %s; ones %zu of %zu (%.4f, expected 0.75)\n",
              ran.is_good() ? "ok" : ran.get_message().c_str(), ones, count,
              static_cast<double>(ones) / static_cast<double>(count));
  cudaFree(seed);
  cudaFree(offset);
  cudaFree(y);
  cudaFree(workspace);
}

}  // namespace

int main() {
  cudnnHandle_t handle = nullptr;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    std::printf("cudnnCreate failed\n");
    return 1;
  }
  std::printf("cuDNN %zu, cudnn-frontend %d\n", cudnnGetVersion(), CUDNN_FRONTEND_VERSION);
  for (const bool dropout : {false, true}) {
    probe(handle, dropout, fe::HeurMode_t::A, "A");
    probe(handle, dropout, fe::HeurMode_t::FALLBACK, "Fallback");
  }
  cudnnDestroy(handle);
  return 0;
}
