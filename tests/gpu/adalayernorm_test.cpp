// Adaptive layer normalization on the GPU against a CPU reference in double: adalayernorm over
// X [B, S, D] (packed, as cudnn-frontend's sample lays it out) with a scale and bias per sample
// ([B, 1, D] Float), training (Y, the saved mean and inverse standard deviation [B, S, 1]) and
// inference (Y), Half, BFloat16 and Float; adalayernorm_backward (dX, and dScale and dBias per
// sample) from the forward's statistics, Half and Float. The statistics the backward reads are
// computed here in double from X and rounded to Float, so the reference and the GPU read the same
// inputs. A graph cuDNN has no engine for is a finding: skipped with the Error.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/gpu_run.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::NormFwdPhase;
using dnngraph::TensorAttributes;
using dnngraph::test::check_output;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::Tolerance;
using Dims = std::vector<std::int64_t>;

constexpr float epsilon = 1e-5F;
// Forward: X, scale, bias 1-3; Y, mean, inv_variance 10-12. Backward: dY, X, scale, mean,
// inv_variance 1-5; dX, dScale, dBias 10-12.
constexpr std::int64_t uid_x = 1, uid_scale = 2, uid_bias = 3, uid_y = 10, uid_mean_out = 11,
                       uid_inv_var_out = 12;
constexpr std::int64_t uid_dy = 1, uid_bwd_x = 2, uid_bwd_scale = 3, uid_mean = 4, uid_inv_var = 5,
                       uid_dx = 10, uid_dscale = 11, uid_dbias = 12;

struct AdaCase {
  std::string name;
  DataType type;  // X and Y (dY and dX); the parameters, statistics and their gradients Float
  bool backward;
  NormFwdPhase phase;  // forward only
  std::int64_t b, s, d;
  std::uint32_t seed;

  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) +
           (backward ? "" : " " + std::string(dnngraph::to_string(phase))) + " X " +
           dnngraph::to_string(x_dims()) + ")";
  }
  [[nodiscard]] bool training() const { return phase == NormFwdPhase::Training; }
  [[nodiscard]] Dims x_dims() const { return {b, s, d}; }
  [[nodiscard]] std::size_t rows() const { return static_cast<std::size_t>(b * s); }
  [[nodiscard]] std::size_t features() const { return static_cast<std::size_t>(d); }
  // Row r (= batch * S + position) is sample r / S.
  [[nodiscard]] std::size_t sample(std::size_t row) const {
    return row / static_cast<std::size_t>(s);
  }
};

Graph make_graph(const AdaCase& c) {
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  const auto input = [&](const char* name, std::int64_t uid, const Dims& dims, bool float_type) {
    TensorAttributes t;
    t.set_name(name).set_uid(uid).set_dim(dims).set_stride(dnngraph::packed_strides(dims));
    if (float_type) {
      t.set_data_type(DataType::Float);
    }
    return g.tensor(t);
  };
  const Dims parameter{c.b, 1, c.d};
  const Dims statistic{c.b, c.s, 1};
  if (!c.backward) {
    auto x = input("X", uid_x, c.x_dims(), false);
    auto scale = input("scale", uid_scale, parameter, true);
    auto bias = input("bias", uid_bias, parameter, true);
    auto [y, mean, inv_var] = g.adalayernorm(
        x, scale, bias,
        dnngraph::AdaLayernormAttributes().set_name("ada").set_forward_phase(c.phase).set_epsilon(
            g.tensor(epsilon)));
    y->set_output(true).set_uid(uid_y);
    if (c.training()) {
      mean->set_output(true).set_uid(uid_mean_out);
      inv_var->set_output(true).set_uid(uid_inv_var_out);
    }
  } else {
    auto dy = input("dY", uid_dy, c.x_dims(), false);
    auto x = input("X", uid_bwd_x, c.x_dims(), false);
    auto scale = input("scale", uid_bwd_scale, parameter, true);
    auto mean = input("mean", uid_mean, statistic, true);
    auto inv_var = input("inv_variance", uid_inv_var, statistic, true);
    auto [dx, dscale, dbias] = g.adalayernorm_backward(
        dy, x, scale, mean, inv_var, dnngraph::NormBackwardAttributes().set_name("ada_bwd"));
    dx->set_output(true).set_uid(uid_dx);
    dscale->set_output(true).set_uid(uid_dscale);
    dbias->set_output(true).set_uid(uid_dbias);
  }
  return g;
}

// Y and dX round to the io type once (Float math inside over D <= 256 values of |x| <= ~3):
// half an ulp of |Y| <= ~4 is 2e-3 (Half) and 1.6e-2 (BFloat16); a one-pass variance loses a few
// more bits to cancellation, so Float gets 5e-4 relative (as tests/gpu/norm_test.cpp argues for
// layernorm). The statistics: Float sums over D values, 1e-5 absolute + 5e-4 relative. dScale and
// dBias: Float sums over S <= 100 rows of |terms| <= ~4, 5e-4 absolute + 1e-4 relative (> 10x
// their rounding); a wrong formula (shared rather than per-sample parameters) errs by O(1).
Tolerance io_tolerance(DataType type) {
  switch (type) {
    case DataType::Half: return {.abs = 8e-3, .rel = 4e-3};
    case DataType::BFloat16: return {.abs = 6e-2, .rel = 2e-2};
    default: return {.abs = 5e-4, .rel = 5e-4};
  }
}
constexpr Tolerance statistic_tolerance{.abs = 1e-5, .rel = 5e-4};
constexpr Tolerance parameter_tolerance{.abs = 5e-4, .rel = 1e-4};

// Mean and inverse standard deviation (population variance) of each row of D features.
struct RowStatistics {
  std::vector<double> mean, inv_std;
};

RowStatistics row_statistics(const AdaCase& c, std::span<const float> x) {
  const std::size_t d = c.features();
  RowStatistics r{std::vector<double>(c.rows()), std::vector<double>(c.rows())};
  for (std::size_t row = 0; row < c.rows(); ++row) {
    const std::span<const float> v = x.subspan(row * d, d);
    double mean = 0;
    for (const float e : v) mean += e;
    mean /= static_cast<double>(d);
    double var = 0;
    for (const float e : v) var += (e - mean) * (e - mean);
    var /= static_cast<double>(d);
    r.mean[row] = mean;
    r.inv_std[row] = 1.0 / std::sqrt(var + epsilon);
  }
  return r;
}

// X with a mean per row away from 0 (and different from row to row).
std::vector<float> draw_x(const AdaCase& c, std::mt19937& rng) {
  const std::size_t d = c.features();
  std::vector<float> x = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, c.rows() * d, rng);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = dnngraph::test::round_to(c.type, x[i] + 0.02 * static_cast<double>(i / d % 50));
  }
  return x;
}

// Y = (X - mean) * inv_std * scale[b] + bias[b], the statistics per row, the parameters of the
// row's sample.
void check_forward(const AdaCase& c, dnngraph::test::BuiltCase& b, std::int64_t workspace_size) {
  std::mt19937 rng(c.seed);
  const std::size_t d = c.features();
  const std::size_t p_count = static_cast<std::size_t>(c.b) * d;
  const std::vector<float> x = draw_x(c, rng);
  const std::vector<float> scale =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 1.5}, p_count, rng);
  const std::vector<float> bias =
      dnngraph::test::draw(DataType::Float, {.lo = -0.5, .hi = 0.5}, p_count, rng);
  const RowStatistics st = row_statistics(c, x);
  std::vector<double> y(x.size());
  for (std::size_t row = 0; row < c.rows(); ++row) {
    const std::size_t p = c.sample(row) * d;
    for (std::size_t i = 0; i < d; ++i) {
      y[row * d + i] =
          (x[row * d + i] - st.mean[row]) * st.inv_std[row] * scale[p + i] + bias[p + i];
    }
  }
  dnngraph::test::PackRun r;
  r.upload(uid_x, c.type, x, "X");
  r.upload(uid_scale, DataType::Float, scale, "scale");
  r.upload(uid_bias, DataType::Float, bias, "bias");
  DeviceBuffer* y_out =
      r.output(uid_y, x.size() * static_cast<std::size_t>(dnngraph::size_of(c.type)), "Y");
  DeviceBuffer* mean_out = c.training() ? r.output(uid_mean_out, c.rows() * 4, "mean") : nullptr;
  DeviceBuffer* inv_out =
      c.training() ? r.output(uid_inv_var_out, c.rows() * 4, "inv_variance") : nullptr;
  r.execute(b, workspace_size, c.text());
  check_output(c.text() + " Y", *y_out, c.type, y, io_tolerance(c.type));
  if (c.training()) {
    check_output(c.text() + " mean", *mean_out, DataType::Float, st.mean, statistic_tolerance);
    check_output(c.text() + " inv_variance", *inv_out, DataType::Float, st.inv_std,
                 statistic_tolerance);
  }
}

// x_hat = (x - mean) * inv, g = dY * scale[b], per row of D features:
//   dX = inv * (g - mean(g) - x_hat * mean(g * x_hat));
//   dScale[b] = sum over the sample's S rows of dY * x_hat, dBias[b] = sum of dY.
void check_backward(const AdaCase& c, dnngraph::test::BuiltCase& b, std::int64_t workspace_size) {
  std::mt19937 rng(c.seed);
  const std::size_t d = c.features();
  const std::size_t p_count = static_cast<std::size_t>(c.b) * d;
  const std::vector<float> x = draw_x(c, rng);
  const std::vector<float> dy = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, x.size(), rng);
  const std::vector<float> scale =
      dnngraph::test::draw(DataType::Float, {.lo = 0.5, .hi = 1.5}, p_count, rng);
  const RowStatistics st = row_statistics(c, x);
  std::vector<float> mean(c.rows()), inv_var(c.rows());
  for (std::size_t row = 0; row < c.rows(); ++row) {
    mean[row] = static_cast<float>(st.mean[row]);
    inv_var[row] = static_cast<float>(st.inv_std[row]);
  }
  std::vector<double> dx(x.size()), dscale(p_count, 0.0), dbias(p_count, 0.0), x_hat(d), g(d);
  for (std::size_t row = 0; row < c.rows(); ++row) {
    const std::size_t p = c.sample(row) * d;
    double mean_g = 0, mean_gx = 0;
    for (std::size_t i = 0; i < d; ++i) {
      x_hat[i] = (x[row * d + i] - static_cast<double>(mean[row])) * inv_var[row];
      g[i] = static_cast<double>(dy[row * d + i]) * scale[p + i];
      mean_g += g[i] / static_cast<double>(d);
      mean_gx += g[i] * x_hat[i] / static_cast<double>(d);
      dscale[p + i] += static_cast<double>(dy[row * d + i]) * x_hat[i];
      dbias[p + i] += dy[row * d + i];
    }
    for (std::size_t i = 0; i < d; ++i) {
      dx[row * d + i] = inv_var[row] * (g[i] - mean_g - x_hat[i] * mean_gx);
    }
  }
  dnngraph::test::PackRun r;
  r.upload(uid_dy, c.type, dy, "dY");
  r.upload(uid_bwd_x, c.type, x, "X");
  r.upload(uid_bwd_scale, DataType::Float, scale, "scale");
  r.upload(uid_mean, DataType::Float, mean, "mean");
  r.upload(uid_inv_var, DataType::Float, inv_var, "inv_variance");
  DeviceBuffer* dx_out =
      r.output(uid_dx, x.size() * static_cast<std::size_t>(dnngraph::size_of(c.type)), "dX");
  DeviceBuffer* dscale_out = r.output(uid_dscale, p_count * 4, "dScale");
  DeviceBuffer* dbias_out = r.output(uid_dbias, p_count * 4, "dBias");
  r.execute(b, workspace_size, c.text());
  check_output(c.text() + " dX", *dx_out, c.type, dx, io_tolerance(c.type));
  check_output(c.text() + " dScale", *dscale_out, DataType::Float, dscale, parameter_tolerance);
  check_output(c.text() + " dBias", *dbias_out, DataType::Float, dbias, parameter_tolerance);
}

void check_against_reference(const AdaCase& c) {
  auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_graph(c); });
  if (c.backward) {
    check_backward(c, *taken.built, taken.workspace_size);
  } else {
    check_forward(c, *taken.built, taken.workspace_size);
  }
}

boost::unit_test::precondition builds(const AdaCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

namespace cases {
using enum NormFwdPhase;
const AdaCase train_half{"adalayernorm", DataType::Half, false, Training, 4, 100, 128, 801};
const AdaCase train_bf16{"adalayernorm", DataType::BFloat16, false, Training, 2, 64, 256, 802};
const AdaCase train_float{"adalayernorm", DataType::Float, false, Training, 3, 37, 128, 803};
const AdaCase infer_half{"adalayernorm", DataType::Half, false, Inference, 4, 100, 128, 804};
const AdaCase infer_float{"adalayernorm", DataType::Float, false, Inference, 3, 37, 128, 805};
const AdaCase bwd_half{"adalayernorm_backward", DataType::Half, true, Training, 4, 100, 128, 806};
const AdaCase bwd_float{"adalayernorm_backward", DataType::Float, true, Training, 3, 37, 128, 807};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(adalayernorm_matches_reference)
DNNGRAPH_REFERENCE_CASE(half_training_matches_reference, cases::train_half)
DNNGRAPH_REFERENCE_CASE(bfloat16_training_matches_reference, cases::train_bf16)
DNNGRAPH_REFERENCE_CASE(float_training_matches_reference, cases::train_float)
DNNGRAPH_REFERENCE_CASE(half_inference_matches_reference, cases::infer_half)
DNNGRAPH_REFERENCE_CASE(float_inference_matches_reference, cases::infer_float)
DNNGRAPH_REFERENCE_CASE(half_backward_matches_reference, cases::bwd_half)
DNNGRAPH_REFERENCE_CASE(float_backward_matches_reference, cases::bwd_float)
BOOST_AUTO_TEST_SUITE_END()
