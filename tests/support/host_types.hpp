// Host-side fp16 (IEEE binary16) and bf16 conversions for test data: float -> 16 bits rounds to
// nearest, ties to even; subnormals, infinities and NaNs survive both ways. No CUDA headers.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace dnngraph::test {

[[nodiscard]] inline std::uint16_t float_to_half(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
  const std::uint32_t magnitude = bits & 0x7FFF'FFFFU;
  if (magnitude > 0x7F80'0000U) {
    // Keep the top of the payload; the quiet bit makes sure the result is still a NaN.
    return static_cast<std::uint16_t>(sign | 0x7E00U | ((magnitude >> 13) & 0x03FFU));
  }
  // 65520 = 65504 + half an ulp: from there on, round to nearest gives infinity.
  if (magnitude >= 0x477F'F000U) {
    return static_cast<std::uint16_t>(sign | 0x7C00U);
  }
  const std::uint32_t exponent = magnitude >> 23;
  if (exponent >= 113) {
    // Normal half: rebias the exponent (127 -> 15), then round the 13 dropped mantissa bits; a
    // carry out of the mantissa correctly bumps the exponent.
    std::uint32_t rebiased = magnitude - (112U << 23);
    rebiased += 0x0FFFU + ((rebiased >> 13) & 1U);
    return static_cast<std::uint16_t>(sign | (rebiased >> 13));
  }
  // Half subnormals are k * 2^-24. Below 2^-25 (exponent 102) everything rounds to zero, and
  // 2^-25 itself is a tie that goes to the even 0.
  if (exponent < 102) {
    return sign;
  }
  const std::uint32_t mantissa = (magnitude & 0x007F'FFFFU) | 0x0080'0000U;
  const std::uint32_t shift = 126 - exponent;  // 14..24
  std::uint32_t k = mantissa >> shift;
  const std::uint32_t rest = mantissa & ((1U << shift) - 1U);
  const std::uint32_t halfway = 1U << (shift - 1U);
  if (rest > halfway || (rest == halfway && (k & 1U) != 0U)) {
    ++k;  // k == 0x400 is the smallest normal half, encoded correctly as is
  }
  return static_cast<std::uint16_t>(sign | k);
}

[[nodiscard]] inline float half_to_float(std::uint16_t half) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000U) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1FU;
  const std::uint32_t mantissa = half & 0x03FFU;
  if (exponent == 0) {
    // Subnormal or zero: mantissa * 2^-24 is exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) {
    return std::bit_cast<float>(sign | 0x7F80'0000U | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112U) << 23) | (mantissa << 13));
}

// bf16 is the upper half of a float, so only rounding and NaN need care.
[[nodiscard]] inline std::uint16_t float_to_bfloat16(float value) noexcept {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7FFF'FFFFU) > 0x7F80'0000U) {
    // Rounding a NaN whose payload sits in the low 16 bits would give infinity; set the quiet bit.
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040U);
  }
  bits += 0x7FFFU + ((bits >> 16) & 1U);  // overflow past the largest finite gives infinity
  return static_cast<std::uint16_t>(bits >> 16);
}

[[nodiscard]] inline float bfloat16_to_float(std::uint16_t bf16) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bf16) << 16);
}

// The value a float becomes when stored as fp16 or bf16: the exact input of a reference.
[[nodiscard]] inline float round_to_half(float value) noexcept {
  return half_to_float(float_to_half(value));
}
[[nodiscard]] inline float round_to_bfloat16(float value) noexcept {
  return bfloat16_to_float(float_to_bfloat16(value));
}

}  // namespace dnngraph::test
