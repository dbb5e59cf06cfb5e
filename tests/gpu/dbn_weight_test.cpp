// The weight half of a batch norm's backward split (dbn_weight) on the GPU against a CPU
// reference in double, Half and Float, channels-last: alone (dY and X given), and in the fused
// form cudnn-frontend's conv + batchnorm backward sample builds: conv_dgrad of the next layer's
// gradient, the ReLU's backward against the batch norm's output recomputed from X, then
// dbn_weight of that (the ReLU backward's output an output too); once with the mean subtracted, as
// users write the batch norm, once with it added, as cudnn-frontend 1.32's sample writes it. Each
// case checks dScale and dBias against sums in double, eq_scale_dy against scale * inv_std,
// eq_scale_x and eq_bias against their formulas on the GPU's own dScale and dBias, and that
// eq_scale_dy * dY + eq_scale_x * X + eq_bias is the batch norm's data gradient (the reason the
// three exist). A graph cuDNN has no engine for is a finding: skipped with the Error.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/conv_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/gpu_run.hpp"
#include "support/graph_checks.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::Dims;
using dnngraph::test::download;

constexpr float epsilon = 1e-5F;
// Inputs 1-7; the five outputs 10-14; the ReLU backward's output (the fused forms' dbn dY) 15.
constexpr std::int64_t uid_dy = 1, uid_x = 2, uid_mean = 3, uid_inv_var = 4, uid_scale = 5,
                       uid_w = 6, uid_bias = 7;
constexpr std::int64_t uid_dscale = 10, uid_dbias = 11, uid_eq_scale_dy = 12, uid_eq_scale_x = 13,
                       uid_eq_bias = 14, uid_drelu = 15;

// Alone: dbn_weight(dY, X, ...). Dgrad: dY_next [N, 2C, H, W] -> conv_dgrad (W [2C, C, 3, 3],
// padding 1) -> ReLU backward against (X - mean) * inv_var * scale + bias -> dbn_weight, the
// graph of cudnn-frontend's sample "Dgrad Drelu DBNweight Graph" (samples/cpp/convolution/
// dgrads.cpp; on the H200 with cuDNN 9.19 it runs there in Half, and here: engine 1).
enum class Form : std::uint8_t { Alone, Dgrad };

struct DbnCase {
  std::string name;
  DataType type;  // dY (dY_next and W), X and the ReLU backward's output; the rest Float
  Form form;
  Dims x_dims;  // [N, C, H, W], channels-last
  std::uint32_t seed;

  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) + " X " +
           dnngraph::to_string(x_dims) + ")";
  }
  [[nodiscard]] bool fused() const { return form != Form::Alone; }
  [[nodiscard]] std::size_t channels() const { return static_cast<std::size_t>(x_dims[1]); }
  [[nodiscard]] std::size_t count() const { return dnngraph::test::element_count(x_dims); }
  // M: the elements each channel's sums run over, N * H * W.
  [[nodiscard]] double per_channel() const {
    return static_cast<double>(count()) / static_cast<double>(channels());
  }
  [[nodiscard]] Dims channel_dims() const { return {1, x_dims[1], 1, 1}; }
  [[nodiscard]] dnngraph::test::ConvProblem problem() const {
    return dnngraph::test::uniform_problem(x_dims, {2 * x_dims[1], x_dims[1], 3, 3}, 1, 1, 1);
  }
};

Graph make_graph(const DbnCase& c) {
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  const auto input = [&](const char* name, std::int64_t uid, const Dims& dims,
                         std::optional<DataType> type) {
    return dnngraph::test::channels_last_input(g, name, uid, dims, type);
  };
  auto x = input("X", uid_x, c.x_dims, std::nullopt);
  auto mean = input("mean", uid_mean, c.channel_dims(), DataType::Float);
  auto inv_var = input("inv_variance", uid_inv_var, c.channel_dims(), DataType::Float);
  auto scale = input("scale", uid_scale, c.channel_dims(), DataType::Float);
  std::shared_ptr<TensorAttributes> dy;
  if (!c.fused()) {
    dy = input("dY", uid_dy, c.x_dims, std::nullopt);
  } else {
    const dnngraph::test::ConvProblem p = c.problem();
    auto dy_next = input("dY_next", uid_dy, p.y_dims(), std::nullopt);
    auto w = input("W", uid_w, p.w_dims, std::nullopt);
    auto bias = input("bias", uid_bias, c.channel_dims(), DataType::Float);
    auto dgrad = g.conv_dgrad(dy_next, w,
                              dnngraph::ConvDgradAttributes()
                                  .set_name("dgrad")
                                  .set_padding({1, 1})
                                  .set_stride({1, 1})
                                  .set_dilation({1, 1}));
    const Dims nhwc = dnngraph::channels_last_strides(c.x_dims);
    dgrad->set_dim(c.x_dims).set_stride(nhwc);
    // The virtual pointwise outputs take X's layout (unset, they would be packed NCHW).
    const auto step = [&](const char* name, const std::shared_ptr<TensorAttributes>& a,
                          const std::shared_ptr<TensorAttributes>& b, PointwiseMode mode) {
      auto out = g.pointwise(a, b, dnngraph::PointwiseAttributes().set_name(name).set_mode(mode));
      out->set_stride(nhwc);
      return out;
    };
    auto centered = step("center", x, mean, PointwiseMode::Sub);
    auto normalized = step("normalize", centered, inv_var, PointwiseMode::Mul);
    auto scaled = step("scale", normalized, scale, PointwiseMode::Mul);
    auto bn_y = step("shift", scaled, bias, PointwiseMode::Add);
    dy = step("drelu", dgrad, bn_y, PointwiseMode::ReluBwd);
    dy->set_output(true).set_uid(uid_drelu);
  }
  const auto outs =
      g.dbn_weight(dy, x, mean, inv_var, scale, dnngraph::DbnWeightAttributes().set_name("dbn"));
  const std::int64_t uids[] = {uid_dscale, uid_dbias, uid_eq_scale_dy, uid_eq_scale_x, uid_eq_bias};
  for (std::size_t i = 0; i < outs.size(); ++i) {
    outs[i]->set_output(true).set_uid(uids[i]);
  }
  return g;
}

// Passes when |got[i] - expected[i]| <= bound[i] for every i where bound[i] is finite (NaN got
// fails); a skipped element has an infinite bound. Logs the worst error / bound.
void check_bounded(const std::string& what, std::span<const float> got,
                   const std::vector<double>& expected, const std::vector<double>& bound) {
  BOOST_REQUIRE_EQUAL(got.size(), expected.size());
  std::size_t bad = 0;
  std::size_t skipped = 0;
  double worst = 0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(bound[i])) {
      ++skipped;
      continue;
    }
    const double error = std::abs(static_cast<double>(got[i]) - expected[i]);
    if (!(error <= bound[i])) {  // NaN fails
      ++bad;
    }
    const double ratio = std::isfinite(error) ? error / bound[i] : HUGE_VAL;
    if (ratio > worst) {
      worst = ratio;
      worst_at = i;
    }
  }
  char text[256];
  std::snprintf(text, sizeof text,
                "%zu of %zu outside the bound (%zu skipped); worst |error| / bound %.3g at %zu "
                "(got %.7g, expected %.7g)",
                bad, got.size(), skipped, worst, worst_at,
                static_cast<double>(got.empty() ? 0.0F : got[worst_at]),
                expected.empty() ? 0.0 : expected[worst_at]);
  BOOST_TEST_MESSAGE(what << ": " << text);
  BOOST_CHECK_MESSAGE(bad == 0, what << ": " << text);
}

// X with a per-channel offset, so that the channels' means differ from 0 and from each other.
std::vector<float> draw_x(const DbnCase& c, std::mt19937& rng) {
  std::vector<float> x = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, c.count(), rng);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = dnngraph::test::round_to(c.type, x[i] + 0.03 * static_cast<double>(i % c.channels()));
  }
  return x;
}

void check_against_reference(const DbnCase& c) {
  auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_graph(c); });
  std::mt19937 rng(c.seed);
  const std::size_t ch = c.channels();
  const std::size_t count = c.count();
  const double m = c.per_channel();
  const std::vector<float> x = draw_x(c, rng);
  const std::vector<float> scale =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 1.5}, ch, rng);
  // The saved statistics the forward gave: X's batch mean and 1 / sqrt(biased variance +
  // epsilon), rounded to Float (both sides read these exact values).
  std::vector<double> sum(ch, 0.0), squares(ch, 0.0);
  for (std::size_t i = 0; i < count; ++i) {
    sum[i % ch] += x[i];
  }
  std::vector<float> mean(ch), inv_var(ch);
  for (std::size_t k = 0; k < ch; ++k) {
    mean[k] = static_cast<float>(sum[k] / m);
  }
  for (std::size_t i = 0; i < count; ++i) {
    const double d = x[i] - static_cast<double>(mean[i % ch]);
    squares[i % ch] += d * d;
  }
  for (std::size_t k = 0; k < ch; ++k) {
    inv_var[k] = static_cast<float>(1.0 / std::sqrt(squares[k] / m + epsilon));
  }

  dnngraph::test::PackRun run;
  run.upload(uid_x, c.type, x, "X");
  run.upload(uid_mean, DataType::Float, mean, "mean");
  run.upload(uid_inv_var, DataType::Float, inv_var, "inv_variance");
  run.upload(uid_scale, DataType::Float, scale, "scale");
  std::vector<float> dy;                // alone: dbn_weight's dY
  std::vector<double> drelu_reference;  // fused: the ReLU backward's output in double
  std::vector<double> drelu_bound;      // and its bound (infinite where the mask is unsure)
  DeviceBuffer* drelu_out = nullptr;
  if (!c.fused()) {
    dy = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, count, rng);
    run.upload(uid_dy, c.type, dy, "dY");
  } else {
    const dnngraph::test::ConvProblem p = c.problem();
    const std::vector<float> dy_next = dnngraph::test::draw(
        c.type, {.lo = -1, .hi = 1}, dnngraph::test::element_count(p.y_dims()), rng);
    const std::vector<float> w = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1},
                                                      dnngraph::test::element_count(p.w_dims), rng);
    const std::vector<float> bias =
        dnngraph::test::draw(DataType::Float, {.lo = -0.5, .hi = 0.5}, ch, rng);
    run.upload(uid_dy, c.type, dy_next, "dY_next");
    run.upload(uid_w, c.type, w, "W");
    run.upload(uid_bias, DataType::Float, bias, "bias");
    drelu_out = run.output(uid_drelu, count * static_cast<std::size_t>(dnngraph::size_of(c.type)),
                           "ReLU backward");
    const std::vector<double> dgrad = dnngraph::test::reference_conv_dgrad(
        p, dy_next, dnngraph::channels_last_strides(p.y_dims()), w,
        dnngraph::channels_last_strides(p.w_dims), dnngraph::channels_last_strides(c.x_dims));
    // The ReLU's mask from the batch norm recomputed in Float on the GPU: an element whose
    // recomputed output is within 1e-5 of 0 (Float rounding of |y| <= ~4 is ~5e-7) may go
    // either way, so it is left out of this check; the sums below read the GPU's own values.
    // The kept ones: one rounding of the dgrad to the io type, the convolution's tolerance.
    const dnngraph::test::Tolerance conv = dnngraph::test::conv_tolerance(c.type);
    drelu_reference.resize(count);
    drelu_bound.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t k = i % ch;
      const double y = (x[i] - static_cast<double>(mean[k])) * inv_var[k] * scale[k] + bias[k];
      drelu_reference[i] = y > 0 ? dgrad[i] : 0.0;
      drelu_bound[i] =
          std::abs(y) < 1e-5 ? HUGE_VAL : conv.abs + conv.rel * std::abs(drelu_reference[i]);
    }
  }
  DeviceBuffer* dscale_out = run.output(uid_dscale, ch * 4, "dScale");
  DeviceBuffer* dbias_out = run.output(uid_dbias, ch * 4, "dBias");
  DeviceBuffer* eq_scale_dy_out = run.output(uid_eq_scale_dy, ch * 4, "eq_scale_dy");
  DeviceBuffer* eq_scale_x_out = run.output(uid_eq_scale_x, ch * 4, "eq_scale_x");
  DeviceBuffer* eq_bias_out = run.output(uid_eq_bias, ch * 4, "eq_bias");
  run.execute(*taken.built, taken.workspace_size, c.text());

  if (c.fused()) {
    // dbn_weight's dY is what the GPU wrote: its sums below are of exactly these values.
    dy = download(*drelu_out, c.type, count, "ReLU backward");
    check_bounded(c.text() + " ReLU backward of the dgrad", dy, drelu_reference, drelu_bound);
  }

  // dBias = sum dY, dScale = sum dY * x_hat per channel, x_hat = (X - mean) * inv_std. A Float
  // sum of M terms errs by at most ~M * 2^-24 of the sum of |terms| (far less in the tree sums
  // GPUs use): 1e-5 of it, plus 1e-5 absolute. Fused in Half, the kernel may sum the ReLU
  // backward's Float values before their rounding to the Half output read back here (each
  // within 2^-11 of it): 1e-3 of the sum of |terms| (2x that), as genstats' fused test argues.
  const double relative = c.fused() && c.type != DataType::Float ? 1e-3 : 1e-5;
  std::vector<double> dbias(ch, 0.0), dscale(ch, 0.0), dbias_bound(ch, 1e-5),
      dscale_bound(ch, 1e-5);
  const auto x_hat = [&](std::size_t i) {
    return (x[i] - static_cast<double>(mean[i % ch])) * inv_var[i % ch];
  };
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t k = i % ch;
    dbias[k] += dy[i];
    dscale[k] += dy[i] * x_hat(i);
    dbias_bound[k] += relative * std::abs(static_cast<double>(dy[i]));
    dscale_bound[k] += relative * std::abs(dy[i] * x_hat(i));
  }
  const std::vector<float> got_dscale = download(*dscale_out, DataType::Float, ch, "dScale");
  const std::vector<float> got_dbias = download(*dbias_out, DataType::Float, ch, "dBias");
  check_bounded(c.text() + " dBias", got_dbias, dbias, dbias_bound);
  check_bounded(c.text() + " dScale", got_dscale, dscale, dscale_bound);

  // The equivalent scales and bias (derived from the batch norm's data gradient
  // dX = scale * inv_std * (dY - dBias / M - x_hat * dScale / M)):
  //   eq_scale_dy = scale * inv_std, eq_scale_x = -eq_scale_dy * inv_std * dScale / M,
  //   eq_bias = eq_scale_dy * (inv_std * mean * dScale - dBias) / M,
  // eq_scale_x and eq_bias on the GPU's own dScale and dBias, so that the sums' error above does
  // not count twice: a few Float roundings each, 1e-5 of the terms' magnitude.
  std::vector<double> eq_scale_dy(ch), eq_scale_x(ch), eq_bias(ch), eq_dy_bound(ch), eq_x_bound(ch),
      eq_bias_bound(ch);
  for (std::size_t k = 0; k < ch; ++k) {
    const double r = inv_var[k];
    const double s = scale[k] * r;
    const double ds = got_dscale[k];
    const double db = got_dbias[k];
    eq_scale_dy[k] = s;
    eq_scale_x[k] = -s * r * ds / m;
    eq_bias[k] = s * (r * mean[k] * ds - db) / m;
    eq_dy_bound[k] = 1e-5 * std::abs(s);
    eq_x_bound[k] = 1e-5 * std::abs(eq_scale_x[k]) + 1e-12;
    eq_bias_bound[k] = 1e-5 * std::abs(s) * (std::abs(r * mean[k] * ds) + std::abs(db)) / m + 1e-12;
  }
  const std::vector<float> got_eq_dy = download(*eq_scale_dy_out, DataType::Float, ch, "eq_dy");
  const std::vector<float> got_eq_x = download(*eq_scale_x_out, DataType::Float, ch, "eq_x");
  const std::vector<float> got_eq_bias = download(*eq_bias_out, DataType::Float, ch, "eq_bias");
  check_bounded(c.text() + " eq_scale_dy", got_eq_dy, eq_scale_dy, eq_dy_bound);
  check_bounded(c.text() + " eq_scale_x (on the GPU's dScale)", got_eq_x, eq_scale_x, eq_x_bound);
  check_bounded(c.text() + " eq_bias (on the GPU's dScale and dBias)", got_eq_bias, eq_bias,
                eq_bias_bound);

  // What they are for: eq_scale_dy * dY + eq_scale_x * X + eq_bias (the GPU's three, in double)
  // against the batch norm's data gradient from the reference sums. It inherits the sums' error
  // through the equivalent scales: scale * inv_std * (inv_std * |x - mean| * dScale bound +
  // dBias bound) / M, plus 1e-5 relative for the Float equivalents.
  std::vector<float> applied(count);
  std::vector<double> dx(count), dx_bound(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t k = i % ch;
    const double r = inv_var[k];
    const double s = scale[k] * r;
    dx[i] = s * (dy[i] - dbias[k] / m - x_hat(i) * dscale[k] / m);
    applied[i] = static_cast<float>(static_cast<double>(got_eq_dy[k]) * dy[i] +
                                    static_cast<double>(got_eq_x[k]) * x[i] + got_eq_bias[k]);
    dx_bound[i] =
        s * (r * std::abs(x[i] - static_cast<double>(mean[k])) * dscale_bound[k] + dbias_bound[k]) /
            m +
        1e-5 * (std::abs(dx[i]) + std::abs(s * dy[i])) + 1e-6;
  }
  check_bounded(c.text() + " eq_scale_dy * dY + eq_scale_x * X + eq_bias against dX", applied, dx,
                dx_bound);
}

boost::unit_test::precondition builds(const DbnCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

namespace cases {
const DbnCase alone_half{"dbn_weight", DataType::Half, Form::Alone, {8, 64, 12, 10}, 701};
const DbnCase alone_float{"dbn_weight", DataType::Float, Form::Alone, {2, 16, 11, 3}, 702};
// The sample's shapes: X [4, 32, 16, 16], dY_next [4, 64, 16, 16], W [64, 32, 3, 3].
const DbnCase dgrad_half{
    "conv_dgrad -> ReLU backward -> dbn_weight", DataType::Half, Form::Dgrad, {4, 32, 16, 16}, 703};
const DbnCase dgrad_float{"conv_dgrad -> ReLU backward -> dbn_weight",
                          DataType::Float,
                          Form::Dgrad,
                          {4, 32, 16, 16},
                          704};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(dbn_weight_matches_reference)
DNNGRAPH_REFERENCE_CASE(half_alone_matches_reference, cases::alone_half)
DNNGRAPH_REFERENCE_CASE(float_alone_matches_reference, cases::alone_float)
DNNGRAPH_REFERENCE_CASE(half_behind_dgrad_and_relu_backward_matches_reference, cases::dgrad_half)
DNNGRAPH_REFERENCE_CASE(float_behind_dgrad_and_relu_backward_matches_reference, cases::dgrad_float)
BOOST_AUTO_TEST_SUITE_END()
