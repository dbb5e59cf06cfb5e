// docs/operations.md's normalization example: layer normalization of X [rows, d, 1, 1] (Float,
// channels-last as cuDNN's own examples), training phase, so it also writes the mean and the
// inverse standard deviation of each row; epsilon is a scalar passed by value. Then an RMS norm
// and a batch norm for inference, the layer norm's backward, and batch norm in training with its
// backward, and an instance norm, lowered (and built on a GPU).
// Without a CUDA device it validates and lowers the graphs and says that execution needs a device;
// with one it runs the layer norm and checks Y and the statistics against a CPU reference.
#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>  // the same API without the C++ module (g++ 13)
#endif

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::int64_t rows = 24, d = 256;
constexpr float epsilon = 1e-5F;

dnngraph::Graph layernorm_training() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  auto X = g.tensor(TensorAttributes()
                        .set_name("X")
                        .set_uid(1)
                        .set_dim({rows, d, 1, 1})
                        .set_stride(channels_last_strides({rows, d, 1, 1})));
  // One scale and one bias per normalized element: [1, X dims but the first].
  const auto parameter = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({1, d, 1, 1})
                        .set_stride(channels_last_strides({1, d, 1, 1})));
  };
  auto [Y, mean, inv_variance] =
      g.layernorm(X, parameter("scale", 2), parameter("bias", 3),
                  LayernormAttributes()
                      .set_name("ln")
                      .set_forward_phase(NormFwdPhase::Training)
                      .set_epsilon(g.tensor(epsilon)));  // by value: not in the variant pack
  Y->set_output(true).set_uid(4);
  mean->set_output(true).set_uid(5);          // [rows, 1, 1, 1], Float
  inv_variance->set_output(true).set_uid(6);  // 1 / sqrt(var + epsilon)
  return g;
}

// The layer norm's backward: dX, dScale, dBias from dY, X, the scale and the statistics the
// training forward saved (mean and inv_variance, [rows, 1, 1, 1] Float).
dnngraph::Graph layernorm_backward() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  const auto tensor = [&](const char* name, std::int64_t uid,
                          const std::vector<std::int64_t>& dims) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
        channels_last_strides(dims)));
  };
  auto [dX, dScale, dBias] = g.layernorm_backward(
      tensor("dY", 1, {rows, d, 1, 1}), tensor("X", 2, {rows, d, 1, 1}),
      tensor("scale", 3, {1, d, 1, 1}), tensor("mean", 4, {rows, 1, 1, 1}),
      tensor("inv_variance", 5, {rows, 1, 1, 1}), NormBackwardAttributes().set_name("ln_bwd"));
  dX->set_output(true).set_uid(6);      // X's dims and layout
  dScale->set_output(true).set_uid(7);  // the scale's dims, Float
  dBias->set_output(true).set_uid(8);
  return g;
}

// Batch normalization in training over NHWC images: the batch's per-channel statistics (saved for
// the backward) and the running statistics' update, next = (1 - momentum) * previous + momentum *
// batch statistic (the variance unbiased). And its backward from the saved statistics.
dnngraph::Graph batchnorm_training(bool backward) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  const std::vector<std::int64_t> image{8, 64, 7, 7};
  const std::vector<std::int64_t> channel{1, 64, 1, 1};  // per-channel parameters and statistics
  const auto tensor = [&](const char* name, std::int64_t uid, const std::vector<std::int64_t>& dims,
                          DataType type) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim(dims)
                        .set_stride(channels_last_strides(dims))
                        .set_data_type(type));
  };
  if (backward) {
    auto [dX, dScale, dBias] = g.batchnorm_backward(
        tensor("dY", 1, image, DataType::Half), tensor("X", 2, image, DataType::Half),
        tensor("scale", 3, channel, DataType::Float), tensor("mean", 4, channel, DataType::Float),
        tensor("inv_variance", 5, channel, DataType::Float),
        NormBackwardAttributes().set_name("bn_bwd"));
    dX->set_output(true).set_uid(6);
    dScale->set_output(true).set_uid(7);
    dBias->set_output(true).set_uid(8);
    return g;
  }
  auto [Y, mean, inv_variance, next_mean, next_var] = g.batchnorm(
      tensor("X", 1, image, DataType::Half), tensor("scale", 2, channel, DataType::Float),
      tensor("bias", 3, channel, DataType::Float),
      BatchnormAttributes()
          .set_name("bn_train")
          .set_epsilon(g.tensor(1e-5F))
          .set_previous_running_stats(tensor("running_mean", 4, channel, DataType::Float),
                                      tensor("running_var", 5, channel, DataType::Float),
                                      g.tensor(0.1F)));  // momentum, by value
  Y->set_output(true).set_uid(6);
  mean->set_output(true).set_uid(7);  // [1, 64, 1, 1] Float, for batchnorm_backward
  inv_variance->set_output(true).set_uid(8);
  next_mean->set_output(true).set_uid(9);  // the updated running statistics
  next_var->set_output(true).set_uid(10);
  return g;
}

// Instance normalization in training: statistics per image and channel ([8, 64, 1, 1] Float).
dnngraph::Graph instancenorm_training() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  const std::vector<std::int64_t> image{8, 64, 7, 7};
  const std::vector<std::int64_t> channel{1, 64, 1, 1};
  auto X = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(image).set_stride(
      channels_last_strides(image)));
  const auto parameter = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim(channel).set_data_type(
        DataType::Float));
  };
  auto [Y, mean, inv_variance] = g.instancenorm(X, parameter("scale", 2), parameter("bias", 3),
                                                InstancenormAttributes()
                                                    .set_name("in")
                                                    .set_forward_phase(NormFwdPhase::Training)
                                                    .set_epsilon(g.tensor(1e-5F)));
  Y->set_output(true).set_uid(4);
  mean->set_output(true).set_uid(5);
  inv_variance->set_output(true).set_uid(6);
  return g;
}

// Y = X * inv_rms * scale, bias-free, for inference; and a batch norm with given statistics.
dnngraph::Graph rmsnorm_and_batchnorm(bool rms) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  if (rms) {
    auto X = g.tensor(TensorAttributes()
                          .set_name("X")
                          .set_uid(1)
                          .set_dim({rows, d, 1, 1})
                          .set_stride(channels_last_strides({rows, d, 1, 1})));
    auto scale = g.tensor(TensorAttributes()
                              .set_name("scale")
                              .set_uid(2)
                              .set_dim({1, d, 1, 1})
                              .set_stride(channels_last_strides({1, d, 1, 1})));
    auto [Y, inv_rms] = g.rmsnorm(X, scale,
                                  RmsnormAttributes()
                                      .set_name("rms")
                                      .set_forward_phase(NormFwdPhase::Inference)
                                      .set_epsilon(g.tensor(1e-6F)));
    Y->set_output(true).set_uid(3);
    return g;
  }
  const std::vector<std::int64_t> image{8, 64, 7, 7};
  const std::vector<std::int64_t> channel{1, 64, 1, 1};
  auto X = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(image).set_stride(
      channels_last_strides(image)));
  const auto statistic = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim(channel).set_data_type(
        DataType::Float));
  };
  g.batchnorm_inference(X, statistic("mean", 2), statistic("inv_variance", 3),
                        statistic("scale", 4), statistic("bias", 5),
                        BatchnormInferenceAttributes().set_name("bn"))
      ->set_output(true)
      .set_uid(6);
  return g;
}

struct Errors {
  double y = -1, mean = -1, inv_variance = -1;  // -1: the run failed
};

Errors run_layernorm(const dnngraph::Graph& g, const dnngraph::Handle& handle) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> x(rows * d), scale(d), bias(d);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t row = i / d;  // each row its own mean
    x[i] = dist(rng) + 0.1F * static_cast<float>(row);
  }
  for (std::size_t i = 0; i < scale.size(); ++i) {
    scale[i] = 1.0F + 0.5F * dist(rng);
    bias[i] = 0.5F * dist(rng);
  }
  std::vector<float> y(x.size()), mean(rows), inv_variance(rows);
  const std::int64_t ws = g.get_workspace_size().value_or(0);
  std::vector<float>* host[6] = {&x, &scale, &bias, &y, &mean, &inv_variance};
  void* dev[7] = {};
  bool ok = true;
  for (int i = 0; i < 6 && ok; ++i) {
    ok = cudaMalloc(&dev[i], host[i]->size() * sizeof(float)) == cudaSuccess;
  }
  ok = ok && (ws == 0 || cudaMalloc(&dev[6], static_cast<std::size_t>(ws)) == cudaSuccess);
  for (int i = 0; i < 3 && ok; ++i) {
    ok = cudaMemcpy(dev[i], host[i]->data(), host[i]->size() * sizeof(float),
                    cudaMemcpyHostToDevice) == cudaSuccess;
  }
  const std::unordered_map<std::int64_t, void*> pack{{1, dev[0]}, {2, dev[1]}, {3, dev[2]},
                                                     {4, dev[3]}, {5, dev[4]}, {6, dev[5]}};
  if (ok) {
    if (auto ran = g.execute(handle, pack, dev[6]); !ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
  }
  for (int i = 3; i < 6 && ok; ++i) {
    ok = cudaMemcpy(host[i]->data(), dev[i], host[i]->size() * sizeof(float),
                    cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  for (void* p : dev) {
    cudaFree(p);
  }
  if (!ok) {
    return {};
  }
  Errors e{0, 0, 0};
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = 0, var = 0;
    for (std::int64_t j = 0; j < d; ++j) m += x[static_cast<std::size_t>(r * d + j)];
    m /= d;
    for (std::int64_t j = 0; j < d; ++j) {
      const double v = x[static_cast<std::size_t>(r * d + j)] - m;
      var += v * v;
    }
    const double inv = 1.0 / std::sqrt(var / d + epsilon);
    e.mean = std::max(e.mean, std::fabs(mean[static_cast<std::size_t>(r)] - m));
    e.inv_variance =
        std::max(e.inv_variance, std::fabs(inv_variance[static_cast<std::size_t>(r)] - inv));
    for (std::int64_t j = 0; j < d; ++j) {
      const auto i = static_cast<std::size_t>(r * d + j);
      const double want =
          (x[i] - m) * inv * scale[static_cast<std::size_t>(j)] + bias[static_cast<std::size_t>(j)];
      e.y = std::max(e.y, std::fabs(y[i] - want));
    }
  }
  return e;
}

constexpr double tolerance = 1e-4;  // Float in, Float out: only the order of Float sums differs

}  // namespace

int main() {
  using namespace dnngraph;
  Graph ln = layernorm_training();
  Graph rms = rmsnorm_and_batchnorm(true);
  Graph bn = rmsnorm_and_batchnorm(false);
  Graph ln_bwd = layernorm_backward();
  Graph bn_train = batchnorm_training(false);
  Graph bn_bwd = batchnorm_training(true);
  Graph in = instancenorm_training();
  for (Graph* g : {&ln, &rms, &bn, &ln_bwd, &bn_train, &bn_bwd, &in}) {
    auto lowered = g->lower();
    if (!lowered) {
      std::printf("lower failed: %s\n", lowered.error().message.c_str());
      return 1;
    }
    std::printf("lowered %zu tensors, %zu operations:", lowered->tensor_count,
                lowered->operation_count);
    for (const auto& op : lowered->operations) {
      std::printf(" %s;", op.c_str());
    }
    std::printf("\n");
  }
  auto handle = Handle::create();
  if (!handle) {
    std::printf("execution needs a CUDA device; none here (%s)\n", handle.error().message.c_str());
    return 0;
  }
  for (Graph* g : {&ln, &rms, &bn, &ln_bwd, &bn_train, &bn_bwd, &in}) {
    if (auto built = g->build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}); !built) {
      std::printf("build failed: %s\n", built.error().message.c_str());
      return 1;
    }
  }
  std::printf("layernorm plan: %s\n", ln.plan_info()->describe().c_str());
  const Errors e = run_layernorm(ln, *handle);
  const bool pass =
      e.y >= 0 && e.y <= tolerance && e.mean <= tolerance && e.inv_variance <= tolerance * 10;
  std::printf(
      "max |Y - reference| = %.2e, |mean - reference| = %.2e, |inv_variance - "
      "reference| = %.2e (tolerance %.0e, %.0e for inv_variance): %s\n",
      e.y, e.mean, e.inv_variance, tolerance, tolerance * 10, pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
