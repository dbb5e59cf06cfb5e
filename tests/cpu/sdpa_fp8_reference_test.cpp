// The host-side pieces the FP8 attention GPU tests stand on, checked without a GPU: the FP8
// conversions (support/fp8_types.hpp: every byte of both formats round-trips, ties go to even,
// large values saturate) and the CPU reference of the FP8 attention backward
// (support/sdpa_fp8_reference.hpp), whose gradients must be those of L = sum(O * dO) with the
// forward's exact O and Stats: checked against central finite differences of the forward in
// double on small shapes, with grouped-query attention and both masks.
#define BOOST_TEST_MODULE sdpa_fp8_reference
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/fp8_types.hpp"
#include "support/sdpa_fp8_reference.hpp"
#include "support/sdpa_reference.hpp"

using dnngraph::DataType;
using dnngraph::DiagonalAlignment;
using dnngraph::test::fp8_bits;
using dnngraph::test::fp8_value;
using dnngraph::test::Fp8Format;
using dnngraph::test::SdpaCase;

namespace {

std::vector<float> uniform(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> values(n);
  for (float& x : values) {
    x = dist(rng);
  }
  return values;
}

// L = sum over the valid rows of O * dO, O from the double forward reference.
double loss(const SdpaCase& c, const std::vector<float>& q, const std::vector<float>& k,
            const std::vector<float>& v, const std::vector<float>& d_o) {
  const auto e = dnngraph::test::sdpa_reference(c, q, k, v);
  double l = 0;
  for (std::size_t i = 0; i < e.o.size(); ++i) {
    l += e.row_valid[i / static_cast<std::size_t>(c.d)] ? e.o[i] * d_o[i] : 0.0;
  }
  return l;
}

// Each gradient of the reference against (L(x + h) - L(x - h)) / 2h at every element of x.
void matches_finite_differences(const SdpaCase& c) {
  std::mt19937 rng(c.seed);
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  std::vector<float> q = uniform(n(c.b * c.h_q * c.s_q * c.d), rng);
  std::vector<float> k = uniform(n(c.b * c.h_k * c.s_kv * c.d), rng);
  std::vector<float> v = uniform(n(c.b * c.h_k * c.s_kv * c.d), rng);
  const std::vector<float> d_o = uniform(q.size(), rng);
  const auto forward = dnngraph::test::sdpa_reference(c, q, k, v);
  const std::vector<float> o(forward.o.begin(), forward.o.end());
  const std::vector<float> stats(forward.stats.begin(), forward.stats.end());
  const auto e = dnngraph::test::sdpa_fp8_backward_reference(c, {q, k, v, o, d_o, stats});
  constexpr float h = 1e-2F;
  for (auto [x, gradient, name] :
       {std::tuple{&q, &e.dq.value, "dQ"}, std::tuple{&k, &e.dk.value, "dK"},
        std::tuple{&v, &e.dv.value, "dV"}}) {
    for (std::size_t i = 0; i < x->size(); ++i) {
      const float kept = (*x)[i];
      (*x)[i] = kept + h;
      const double up = loss(c, q, k, v, d_o);
      (*x)[i] = kept - h;
      const double down = loss(c, q, k, v, d_o);
      (*x)[i] = kept;
      const double numeric = (up - down) / (2.0 * h);
      BOOST_TEST(std::fabs((*gradient)[i] - numeric) <= 1e-3 + 1e-3 * std::fabs(numeric),
                 name << "[" << i << "] " << (*gradient)[i] << ", finite differences " << numeric);
    }
  }
}

SdpaCase tiny(std::int64_t h_k, std::optional<DiagonalAlignment> causal, std::uint32_t seed) {
  SdpaCase c;
  c.name = "tiny";
  c.type = DataType::Fp8E4M3;
  c.b = 2;
  c.h_q = 4;
  c.h_k = h_k;
  c.s_q = 3;
  c.s_kv = 5;
  c.d = 4;
  c.causal = causal;
  c.seed = seed;
  return c;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fp8_conversions)

BOOST_AUTO_TEST_CASE(every_byte_of_both_formats_round_trips) {
  for (const DataType type : {DataType::Fp8E4M3, DataType::Fp8E5M2}) {
    for (int bits = 0; bits < 256; ++bits) {
      const float value = fp8_value(type, static_cast<std::uint8_t>(bits));
      if (std::isfinite(value) && !(value == 0.0F && bits == 0x80)) {
        BOOST_TEST(fp8_bits(type, value) == bits, "byte " << bits << " is " << value);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_largest_values_and_the_special_bytes_are_the_formats) {
  BOOST_TEST(fp8_value(DataType::Fp8E4M3, 0x7E) == 448.0F);
  BOOST_TEST(std::isnan(fp8_value(DataType::Fp8E4M3, 0x7F)));
  BOOST_TEST(fp8_value(DataType::Fp8E5M2, 0x7B) == 57344.0F);
  BOOST_TEST(std::isinf(fp8_value(DataType::Fp8E5M2, 0x7C)));
  BOOST_TEST(std::isnan(fp8_value(DataType::Fp8E5M2, 0x7F)));
  BOOST_TEST(fp8_value(DataType::Fp8E4M3, 0x01) == std::ldexp(1.0F, -9));
  BOOST_TEST(fp8_value(DataType::Fp8E5M2, 0x01) == std::ldexp(1.0F, -16));
  BOOST_TEST(fp8_bits(DataType::Fp8E4M3, 1000.0F) == 0x7E);  // saturates
}

BOOST_AUTO_TEST_CASE(ties_round_to_even_and_the_bounds_hold_between_neighbours) {
  BOOST_TEST(fp8_value(DataType::Fp8E4M3, fp8_bits(DataType::Fp8E4M3, 1.0625F)) == 1.0F);
  BOOST_TEST(fp8_value(DataType::Fp8E4M3, fp8_bits(DataType::Fp8E4M3, 1.1875F)) == 1.25F);
  BOOST_TEST(fp8_value(DataType::Fp8E5M2, fp8_bits(DataType::Fp8E5M2, 1.125F)) == 1.0F);
  BOOST_TEST(fp8_value(DataType::Fp8E4M3, fp8_bits(DataType::Fp8E4M3, -0.75F / 512)) ==
             -1.0F / 512);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-400.0F, 400.0F);
  for (const DataType type : {DataType::Fp8E4M3, DataType::Fp8E5M2}) {
    const Fp8Format f = Fp8Format::of(type);
    for (int i = 0; i < 10000; ++i) {
      const float x = dist(rng) * std::ldexp(1.0F, -(i % 24));
      const double error = std::fabs(static_cast<double>(fp8_value(type, fp8_bits(type, x))) - x);
      BOOST_TEST(error <= f.relative_step() * std::fabs(x) + f.subnormal_error(), x);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_fp8_backward_reference)

BOOST_AUTO_TEST_CASE(its_gradients_are_those_of_the_forward) {
  matches_finite_differences(tiny(4, std::nullopt, 11));
}

BOOST_AUTO_TEST_CASE(with_grouped_query_attention_and_a_causal_mask_too) {
  matches_finite_differences(tiny(2, DiagonalAlignment::TopLeft, 12));
}

BOOST_AUTO_TEST_CASE(with_a_padding_mask_too) {
  SdpaCase c = tiny(1, DiagonalAlignment::TopLeft, 13);
  c.len_q = {3, 2};
  c.len_kv = {5, 3};
  matches_finite_differences(c);
}

BOOST_AUTO_TEST_CASE(its_amax_of_ds_is_the_largest_ds) {
  // dS = P (dP - D) scale: the gradient of the scores, whose amax is what cuDNN's Amax_dP holds.
  SdpaCase c = tiny(4, std::nullopt, 14);
  std::mt19937 rng(c.seed);
  const auto q_count = static_cast<std::size_t>(c.b * c.h_q * c.s_q * c.d);
  const auto kv_count = static_cast<std::size_t>(c.b * c.h_k * c.s_kv * c.d);
  const std::vector<float> q = uniform(q_count, rng);
  const std::vector<float> k = uniform(kv_count, rng);
  const std::vector<float> v = uniform(kv_count, rng);
  const std::vector<float> d_o = uniform(q_count, rng);
  const auto forward = dnngraph::test::sdpa_reference(c, q, k, v);
  const std::vector<float> o(forward.o.begin(), forward.o.end());
  const std::vector<float> stats(forward.stats.begin(), forward.stats.end());
  const auto e = dnngraph::test::sdpa_fp8_backward_reference(c, {q, k, v, o, d_o, stats});
  // dQ = dS K with |K| <= 1: |dQ| <= s_kv max |dS|; and dS is not all 0.
  BOOST_TEST(e.amax_ds > 0.0);
  double largest_dq = 0;
  for (const double x : e.dq.value) {
    largest_dq = std::max(largest_dq, std::fabs(x));
  }
  BOOST_TEST(largest_dq <= static_cast<double>(c.s_kv) * e.amax_ds);
}

BOOST_AUTO_TEST_SUITE_END()
