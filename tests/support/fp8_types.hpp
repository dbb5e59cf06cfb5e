// Host-side FP8 conversions for test data, both formats cuDNN's FP8 engines take: E4M3 ("fn": 4
// exponent bits, bias 7, 3 mantissa bits, largest 448, no infinity, NaN S.1111.111) and E5M2 (5,
// 15, 2, largest 57344, IEEE infinities and NaNs). float -> byte rounds to nearest, ties to even;
// magnitudes past the largest saturate to it (the scaled data of the tests never gets there).
// Also the rounding bounds the GPU tests argue their tolerances from. Include after
// support/dnngraph.hpp (it names DataType).
#pragma once

#include <cmath>
#include <cstdint>

namespace dnngraph::test {

// The layout of one FP8 format.
struct Fp8Format {
  int mantissa_bits;
  int bias;
  float largest;

  // E4M3 for Fp8E4M3, E5M2 for any other type (Fp8E5M2).
  [[nodiscard]] static Fp8Format of(DataType type) noexcept {
    return type == DataType::Fp8E4M3 ? Fp8Format{3, 7, 448.0F} : Fp8Format{2, 15, 57344.0F};
  }
  // The smallest normal magnitude: 2^(1 - bias).
  [[nodiscard]] float smallest_normal() const noexcept { return std::ldexp(1.0F, 1 - bias); }
  // A normal rounding moves a value by at most this fraction of itself: 2^-(m + 1).
  [[nodiscard]] double relative_step() const noexcept {
    return std::ldexp(1.0, -mantissa_bits - 1);
  }
  // A subnormal rounding moves a value by at most half the subnormal spacing: 2^(-bias - m).
  [[nodiscard]] double subnormal_error() const noexcept {
    return std::ldexp(1.0, -bias - mantissa_bits);
  }
};

[[nodiscard]] inline float fp8_value(DataType type, std::uint8_t bits) noexcept {
  const Fp8Format f = Fp8Format::of(type);
  const int exponent_bits = 7 - f.mantissa_bits;
  const int top = (1 << exponent_bits) - 1;
  const int exponent = (bits >> f.mantissa_bits) & top;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  const bool negative = (bits & 0x80) != 0;
  float magnitude = 0;
  if (f.mantissa_bits == 3 && exponent == top && mantissa == 7) {
    return std::nanf("");
  }
  if (f.mantissa_bits == 2 && exponent == top) {
    if (mantissa != 0) {
      return std::nanf("");
    }
    magnitude = INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    magnitude = std::ldexp(1.0F + std::ldexp(static_cast<float>(mantissa), -f.mantissa_bits),
                           exponent - f.bias);
  }
  return negative ? -magnitude : magnitude;
}

// The byte nearest v (ties to even); beyond the largest value, the largest.
[[nodiscard]] inline std::uint8_t fp8_bits(DataType type, float v) noexcept {
  const Fp8Format f = Fp8Format::of(type);
  const auto sign = static_cast<std::uint8_t>(std::signbit(v) ? 0x80 : 0);
  const float magnitude = std::fmin(std::fabs(v), f.largest);
  if (magnitude < f.smallest_normal()) {
    // Subnormal: multiples of 2^(1 - bias - m); 2^m of them is the smallest normal, whose code
    // is that count.
    const float steps = std::nearbyint(std::ldexp(magnitude, f.bias - 1 + f.mantissa_bits));
    return static_cast<std::uint8_t>(sign | static_cast<int>(steps));
  }
  int e = 0;
  static_cast<void>(std::frexp(magnitude, &e));  // magnitude in [2^(e-1), 2^e)
  const int one = 1 << f.mantissa_bits;
  const auto steps =
      static_cast<int>(std::nearbyint(std::ldexp(magnitude, f.mantissa_bits + 1 - e)));
  const int exponent = e - 1 + f.bias + (steps == 2 * one ? 1 : 0);
  const int mantissa = steps == 2 * one ? 0 : steps - one;
  return static_cast<std::uint8_t>(sign | (exponent << f.mantissa_bits) | mantissa);
}

// v rounded to the format, as a float.
[[nodiscard]] inline float round_to_fp8(DataType type, float v) noexcept {
  return fp8_value(type, fp8_bits(type, v));
}

}  // namespace dnngraph::test
