// Forward normalizations on the GPU against a CPU reference in double: layernorm and rmsnorm
// (training: Y and the statistics; inference: Y), with and without bias, and batchnorm inference
// with given statistics; Half, BFloat16 and Float inputs, odd row counts. X is channels-last
// ([N, D, 1, 1] as cuDNN's own examples, or [N, C, H, W] NHWC), so each image is one contiguous
// row in memory and the parameters share its memory order. Epsilon is a by-value scalar
// (Graph::tensor(1e-5F)). A graph cuDNN has no engine for is a finding: skipped with the Error.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::NormFwdPhase;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::require_cuda;
using dnngraph::test::Tolerance;
using Dims = std::vector<std::int64_t>;

enum class Kind : std::uint8_t { Layer, Rms, Batch };

constexpr float epsilon = 1e-5F;
constexpr std::int64_t uid_x = 1, uid_scale = 2, uid_bias = 3, uid_mean = 4, uid_inv_var = 5;
constexpr std::int64_t uid_y = 10, uid_mean_out = 11, uid_inv_var_out = 12;

struct NormCase {
  std::string name;
  Kind kind;
  DataType type;  // X and Y; scale, bias and statistics are Float
  NormFwdPhase phase;
  Dims x_dims;
  bool bias = true;
  std::uint32_t seed = 1;

  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) + " " +
           std::string(dnngraph::to_string(phase)) + " X " + dnngraph::to_string(x_dims) +
           (kind == Kind::Rms ? (bias ? " with bias" : " without bias") : "") + ")";
  }
  [[nodiscard]] bool training() const { return phase == NormFwdPhase::Training; }
  [[nodiscard]] Dims parameter_dims() const {
    Dims dims(x_dims.size(), 1);
    if (kind == Kind::Batch) {
      dims[1] = x_dims[1];
    } else {
      std::copy(x_dims.begin() + 1, x_dims.end(), dims.begin() + 1);
    }
    return dims;
  }
  [[nodiscard]] Dims statistic_dims() const {
    Dims dims(x_dims.size(), 1);
    dims[0] = x_dims[0];
    return dims;
  }
};

std::shared_ptr<TensorAttributes> input(Graph& g, const char* name, std::int64_t uid,
                                        const Dims& dims, std::optional<DataType> type) {
  TensorAttributes t;
  t.set_name(name).set_uid(uid).set_dim(dims).set_stride(dnngraph::channels_last_strides(dims));
  if (type) {
    t.set_data_type(*type);
  }
  return g.tensor(t);
}

Graph make_graph(const NormCase& c) {
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  auto x = input(g, "X", uid_x, c.x_dims, std::nullopt);
  const Dims p = c.parameter_dims();
  auto scale = input(g, "scale", uid_scale, p, DataType::Float);
  auto bias = c.bias ? input(g, "bias", uid_bias, p, DataType::Float) : nullptr;
  std::shared_ptr<TensorAttributes> y;
  switch (c.kind) {
    case Kind::Layer: {
      auto [out, mean, inv_var] = g.layernorm(
          x, scale, bias,
          dnngraph::LayernormAttributes().set_name("ln").set_forward_phase(c.phase).set_epsilon(
              g.tensor(epsilon)));
      y = out;
      if (c.training()) {
        mean->set_output(true).set_uid(uid_mean_out);
        inv_var->set_output(true).set_uid(uid_inv_var_out);
      }
      break;
    }
    case Kind::Rms: {
      dnngraph::RmsnormAttributes a;
      a.set_name("rms").set_forward_phase(c.phase).set_epsilon(g.tensor(epsilon));
      if (bias) {
        a.set_bias(bias);
      }
      auto [out, inv_rms] = g.rmsnorm(x, scale, a);
      y = out;
      if (c.training()) {
        inv_rms->set_output(true).set_uid(uid_inv_var_out);
      }
      break;
    }
    case Kind::Batch: {
      auto mean = input(g, "mean", uid_mean, p, DataType::Float);
      auto inv_var = input(g, "inv_variance", uid_inv_var, p, DataType::Float);
      y = g.batchnorm_inference(x, mean, inv_var, scale, bias,
                                dnngraph::BatchnormInferenceAttributes().set_name("bn"));
      break;
    }
  }
  y->set_output(true).set_uid(uid_y);
  return g;
}

struct Expected {
  std::vector<double> y, mean, inv_var;
};

// Everything in memory order: image n is row n, the parameters follow the row's order (layer
// and RMS norm) or are indexed by channel = i % C (batch norm, channels-last).
Expected reference(const NormCase& c, std::span<const float> x, std::span<const float> scale,
                   std::span<const float> bias, std::span<const float> mean_in,
                   std::span<const float> inv_var_in) {
  Expected e;
  const auto rows = static_cast<std::size_t>(c.x_dims[0]);
  const std::size_t row = x.size() / rows;
  const auto channels = static_cast<std::size_t>(c.x_dims[1]);
  e.y.resize(x.size());
  for (std::size_t n = 0; n < rows; ++n) {
    const std::span<const float> r = x.subspan(n * row, row);
    double mean = 0;
    double inv = 1;
    if (c.kind == Kind::Layer) {
      for (const float v : r) mean += v;
      mean /= static_cast<double>(row);
      double var = 0;
      for (const float v : r) var += (v - mean) * (v - mean);
      var /= static_cast<double>(row);  // population variance, as cuDNN's
      inv = 1.0 / std::sqrt(var + epsilon);
    } else if (c.kind == Kind::Rms) {
      double squares = 0;
      for (const float v : r) squares += static_cast<double>(v) * v;
      inv = 1.0 / std::sqrt(squares / static_cast<double>(row) + epsilon);
    }
    e.mean.push_back(mean);
    e.inv_var.push_back(inv);
    for (std::size_t i = 0; i < row; ++i) {
      const std::size_t k = c.kind == Kind::Batch ? i % channels : i;
      double v = 0;
      if (c.kind == Kind::Batch) {
        v = (r[i] - static_cast<double>(mean_in[k])) * inv_var_in[k] * scale[k] + bias[k];
      } else {
        v = (r[i] - mean) * inv * scale[k] + (bias.empty() ? 0.0 : bias[k]);
      }
      e.y[n * row + i] = v;
    }
  }
  return e;
}

// Y rounds to the io type once (Float math inside): half an ulp of |Y| <= ~3.5 is 2e-3 (Half)
// and 1.6e-2 (BFloat16). The statistics are Float sums over at most 1024 values of |x| <= ~3;
// a one-pass variance (E[x^2] - mean^2) loses a few more bits to cancellation, so the inverse
// standard deviation (and Float Y through it) gets 5e-4 relative.
Tolerance y_tolerance(DataType type) {
  switch (type) {
    case DataType::Half: return {.abs = 4e-3, .rel = 2e-3};
    case DataType::BFloat16: return {.abs = 3e-2, .rel = 1e-2};
    default: return {.abs = 5e-4, .rel = 5e-4};
  }
}
constexpr Tolerance statistic_tolerance{.abs = 1e-5, .rel = 5e-4};

void check(const std::string& what, std::span<const std::byte> bytes, DataType type,
           const std::vector<double>& expected, Tolerance tolerance) {
  const std::vector<float> got = dnngraph::test::decode(type, bytes);
  const auto comparison = dnngraph::test::compare(got, expected, tolerance);
  BOOST_TEST_MESSAGE(what << ": " << comparison.describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), what << ": " << comparison.describe());
}

void check_against_reference(const NormCase& c) {
  const auto taken = dnngraph::test::take_case(c.text(), [c] { return make_graph(c); });
  dnngraph::test::BuiltCase& b = *taken;
  BOOST_REQUIRE_MESSAGE(b.built.has_value(), c.text() << ": build failed: " << describe(b.built));
  const auto info = b.graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));

  std::mt19937 rng(c.seed);
  const std::size_t count = dnngraph::test::element_count(c.x_dims);
  const std::size_t p_count = dnngraph::test::element_count(c.parameter_dims());
  const std::size_t rows = static_cast<std::size_t>(c.x_dims[0]);
  std::vector<float> x = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, count, rng);
  for (std::size_t i = 0; i < count; ++i) {  // a mean per row away from 0
    const std::size_t row = i * rows / count;
    x[i] = dnngraph::test::round_to(c.type, x[i] + 0.05 * static_cast<double>(row));
  }
  const std::vector<float> scale =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 1.5}, p_count, rng);
  const std::vector<float> bias =
      c.bias ? dnngraph::test::draw(DataType::Float, {.lo = -0.5, .hi = 0.5}, p_count, rng)
             : std::vector<float>{};
  const std::vector<float> mean_in =
      dnngraph::test::draw(DataType::Float, {.lo = -0.5, .hi = 0.5}, p_count, rng);
  const std::vector<float> inv_var_in =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 2.0}, p_count, rng);
  const Expected e = reference(c, x, scale, bias, mean_in, inv_var_in);

  const auto bytes = [](DataType type, const std::vector<float>& v) {
    return dnngraph::test::encode(type, v).bytes;
  };
  std::unordered_map<std::int64_t, void*> pack;
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(8);
  const auto upload = [&](std::int64_t uid, const std::vector<std::byte>& data, const char* what) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(data), what));
    pack.emplace(uid, buffers.back().get());
  };
  const auto output = [&](std::int64_t uid, std::size_t size, const char* what) {
    buffers.push_back(require_cuda(DeviceBuffer::allocate(size), what));
    require_cuda(buffers.back().fill_bytes(0xFF), what);  // NaN: an unwritten element fails
    pack.emplace(uid, buffers.back().get());
    return &buffers.back();
  };
  upload(uid_x, bytes(c.type, x), "X");
  upload(uid_scale, bytes(DataType::Float, scale), "scale");
  if (c.bias) upload(uid_bias, bytes(DataType::Float, bias), "bias");
  if (c.kind == Kind::Batch) {
    upload(uid_mean, bytes(DataType::Float, mean_in), "mean");
    upload(uid_inv_var, bytes(DataType::Float, inv_var_in), "inv_variance");
  }
  const auto y_size = count * static_cast<std::size_t>(dnngraph::size_of(c.type));
  DeviceBuffer* y = output(uid_y, y_size, "Y");
  DeviceBuffer* mean = nullptr;
  DeviceBuffer* inv_var = nullptr;
  if (c.training() && c.kind == Kind::Layer) mean = output(uid_mean_out, rows * 4, "mean out");
  if (c.training()) inv_var = output(uid_inv_var_out, rows * 4, "inv_variance out");
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(info->workspace_size)), "workspace");

  const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  BOOST_TEST_MESSAGE(c.text() << ": plan: " << info->describe());
  std::vector<std::byte> y_bytes(y_size);
  require_cuda(y->download(std::span<std::byte>(y_bytes)), "Y");
  check(c.text() + " Y", y_bytes, c.type, e.y, y_tolerance(c.type));
  std::vector<std::byte> stat_bytes(rows * 4);
  if (mean) {
    require_cuda(mean->download(std::span<std::byte>(stat_bytes)), "mean");
    check(c.text() + " mean", stat_bytes, DataType::Float, e.mean, statistic_tolerance);
  }
  if (inv_var) {
    require_cuda(inv_var->download(std::span<std::byte>(stat_bytes)), "inv_variance");
    check(c.text() + " inv_variance", stat_bytes, DataType::Float, e.inv_var, statistic_tolerance);
  }
}

boost::unit_test::precondition builds(const NormCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

namespace cases {
using enum Kind;
const NormCase ln_train_half{
    "layernorm", Layer, DataType::Half, NormFwdPhase::Training, {37, 1024, 1, 1}, true, 301};
const NormCase ln_train_bf16{
    "layernorm", Layer, DataType::BFloat16, NormFwdPhase::Training, {8, 200, 1, 1}, true, 302};
const NormCase ln_train_float{
    "layernorm", Layer, DataType::Float, NormFwdPhase::Training, {16, 512, 1, 1}, true, 303};
const NormCase ln_infer_half{
    "layernorm", Layer, DataType::Half, NormFwdPhase::Inference, {37, 1024, 1, 1}, true, 304};
const NormCase ln_infer_bf16_image{
    "layernorm", Layer, DataType::BFloat16, NormFwdPhase::Inference, {4, 16, 6, 10}, true, 305};
const NormCase rms_train_half{
    "rmsnorm", Rms, DataType::Half, NormFwdPhase::Training, {37, 1024, 1, 1}, false, 306};
const NormCase rms_train_float_bias{
    "rmsnorm", Rms, DataType::Float, NormFwdPhase::Training, {16, 512, 1, 1}, true, 307};
const NormCase rms_infer_bf16_bias{
    "rmsnorm", Rms, DataType::BFloat16, NormFwdPhase::Inference, {8, 200, 1, 1}, true, 308};
const NormCase rms_infer_half{
    "rmsnorm", Rms, DataType::Half, NormFwdPhase::Inference, {37, 1024, 1, 1}, false, 309};
const NormCase bn_half{"batchnorm_inference",
                       Batch,
                       DataType::Half,
                       NormFwdPhase::Inference,
                       {4, 32, 6, 10},
                       true,
                       310};
const NormCase bn_bf16{"batchnorm_inference",
                       Batch,
                       DataType::BFloat16,
                       NormFwdPhase::Inference,
                       {3, 24, 5, 7},
                       true,
                       311};
const NormCase bn_float{"batchnorm_inference",
                        Batch,
                        DataType::Float,
                        NormFwdPhase::Inference,
                        {4, 32, 6, 10},
                        true,
                        312};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(layernorm)
DNNGRAPH_REFERENCE_CASE(half_training_matches_reference, cases::ln_train_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_training_matches_reference, cases::ln_train_bf16)
DNNGRAPH_REFERENCE_CASE(float_training_matches_reference, cases::ln_train_float)
DNNGRAPH_REFERENCE_CASE(half_inference_matches_reference, cases::ln_infer_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_inference_of_nhwc_images_matches_reference,
                        cases::ln_infer_bf16_image)
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(rmsnorm)
DNNGRAPH_REFERENCE_CASE(half_training_without_bias_matches_reference, cases::rms_train_half)
DNNGRAPH_REFERENCE_CASE(float_training_with_bias_matches_reference, cases::rms_train_float_bias)
DNNGRAPH_REFERENCE_CASE(bfloat16_inference_with_bias_matches_reference, cases::rms_infer_bf16_bias)
DNNGRAPH_REFERENCE_CASE(half_inference_without_bias_matches_reference, cases::rms_infer_half)
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(batchnorm_inference)
DNNGRAPH_REFERENCE_CASE(half_matches_reference, cases::bn_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_odd_sizes_match_reference, cases::bn_bf16)
DNNGRAPH_REFERENCE_CASE(float_matches_reference, cases::bn_float)
BOOST_AUTO_TEST_SUITE_END()
