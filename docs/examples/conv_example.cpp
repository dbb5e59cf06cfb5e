// docs/operations.md's example: Y = ReLU(conv(X, W) + bias) in bf16, NHWC, fp32 accumulation;
// then the backward passes of the same convolution (conv_dgrad, conv_wgrad). Without a CUDA
// device it validates and lowers the graphs and says that execution needs a device; with one it
// runs the forward graph and checks it against a CPU reference.
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
#include <cstring>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

constexpr std::int64_t n = 2, c = 16, h = 12, w = 12, k = 32, r = 3, s = 3;

// bf16 is the upper half of an fp32 (round to nearest even; the inputs here are finite).
std::uint16_t to_bf16(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>(bits >> 16);
}
float from_bf16(std::uint16_t v) {
  const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

dnngraph::Graph conv_bias_relu() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  // NHWC: the dims stay [N, C, H, W]; the strides say C is innermost.
  auto X = g.tensor(TensorAttributes()
                        .set_name("X")
                        .set_uid(1)
                        .set_dim({n, c, h, w})
                        .set_stride(channels_last_strides({n, c, h, w})));
  auto W = g.tensor(TensorAttributes()
                        .set_name("W")
                        .set_uid(2)
                        .set_dim({k, c, r, s})
                        .set_stride(channels_last_strides({k, c, r, s})));
  auto bias = g.tensor(TensorAttributes()
                           .set_name("bias")
                           .set_uid(3)
                           .set_dim({1, k, 1, 1})
                           .set_stride(channels_last_strides({1, k, 1, 1})));
  // Y [N, K, H, W]: padding 1 keeps 12 x 12; Y's strides follow X (NHWC).
  auto Y = g.conv_fprop(
      X, W,
      ConvFpropAttributes().set_name("conv").set_padding({1, 1}).set_stride({1, 1}).set_dilation(
          {1, 1}));
  // Pointwise outputs get packed NCHW strides unless set: keep the chain NHWC.
  const auto nhwc = channels_last_strides({n, k, h, w});
  auto Z =
      g.pointwise(Y, bias, PointwiseAttributes().set_name("bias_add").set_mode(PointwiseMode::Add));
  Z->set_stride(nhwc);
  auto out =
      g.pointwise(Z, PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
  out->set_output(true).set_name("Y").set_uid(4).set_stride(nhwc);
  return g;
}

// The backward passes of the same convolution, each in a graph of its own: dX = conv_dgrad(dY, W)
// (dims inferred: [N, C, 12, 12]) or dW = conv_wgrad(X, dY) (dims set: the filter size is not
// implied by X and dY).
dnngraph::Graph backward(bool data) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  auto dY = g.tensor(TensorAttributes()
                         .set_name("dY")
                         .set_uid(1)
                         .set_dim({n, k, h, w})
                         .set_stride(channels_last_strides({n, k, h, w})));
  if (data) {
    auto W = g.tensor(TensorAttributes()
                          .set_name("W")
                          .set_uid(2)
                          .set_dim({k, c, r, s})
                          .set_stride(channels_last_strides({k, c, r, s})));
    g.conv_dgrad(dY, W, ConvDgradAttributes().set_name("dgrad").set_padding({1, 1}))
        ->set_output(true)
        .set_uid(3);
  } else {
    auto X = g.tensor(TensorAttributes()
                          .set_name("X")
                          .set_uid(2)
                          .set_dim({n, c, h, w})
                          .set_stride(channels_last_strides({n, c, h, w})));
    g.conv_wgrad(X, dY, ConvWgradAttributes().set_name("wgrad").set_padding({1, 1}))
        ->set_output(true)
        .set_uid(3)
        .set_dim({k, c, r, s})
        .set_data_type(DataType::Float);
  }
  return g;
}

// Runs the forward graph on random data; returns max |Y - reference|, or -1 on a failure.
double run_forward(const dnngraph::Graph& g, const dnngraph::Handle& handle) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  const auto random = [&](std::int64_t count) {
    std::vector<std::uint16_t> v(static_cast<std::size_t>(count));
    std::ranges::generate(v, [&] { return to_bf16(dist(rng)); });
    return v;
  };
  const auto x = random(n * h * w * c);   // NHWC memory order
  const auto wt = random(k * r * s * c);  // KRSC
  const auto b = random(k);
  std::vector<std::uint16_t> y(static_cast<std::size_t>(n * h * w * k));
  const std::int64_t ws = g.get_workspace_size().value_or(0);
  void* dev[5] = {};
  const std::size_t bytes[5] = {x.size() * 2, wt.size() * 2, b.size() * 2, y.size() * 2,
                                static_cast<std::size_t>(ws)};
  bool ok = true;
  for (int i = 0; i < 5 && ok; ++i) {
    ok = bytes[i] == 0 || cudaMalloc(&dev[i], bytes[i]) == cudaSuccess;
  }
  ok = ok && cudaMemcpy(dev[0], x.data(), bytes[0], cudaMemcpyHostToDevice) == cudaSuccess &&
       cudaMemcpy(dev[1], wt.data(), bytes[1], cudaMemcpyHostToDevice) == cudaSuccess &&
       cudaMemcpy(dev[2], b.data(), bytes[2], cudaMemcpyHostToDevice) == cudaSuccess;
  const std::unordered_map<std::int64_t, void*> pack{
      {1, dev[0]}, {2, dev[1]}, {3, dev[2]}, {4, dev[3]}};
  if (ok) {
    if (auto ran = g.execute(handle, pack, dev[4]); !ran) {
      std::printf("execute failed: %s\n", ran.error().message.c_str());
      ok = false;
    }
  }
  ok = ok && cudaMemcpy(y.data(), dev[3], bytes[3], cudaMemcpyDeviceToHost) == cudaSuccess;
  for (void* p : dev) {
    cudaFree(p);
  }
  if (!ok) {
    return -1;
  }
  double max_error = 0;
  for (std::int64_t in = 0; in < n; ++in) {
    for (std::int64_t oh = 0; oh < h; ++oh) {
      for (std::int64_t ow = 0; ow < w; ++ow) {
        for (std::int64_t ko = 0; ko < k; ++ko) {
          double sum = from_bf16(b[static_cast<std::size_t>(ko)]);
          for (std::int64_t fr = 0; fr < r; ++fr) {
            for (std::int64_t fs = 0; fs < s; ++fs) {
              const std::int64_t ih = oh - 1 + fr, iw = ow - 1 + fs;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              for (std::int64_t ic = 0; ic < c; ++ic) {
                sum += double{from_bf16(
                           x[static_cast<std::size_t>(((in * h + ih) * w + iw) * c + ic)])} *
                       from_bf16(wt[static_cast<std::size_t>(((ko * r + fr) * s + fs) * c + ic)]);
              }
            }
          }
          const double got =
              from_bf16(y[static_cast<std::size_t>(((in * h + oh) * w + ow) * k + ko)]);
          max_error = std::max(max_error, std::fabs(got - std::max(sum, 0.0)));
        }
      }
    }
  }
  return max_error;
}

// bf16 output: 8 bits of mantissa; |Y| stays below ~16 here, so 0.125 is about 2 ulp there.
constexpr double tolerance = 0.125;

}  // namespace

int main() {
  using namespace dnngraph;
  Graph forward = conv_bias_relu();
  Graph dgrad = backward(true);
  Graph wgrad = backward(false);
  for (Graph* g : {&forward, &dgrad, &wgrad}) {
    auto lowered = g->lower();
    if (!lowered) {
      std::printf("lower failed: %s\n", lowered.error().message.c_str());
      return 1;
    }
    std::printf("lowered %zu tensors, %zu operations (all finalized: %s):", lowered->tensor_count,
                lowered->operation_count, lowered->all_finalized ? "yes" : "no");
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
  if (auto built = forward.build(*handle, {HeuristicMode::A, HeuristicMode::Fallback}); !built) {
    std::printf("build failed: %s\n", built.error().message.c_str());
    return 1;
  }
  std::printf("plan: %s\n", forward.plan_info()->describe().c_str());
  const double error = run_forward(forward, *handle);
  const bool pass = error >= 0 && error <= tolerance;
  std::printf("max |Y - reference| = %.5f (tolerance %.3f): %s\n", error, tolerance,
              pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
