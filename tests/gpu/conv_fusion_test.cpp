// Convolution fusions on the GPU against a CPU reference in double: conv_fprop (NHWC, odd
// spatial sizes) followed in the same graph by per-channel scale + bias + GELU, a residual add +
// SiLU, a by-value scale + ReLU, batch-norm inference + ReLU, and a per-channel sum (a reduction
// of the conv output). Half and BFloat16. A graph cuDNN has no engine for is a finding: skipped
// with the Error, never passed.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/conv_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reduction_reference.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using dnngraph::test::ConvCase;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::Dims;
using dnngraph::test::require_cuda;
using TensorPtr = std::shared_ptr<TensorAttributes>;

constexpr std::int64_t uid_y = 10, uid_p = 11, uid_q = 12, uid_r = 13, uid_s = 14;

enum class Epilogue : std::uint8_t {
  ScaleBiasGelu,
  ResidualSilu,
  ByValueReluScale,
  BatchnormRelu,
  ChannelSums
};

struct FusionCase {
  std::string name;
  Epilogue epilogue;
  DataType type;
  std::uint32_t seed = 1;

  // X [2, 16, 9, 11] NHWC, W [32, 16, 3, 3], padding 1: 144 products per output.
  [[nodiscard]] ConvCase conv() const {
    return dnngraph::test::conv_cases::fprop(
        name, type, dnngraph::test::Layout::ChannelsLast,
        dnngraph::test::uniform_problem({2, 16, 9, 11}, {32, 16, 3, 3}, 1, 1, 1), seed);
  }
  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) + ")";
  }
};

PointwiseAttributes op(const char* name, PointwiseMode mode) {
  return PointwiseAttributes().set_name(name).set_mode(mode);
}

Graph make_graph(const FusionCase& f) {
  const ConvCase c = f.conv();
  dnngraph::test::ConvGraph cg = dnngraph::test::make_conv_graph(c);
  Graph& g = cg.graph;
  TensorPtr conv = cg.output;
  conv->set_is_virtual(true);  // the epilogue's input, not an output
  const Dims channel = c.bias_dims();
  const Dims y_dims = c.problem.y_dims();
  const auto param = [&](const char* name, std::int64_t uid, const Dims& dims, DataType type) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim(dims)
                        .set_stride(dnngraph::channels_last_strides(dims))
                        .set_data_type(type));
  };
  TensorPtr y;
  switch (f.epilogue) {
    case Epilogue::ScaleBiasGelu: {
      auto scaled = g.pointwise(conv, param("scale", uid_p, channel, f.type),
                                op("scale", PointwiseMode::Mul));
      auto biased = g.pointwise(scaled, param("bias", uid_q, channel, f.type),
                                op("bias", PointwiseMode::Add));
      y = g.pointwise(biased, op("gelu", PointwiseMode::GeluFwd));
      break;
    }
    case Epilogue::ResidualSilu: {
      auto sum = g.pointwise(conv, param("residual", uid_r, y_dims, f.type),
                             op("residual", PointwiseMode::Add));
      y = g.pointwise(sum, op("silu", PointwiseMode::SwishFwd));
      break;
    }
    case Epilogue::ByValueReluScale: {
      auto scaled = g.pointwise(conv, g.tensor(0.5F), op("half", PointwiseMode::Mul));
      y = g.pointwise(scaled, op("relu", PointwiseMode::ReluFwd));
      break;
    }
    case Epilogue::BatchnormRelu: {
      auto normalized =
          g.batchnorm_inference(conv, param("mean", uid_p, channel, DataType::Float),
                                param("inv_variance", uid_q, channel, DataType::Float),
                                param("scale", uid_r, channel, DataType::Float),
                                param("bias", uid_s, channel, DataType::Float),
                                dnngraph::BatchnormInferenceAttributes().set_name("bn"));
      y = g.pointwise(normalized, op("relu", PointwiseMode::ReluFwd));
      break;
    }
    case Epilogue::ChannelSums:
      y = g.reduction(conv, dnngraph::ReductionAttributes().set_name("sums").set_mode(
                                dnngraph::ReductionMode::Add));
      y->set_dim(channel)
          .set_stride(dnngraph::channels_last_strides(channel))
          .set_data_type(DataType::Float);
      break;
  }
  y->set_output(true).set_name("Y").set_uid(uid_y);
  return std::move(cg.graph);
}

void check_against_reference(const FusionCase& f) {
  const auto taken = dnngraph::test::take_case(f.text(), [f] { return make_graph(f); });
  dnngraph::test::BuiltCase& b = *taken;
  BOOST_REQUIRE_MESSAGE(b.built.has_value(), f.text() << ": build failed: " << describe(b.built));
  const auto info = b.graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));

  const ConvCase c = f.conv();
  std::mt19937 rng(f.seed);
  const std::size_t y_count = dnngraph::test::element_count(c.problem.y_dims());
  const auto k = static_cast<std::size_t>(c.problem.w_dims[0]);
  const auto x =
      dnngraph::test::random_tensor(f.type, dnngraph::test::element_count(c.problem.x_dims), rng);
  const auto w =
      dnngraph::test::random_tensor(f.type, dnngraph::test::element_count(c.problem.w_dims), rng);
  const std::vector<double> conv = dnngraph::test::reference_output(c, x.values, w.values, {});

  std::unordered_map<std::int64_t, void*> pack;
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(8);
  const auto upload = [&](std::int64_t uid, const std::vector<std::byte>& bytes, const char* what) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(bytes), what));
    pack.emplace(uid, buffers.back().get());
  };
  upload(dnngraph::test::uid_input0, x.bytes, "X");
  upload(dnngraph::test::uid_input1, w.bytes, "W");
  std::vector<double> expected;
  DataType out_type = f.type;
  std::size_t out_count = y_count;
  // Channel of element i: i % K (channels-last).
  switch (f.epilogue) {
    case Epilogue::ScaleBiasGelu: {
      const auto scale = dnngraph::test::encode(
          f.type, dnngraph::test::draw(f.type, {.lo = 0.5, .hi = 1.5}, k, rng));
      const auto bias = dnngraph::test::encode(
          f.type, dnngraph::test::draw(f.type, {.lo = -0.5, .hi = 0.5}, k, rng));
      upload(uid_p, scale.bytes, "scale");
      upload(uid_q, bias.bytes, "bias");
      for (std::size_t i = 0; i < y_count; ++i) {
        expected.push_back(dnngraph::test::pointwise_reference(
            PointwiseMode::GeluFwd, conv[i] * scale.values[i % k] + bias.values[i % k]));
      }
      break;
    }
    case Epilogue::ResidualSilu: {
      const auto r = dnngraph::test::encode(
          f.type, dnngraph::test::draw(f.type, {.lo = -2, .hi = 2}, y_count, rng));
      upload(uid_r, r.bytes, "residual");
      for (std::size_t i = 0; i < y_count; ++i) {
        expected.push_back(
            dnngraph::test::pointwise_reference(PointwiseMode::SwishFwd, conv[i] + r.values[i]));
      }
      break;
    }
    case Epilogue::ByValueReluScale:
      for (std::size_t i = 0; i < y_count; ++i) {
        expected.push_back(std::max(conv[i] * 0.5, 0.0));
      }
      break;
    case Epilogue::BatchnormRelu: {
      const std::vector<float> mean =
          dnngraph::test::draw(DataType::Float, {.lo = -0.5, .hi = 0.5}, k, rng);
      const std::vector<float> inv =
          dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 2.0}, k, rng);
      const std::vector<float> scale =
          dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 1.5}, k, rng);
      const std::vector<float> bias =
          dnngraph::test::draw(DataType::Float, {.lo = -0.5, .hi = 0.5}, k, rng);
      upload(uid_p, dnngraph::test::encode(DataType::Float, mean).bytes, "mean");
      upload(uid_q, dnngraph::test::encode(DataType::Float, inv).bytes, "inv_variance");
      upload(uid_r, dnngraph::test::encode(DataType::Float, scale).bytes, "scale");
      upload(uid_s, dnngraph::test::encode(DataType::Float, bias).bytes, "bias");
      for (std::size_t i = 0; i < y_count; ++i) {
        const std::size_t ch = i % k;
        expected.push_back(std::max((conv[i] - mean[ch]) * inv[ch] * scale[ch] + bias[ch], 0.0));
      }
      break;
    }
    case Epilogue::ChannelSums: {
      // Memory order [N, H, W, K] reduced to [1, 1, 1, K].
      const Dims y = c.problem.y_dims();
      expected = dnngraph::test::reference_reduction(std::span<const double>(conv),
                                                     {y[0], y[2], y[3], y[1]}, {1, 1, 1, y[1]},
                                                     dnngraph::ReductionMode::Add);
      out_type = DataType::Float;
      out_count = k;
      break;
    }
  }
  std::vector<std::byte> y_bytes(out_count * static_cast<std::size_t>(dnngraph::size_of(out_type)));
  buffers.push_back(require_cuda(DeviceBuffer::allocate(y_bytes.size()), "Y"));
  DeviceBuffer& y_dev = buffers.back();
  require_cuda(y_dev.fill_bytes(0xFF), "fill Y");  // NaN: an unwritten element fails
  pack.emplace(uid_y, y_dev.get());
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(info->workspace_size)), "workspace");
  const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), f.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               f.name + " after execute");
  require_cuda(y_dev.download(std::span<std::byte>(y_bytes)), "Y");
  const std::vector<float> got = dnngraph::test::decode(out_type, y_bytes);
  // The conv's tolerance (support/conv_cases.hpp); the epilogues' slopes are at most ~1.1 and
  // their parameters at most 2, so one more rounding of the output is all they add, except the
  // channel sums: Float sums of 198 conv outputs, each within Float accumulation error.
  dnngraph::test::Tolerance tolerance = dnngraph::test::conv_tolerance(f.type);
  if (f.epilogue == Epilogue::BatchnormRelu) {
    tolerance.abs *= 3;  // scale and inv_variance up to 1.5 x 2 magnify the conv's rounding
  }
  if (f.epilogue == Epilogue::ChannelSums) {
    tolerance = {.abs = 1e-3, .rel = 1e-4};
  }
  const auto comparison = dnngraph::test::compare(got, expected, tolerance);
  BOOST_TEST_MESSAGE(f.text() << ": " << comparison.describe() << "; plan: " << info->describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), f.text() << ": " << comparison.describe());
}

boost::unit_test::precondition builds(const FusionCase& f) {
  return dnngraph::test::builds_or_skips(f.text(), [f] { return make_graph(f); });
}

namespace cases {
using enum Epilogue;
const FusionCase gelu_half{"conv_fprop + scale + bias + GELU", ScaleBiasGelu, DataType::Half, 501};
const FusionCase gelu_bf16{"conv_fprop + scale + bias + GELU", ScaleBiasGelu, DataType::BFloat16,
                           502};
const FusionCase silu_half{"conv_fprop + residual + SiLU", ResidualSilu, DataType::Half, 503};
const FusionCase silu_bf16{"conv_fprop + residual + SiLU", ResidualSilu, DataType::BFloat16, 504};
const FusionCase relu_half{"conv_fprop * 0.5 (by value) + ReLU", ByValueReluScale, DataType::Half,
                           505};
const FusionCase bn_half{"conv_fprop + batchnorm_inference + ReLU", BatchnormRelu, DataType::Half,
                         506};
const FusionCase bn_bf16{"conv_fprop + batchnorm_inference + ReLU", BatchnormRelu,
                         DataType::BFloat16, 507};
const FusionCase sums_half{"conv_fprop then per-channel sums", ChannelSums, DataType::Half, 508};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(conv_fprop_fusions)
DNNGRAPH_REFERENCE_CASE(half_scale_bias_gelu_matches_reference, cases::gelu_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_scale_bias_gelu_matches_reference, cases::gelu_bf16)
DNNGRAPH_REFERENCE_CASE(half_residual_silu_matches_reference, cases::silu_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_residual_silu_matches_reference, cases::silu_bf16)
DNNGRAPH_REFERENCE_CASE(half_by_value_scale_relu_matches_reference, cases::relu_half)
DNNGRAPH_REFERENCE_CASE(half_batchnorm_relu_matches_reference, cases::bn_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_batchnorm_relu_matches_reference, cases::bn_bf16)
DNNGRAPH_REFERENCE_CASE(half_per_channel_sums_match_reference, cases::sums_half)
BOOST_AUTO_TEST_SUITE_END()
