// Batch normalization in training on the GPU against a CPU reference in double: batchnorm (Y,
// the saved per-channel mean and inverse standard deviation, and the running statistics'
// update) and batchnorm_backward (dX, dScale, dBias), Half, BFloat16 and Float, channels-last X
// with odd spatial sizes; instancenorm and instancenorm_backward the same way, the statistics
// per sample and channel. The backward reads the statistics computed here in double from X and
// rounded to Float, so the reference and the GPU read the same inputs. A graph cuDNN has no
// engine for is a finding: skipped with the Error.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/gpu_run.hpp"
#include "support/graph_checks.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::test::check_output;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::require_cuda;
using dnngraph::test::Tolerance;
using Run = dnngraph::test::PackRun;
using Dims = std::vector<std::int64_t>;

constexpr float epsilon = 1e-5F;
constexpr float momentum = 0.125F;
// Forward: inputs 1-5, outputs 10-14. Backward: inputs 1-5, outputs 10-12.
constexpr std::int64_t uid_x = 1, uid_scale = 2, uid_bias = 3, uid_prev_mean = 4, uid_prev_var = 5;
constexpr std::int64_t uid_y = 10, uid_mean = 11, uid_inv_var = 12, uid_next_mean = 13,
                       uid_next_var = 14;
constexpr std::int64_t uid_dy = 1, uid_bwd_x = 2, uid_bwd_scale = 3, uid_saved_mean = 4,
                       uid_saved_inv_var = 5;
constexpr std::int64_t uid_dx = 10, uid_dscale = 11, uid_dbias = 12;

struct BatchCase {
  std::string name;
  bool backward;
  DataType type;  // X, Y (dY, dX); the scale, bias and statistics are Float
  Dims x_dims;    // [N, C, H, W], channels-last
  std::uint32_t seed;
  bool instance = false;  // instance norm: statistics per sample and channel

  [[nodiscard]] std::string text() const {
    std::string dims;
    for (const std::int64_t d : x_dims) {
      dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    }
    return name + " (" + std::string(dnngraph::to_string(type)) + " X [" + dims + "])";
  }
  [[nodiscard]] std::size_t channels() const { return static_cast<std::size_t>(x_dims[1]); }
  [[nodiscard]] std::size_t count() const {
    return static_cast<std::size_t>(x_dims[0] * x_dims[1] * x_dims[2] * x_dims[3]);
  }
  // The statistics' groups: channels (batch norm) or (sample, channel) pairs (instance norm),
  // and how many elements each holds: N * H * W or H * W.
  [[nodiscard]] std::size_t groups() const { return instance ? channels() * n() : channels(); }
  [[nodiscard]] std::size_t per_group() const { return count() / groups(); }
  // The group of element i of channels-last X: channel i % C, of sample i / (C * H * W).
  [[nodiscard]] std::size_t group(std::size_t i) const {
    return (instance ? i / (count() / n()) * channels() : 0) + i % channels();
  }
  [[nodiscard]] Dims channel_dims() const { return {1, x_dims[1], 1, 1}; }
  [[nodiscard]] Dims statistic_dims() const { return {instance ? x_dims[0] : 1, x_dims[1], 1, 1}; }

 private:
  [[nodiscard]] std::size_t n() const { return static_cast<std::size_t>(x_dims[0]); }
};

Graph make_graph(const BatchCase& c) {
  Graph g;
  g.set_name(c.name).set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  const auto input = [&](const char* name, std::int64_t uid, const Dims& dims,
                         std::optional<DataType> type) {
    return dnngraph::test::channels_last_input(g, name, uid, dims, type);
  };
  if (!c.backward && c.instance) {
    auto x = input("X", uid_x, c.x_dims, std::nullopt);
    auto scale = input("scale", uid_scale, c.channel_dims(), DataType::Float);
    auto bias = input("bias", uid_bias, c.channel_dims(), DataType::Float);
    auto [y, mean, inv_var] =
        g.instancenorm(x, scale, bias,
                       dnngraph::InstancenormAttributes()
                           .set_name("in")
                           .set_forward_phase(dnngraph::NormFwdPhase::Training)
                           .set_epsilon(g.tensor(epsilon)));
    y->set_output(true).set_uid(uid_y);
    mean->set_output(true).set_uid(uid_mean);
    inv_var->set_output(true).set_uid(uid_inv_var);
  } else if (!c.backward) {
    auto x = input("X", uid_x, c.x_dims, std::nullopt);
    auto scale = input("scale", uid_scale, c.channel_dims(), DataType::Float);
    auto bias = input("bias", uid_bias, c.channel_dims(), DataType::Float);
    auto prev_mean = input("prev_running_mean", uid_prev_mean, c.channel_dims(), DataType::Float);
    auto prev_var = input("prev_running_var", uid_prev_var, c.channel_dims(), DataType::Float);
    auto [y, mean, inv_var, next_mean, next_var] =
        g.batchnorm(x, scale, bias,
                    dnngraph::BatchnormAttributes()
                        .set_name("bn")
                        .set_epsilon(g.tensor(epsilon))
                        .set_previous_running_stats(prev_mean, prev_var, g.tensor(momentum)));
    y->set_output(true).set_uid(uid_y);
    mean->set_output(true).set_uid(uid_mean);
    inv_var->set_output(true).set_uid(uid_inv_var);
    next_mean->set_output(true).set_uid(uid_next_mean);
    next_var->set_output(true).set_uid(uid_next_var);
  } else {
    auto dy = input("dY", uid_dy, c.x_dims, std::nullopt);
    auto x = input("X", uid_bwd_x, c.x_dims, std::nullopt);
    auto scale = input("scale", uid_bwd_scale, c.channel_dims(), DataType::Float);
    auto mean = input("mean", uid_saved_mean, c.statistic_dims(), DataType::Float);
    auto inv_var = input("inv_variance", uid_saved_inv_var, c.statistic_dims(), DataType::Float);
    const auto attributes = dnngraph::NormBackwardAttributes().set_name("bwd");
    auto [dx, dscale, dbias] =
        c.instance ? g.instancenorm_backward(dy, x, scale, mean, inv_var, attributes)
                   : g.batchnorm_backward(dy, x, scale, mean, inv_var, attributes);
    dx->set_output(true).set_uid(uid_dx);
    dscale->set_output(true).set_uid(uid_dscale);
    dbias->set_output(true).set_uid(uid_dbias);
  }
  return g;
}

// Per-channel statistics of X in double (channels-last: element i is channel i % C).
struct Statistics {
  std::vector<double> mean, variance;  // per group; variance biased (over the group)
};

Statistics statistics(const BatchCase& c, std::span<const float> x) {
  const auto m = static_cast<double>(c.per_group());
  Statistics s{std::vector<double>(c.groups(), 0.0), std::vector<double>(c.groups(), 0.0)};
  for (std::size_t i = 0; i < x.size(); ++i) {
    s.mean[c.group(i)] += x[i];
  }
  for (double& v : s.mean) {
    v /= m;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - s.mean[c.group(i)];
    s.variance[c.group(i)] += d * d;
  }
  for (double& v : s.variance) {
    v /= m;
  }
  return s;
}

// Y rounds to the io type once; the Float statistics sum N * H * W <= 1,600 values (relative
// error ~1e-4 at worst, far below Half's 2^-11 and BFloat16's 2^-8 output rounding); |Y| <= ~6
// here, so the absolute parts cover values near 0. The Float statistics and running statistics:
// 2e-5 absolute + 1e-4 relative, > 10x the Float sums' rounding; a wrong formula (biased for
// unbiased variance: a factor M / (M - 1) >= 1.0006) errs by more.
Tolerance y_tolerance(DataType type) {
  switch (type) {
    case DataType::Half: return {.abs = 6e-3, .rel = 2e-3};
    case DataType::BFloat16: return {.abs = 5e-2, .rel = 1e-2};
    default: return {.abs = 1e-4, .rel = 1e-4};
  }
}
constexpr Tolerance statistic_tolerance{.abs = 2e-5, .rel = 1e-4};

// X with a per-channel offset, so that the means differ from 0 and from each other.
std::vector<float> draw_x(const BatchCase& c, std::mt19937& rng) {
  std::vector<float> x = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, c.count(), rng);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = dnngraph::test::round_to(c.type, x[i] + 0.03 * static_cast<double>(i % c.channels()));
  }
  return x;
}

void check_forward(const BatchCase& c, dnngraph::test::BuiltCase& b, std::int64_t workspace_size) {
  std::mt19937 rng(c.seed);
  const std::size_t ch = c.channels();
  const std::vector<float> x = draw_x(c, rng);
  const std::vector<float> scale =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 1.5}, ch, rng);
  const std::vector<float> bias =
      dnngraph::test::draw(DataType::Float, {.lo = -1, .hi = 1}, ch, rng);
  const std::vector<float> prev_mean =
      dnngraph::test::draw(DataType::Float, {.lo = -1, .hi = 1}, ch, rng);
  const std::vector<float> prev_var =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 2}, ch, rng);

  const Statistics s = statistics(c, x);
  const auto m = static_cast<double>(c.per_group());
  const std::vector<double>& mean = s.mean;
  std::vector<double> y(x.size()), inv_var(c.groups());
  for (std::size_t k = 0; k < c.groups(); ++k) {
    inv_var[k] = 1.0 / std::sqrt(s.variance[k] + epsilon);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t k = c.group(i);
    y[i] = (x[i] - mean[k]) * inv_var[k] * scale[i % ch] + bias[i % ch];
  }

  Run run;
  run.upload(uid_x, c.type, x, "X");
  run.upload(uid_scale, DataType::Float, scale, "scale");
  run.upload(uid_bias, DataType::Float, bias, "bias");
  DeviceBuffer* y_out =
      run.output(uid_y, x.size() * static_cast<std::size_t>(dnngraph::size_of(c.type)), "Y");
  DeviceBuffer* mean_out = run.output(uid_mean, c.groups() * 4, "mean");
  DeviceBuffer* inv_var_out = run.output(uid_inv_var, c.groups() * 4, "inv_variance");
  if (c.instance) {
    run.execute(b, workspace_size, c.text());
    check_output(c.text() + " Y", *y_out, c.type, y, y_tolerance(c.type));
    check_output(c.text() + " mean", *mean_out, DataType::Float, mean, statistic_tolerance);
    check_output(c.text() + " inv_variance", *inv_var_out, DataType::Float, inv_var,
                 statistic_tolerance);
    return;
  }
  std::vector<double> next_mean(ch), next_var(ch), next_var_biased(ch);
  for (std::size_t k = 0; k < ch; ++k) {
    next_mean[k] = (1.0 - momentum) * prev_mean[k] + momentum * s.mean[k];
    next_var[k] = (1.0 - momentum) * prev_var[k] + momentum * s.variance[k] * m / (m - 1.0);
    next_var_biased[k] = (1.0 - momentum) * prev_var[k] + momentum * s.variance[k];
  }
  run.upload(uid_prev_mean, DataType::Float, prev_mean, "prev_running_mean");
  run.upload(uid_prev_var, DataType::Float, prev_var, "prev_running_var");
  DeviceBuffer* next_mean_out = run.output(uid_next_mean, ch * 4, "next_running_mean");
  DeviceBuffer* next_var_out = run.output(uid_next_var, ch * 4, "next_running_var");
  run.execute(b, workspace_size, c.text());
  check_output(c.text() + " Y", *y_out, c.type, y, y_tolerance(c.type));
  check_output(c.text() + " mean", *mean_out, DataType::Float, mean, statistic_tolerance);
  check_output(c.text() + " inv_variance", *inv_var_out, DataType::Float, inv_var,
               statistic_tolerance);
  check_output(c.text() + " next_running_mean", *next_mean_out, DataType::Float, next_mean,
               statistic_tolerance);
  // The running variance takes the unbiased batch variance (as cuDNN's legacy batch norm and
  // torch's BatchNorm): the biased reference is printed too, to tell the two apart on failure.
  check_output(c.text() + " next_running_var (unbiased update)", *next_var_out, DataType::Float,
               next_var, statistic_tolerance);
  std::vector<std::byte> bytes(ch * 4);
  require_cuda(next_var_out->download(std::span<std::byte>(bytes)), "next_running_var");
  BOOST_TEST_MESSAGE(
      c.text() << " next_running_var against the biased update: "
               << dnngraph::test::compare(dnngraph::test::decode(DataType::Float, bytes),
                                          next_var_biased, statistic_tolerance)
                      .describe());
}

// x_hat = (x - mean) * inv, g = dY * scale, over the M elements of a group (N * H * W of a
// channel; instance norm: H * W of a sample's channel):
//   dX = inv * (g - mean(g) - x_hat * mean(g * x_hat)); per channel, dScale = sum dY * x_hat and
//   dBias = sum dY.
void check_backward(const BatchCase& c, dnngraph::test::BuiltCase& b, std::int64_t workspace_size) {
  std::mt19937 rng(c.seed);
  const std::size_t ch = c.channels();
  const std::vector<float> x = draw_x(c, rng);
  const std::vector<float> dy = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, x.size(), rng);
  const std::vector<float> scale =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 1.5}, ch, rng);
  const Statistics s = statistics(c, x);
  std::vector<float> mean(c.groups()), inv_var(c.groups());
  for (std::size_t k = 0; k < c.groups(); ++k) {
    mean[k] = static_cast<float>(s.mean[k]);
    inv_var[k] = static_cast<float>(1.0 / std::sqrt(s.variance[k] + epsilon));
  }
  const auto m = static_cast<double>(c.per_group());
  std::vector<double> mean_g(c.groups(), 0.0), mean_gx(c.groups(), 0.0), dscale(ch, 0.0),
      dbias(ch, 0.0);
  const auto x_hat = [&](std::size_t i) {
    return (x[i] - static_cast<double>(mean[c.group(i)])) * inv_var[c.group(i)];
  };
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double g = static_cast<double>(dy[i]) * scale[i % ch];
    mean_g[c.group(i)] += g / m;
    mean_gx[c.group(i)] += g * x_hat(i) / m;
    dscale[i % ch] += static_cast<double>(dy[i]) * x_hat(i);
    dbias[i % ch] += dy[i];
  }
  std::vector<double> dx(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t k = c.group(i);
    dx[i] = inv_var[k] *
            (static_cast<double>(dy[i]) * scale[i % ch] - mean_g[k] - x_hat(i) * mean_gx[k]);
  }

  Run run;
  run.upload(uid_dy, c.type, dy, "dY");
  run.upload(uid_bwd_x, c.type, x, "X");
  run.upload(uid_bwd_scale, DataType::Float, scale, "scale");
  run.upload(uid_saved_mean, DataType::Float, mean, "mean");
  run.upload(uid_saved_inv_var, DataType::Float, inv_var, "inv_variance");
  DeviceBuffer* dx_out =
      run.output(uid_dx, x.size() * static_cast<std::size_t>(dnngraph::size_of(c.type)), "dX");
  DeviceBuffer* dscale_out = run.output(uid_dscale, ch * 4, "dScale");
  DeviceBuffer* dbias_out = run.output(uid_dbias, ch * 4, "dBias");
  run.execute(b, workspace_size, c.text());
  // dX: as Y (one rounding to the io type of a Float computation over M elements). dScale and
  // dBias: Float sums of M <= 1,600 terms |t| <= ~4: 2e-3 absolute + 1e-4 relative.
  check_output(c.text() + " dX", *dx_out, c.type, dx, y_tolerance(c.type));
  check_output(c.text() + " dScale", *dscale_out, DataType::Float, dscale,
               {.abs = 2e-3, .rel = 1e-4});
  check_output(c.text() + " dBias", *dbias_out, DataType::Float, dbias, {.abs = 2e-3, .rel = 1e-4});
}

void check_against_reference(const BatchCase& c) {
  auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_graph(c); });
  if (c.backward) {
    check_backward(c, *taken.built, taken.workspace_size);
  } else {
    check_forward(c, *taken.built, taken.workspace_size);
  }
}

boost::unit_test::precondition builds(const BatchCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

namespace cases {
const BatchCase fwd_half{"batchnorm", false, DataType::Half, {4, 32, 9, 7}, 501};
const BatchCase fwd_bf16{"batchnorm", false, DataType::BFloat16, {8, 64, 5, 5}, 502};
const BatchCase fwd_float{"batchnorm", false, DataType::Float, {2, 16, 11, 3}, 503};
const BatchCase bwd_half{"batchnorm_backward", true, DataType::Half, {4, 32, 9, 7}, 504};
const BatchCase bwd_bf16{"batchnorm_backward", true, DataType::BFloat16, {8, 64, 5, 5}, 505};
const BatchCase bwd_float{"batchnorm_backward", true, DataType::Float, {2, 16, 11, 3}, 506};
const BatchCase in_half{"instancenorm", false, DataType::Half, {4, 32, 9, 7}, 507, true};
const BatchCase in_bf16{"instancenorm", false, DataType::BFloat16, {3, 64, 13, 11}, 508, true};
const BatchCase in_float{"instancenorm", false, DataType::Float, {2, 16, 11, 3}, 509, true};
const BatchCase in_bwd_half{"instancenorm_backward", true, DataType::Half,
                            {4, 32, 9, 7},           510,  true};
const BatchCase in_bwd_float{"instancenorm_backward", true, DataType::Float,
                             {2, 16, 11, 3},          511,  true};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(batchnorm_matches_reference)
DNNGRAPH_REFERENCE_CASE(half_batchnorm_training_matches_reference, cases::fwd_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_batchnorm_training_matches_reference, cases::fwd_bf16)
DNNGRAPH_REFERENCE_CASE(float_batchnorm_training_matches_reference, cases::fwd_float)
DNNGRAPH_REFERENCE_CASE(half_batchnorm_backward_matches_reference, cases::bwd_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_batchnorm_backward_matches_reference, cases::bwd_bf16)
DNNGRAPH_REFERENCE_CASE(float_batchnorm_backward_matches_reference, cases::bwd_float)
DNNGRAPH_REFERENCE_CASE(half_instancenorm_training_matches_reference, cases::in_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_instancenorm_training_matches_reference, cases::in_bf16)
DNNGRAPH_REFERENCE_CASE(float_instancenorm_training_matches_reference, cases::in_float)
DNNGRAPH_REFERENCE_CASE(half_instancenorm_backward_matches_reference, cases::in_bwd_half)
DNNGRAPH_REFERENCE_CASE(float_instancenorm_backward_matches_reference, cases::in_bwd_float)
BOOST_AUTO_TEST_SUITE_END()
