// The CPU reference of the FP8 attention backward (sdpa_fp8_backward) in double, from the
// dequantized inputs the engine reads (Q, K, V, O, dO as their FP8 values times their descales,
// Stats as the Float it is given): the gradients, and per element the sums the GPU test's error
// bound is made of (tests/gpu/sdpa_fp8_backward_test.cpp argues it). With the forward's exact O
// and Stats the gradients are those of L = sum(O * dO) (tests/cpu/sdpa_fp8_reference_test.cpp
// checks them by finite differences). Include after support/dnngraph.hpp.
#pragma once

#include "support/sdpa_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dnngraph::test {

// One gradient, [b, h, s, d] packed, and per element: `rounded`, the sum of |a| |b| over the terms
// whose A operand the engine rounds to FP8 (P for dV, dS for dQ and dK); `count`, the sum of |b|
// over those terms whose A is not masked (what a subnormal rounding of A can move);
// `magnitude`, the sum of the terms' magnitudes before cancellation (what Float arithmetic in the
// engine rounds).
struct GradientTerms {
  std::vector<double> value, rounded, count, magnitude;

  explicit GradientTerms(std::size_t n) : value(n), rounded(n), count(n), magnitude(n) {}
  void add(std::size_t at, double a, double b, double a_magnitude) {
    value[at] += a * b;
    rounded[at] += std::fabs(a) * std::fabs(b);
    count[at] += std::fabs(b);
    magnitude[at] += a_magnitude * std::fabs(b);
  }
};

struct Fp8BackwardExpected {
  GradientTerms dq, dk, dv;
  double amax_ds = 0;              // max |dS| (the engine's Amax_dP), before scale_dP
  std::vector<bool> q_row_valid;   // [b, h_q, s_q]: a query row inside its batch's length
  std::vector<bool> kv_row_valid;  // [b, h_k, s_kv]: a key row inside its batch's length
};

// The dequantized inputs, [b, h, s, d] order (K and V of h_k heads), and Stats [b, h_q, s_q].
struct Fp8BackwardInputs {
  const std::vector<float>&q, &k, &v, &o, &d_o, &stats;
};

// D = rowsum(dO * O); P = exp(scale Q K^T + masks - Stats); dV = P^T dO; dP = dO V^T;
// dS = P (dP - D) scale; dQ = dS K; dK = dS^T Q; query head h reads and writes K/V head
// h / (h_q / h_k) (dK and dV summed over each group).
inline Fp8BackwardExpected sdpa_fp8_backward_reference(const SdpaCase& c,
                                                       const Fp8BackwardInputs& in) {
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  const std::size_t q_count = n(c.b * c.h_q * c.s_q * c.d);
  const std::size_t kv_count = n(c.b * c.h_k * c.s_kv * c.d);
  Fp8BackwardExpected e{GradientTerms(q_count),
                        GradientTerms(kv_count),
                        GradientTerms(kv_count),
                        0,
                        std::vector<bool>(n(c.b * c.h_q * c.s_q), false),
                        std::vector<bool>(n(c.b * c.h_k * c.s_kv), false)};
  const std::int64_t group = c.h_q / c.h_k;
  const double scale = c.scale();
  std::vector<double> p(n(c.s_kv));
  std::vector<double> ds(n(c.s_kv));
  std::vector<double> ds_magnitude(n(c.s_kv));
  std::vector<bool> keep(n(c.s_kv));
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    const std::int64_t lq = c.padded() ? c.len_q[n(bi)] : c.s_q;
    const std::int64_t lkv = c.padded() ? c.len_kv[n(bi)] : c.s_kv;
    for (std::int64_t hk = 0; hk < c.h_k; ++hk) {
      for (std::int64_t j = 0; j < lkv; ++j) {
        e.kv_row_valid[n((bi * c.h_k + hk) * c.s_kv + j)] = true;
      }
    }
    for (std::int64_t h = 0; h < c.h_q; ++h) {
      const std::int64_t hk = h / group;
      const auto kv_at = [&](std::int64_t j, std::int64_t x) {
        return n(((bi * c.h_k + hk) * c.s_kv + j) * c.d + x);
      };
      for (std::int64_t i = 0; i < lq; ++i) {
        const std::size_t row = n((bi * c.h_q + h) * c.s_q + i);
        const auto q_at = [&](std::int64_t x) { return row * n(c.d) + n(x); };
        double d_sum = 0;
        for (std::int64_t x = 0; x < c.d; ++x) {
          d_sum += static_cast<double>(in.d_o[q_at(x)]) * in.o[q_at(x)];
        }
        bool any = false;
        for (std::int64_t j = 0; j < c.s_kv; ++j) {
          keep[n(j)] = j < lkv && (c.causal != DiagonalAlignment::TopLeft || j <= i);
          if (!keep[n(j)]) {
            p[n(j)] = 0;
            ds[n(j)] = 0;
            ds_magnitude[n(j)] = 0;
            continue;
          }
          any = true;
          double qk = 0;
          double dp = 0;
          double dp_magnitude = 0;
          for (std::int64_t x = 0; x < c.d; ++x) {
            qk += static_cast<double>(in.q[q_at(x)]) * in.k[kv_at(j, x)];
            const double term = static_cast<double>(in.d_o[q_at(x)]) * in.v[kv_at(j, x)];
            dp += term;
            dp_magnitude += std::fabs(term);
          }
          p[n(j)] = std::exp(qk * scale - static_cast<double>(in.stats[row]));
          ds[n(j)] = p[n(j)] * (dp - d_sum) * scale;
          ds_magnitude[n(j)] = p[n(j)] * (dp_magnitude + std::fabs(d_sum)) * scale;
          e.amax_ds = std::max(e.amax_ds, std::fabs(ds[n(j)]));
        }
        e.q_row_valid[row] = any;
        for (std::int64_t j = 0; j < c.s_kv; ++j) {
          if (!keep[n(j)]) {
            continue;
          }
          for (std::int64_t x = 0; x < c.d; ++x) {
            e.dv.add(kv_at(j, x), p[n(j)], in.d_o[q_at(x)], p[n(j)]);
            e.dq.add(q_at(x), ds[n(j)], in.k[kv_at(j, x)], ds_magnitude[n(j)]);
            e.dk.add(kv_at(j, x), ds[n(j)], in.q[q_at(x)], ds_magnitude[n(j)]);
          }
        }
      }
    }
  }
  return e;
}

}  // namespace dnngraph::test
