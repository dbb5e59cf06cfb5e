// FP8 matmul on the H200 (Hopper) against a CPU reference in double: A [1, M, K] row-major and
// B [1, K, N] column-major (K contiguous in both, as cuDNN's own FP8 sample), E4M3 and E5M2,
// Float accumulation, then C times a by-value descale factor, written as BFloat16 (and Half).
// Inputs lie on grids exact in their FP8 format (k/8 for E4M3, k/4 for E5M2, |v| <= 2), so the
// products and their Float sums are exact; only the output rounding remains. A graph cuDNN has
// no engine for (an older GPU, or a layout it refuses) is a finding: skipped with the Error.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::require_cuda;

constexpr std::int64_t uid_a = 1, uid_b = 2, uid_y = 3;
constexpr float descale = 0.5F;

// The FP8 byte of v, which must be zero or a normal number exact in the format (E4M3: 4
// exponent bits, bias 7, 3 mantissa bits; E5M2: 5, 15, 2).
std::uint8_t fp8_bits(float v, DataType type) {
  const int mantissa_bits = type == DataType::Fp8E4M3 ? 3 : 2;
  const int bias = type == DataType::Fp8E4M3 ? 7 : 15;
  if (v == 0) {
    return 0;
  }
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  const int exponent = e - 1 + bias;
  const auto mantissa = static_cast<int>(std::lround((m * 2 - 1) * (1 << mantissa_bits)));
  return static_cast<std::uint8_t>((v < 0 ? 0x80 : 0) | (exponent << mantissa_bits) | mantissa);
}

// count values on the format's exact grid: k/8 (E4M3) or k/4 (E5M2), |v| <= 2.
std::vector<float> grid_values(DataType type, std::size_t count, std::mt19937& rng) {
  const int steps = type == DataType::Fp8E4M3 ? 8 : 4;
  std::uniform_int_distribution<int> pick(-2 * steps, 2 * steps);
  std::vector<float> values(count);
  for (float& v : values) {
    v = static_cast<float>(pick(rng)) / static_cast<float>(steps);
  }
  return values;
}

struct Fp8Case {
  std::string name;
  DataType a_type, b_type, out_type;
  std::int64_t m, n, k;
  bool b_column_major = true;
  std::uint32_t seed = 1;

  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(a_type)) + " x " +
           std::string(dnngraph::to_string(b_type)) + " -> " +
           std::string(dnngraph::to_string(out_type)) + ", M " + std::to_string(m) + " N " +
           std::to_string(n) + " K " + std::to_string(k) +
           (b_column_major ? ", B column-major)" : ", B row-major)");
  }
};

Graph make_graph(const Fp8Case& c) {
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.out_type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  auto a = g.tensor(TensorAttributes()
                        .set_name("A")
                        .set_uid(uid_a)
                        .set_dim({1, c.m, c.k})
                        .set_stride({c.m * c.k, c.k, 1})
                        .set_data_type(c.a_type));
  auto b = g.tensor(TensorAttributes()
                        .set_name("B")
                        .set_uid(uid_b)
                        .set_dim({1, c.k, c.n})
                        .set_stride(c.b_column_major ? std::vector<std::int64_t>{c.k * c.n, 1, c.k}
                                                     : std::vector<std::int64_t>{c.k * c.n, c.n, 1})
                        .set_data_type(c.b_type));
  auto product = g.matmul(a, b, dnngraph::MatmulAttributes().set_name("mm"));
  auto y = g.pointwise(
      product, g.tensor(descale),
      dnngraph::PointwiseAttributes().set_name("descale").set_mode(dnngraph::PointwiseMode::Mul));
  y->set_output(true).set_uid(uid_y);
  return g;
}

void check_against_reference(const Fp8Case& c) {
  const auto taken = dnngraph::test::take_case(c.text(), [c] { return make_graph(c); });
  dnngraph::test::BuiltCase& b = *taken;
  BOOST_REQUIRE_MESSAGE(b.built.has_value(), c.text() << ": build failed: " << describe(b.built));
  const auto info = b.graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));

  std::mt19937 rng(c.seed);
  const auto m = static_cast<std::size_t>(c.m);
  const auto n = static_cast<std::size_t>(c.n);
  const auto k = static_cast<std::size_t>(c.k);
  const std::vector<float> a = grid_values(c.a_type, m * k, rng);
  const std::vector<float> b_logical = grid_values(c.b_type, k * n, rng);  // [k][n]
  std::vector<std::byte> a_bytes(m * k);
  std::vector<std::byte> b_bytes(k * n);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a_bytes[i] = std::byte{fp8_bits(a[i], c.a_type)};
  }
  for (std::size_t p = 0; p < k; ++p) {
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t at = c.b_column_major ? j * k + p : p * n + j;
      b_bytes[at] = std::byte{fp8_bits(b_logical[p * n + j], c.b_type)};
    }
  }
  const dnngraph::test::MatmulShape shape{.a_dims = {1, c.m, c.k}, .b_dims = {1, c.k, c.n}};
  std::vector<double> expected =
      dnngraph::test::reference_matmul(shape, a, b_logical, {}, dnngraph::test::Epilogue::None);
  for (double& v : expected) {
    v *= descale;
  }

  DeviceBuffer a_dev = require_cuda(DeviceBuffer::copy_of(a_bytes), "A");
  DeviceBuffer b_dev = require_cuda(DeviceBuffer::copy_of(b_bytes), "B");
  std::vector<std::byte> y_bytes(m * n * static_cast<std::size_t>(dnngraph::size_of(c.out_type)));
  DeviceBuffer y_dev = require_cuda(DeviceBuffer::allocate(y_bytes.size()), "Y");
  require_cuda(y_dev.fill_bytes(0xFF), "fill Y");  // NaN: an unwritten element fails
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(info->workspace_size)), "workspace");
  const std::unordered_map<std::int64_t, void*> pack{
      {uid_a, a_dev.get()}, {uid_b, b_dev.get()}, {uid_y, y_dev.get()}};
  const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.text() << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  require_cuda(y_dev.download(std::span<std::byte>(y_bytes)), "Y");
  const std::vector<float> got = dnngraph::test::decode(c.out_type, y_bytes);
  // Exact Float sums, one rounding to the output: at most half an ulp, 2^-8 (BFloat16) or 2^-11
  // (Half) relative; the tolerance is twice that, plus an absolute part for values near 0.
  const dnngraph::test::Tolerance tolerance =
      c.out_type == DataType::BFloat16 ? dnngraph::test::Tolerance{.abs = 1e-2, .rel = 8e-3}
                                       : dnngraph::test::Tolerance{.abs = 2e-3, .rel = 1e-3};
  const auto comparison = dnngraph::test::compare(got, expected, tolerance);
  BOOST_TEST_MESSAGE(c.text() << ": " << comparison.describe() << "; plan: " << info->describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), c.text() << ": " << comparison.describe());
}

boost::unit_test::precondition builds(const Fp8Case& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_graph(c); });
}

namespace cases {
const Fp8Case e4m3_bf16{
    "fp8 matmul", DataType::Fp8E4M3, DataType::Fp8E4M3, DataType::BFloat16, 64, 64, 128, true, 401};
const Fp8Case e4m3_half_odd{
    "fp8 matmul", DataType::Fp8E4M3, DataType::Fp8E4M3, DataType::Half, 40, 72, 96, true, 402};
const Fp8Case e5m2_e4m3_bf16{
    "fp8 matmul", DataType::Fp8E5M2, DataType::Fp8E4M3, DataType::BFloat16, 64, 64, 128, true, 403};
const Fp8Case e5m2_bf16{
    "fp8 matmul", DataType::Fp8E5M2, DataType::Fp8E5M2, DataType::BFloat16, 48, 80, 64, true, 404};
const Fp8Case e4m3_b_row_major{
    "fp8 matmul", DataType::Fp8E4M3, DataType::Fp8E4M3, DataType::BFloat16, 64, 64, 128, false,
    405};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(fp8_matmul)
DNNGRAPH_REFERENCE_CASE(e4m3_to_bfloat16_matches_reference, cases::e4m3_bf16)
DNNGRAPH_REFERENCE_CASE(e4m3_to_half_odd_sizes_match_reference, cases::e4m3_half_odd)
DNNGRAPH_REFERENCE_CASE(e5m2_times_e4m3_to_bfloat16_matches_reference, cases::e5m2_e4m3_bf16)
DNNGRAPH_REFERENCE_CASE(e5m2_to_bfloat16_matches_reference, cases::e5m2_bf16)
DNNGRAPH_REFERENCE_CASE(e4m3_with_row_major_b_matches_reference, cases::e4m3_b_row_major)
BOOST_AUTO_TEST_SUITE_END()
