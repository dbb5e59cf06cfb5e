// What the attention examples share: BFloat16 by hand, and one causal row of attention in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace dnngraph_example {

// bf16 is the upper half of an fp32 (round to nearest even; the inputs here are finite).
inline std::uint16_t to_bf16(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>(bits >> 16);
}

inline float from_bf16(std::uint16_t v) {
  const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Query row i of causal attention (keys 0..i) in double: q points at the row's d values,
// key(j) and value(j) at key j's and value j's. Writes the d outputs to `out` and returns the
// row's log-sum-exp (what Stats holds).
template <class Row>
double causal_row(const std::uint16_t* q, std::int64_t i, std::int64_t d, const Row& key,
                  const Row& value, std::vector<double>& out) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> p(static_cast<std::size_t>(i + 1));
  double max = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j <= i; ++j) {
    const std::uint16_t* k = key(j);
    double dot = 0;
    for (std::int64_t x = 0; x < d; ++x) {
      dot += static_cast<double>(from_bf16(q[x])) * from_bf16(k[x]);
    }
    p[j] = dot * scale;
    max = std::max(max, p[j]);
  }
  double sum = 0;
  for (double& e : p) {
    e = std::exp(e - max);
    sum += e;
  }
  out.assign(static_cast<std::size_t>(d), 0.0);
  for (std::int64_t j = 0; j <= i; ++j) {
    const std::uint16_t* v = value(j);
    for (std::int64_t x = 0; x < d; ++x) {
      out[x] += p[j] / sum * from_bf16(v[x]);
    }
  }
  return max + std::log(sum);
}

}  // namespace dnngraph_example
