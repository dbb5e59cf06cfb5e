// What the GPU convolution test stands on, checked without a GPU: every GPU case's graph
// validates and lowers here with the dims and layout the reference assumes, and stays within the
// tolerance argument's bound; the CPU reference gives hand-worked results, does not depend on the
// layout, and its three passes are adjoint to one another (<conv(X, W), dY> = <X, dgrad(dY, W)> =
// <W, wgrad(X, dY)>), which ties dgrad and wgrad to the forward definition.
#define BOOST_TEST_MODULE conv_reference
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/conv_cases.hpp"
#include "support/host_tensor.hpp"
#include "support/printing.hpp"

using dnngraph::DataType;
using dnngraph::test::ConvCase;
using dnngraph::test::ConvProblem;
using dnngraph::test::Dims;
namespace conv_cases = dnngraph::test::conv_cases;

namespace {

std::vector<float> random_values(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> values(count);
  for (float& v : values) {
    v = dist(rng);
  }
  return values;
}

std::size_t count(const Dims& dims) {
  return static_cast<std::size_t>(dnngraph::test::product(dims));
}

double dot(std::span<const float> a, std::span<const double> b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sum += static_cast<double>(a[i]) * b[i];
  }
  return sum;
}

// <fprop(X, W), dY>, <X, dgrad(dY, W)> and <W, wgrad(X, dY)> on random packed NCHW data.
void check_adjoint(const ConvProblem& p) {
  const Dims y_dims = p.y_dims();
  const std::vector<float> x = random_values(count(p.x_dims), 1);
  const std::vector<float> w = random_values(count(p.w_dims), 2);
  const std::vector<float> dy = random_values(count(y_dims), 3);
  const Dims xs = dnngraph::packed_strides(p.x_dims);
  const Dims ws = dnngraph::packed_strides(p.w_dims);
  const Dims ys = dnngraph::packed_strides(y_dims);
  const auto y = dnngraph::test::reference_conv_fprop(p, x, xs, w, ws, ys, {}, false);
  const auto dx = dnngraph::test::reference_conv_dgrad(p, dy, ys, w, ws, xs);
  const auto dw = dnngraph::test::reference_conv_wgrad(p, x, xs, dy, ys, ws);
  const double forward = dot(dy, y);
  const double data = dot(x, dx);
  const double filter = dot(w, dw);
  BOOST_TEST_MESSAGE("<Y, dY> " << forward << ", <X, dX> " << data << ", <W, dW> " << filter);
  BOOST_TEST(std::fabs(forward) > 1.0);  // not trivially zero
  BOOST_TEST(std::fabs(data - forward) <= 1e-9 * std::fabs(forward));
  BOOST_TEST(std::fabs(filter - forward) <= 1e-9 * std::fabs(forward));
}

ConvProblem two_d(Dims x, Dims w, Dims pre, Dims post, Dims stride, Dims dilation) {
  return {.x_dims = std::move(x),
          .w_dims = std::move(w),
          .pre_padding = std::move(pre),
          .post_padding = std::move(post),
          .stride = std::move(stride),
          .dilation = std::move(dilation)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_conv_cases)

BOOST_AUTO_TEST_CASE(every_gpu_case_validates_and_lowers_here_with_the_assumed_layout) {
  for (const ConvCase& c : conv_cases::all()) {
    BOOST_TEST_CONTEXT(c.name) {
      auto graph = dnngraph::test::make_conv_graph(c);
      auto lowered = graph.graph.lower();
      BOOST_TEST_REQUIRE(lowered.has_value(), (lowered ? "" : lowered.error().message));
      BOOST_TEST(lowered->all_finalized);
      BOOST_TEST(lowered->operation_count == (c.bias_relu ? 3U : 1U));
      BOOST_TEST(graph.output->dim() == c.output_dims());
      BOOST_TEST(graph.output->stride() == dnngraph::test::strides_for(c.layout, c.output_dims()));
      BOOST_TEST(*graph.output->data_type() == c.type);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_gpu_case_sums_at_most_600_products_per_output) {
  for (const ConvCase& c : conv_cases::all()) {
    BOOST_TEST_CONTEXT(c.name) { BOOST_TEST(c.terms() <= 600); }
  }
}

BOOST_AUTO_TEST_CASE(gpu_case_names_are_unique) {
  std::vector<std::string> names;
  for (const ConvCase& c : conv_cases::all()) {
    names.push_back(c.name);
  }
  std::ranges::sort(names);
  BOOST_TEST((std::ranges::adjacent_find(names) == names.end()));
}

// The GPU test's data path and comparison, with the GPU replaced by fp32 accumulation and one
// rounding to the output type: every case passes its tolerance, its worst element using at most
// a quarter of what the tolerance allows there.
BOOST_AUTO_TEST_CASE(every_gpu_case_passes_its_tolerance_on_a_simulated_fp32_gpu) {
  for (const ConvCase& c : conv_cases::all()) {
    std::mt19937 rng(c.seed);
    const auto random = [&](const Dims& dims) {
      return dnngraph::test::random_tensor(c.type, count(dims), rng);
    };
    const auto in0 = random(c.input0_dims());
    const auto in1 = random(c.input1_dims());
    const auto bias = c.bias_relu ? random(c.bias_dims()) : dnngraph::test::HostTensor{};
    const auto expected = dnngraph::test::reference_output(c, in0.values, in1.values, bias.values);
    std::vector<float> got =
        dnngraph::test::reference_output<float>(c, in0.values, in1.values, bias.values);
    for (float& v : got) {
      v = c.type == DataType::BFloat16 ? dnngraph::test::round_to_bfloat16(v)
                                       : dnngraph::test::round_to_half(v);
    }
    const auto tolerance = dnngraph::test::conv_tolerance(c.type);
    const auto comparison = dnngraph::test::compare(got, expected, tolerance);
    const double allowed = tolerance.abs + tolerance.rel * std::fabs(comparison.worst_expected);
    const double used = std::fabs(comparison.worst_got - comparison.worst_expected) / allowed;
    BOOST_TEST_MESSAGE(c.name << ": " << comparison.describe() << "; the worst element uses "
                              << 100 * used << "% of its tolerance");
    BOOST_TEST(comparison.passed(), c.name << ": " << comparison.describe());
    BOOST_TEST(used <= 0.25, c.name << ": the worst element uses " << 100 * used << "%");
  }
}

BOOST_AUTO_TEST_CASE(test_data_bytes_decode_to_the_values_the_reference_sees) {
  for (const DataType type : {DataType::Half, DataType::BFloat16, DataType::Float}) {
    BOOST_TEST_CONTEXT(dnngraph::to_string(type)) {
      std::mt19937 rng(7);
      const auto t = dnngraph::test::random_tensor(type, 257, rng);
      BOOST_TEST(dnngraph::test::decode(type, t.bytes) == t.values);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_reference)

BOOST_AUTO_TEST_CASE(fprop_of_a_2x2_filter_matches_the_hand_worked_result) {
  // X = 1..9 in a 3 x 3 grid; W = [[1, 0], [0, -1]]: every output is x[i][j] - x[i+1][j+1] = -4.
  const ConvProblem p = two_d({1, 1, 3, 3}, {1, 1, 2, 2}, {0, 0}, {0, 0}, {1, 1}, {1, 1});
  std::vector<float> x(9);
  std::iota(x.begin(), x.end(), 1.0F);
  const std::vector<float> w{1, 0, 0, -1};
  const auto y = dnngraph::test::reference_conv_fprop(p, x, {9, 9, 3, 1}, w, {4, 4, 2, 1},
                                                      {4, 4, 2, 1}, {}, false);
  BOOST_TEST(y == (std::vector<double>{-4, -4, -4, -4}));
}

BOOST_AUTO_TEST_CASE(convolution_mode_mirrors_the_filter) {
  // Mirrored, W = [[-1, 0], [0, 1]]: every output is 4.
  ConvProblem p = two_d({1, 1, 3, 3}, {1, 1, 2, 2}, {0, 0}, {0, 0}, {1, 1}, {1, 1});
  p.flip = true;
  std::vector<float> x(9);
  std::iota(x.begin(), x.end(), 1.0F);
  const std::vector<float> w{1, 0, 0, -1};
  const auto y = dnngraph::test::reference_conv_fprop(p, x, {9, 9, 3, 1}, w, {4, 4, 2, 1},
                                                      {4, 4, 2, 1}, {}, false);
  BOOST_TEST(y == (std::vector<double>{4, 4, 4, 4}));
}

BOOST_AUTO_TEST_CASE(fprop_with_padding_and_stride_counts_the_taps_inside) {
  // Ones everywhere, 3 x 3 filter, padding 1, stride 2 on 4 x 4: windows at rows/cols -1..1
  // and 1..3 hold 2 x 2, 2 x 3, 3 x 2 and 3 x 3 inputs.
  const ConvProblem p = two_d({1, 1, 4, 4}, {1, 1, 3, 3}, {1, 1}, {1, 1}, {2, 2}, {1, 1});
  BOOST_TEST(p.y_dims() == (Dims{1, 1, 2, 2}));
  const std::vector<float> x(16, 1.0F);
  const std::vector<float> w(9, 1.0F);
  const auto y = dnngraph::test::reference_conv_fprop(p, x, {16, 16, 4, 1}, w, {9, 9, 3, 1},
                                                      {4, 4, 2, 1}, {}, false);
  BOOST_TEST(y == (std::vector<double>{4, 6, 6, 9}));
}

BOOST_AUTO_TEST_CASE(bias_and_relu_apply_per_output_channel) {
  // 1 x 1 filter of 1 on X = [-1, 2] per channel... K = 2 channels from C = 1: W = [1, -1].
  const ConvProblem p = two_d({1, 1, 1, 2}, {2, 1, 1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1});
  const std::vector<float> x{-1, 2};
  const std::vector<float> w{1, -1};
  const std::vector<float> bias{0.5F, 0.25F};
  // k = 0: [-1, 2] + 0.5 -> [0, 2.5]; k = 1: [1, -2] + 0.25 -> [1.25, 0].
  const auto y = dnngraph::test::reference_conv_fprop(p, x, {2, 2, 2, 1}, w, {1, 1, 1, 1},
                                                      {4, 2, 2, 1}, bias, true);
  BOOST_TEST(y == (std::vector<double>{0, 2.5, 1.25, 0}));
}

BOOST_AUTO_TEST_CASE(fprop_gives_the_same_values_in_nchw_and_nhwc) {
  const ConvProblem p = conv_cases::odd_problem();
  const Dims y_dims = p.y_dims();
  const std::vector<float> x = random_values(count(p.x_dims), 11);
  const std::vector<float> w = random_values(count(p.w_dims), 12);
  // The same logical tensors stored channels-last: copy element by element through both strides.
  const auto relayout = [](const std::vector<float>& packed, const Dims& dims) {
    const Dims from = dnngraph::packed_strides(dims);
    const Dims to = dnngraph::channels_last_strides(dims);
    std::vector<float> out(packed.size());
    Dims index(dims.size());
    for (std::int64_t flat = 0; flat < dnngraph::test::product(dims); ++flat) {
      dnngraph::test::unflatten(flat, dims, index);
      std::int64_t a = 0;
      std::int64_t b = 0;
      for (std::size_t d = 0; d < dims.size(); ++d) {
        a += index[d] * from[d];
        b += index[d] * to[d];
      }
      out[static_cast<std::size_t>(b)] = packed[static_cast<std::size_t>(a)];
    }
    return out;
  };
  const auto nchw = dnngraph::test::reference_conv_fprop(
      p, x, dnngraph::packed_strides(p.x_dims), w, dnngraph::packed_strides(p.w_dims),
      dnngraph::packed_strides(y_dims), {}, false);
  const auto nhwc = dnngraph::test::reference_conv_fprop(
      p, relayout(x, p.x_dims), dnngraph::channels_last_strides(p.x_dims), relayout(w, p.w_dims),
      dnngraph::channels_last_strides(p.w_dims), dnngraph::channels_last_strides(y_dims), {},
      false);
  // Compare logically: read NHWC results back into NCHW order.
  std::vector<float> nchw_as_float(nchw.begin(), nchw.end());
  const auto moved = relayout(nchw_as_float, y_dims);
  BOOST_TEST_REQUIRE(moved.size() == nhwc.size());
  for (std::size_t i = 0; i < moved.size(); ++i) {
    BOOST_TEST(std::fabs(static_cast<double>(moved[i]) - nhwc[i]) <=
               1e-6 * (1 + std::fabs(nhwc[i])));
  }
}

BOOST_AUTO_TEST_CASE(dgrad_and_wgrad_are_adjoint_to_fprop) {
  check_adjoint(two_d({2, 3, 7, 6}, {4, 3, 3, 2}, {1, 0}, {1, 1}, {1, 1}, {1, 1}));
}

BOOST_AUTO_TEST_CASE(dgrad_and_wgrad_are_adjoint_to_fprop_at_stride_2_and_dilation_2) {
  check_adjoint(two_d({2, 3, 11, 9}, {4, 3, 3, 3}, {2, 1}, {0, 2}, {2, 3}, {2, 1}));
}

BOOST_AUTO_TEST_CASE(dgrad_and_wgrad_are_adjoint_to_fprop_in_convolution_mode) {
  ConvProblem p = two_d({1, 2, 6, 6}, {3, 2, 3, 2}, {1, 1}, {1, 0}, {1, 2}, {1, 1});
  p.flip = true;
  check_adjoint(p);
}

BOOST_AUTO_TEST_CASE(dgrad_and_wgrad_are_adjoint_to_fprop_in_3d) {
  check_adjoint(dnngraph::test::uniform_problem({1, 2, 5, 4, 6}, {3, 2, 3, 3, 3}, 1, 2, 1));
}

BOOST_AUTO_TEST_CASE(reference_output_sizes_match_the_library_inference) {
  for (const ConvCase& c : conv_cases::all()) {
    if (c.kind != dnngraph::test::ConvKind::Fprop) {
      continue;
    }
    BOOST_TEST_CONTEXT(c.name) {
      auto graph = dnngraph::test::make_conv_graph(c);
      BOOST_TEST_REQUIRE(graph.graph.validate().has_value());
      BOOST_TEST(graph.output->dim() == c.problem.y_dims());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
