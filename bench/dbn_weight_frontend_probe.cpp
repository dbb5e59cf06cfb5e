// dbn_weight (BN_BWD_WEIGHTS) checked against the reference: cudnn-frontend's own dbn_weight node
// on the same cuDNN and GPU, in the graph of its sample "Dgrad Drelu DBNweight Graph"
// (samples/cpp/convolution/dgrads.cpp: Half NHWC, dY [4, 64, 16, 16], W [64, 32, 3, 3],
// conv_dgrad -> (X - mean) * inv_variance * scale + bias -> ReLU backward -> dbn_weight, the
// ReLU backward's output an output), and dbn_weight alone (dY and X graph inputs). Prints, per
// graph and heuristics mode, whether it built and executed or the frontend's error. dnngraph's
// gpu_dbn_weight_test got NoEngine for both forms on cuDNN 9.19 (session 10).
// Built only with cudnn-frontend's headers (DNNGRAPH_CUDNN_FRONTEND_INCLUDE).
#include "frontend_probe.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace fe = cudnn_frontend;
using Tensor = std::shared_ptr<fe::graph::Tensor_attributes>;

constexpr std::int64_t n = 4, c = 32, k = 64, h = 16, w = 16;

Tensor per_channel(fe::graph::Graph& g, const char* name) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_dim({1, c, 1, 1})
                      .set_stride({c, 1, c, c})
                      .set_data_type(fe::DataType_t::FLOAT));
}

Tensor image(fe::graph::Graph& g, const char* name, std::int64_t channels) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_dim({n, channels, h, w})
                      .set_stride({channels * h * w, 1, channels * w, channels}));
}

// Builds (and with a plan, executes once on zeroed buffers) one graph.
void probe(const char* what, bool fused, fe::HeurMode_t mode, cudnnHandle_t handle) {
  fe::graph::Graph g;
  g.set_io_data_type(fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  std::vector<Tensor> outputs;
  std::vector<Tensor> inputs;
  auto x = image(g, "X", c);
  auto mean = per_channel(g, "mean");
  auto inv_var = per_channel(g, "inv_variance");
  auto scale = per_channel(g, "scale");
  inputs.insert(inputs.end(), {x, mean, inv_var, scale});
  Tensor dy;
  if (fused) {
    auto grad = image(g, "grad", k);
    auto weight = g.tensor(fe::graph::Tensor_attributes()
                               .set_name("weight")
                               .set_dim({k, c, 3, 3})
                               .set_stride({c * 9, 1, c * 3, c}));
    auto bias = per_channel(g, "bias");
    inputs.insert(inputs.end(), {grad, weight, bias});
    auto dgrad = g.conv_dgrad(
        grad, weight,
        fe::graph::Conv_dgrad_attributes().set_padding({1, 1}).set_stride({1, 1}).set_dilation(
            {1, 1}));
    dgrad->set_dim({n, c, h, w});
    auto pw = [&](Tensor a, Tensor b, fe::PointwiseMode_t m) {
      return g.pointwise(a, b, fe::graph::Pointwise_attributes().set_mode(m));
    };
    auto bn = pw(pw(pw(pw(x, mean, fe::PointwiseMode_t::SUB), inv_var, fe::PointwiseMode_t::MUL),
                    scale, fe::PointwiseMode_t::MUL),
                 bias, fe::PointwiseMode_t::ADD);
    dy = pw(dgrad, bn, fe::PointwiseMode_t::RELU_BWD);
    dy->set_output(true);
    outputs.push_back(dy);
  } else {
    dy = image(g, "dY", c);
    inputs.push_back(dy);
  }
  auto [dscale, dbias, eq_dy, eq_x, eq_bias] =
      g.dbn_weight(dy, x, mean, inv_var, scale, fe::graph::DBN_weight_attributes());
  for (auto& t : {dscale, dbias, eq_dy, eq_x, eq_bias}) {
    t->set_output(true);
    outputs.push_back(t);
  }
  const dnngraph_bench::Built built = dnngraph_bench::build(g, handle, {mode});
  const char* mode_name = dnngraph_bench::mode_name(mode);
  if (!built.ok) {
    std::printf("%s, heuristics %s: not built: %s\n", what, mode_name, built.error.c_str());
    return;
  }
  std::unordered_map<Tensor, void*> pack;
  std::vector<void*> buffers;
  for (auto& t : inputs) {
    void* p = nullptr;
    cudaMalloc(&p, 1 << 22);
    cudaMemset(p, 0, 1 << 22);
    pack.emplace(t, p);
    buffers.push_back(p);
  }
  for (auto& t : outputs) {
    void* p = nullptr;
    cudaMalloc(&p, 1 << 22);
    pack.emplace(t, p);
    buffers.push_back(p);
  }
  std::int64_t ws = 0;
  (void)g.get_workspace_size(ws);
  void* workspace = nullptr;
  cudaMalloc(&workspace, static_cast<std::size_t>(ws) + 1);
  auto ran = g.execute(handle, pack, workspace);
  const cudaError_t sync = cudaDeviceSynchronize();
  std::printf("%s, heuristics %s: built; execute %s, %s\n", what, mode_name,
              ran.is_good() ? "ok" : ran.get_message().c_str(), cudaGetErrorString(sync));
  for (void* p : buffers) cudaFree(p);
  cudaFree(workspace);
}

}  // namespace

int main() {
  cudnnHandle_t handle = nullptr;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    std::printf("no cuDNN handle\n");
    return 1;
  }
  std::printf("# cudnn-frontend %d, cuDNN %zu: dbn_weight (Half NHWC, C %lld)\n",
              CUDNN_FRONTEND_VERSION, cudnnGetVersion(), static_cast<long long>(c));
  for (const auto mode : {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}) {
    probe("dgrad -> BN -> ReLU backward -> dbn_weight (frontend's sample)", true, mode, handle);
    probe("dbn_weight alone", false, mode, handle);
  }
  cudnnDestroy(handle);
  return 0;
}
