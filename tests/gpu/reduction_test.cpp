// Reduction graphs on the GPU against a CPU reference in double: sum, max, min, mean, |x| max and
// the 1- and 2-norms over the last dim, a middle dim and several dims, in Float and Half; and the
// row sums of a matmul output fused into one graph. Each case prints its max error and the chosen
// plan. A graph cuDNN has no engine for (NoEngine at build) is a finding: the case is reported
// as skipped with the Error, never as passed. A graph that builds must give the right numbers.
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
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"

#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reduction_reference.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::test::describe;
using dnngraph::test::require_cuda;

using dnngraph::DataType;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::ReductionMode;
using dnngraph::Result;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::Tolerance;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t uid_x = 1;  // X, or A of the fused case
constexpr std::int64_t uid_b = 2;  // B of the fused case
constexpr std::int64_t uid_y = 3;

struct ReductionCase {
  std::string name;
  DataType type;  // of X (of A and B in the fused case); Y is Float in every case
  ReductionMode mode;
  Dims x_dims;  // the fused case: the matmul output C [1, M, N]
  Dims y_dims;
  std::optional<std::int64_t> matmul_k;  // set: X = A [1, M, K] x B [1, K, N], virtual
  std::uint32_t seed = 1;
  bool channels_last = false;  // X and Y [N, C, H, W] stored NHWC (C contiguous)
};

// [N, C, H, W] -> [N, H, W, C]: the dims in memory order of a channels-last tensor.
Dims memory_order(const Dims& dims) {
  Dims order{dims.front()};
  order.insert(order.end(), dims.begin() + 2, dims.end());
  order.push_back(dims[1]);
  return order;
}

// Tolerances. Y is Float in every case, so no output rounding enters; inputs are uniform in
// [-1, 1] and at most 2048 are reduced into one output.
// Standalone: min, max and amax are exact; the sums (add, mean, norms) accumulate in Float, whose
// rounding over 2048 terms of |x| <= 1 is ~1e-4 typically (random walk of 2^-24 relative steps),
// far below 1e-3 + 1e-3 relative. Reducing a wrong dim or skipping elements errs by O(1).
constexpr Tolerance standalone_tolerance{.abs = 1e-3, .rel = 1e-3};
// Fused, Half A and B: the products are exact in Float and C stays Float (virtual), so only Float
// accumulation over K * N = 4096 products remains; |Y| is ~sqrt(4096)/3 ~ 21.
constexpr Tolerance fused_half_tolerance{.abs = 1e-2, .rel = 1e-3};
// Fused, Float A and B: the matmul may run on TF32 tensor cores (10 mantissa bits, inputs
// possibly truncated): ~2^-9 |a||b| per product, a random walk over K * N products, i.e.
// ~sqrt(K * N) / 3 * 2^-9 ~ 0.04 rms. The absolute part is 2e-2 of the typical |Y| (~0.43, ten
// times that rms); the relative part is 1e-2, as for the float matmul tests.
Tolerance fused_float_tolerance(std::int64_t terms) {
  return {.abs = 2e-2 * std::sqrt(static_cast<double>(terms)) / 3.0, .rel = 1e-2};
}

Tolerance tolerance_for(const ReductionCase& c) {
  if (!c.matmul_k) {
    return standalone_tolerance;
  }
  if (c.type == DataType::Half) {
    return fused_half_tolerance;
  }
  return fused_float_tolerance(*c.matmul_k * c.x_dims.back());
}

std::string case_text(const ReductionCase& c) {
  std::string text = c.name + " (" + std::string(dnngraph::to_string(c.type)) + " " +
                     std::string(dnngraph::to_string(c.mode)) + " ";
  if (c.matmul_k) {
    text += "of [1, M, " + std::to_string(*c.matmul_k) + "] x [1, " + std::to_string(*c.matmul_k) +
            ", N] = ";
  }
  return text + dnngraph::to_string(c.x_dims) + " -> " + dnngraph::to_string(c.y_dims) +
         (c.channels_last ? " NHWC)" : ")");
}

Dims a_dims(const ReductionCase& c) { return {1, c.x_dims[1], *c.matmul_k}; }
Dims b_dims(const ReductionCase& c) { return {1, *c.matmul_k, c.x_dims[2]}; }

// Y = mode(X), or Y = mode(A x B); io type = the case's type, compute and intermediates Float.
Graph make_graph(const ReductionCase& c) {
  using dnngraph::MatmulAttributes;
  using dnngraph::ReductionAttributes;
  using dnngraph::TensorAttributes;
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  std::shared_ptr<TensorAttributes> x;
  if (c.matmul_k) {
    auto a = g.tensor(TensorAttributes().set_name("A").set_uid(uid_x).set_dim(a_dims(c)));
    auto b = g.tensor(TensorAttributes().set_name("B").set_uid(uid_b).set_dim(b_dims(c)));
    x = g.matmul(a, b, MatmulAttributes().set_name("mm"));
  } else {
    x = g.tensor(TensorAttributes().set_name("X").set_uid(uid_x).set_dim(c.x_dims));
    if (c.channels_last) {
      x->set_stride(dnngraph::channels_last_strides(c.x_dims));
    }
  }
  auto y = g.reduction(x, ReductionAttributes().set_name("reduce").set_mode(c.mode));
  y->set_output(true).set_name("Y").set_uid(uid_y).set_dim(c.y_dims).set_data_type(DataType::Float);
  if (c.channels_last) {
    y->set_stride(dnngraph::channels_last_strides(c.y_dims));
  }
  return g;
}

// cuDNN 9.19 refuses Avg, Norm1, Norm2 and MulNoZeros when lowering (the Reduction descriptor's
// finalize gives CUDNN_STATUS_NOT_SUPPORTED); those cases run where a cuDNN takes them.
bool refused_mode(const dnngraph::Error& error) {
  return error.code == ErrorCode::CudnnFailure &&
         error.message.find("cudnnBackendFinalize(Reduction): CUDNN_STATUS_NOT_SUPPORTED") !=
             std::string::npos;
}

// Skips the case, with the Error as the reason, when cuDNN has no engine for its graph or refuses
// its mode: a finding, not a pass. Any other build failure is left to the body, which fails on it.
boost::unit_test::precondition builds(const ReductionCase& c) {
  return dnngraph::test::builds_or_skips(case_text(c), [c] { return make_graph(c); }, refused_mode);
}

// Runs the built case once on inputs uniform in [-1, 1] (fixed seed) and compares Y with the
// reference within the case's tolerance.
void check_against_reference(const ReductionCase& c) {
  const auto taken = dnngraph::test::take_case(case_text(c), [c] { return make_graph(c); });
  dnngraph::test::BuiltCase& b = *taken;
  BOOST_REQUIRE_MESSAGE(b.built.has_value(), case_text(c)
                                                 << ": build failed: " << describe(b.built));
  const auto info = b.graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));

  std::mt19937 rng(c.seed);
  HostTensor x;
  HostTensor second;  // B of the fused case
  if (c.matmul_k) {
    x = dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(a_dims(c)), rng);
    second = dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(b_dims(c)), rng);
  } else {
    x = dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(c.x_dims), rng);
  }
  std::vector<std::byte> y_bytes(dnngraph::test::element_count(c.y_dims) * sizeof(float));

  DeviceBuffer x_dev = require_cuda(DeviceBuffer::copy_of(x.bytes), "X");
  DeviceBuffer b_dev = require_cuda(DeviceBuffer::copy_of(second.bytes), "B");
  DeviceBuffer y_dev = require_cuda(DeviceBuffer::allocate(y_bytes.size()), "Y");
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(info->workspace_size)), "workspace");
  // NaN everywhere, so an element the kernel never writes cannot pass by accident.
  require_cuda(y_dev.fill_bytes(0xFF), "fill Y");

  std::unordered_map<std::int64_t, void*> pack{{uid_x, x_dev.get()}, {uid_y, y_dev.get()}};
  if (c.matmul_k) {
    pack.emplace(uid_b, b_dev.get());
  }
  const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), case_text(c) << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  require_cuda(y_dev.download(std::span<std::byte>(y_bytes)), "Y");

  std::vector<double> expected;
  if (c.matmul_k) {
    const dnngraph::test::MatmulShape shape{.a_dims = a_dims(c), .b_dims = b_dims(c)};
    const std::vector<double> product = dnngraph::test::reference_matmul(
        shape, x.values, second.values, {}, dnngraph::test::Epilogue::None);
    expected = dnngraph::test::reference_reduction(std::span<const double>(product), c.x_dims,
                                                   c.y_dims, c.mode);
  } else if (c.channels_last) {
    // Memory order is [N, H, W, C] packed for both: reduce in that order.
    expected = dnngraph::test::reference_reduction(
        std::span<const float>(x.values), memory_order(c.x_dims), memory_order(c.y_dims), c.mode);
  } else {
    expected = dnngraph::test::reference_reduction(std::span<const float>(x.values), c.x_dims,
                                                   c.y_dims, c.mode);
  }
  const std::vector<float> got = dnngraph::test::decode(DataType::Float, y_bytes);
  const auto comparison = dnngraph::test::compare(got, expected, tolerance_for(c));
  BOOST_TEST_MESSAGE(case_text(c) << ": " << comparison.describe()
                                  << "; plan: " << info->describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), case_text(c) << ": " << comparison.describe());
}

// [8, 32, 256]: 256 reduced per output over the last dim.
const Dims rows{8, 32, 256};
const Dims rows_last{8, 32, 1};

namespace cases {
const ReductionCase sum_last_float{
    "sum over the last dim", DataType::Float, ReductionMode::Add, rows, rows_last, {}, 201};
const ReductionCase sum_last_half{
    "sum over the last dim", DataType::Half, ReductionMode::Add, rows, rows_last, {}, 202};
const ReductionCase max_last_float{
    "max over the last dim", DataType::Float, ReductionMode::Max, rows, rows_last, {}, 203};
const ReductionCase max_last_half{
    "max over the last dim", DataType::Half, ReductionMode::Max, rows, rows_last, {}, 204};
const ReductionCase min_last_float{
    "min over the last dim", DataType::Float, ReductionMode::Min, rows, rows_last, {}, 205};
const ReductionCase min_last_half{
    "min over the last dim", DataType::Half, ReductionMode::Min, rows, rows_last, {}, 206};
const ReductionCase avg_last_float{
    "mean over the last dim", DataType::Float, ReductionMode::Avg, rows, rows_last, {}, 207};
const ReductionCase avg_last_half{
    "mean over the last dim", DataType::Half, ReductionMode::Avg, rows, rows_last, {}, 208};
const ReductionCase norm2_last_float{
    "2-norm over the last dim", DataType::Float, ReductionMode::Norm2, rows, rows_last, {}, 209};
const ReductionCase norm2_last_half{
    "2-norm over the last dim", DataType::Half, ReductionMode::Norm2, rows, rows_last, {}, 210};
const ReductionCase norm1_last_half{
    "1-norm over the last dim", DataType::Half, ReductionMode::Norm1, rows, rows_last, {}, 211};
const ReductionCase amax_last_half{
    "max |x| over the last dim", DataType::Half, ReductionMode::Amax, rows, rows_last, {}, 212};
const ReductionCase sum_middle_float{
    "sum over a middle dim", DataType::Float, ReductionMode::Add, {8, 64, 32}, {8, 1, 32}, {}, 213};
const ReductionCase sum_middle_half{
    "sum over a middle dim", DataType::Half, ReductionMode::Add, {8, 64, 32}, {8, 1, 32}, {}, 214};
const ReductionCase max_middle_half{
    "max over a middle dim", DataType::Half, ReductionMode::Max, {8, 64, 32}, {8, 1, 32}, {}, 215};
const ReductionCase sum_two_float{"sum over the last two dims",
                                  DataType::Float,
                                  ReductionMode::Add,
                                  {8, 32, 64},
                                  {8, 1, 1},
                                  {},
                                  216};
const ReductionCase sum_two_half{"sum over the last two dims",
                                 DataType::Half,
                                 ReductionMode::Add,
                                 {8, 32, 64},
                                 {8, 1, 1},
                                 {},
                                 217};
const ReductionCase sum_outer_half{"sum over the first and last dims",
                                   DataType::Half,
                                   ReductionMode::Add,
                                   {8, 32, 64},
                                   {1, 32, 1},
                                   {},
                                   218};
const ReductionCase sum_all_half{
    "sum over every dim", DataType::Half, ReductionMode::Add, {4, 16, 32}, {1, 1, 1}, {}, 219};
// Row sums of C = A [1, 64, 128] x B [1, 128, 32].
const ReductionCase row_sum_matmul_half{
    "row sums of a matmul", DataType::Half, ReductionMode::Add, {1, 64, 32}, {1, 64, 1}, 128, 220};
const ReductionCase row_sum_matmul_float{
    "row sums of a matmul", DataType::Float, ReductionMode::Add, {1, 64, 32}, {1, 64, 1}, 128, 221};
const ReductionCase row_max_matmul_half{
    "row max of a matmul", DataType::Half, ReductionMode::Max, {1, 64, 32}, {1, 64, 1}, 128, 222};
// Channels-last 4-D X [N, C, H, W] = [4, 24, 6, 10] (odd-ish sizes): cuDNN 9.19's standalone
// reduction engine refuses other layouts ("!is_NHWC").
const Dims image{4, 24, 6, 10};
ReductionCase nhwc(std::string name, DataType type, ReductionMode mode, Dims y_dims,
                   std::uint32_t seed) {
  return {std::move(name), type, mode, image, std::move(y_dims), {}, seed, true};
}
const ReductionCase nhwc_sum_channel_float =
    nhwc("sum per channel", DataType::Float, ReductionMode::Add, {1, 24, 1, 1}, 230);
const ReductionCase nhwc_sum_channel_half =
    nhwc("sum per channel", DataType::Half, ReductionMode::Add, {1, 24, 1, 1}, 231);
const ReductionCase nhwc_max_channel_half =
    nhwc("max per channel", DataType::Half, ReductionMode::Max, {1, 24, 1, 1}, 232);
const ReductionCase nhwc_min_channel_bf16 =
    nhwc("min per channel", DataType::BFloat16, ReductionMode::Min, {1, 24, 1, 1}, 233);
const ReductionCase nhwc_amax_channel_half =
    nhwc("max |x| per channel", DataType::Half, ReductionMode::Amax, {1, 24, 1, 1}, 234);
const ReductionCase nhwc_sum_image_channel_half =
    nhwc("sum per image and channel", DataType::Half, ReductionMode::Add, {4, 24, 1, 1}, 235);
const ReductionCase nhwc_sum_over_channels_half =
    nhwc("sum over channels", DataType::Half, ReductionMode::Add, {4, 1, 6, 10}, 236);
const ReductionCase nhwc_sum_all_float =
    nhwc("sum over every dim", DataType::Float, ReductionMode::Add, {1, 1, 1, 1}, 237);
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(reduction_over_last_dim)

DNNGRAPH_REFERENCE_CASE(float_sum_over_the_last_dim_matches_reference, cases::sum_last_float)

DNNGRAPH_REFERENCE_CASE(half_sum_over_the_last_dim_matches_reference, cases::sum_last_half)

DNNGRAPH_REFERENCE_CASE(float_max_over_the_last_dim_matches_reference, cases::max_last_float)

DNNGRAPH_REFERENCE_CASE(half_max_over_the_last_dim_matches_reference, cases::max_last_half)

DNNGRAPH_REFERENCE_CASE(float_min_over_the_last_dim_matches_reference, cases::min_last_float)

DNNGRAPH_REFERENCE_CASE(half_min_over_the_last_dim_matches_reference, cases::min_last_half)

DNNGRAPH_REFERENCE_CASE(float_mean_over_the_last_dim_matches_reference, cases::avg_last_float)

DNNGRAPH_REFERENCE_CASE(half_mean_over_the_last_dim_matches_reference, cases::avg_last_half)

DNNGRAPH_REFERENCE_CASE(float_2_norm_over_the_last_dim_matches_reference, cases::norm2_last_float)

DNNGRAPH_REFERENCE_CASE(half_2_norm_over_the_last_dim_matches_reference, cases::norm2_last_half)

DNNGRAPH_REFERENCE_CASE(half_1_norm_over_the_last_dim_matches_reference, cases::norm1_last_half)

DNNGRAPH_REFERENCE_CASE(half_max_abs_over_the_last_dim_matches_reference, cases::amax_last_half)

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reduction_over_other_dims)

DNNGRAPH_REFERENCE_CASE(float_sum_over_a_middle_dim_matches_reference, cases::sum_middle_float)

DNNGRAPH_REFERENCE_CASE(half_sum_over_a_middle_dim_matches_reference, cases::sum_middle_half)

DNNGRAPH_REFERENCE_CASE(half_max_over_a_middle_dim_matches_reference, cases::max_middle_half)

DNNGRAPH_REFERENCE_CASE(float_sum_over_the_last_two_dims_matches_reference, cases::sum_two_float)

DNNGRAPH_REFERENCE_CASE(half_sum_over_the_last_two_dims_matches_reference, cases::sum_two_half)

DNNGRAPH_REFERENCE_CASE(half_sum_over_the_first_and_last_dims_matches_reference,
                        cases::sum_outer_half)

DNNGRAPH_REFERENCE_CASE(half_sum_over_every_dim_matches_reference, cases::sum_all_half)

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(channels_last_reduction)

DNNGRAPH_REFERENCE_CASE(float_sum_per_channel_matches_reference, cases::nhwc_sum_channel_float)

DNNGRAPH_REFERENCE_CASE(half_sum_per_channel_matches_reference, cases::nhwc_sum_channel_half)

DNNGRAPH_REFERENCE_CASE(half_max_per_channel_matches_reference, cases::nhwc_max_channel_half)

DNNGRAPH_REFERENCE_CASE(bfloat16_min_per_channel_matches_reference, cases::nhwc_min_channel_bf16)

DNNGRAPH_REFERENCE_CASE(half_max_abs_per_channel_matches_reference, cases::nhwc_amax_channel_half)

DNNGRAPH_REFERENCE_CASE(half_sum_per_image_and_channel_matches_reference,
                        cases::nhwc_sum_image_channel_half)

DNNGRAPH_REFERENCE_CASE(half_sum_over_channels_matches_reference,
                        cases::nhwc_sum_over_channels_half)

DNNGRAPH_REFERENCE_CASE(float_sum_over_every_dim_matches_reference, cases::nhwc_sum_all_float)

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(matmul_then_reduction)

DNNGRAPH_REFERENCE_CASE(half_row_sums_of_a_matmul_match_reference, cases::row_sum_matmul_half)

DNNGRAPH_REFERENCE_CASE(float_row_sums_of_a_matmul_match_reference_within_tf32_error,
                        cases::row_sum_matmul_float)

DNNGRAPH_REFERENCE_CASE(half_row_max_of_a_matmul_matches_reference, cases::row_max_matmul_half)

BOOST_AUTO_TEST_SUITE_END()
