// Per-channel statistics on the GPU against a CPU reference in double: genstats alone over an NHWC
// X (sum and sum of squares per channel), and fused behind conv_fprop, where the convolution's Y
// (an output too) and its statistics come from one graph: what a batch norm in training is
// finalized from, Half and Float; then bn_finalize from such sums. A graph cuDNN has no engine for
// is a finding: skipped with the Error, never passed.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
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
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::Dims;
using dnngraph::test::require_cuda;

constexpr std::int64_t uid_x = 1, uid_sum = 20, uid_sq_sum = 21;

struct StatsCase {
  std::string name;
  DataType type;
  bool conv;    // conv_fprop -> genstats (X [2, 16, 9, 11], W [32, 16, 3, 3], padding 1)
  Dims x_dims;  // genstats alone: X [N, C, H, W], channels-last
  std::uint32_t seed;

  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) + ")";
  }
  [[nodiscard]] dnngraph::test::ConvCase conv_case() const {
    return dnngraph::test::conv_cases::fprop(
        name, type, dnngraph::test::Layout::ChannelsLast,
        dnngraph::test::uniform_problem({2, 16, 9, 11}, {32, 16, 3, 3}, 1, 1, 1), seed);
  }
  // The dims the statistics are taken of: X's, or the convolution's Y.
  [[nodiscard]] Dims stats_of() const { return conv ? conv_case().problem.y_dims() : x_dims; }
};

// The statistics' outputs on `source` (uids 20 and 21).
void add_stats(Graph& g, const std::shared_ptr<TensorAttributes>& source) {
  auto [sum, sq_sum] = g.genstats(source, dnngraph::GenstatsAttributes().set_name("stats"));
  sum->set_output(true).set_uid(uid_sum);
  sq_sum->set_output(true).set_uid(uid_sq_sum);
}

Graph make_graph(const StatsCase& c) {
  if (c.conv) {
    dnngraph::test::ConvGraph cg = dnngraph::test::make_conv_graph(c.conv_case());
    add_stats(cg.graph, cg.output);  // Y stays an output: the convolution's result and its stats
    return std::move(cg.graph);
  }
  Graph g;
  g.set_name(c.name).set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  add_stats(g,
            g.tensor(TensorAttributes().set_name("X").set_uid(uid_x).set_dim(c.x_dims).set_stride(
                dnngraph::channels_last_strides(c.x_dims))));
  return g;
}

void check_against_reference(const StatsCase& c) {
  auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_graph(c); });
  dnngraph::test::BuiltCase& b = *taken.built;
  std::mt19937 rng(c.seed);
  const Dims dims = c.stats_of();
  const auto channels = static_cast<std::size_t>(dims[1]);
  const std::size_t count = dnngraph::test::element_count(dims);

  std::unordered_map<std::int64_t, void*> pack;
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(8);
  const auto upload = [&](std::int64_t uid, const std::vector<std::byte>& bytes, const char* what) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(bytes), what));
    pack.emplace(uid, buffers.back().get());
  };
  std::vector<double> source;  // the values the statistics are taken of, channels-last
  if (c.conv) {
    const dnngraph::test::ConvCase conv = c.conv_case();
    const auto x = dnngraph::test::random_tensor(
        c.type, dnngraph::test::element_count(conv.problem.x_dims), rng);
    const auto w = dnngraph::test::random_tensor(
        c.type, dnngraph::test::element_count(conv.problem.w_dims), rng);
    upload(dnngraph::test::uid_input0, x.bytes, "X");
    upload(dnngraph::test::uid_input1, w.bytes, "W");
    source = dnngraph::test::reference_output(conv, x.values, w.values, {});
  } else {
    // A per-channel offset, so the sums differ from channel to channel and from 0.
    std::vector<float> x = dnngraph::test::draw(c.type, {.lo = -1, .hi = 1}, count, rng);
    for (std::size_t i = 0; i < count; ++i) {
      x[i] = dnngraph::test::round_to(c.type, x[i] + 0.05 * static_cast<double>(i % channels));
    }
    upload(uid_x, dnngraph::test::encode(c.type, x).bytes, "X");
    source.assign(x.begin(), x.end());
  }
  const std::size_t y_bytes = count * static_cast<std::size_t>(dnngraph::size_of(c.type));
  if (c.conv) {
    buffers.push_back(require_cuda(DeviceBuffer::allocate(y_bytes), "Y"));
    // NaN: an element of Y the graph leaves unwritten fails the comparison below (initcheck
    // reported 772 uninitialized bytes read back from these buffers, cuDNN 9.19, H200).
    require_cuda(buffers.back().fill_bytes(0xFF), "fill Y");
    pack.emplace(dnngraph::test::uid_output, buffers.back().get());
  }
  DeviceBuffer* y_out = c.conv ? &buffers.back() : nullptr;
  buffers.push_back(require_cuda(DeviceBuffer::allocate(channels * 4), "sum"));
  DeviceBuffer& sum_out = buffers.back();
  buffers.push_back(require_cuda(DeviceBuffer::allocate(channels * 4), "sq_sum"));
  DeviceBuffer& sq_sum_out = buffers.back();
  for (DeviceBuffer* out : {&sum_out, &sq_sum_out}) {
    require_cuda(out->fill_bytes(0xFF), "fill");  // NaN: an unwritten element fails
  }
  pack.emplace(uid_sum, sum_out.get());
  pack.emplace(uid_sq_sum, sq_sum_out.get());
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(taken.workspace_size) + 1), "workspace");
  const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.text() + " after execute");

  const auto download = [&](DeviceBuffer& buffer, DataType type, std::size_t n) {
    std::vector<std::byte> bytes(n * static_cast<std::size_t>(dnngraph::size_of(type)));
    require_cuda(buffer.download(std::span<std::byte>(bytes)), "download");
    return dnngraph::test::decode(type, bytes);
  };
  // The statistics of the values cuDNN summed: X, or the convolution's output as the GPU wrote it
  // (checked against the reference below with the convolution's tolerance; a Float convolution
  // runs on TF32 tensor cores, so the GPU's own Y is the right source of its statistics).
  if (y_out != nullptr) {
    const std::vector<float> y = download(*y_out, c.type, count);
    const auto comparison =
        dnngraph::test::compare(y, source, dnngraph::test::conv_tolerance(c.type));
    BOOST_TEST_MESSAGE(c.text() << " Y: " << comparison.describe());
    BOOST_CHECK_MESSAGE(comparison.passed(), c.text() << " Y: " << comparison.describe());
    source.assign(y.begin(), y.end());
  }
  std::vector<double> sum(channels, 0.0), sq_sum(channels, 0.0), abs_sum(channels, 0.0);
  for (std::size_t i = 0; i < count; ++i) {
    sum[i % channels] += source[i];
    sq_sum[i % channels] += source[i] * source[i];
    abs_sum[i % channels] += std::abs(source[i]);
  }
  // Per channel: a Float sum of M = N * H * W terms (relative ~M * 2^-24 at worst) of values
  // that may be the conv's Float results before their rounding to Half (each off by <= 2^-11 of
  // the Half Y read back): |error| <=
  // 2^-11 * sum |y| for the sum, 2 * 2^-11 * sum y^2 for the sum of squares. Bounds: 1e-3 *
  // sum |y| and 2e-3 * sum y^2 (2x and 2x), plus 1e-5 absolute.
  const bool half_rounding = c.conv && c.type != DataType::Float;
  const std::vector<float> got_sum = download(sum_out, DataType::Float, channels);
  const std::vector<float> got_sq_sum = download(sq_sum_out, DataType::Float, channels);
  std::size_t bad = 0;
  double worst_sum = 0, worst_sq = 0;
  for (std::size_t k = 0; k < channels; ++k) {
    const double sum_bound = 1e-5 + (half_rounding ? 1e-3 : 1e-5) * abs_sum[k];
    const double sq_bound = 1e-5 + (half_rounding ? 2e-3 : 1e-5) * sq_sum[k];
    const double e_sum = std::abs(got_sum[k] - sum[k]);
    const double e_sq = std::abs(got_sq_sum[k] - sq_sum[k]);
    worst_sum = std::max(worst_sum, e_sum / (sum_bound));
    worst_sq = std::max(worst_sq, e_sq / (sq_bound));
    bad += !(e_sum <= sum_bound) || !(e_sq <= sq_bound) ? 1 : 0;  // NaN fails
  }
  BOOST_TEST_MESSAGE(c.text() << ": sum and sq_sum of " << count / channels
                              << " values per channel; worst |error| / bound: sum " << worst_sum
                              << ", sq_sum " << worst_sq);
  BOOST_CHECK_MESSAGE(bad == 0, c.text() << ": " << bad << " of " << channels
                                         << " channels outside the bounds (worst sum " << worst_sum
                                         << ", sq_sum " << worst_sq << " x bound)");
}

// bn_finalize from per-channel sums of M values each (drawn here, so the sums are exact):
// mean = sum / M, var = sq_sum / M - mean^2 (biased), inv_std = 1 / sqrt(var + epsilon),
// eq_scale = scale * inv_std, eq_bias = bias - mean * eq_scale, and the running statistics'
// update with momentum (the variance's batch statistic checked unbiased, * M / (M - 1), as
// cuDNN's batch norm in training does, the biased one printed).
struct FinalizeCase {
  std::string name;
  std::int64_t channels;
  std::int64_t count;  // M
  std::uint32_t seed;

  [[nodiscard]] std::string text() const {
    return name + " (C " + std::to_string(channels) + ", M " + std::to_string(count) + ")";
  }
};

constexpr float finalize_epsilon = 1e-5F, finalize_momentum = 0.125F;
// Inputs 1-6, outputs 10-15.
constexpr std::int64_t uid_f_sum = 1, uid_f_sq_sum = 2, uid_f_scale = 3, uid_f_bias = 4,
                       uid_f_prev_mean = 5, uid_f_prev_var = 6, uid_f_out = 10;

Graph make_finalize_graph(const FinalizeCase& c) {
  Graph g;
  g.set_name(c.name).set_compute_data_type(DataType::Float);
  const Dims channel{1, c.channels, 1, 1};
  const auto input = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim(channel)
                        .set_stride(dnngraph::channels_last_strides(channel))
                        .set_data_type(DataType::Float));
  };
  const auto outs =
      g.bn_finalize(input("sum", uid_f_sum), input("sq_sum", uid_f_sq_sum),
                    input("scale", uid_f_scale), input("bias", uid_f_bias),
                    dnngraph::BnFinalizeAttributes()
                        .set_name("finalize")
                        .set_epsilon(g.tensor(finalize_epsilon))
                        .set_accumulation_count(g.int64_scalar(c.count))
                        .set_previous_running_stats(input("prev_running_mean", uid_f_prev_mean),
                                                    input("prev_running_var", uid_f_prev_var),
                                                    g.tensor(finalize_momentum)));
  std::int64_t uid = uid_f_out;
  for (const auto& t : outs) {
    t->set_output(true).set_uid(uid++);
  }
  return g;
}

void check_finalize(const FinalizeCase& c) {
  auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_finalize_graph(c); });
  dnngraph::test::BuiltCase& b = *taken.built;
  std::mt19937 rng(c.seed);
  const auto ch = static_cast<std::size_t>(c.channels);
  const auto m = static_cast<double>(c.count);
  std::vector<float> sum(ch), sq_sum(ch);
  std::vector<double> mean(ch), var(ch);
  for (std::size_t k = 0; k < ch; ++k) {
    const std::vector<float> values = dnngraph::test::draw(DataType::Float, {.lo = -1, .hi = 1},
                                                           static_cast<std::size_t>(c.count), rng);
    double s = 0, q = 0;
    for (const float v : values) {
      s += v + 0.05 * static_cast<double>(k);
      q += (v + 0.05 * static_cast<double>(k)) * (v + 0.05 * static_cast<double>(k));
    }
    sum[k] = static_cast<float>(s);
    sq_sum[k] = static_cast<float>(q);
    mean[k] = static_cast<double>(sum[k]) / m;
    var[k] = static_cast<double>(sq_sum[k]) / m - mean[k] * mean[k];
  }
  const auto draw = [&](double lo, double hi) {
    return dnngraph::test::draw(DataType::Float, {.lo = lo, .hi = hi}, ch, rng);
  };
  const std::vector<float> scale = draw(0.5, 1.5), bias = draw(-1, 1), prev_mean = draw(-1, 1),
                           prev_var = draw(0.5, 2);
  // Outputs in bn_finalize's order: eq_scale, eq_bias, mean, inv_variance, next running mean,
  // next running variance.
  std::vector<std::vector<double>> expected(6, std::vector<double>(ch));
  std::vector<double> next_var_biased(ch);
  for (std::size_t k = 0; k < ch; ++k) {
    const double inv_std = 1.0 / std::sqrt(var[k] + finalize_epsilon);
    expected[0][k] = scale[k] * inv_std;
    expected[1][k] = bias[k] - mean[k] * expected[0][k];
    expected[2][k] = mean[k];
    expected[3][k] = inv_std;
    expected[4][k] = (1.0 - finalize_momentum) * prev_mean[k] + finalize_momentum * mean[k];
    expected[5][k] =
        (1.0 - finalize_momentum) * prev_var[k] + finalize_momentum * var[k] * m / (m - 1.0);
    next_var_biased[k] = (1.0 - finalize_momentum) * prev_var[k] + finalize_momentum * var[k];
  }
  std::unordered_map<std::int64_t, void*> pack;
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(16);
  const auto upload = [&](std::int64_t uid, const std::vector<float>& values, const char* what) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(values), what));
    pack.emplace(uid, buffers.back().get());
  };
  upload(uid_f_sum, sum, "sum");
  upload(uid_f_sq_sum, sq_sum, "sq_sum");
  upload(uid_f_scale, scale, "scale");
  upload(uid_f_bias, bias, "bias");
  upload(uid_f_prev_mean, prev_mean, "prev_running_mean");
  upload(uid_f_prev_var, prev_var, "prev_running_var");
  const std::size_t first_output = buffers.size();
  for (std::int64_t uid = uid_f_out; uid < uid_f_out + 6; ++uid) {
    buffers.push_back(require_cuda(DeviceBuffer::allocate(ch * 4), "output"));
    require_cuda(buffers.back().fill_bytes(0xFF), "fill");  // NaN: an unwritten element fails
    pack.emplace(uid, buffers.back().get());
  }
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(taken.workspace_size) + 1), "workspace");
  const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.text() + " after execute");
  // Float arithmetic on Float sums of M <= 256 terms: the variance E[x^2] - mean^2 loses a few
  // bits to cancellation (mean^2 / var <= ~6 here), so 1e-4 relative + 2e-5 absolute; a wrong
  // formula (biased for unbiased: M / (M - 1) >= 1.004) errs by more.
  const dnngraph::test::Tolerance tolerance{.abs = 2e-5, .rel = 1e-4};
  const char* names[6] = {
      "eq_scale",     "eq_bias",           "mean",
      "inv_variance", "next_running_mean", "next_running_var (unbiased update)"};
  std::vector<float> next_var_got;
  for (std::size_t i = 0; i < 6; ++i) {
    std::vector<float> got(ch);
    require_cuda(buffers[first_output + i].download(std::span<float>(got)), names[i]);
    const auto comparison = dnngraph::test::compare(got, expected[i], tolerance);
    BOOST_TEST_MESSAGE(c.text() << " " << names[i] << ": " << comparison.describe());
    BOOST_CHECK_MESSAGE(comparison.passed(),
                        c.text() << " " << names[i] << ": " << comparison.describe());
    if (i == 5) {
      next_var_got = got;
    }
  }
  BOOST_TEST_MESSAGE(
      c.text() << " next_running_var against the biased update: "
               << dnngraph::test::compare(next_var_got, next_var_biased, tolerance).describe());
}

boost::unit_test::precondition builds(const StatsCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

namespace cases {
const StatsCase alone_half{"genstats", DataType::Half, false, {8, 64, 7, 7}, 601};
const StatsCase alone_float{"genstats", DataType::Float, false, {4, 32, 9, 5}, 602};
const StatsCase conv_half{"conv_fprop -> genstats", DataType::Half, true, {}, 603};
const StatsCase conv_float{"conv_fprop -> genstats", DataType::Float, true, {}, 604};
const FinalizeCase finalize_small{"bn_finalize", 32, 64, 605};
const FinalizeCase finalize_wide{"bn_finalize", 256, 198, 606};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(genstats_matches_reference)
DNNGRAPH_REFERENCE_CASE(half_genstats_matches_reference, cases::alone_half)
DNNGRAPH_REFERENCE_CASE(float_genstats_matches_reference, cases::alone_float)
DNNGRAPH_REFERENCE_CASE(half_conv_genstats_matches_reference, cases::conv_half)
DNNGRAPH_REFERENCE_CASE(float_conv_genstats_matches_reference, cases::conv_float)
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bn_finalize_matches_reference)
BOOST_AUTO_TEST_CASE(bn_finalize_of_32_channels_matches_reference,
                     *dnngraph::test::builds_or_skips(cases::finalize_small.text(), [] {
                       return make_finalize_graph(cases::finalize_small);
                     })) {
  check_finalize(cases::finalize_small);
}
BOOST_AUTO_TEST_CASE(bn_finalize_of_256_channels_matches_reference,
                     *dnngraph::test::builds_or_skips(cases::finalize_wide.text(), [] {
                       return make_finalize_graph(cases::finalize_wide);
                     })) {
  check_finalize(cases::finalize_wide);
}
BOOST_AUTO_TEST_SUITE_END()
