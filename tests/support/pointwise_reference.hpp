// CPU reference for every PointwiseMode in double, the input range each mode is tested on and
// the tolerance each mode is held to. Include after support/dnngraph.hpp (it names PointwiseMode).
#pragma once

#include "support/host_tensor.hpp"
#include "support/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <random>
#include <span>
#include <vector>

namespace dnngraph::test {

inline constexpr PointwiseMode all_pointwise_modes[] = {
    PointwiseMode::Add,          PointwiseMode::AddSquare,
    PointwiseMode::Sub,          PointwiseMode::Mul,
    PointwiseMode::Div,          PointwiseMode::Max,
    PointwiseMode::Min,          PointwiseMode::Mod,
    PointwiseMode::Pow,          PointwiseMode::Abs,
    PointwiseMode::Ceil,         PointwiseMode::Cos,
    PointwiseMode::Exp,          PointwiseMode::Floor,
    PointwiseMode::Log,          PointwiseMode::Neg,
    PointwiseMode::Rsqrt,        PointwiseMode::Sin,
    PointwiseMode::Sqrt,         PointwiseMode::Tan,
    PointwiseMode::Erf,          PointwiseMode::Identity,
    PointwiseMode::Reciprocal,   PointwiseMode::CmpEq,
    PointwiseMode::CmpNeq,       PointwiseMode::CmpGt,
    PointwiseMode::CmpGe,        PointwiseMode::CmpLt,
    PointwiseMode::CmpLe,        PointwiseMode::LogicalAnd,
    PointwiseMode::LogicalOr,    PointwiseMode::LogicalNot,
    PointwiseMode::ReluFwd,      PointwiseMode::TanhFwd,
    PointwiseMode::SigmoidFwd,   PointwiseMode::EluFwd,
    PointwiseMode::GeluFwd,      PointwiseMode::GeluApproxTanhFwd,
    PointwiseMode::SoftplusFwd,  PointwiseMode::SwishFwd,
    PointwiseMode::ReluBwd,      PointwiseMode::TanhBwd,
    PointwiseMode::SigmoidBwd,   PointwiseMode::EluBwd,
    PointwiseMode::GeluBwd,      PointwiseMode::GeluApproxTanhBwd,
    PointwiseMode::SoftplusBwd,  PointwiseMode::SwishBwd,
    PointwiseMode::BinarySelect,
};

enum class PointwiseFamily : std::uint8_t {
  Arithmetic,  // binary, numeric in and out
  UnaryMath,
  Comparison,  // numeric in, Boolean out
  Logical,     // Boolean in and out
  ActivationFwd,
  ActivationBwd,  // (dY, X) -> dX
  Select,         // (X, B, T) -> T ? X : B
};

[[nodiscard]] inline PointwiseFamily family(PointwiseMode mode) {
  switch (mode) {
    case PointwiseMode::Add:
    case PointwiseMode::AddSquare:
    case PointwiseMode::Sub:
    case PointwiseMode::Mul:
    case PointwiseMode::Div:
    case PointwiseMode::Max:
    case PointwiseMode::Min:
    case PointwiseMode::Mod:
    case PointwiseMode::Pow: return PointwiseFamily::Arithmetic;
    case PointwiseMode::CmpEq:
    case PointwiseMode::CmpNeq:
    case PointwiseMode::CmpGt:
    case PointwiseMode::CmpGe:
    case PointwiseMode::CmpLt:
    case PointwiseMode::CmpLe: return PointwiseFamily::Comparison;
    case PointwiseMode::LogicalAnd:
    case PointwiseMode::LogicalOr:
    case PointwiseMode::LogicalNot: return PointwiseFamily::Logical;
    case PointwiseMode::ReluFwd:
    case PointwiseMode::TanhFwd:
    case PointwiseMode::SigmoidFwd:
    case PointwiseMode::EluFwd:
    case PointwiseMode::GeluFwd:
    case PointwiseMode::GeluApproxTanhFwd:
    case PointwiseMode::SoftplusFwd:
    case PointwiseMode::SwishFwd: return PointwiseFamily::ActivationFwd;
    case PointwiseMode::ReluBwd:
    case PointwiseMode::TanhBwd:
    case PointwiseMode::SigmoidBwd:
    case PointwiseMode::EluBwd:
    case PointwiseMode::GeluBwd:
    case PointwiseMode::GeluApproxTanhBwd:
    case PointwiseMode::SoftplusBwd:
    case PointwiseMode::SwishBwd: return PointwiseFamily::ActivationBwd;
    case PointwiseMode::BinarySelect: return PointwiseFamily::Select;
    default: return PointwiseFamily::UnaryMath;
  }
}

namespace pointwise_detail {

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// sqrt(2 / pi), the constant of the tanh form of GELU.
inline constexpr double gelu_k = 0.7978845608028654;
inline constexpr double gelu_c = 0.044715;
inline double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(gelu_k * (x + gelu_c * x * x * x)));
}

}  // namespace pointwise_detail

// y = mode(x, b); for the backward modes x is dY and b is X. Comparisons and logical modes give
// 1 or 0 (Boolean operands are 0 or 1). Defaults as cuDNN's: ReLU clips at 0 only, ELU alpha 1,
// softplus beta 1, swish beta 1. BinarySelect is t ? x : b.
[[nodiscard]] inline double pointwise_reference(PointwiseMode mode, double x, double b = 0,
                                                bool t = false) {
  using pointwise_detail::gelu_c;
  using pointwise_detail::gelu_k;
  using pointwise_detail::sigmoid;
  const double dy = x;  // backward modes: (dY, X)
  const double xb = b;
  switch (mode) {
    case PointwiseMode::Add: return x + b;
    case PointwiseMode::AddSquare: return x + b * b;
    case PointwiseMode::Sub: return x - b;
    case PointwiseMode::Mul: return x * b;
    case PointwiseMode::Div: return x / b;
    case PointwiseMode::Max: return std::max(x, b);
    case PointwiseMode::Min: return std::min(x, b);
    case PointwiseMode::Mod: return std::fmod(x, b);
    case PointwiseMode::Pow: return std::pow(x, b);
    case PointwiseMode::Abs: return std::fabs(x);
    case PointwiseMode::Ceil: return std::ceil(x);
    case PointwiseMode::Cos: return std::cos(x);
    case PointwiseMode::Exp: return std::exp(x);
    case PointwiseMode::Floor: return std::floor(x);
    case PointwiseMode::Log: return std::log(x);
    case PointwiseMode::Neg: return -x;
    case PointwiseMode::Rsqrt: return 1.0 / std::sqrt(x);
    case PointwiseMode::Sin: return std::sin(x);
    case PointwiseMode::Sqrt: return std::sqrt(x);
    case PointwiseMode::Tan: return std::tan(x);
    case PointwiseMode::Erf: return std::erf(x);
    case PointwiseMode::Identity: return x;
    case PointwiseMode::Reciprocal: return 1.0 / x;
    case PointwiseMode::CmpEq: return x == b ? 1 : 0;
    case PointwiseMode::CmpNeq: return x != b ? 1 : 0;
    case PointwiseMode::CmpGt: return x > b ? 1 : 0;
    case PointwiseMode::CmpGe: return x >= b ? 1 : 0;
    case PointwiseMode::CmpLt: return x < b ? 1 : 0;
    case PointwiseMode::CmpLe: return x <= b ? 1 : 0;
    case PointwiseMode::LogicalAnd: return (x != 0 && b != 0) ? 1 : 0;
    case PointwiseMode::LogicalOr: return (x != 0 || b != 0) ? 1 : 0;
    case PointwiseMode::LogicalNot: return x != 0 ? 0 : 1;
    case PointwiseMode::ReluFwd: return std::max(x, 0.0);
    case PointwiseMode::TanhFwd: return std::tanh(x);
    case PointwiseMode::SigmoidFwd: return sigmoid(x);
    case PointwiseMode::EluFwd: return x > 0 ? x : std::expm1(x);
    case PointwiseMode::GeluFwd: return gelu(x);
    case PointwiseMode::GeluApproxTanhFwd: return pointwise_detail::gelu_tanh(x);
    case PointwiseMode::SoftplusFwd: return std::log1p(std::exp(x));
    case PointwiseMode::SwishFwd: return x * sigmoid(x);
    case PointwiseMode::ReluBwd: return xb > 0 ? dy : 0.0;
    case PointwiseMode::TanhBwd: {
      const double th = std::tanh(xb);
      return dy * (1.0 - th * th);
    }
    case PointwiseMode::SigmoidBwd: {
      const double s = sigmoid(xb);
      return dy * s * (1.0 - s);
    }
    case PointwiseMode::EluBwd: return dy * (xb > 0 ? 1.0 : std::exp(xb));
    case PointwiseMode::GeluBwd: {
      const double cdf = 0.5 * (1.0 + std::erf(xb / std::numbers::sqrt2));
      const double pdf = std::exp(-0.5 * xb * xb) / std::sqrt(2.0 * std::numbers::pi);
      return dy * (cdf + xb * pdf);
    }
    case PointwiseMode::GeluApproxTanhBwd: {
      const double th = std::tanh(gelu_k * (xb + gelu_c * xb * xb * xb));
      const double inner = gelu_k * (1.0 + 3.0 * gelu_c * xb * xb);
      return dy * (0.5 * (1.0 + th) + 0.5 * xb * (1.0 - th * th) * inner);
    }
    case PointwiseMode::SoftplusBwd: return dy * sigmoid(xb);
    case PointwiseMode::SwishBwd: {
      const double s = sigmoid(xb);
      return dy * (s + xb * s * (1.0 - s));
    }
    case PointwiseMode::BinarySelect: return t ? x : b;
  }
  return 0;
}

// Where a mode's operands are drawn from: uniform in [lo, hi], |value| >= min_abs (kept away
// from a pole or a kink), or from {-1, -0.5, 0, 0.5, 1} where ties must happen (comparisons).
struct OperandRange {
  double lo = -1;
  double hi = 1;
  double min_abs = 0;
  bool grid = false;
};

// Range of the first operand (X; dY for backward modes).
[[nodiscard]] inline OperandRange x_range(PointwiseMode mode) {
  switch (mode) {
    case PointwiseMode::Log:
    case PointwiseMode::Sqrt:
    case PointwiseMode::Rsqrt: return {.lo = 0.1, .hi = 4};
    case PointwiseMode::Pow: return {.lo = 0.25, .hi = 2};
    case PointwiseMode::Reciprocal: return {.lo = -4, .hi = 4, .min_abs = 0.25};
    case PointwiseMode::Tan: return {.lo = -1.2, .hi = 1.2};
    case PointwiseMode::Mod:
    case PointwiseMode::Ceil:
    case PointwiseMode::Floor:
    case PointwiseMode::Cos:
    case PointwiseMode::Sin:
    case PointwiseMode::Exp:
    case PointwiseMode::Erf: return {.lo = -3, .hi = 3};
    default: break;
  }
  switch (family(mode)) {
    case PointwiseFamily::Comparison: return {.grid = true};
    case PointwiseFamily::ActivationFwd: return {.lo = -4, .hi = 4, .min_abs = 0.05};
    default: return {.lo = -2, .hi = 2};
  }
}

// Range of the second operand (B; X for backward modes, kept off the ReLU/ELU kink at 0).
[[nodiscard]] inline OperandRange b_range(PointwiseMode mode) {
  switch (mode) {
    case PointwiseMode::Div: return {.lo = -2, .hi = 2, .min_abs = 0.25};
    case PointwiseMode::Mod: return {.lo = 0.5, .hi = 2};
    case PointwiseMode::Pow: return {.lo = -2, .hi = 2};
    default: break;
  }
  switch (family(mode)) {
    case PointwiseFamily::Comparison: return {.grid = true};
    case PointwiseFamily::ActivationBwd: return {.lo = -4, .hi = 4, .min_abs = 0.05};
    default: return {.lo = -2, .hi = 2};
  }
}

// The value a double becomes when stored as `type` (Half, BFloat16 or Float).
[[nodiscard]] inline float round_to(DataType type, double value) {
  const auto f = static_cast<float>(value);
  switch (type) {
    case DataType::Half: return round_to_half(f);
    case DataType::BFloat16: return round_to_bfloat16(f);
    default: return f;
  }
}

// count values drawn from range, rounded to `type`; a value that rounding pushes under min_abs
// is drawn again.
[[nodiscard]] inline std::vector<float> draw(DataType type, const OperandRange& range,
                                             std::size_t count, std::mt19937& rng) {
  std::vector<float> values;
  values.reserve(count);
  if (range.grid) {
    std::uniform_int_distribution<int> pick(-2, 2);
    for (std::size_t i = 0; i < count; ++i) {
      values.push_back(static_cast<float>(pick(rng)) * 0.5F);
    }
    return values;
  }
  std::uniform_real_distribution<double> dist(range.lo, range.hi);
  while (values.size() < count) {
    const float v = round_to(type, dist(rng));
    if (std::fabs(v) >= range.min_abs) {
      values.push_back(v);
    }
  }
  return values;
}

// The bytes the device reads for values already exact in `type` (Half, BFloat16 or Float).
[[nodiscard]] inline HostTensor encode(DataType type, std::span<const float> values) {
  HostTensor t;
  t.values.assign(values.begin(), values.end());
  t.bytes.resize(values.size() * static_cast<std::size_t>(size_of(type)));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (type == DataType::Half || type == DataType::BFloat16) {
      const std::uint16_t bits =
          type == DataType::Half ? float_to_half(values[i]) : float_to_bfloat16(values[i]);
      std::memcpy(t.bytes.data() + i * sizeof bits, &bits, sizeof bits);
    } else {
      std::memcpy(t.bytes.data() + i * sizeof(float), &values[i], sizeof(float));
    }
  }
  return t;
}

// Mod's result jumps by b where x / b crosses an integer; cuDNN may compute x - b * trunc(x / b)
// with a rounded quotient, so x is moved (and re-rounded) until x / b is 0.01 away from one.
inline void keep_off_mod_jumps(DataType type, std::vector<float>& x, std::span<const float> b) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double divisor = b[i % b.size()];
    for (int step = 0; step < 100; ++step) {
      const double q = static_cast<double>(x[i]) / divisor;
      if (std::fabs(q - std::round(q)) >= 0.01) {
        break;
      }
      x[i] = round_to(type, x[i] + 0.05 * divisor);
    }
  }
}

// Tolerance for the result of `mode` stored in `out` with Float math. Output rounding: fp16
// 2^-11 relative, bf16 2^-8, fp32 2^-24. Exact operations (arithmetic, min/max, abs, neg,
// ceil/floor, identity, comparisons) get a few output roundings. Transcendental and activation
// modes may run on fast approximations (e.g. tanh.approx.f32 is good to ~2^-11 relative), so they
// get 2e-3 absolute + 2e-3 relative in fp32 and fp16, 1e-2 in bf16. The tanh and erf forms of GELU
// differ by up to ~5e-4 (x near +-2), so these tolerances do not tell them apart: the modes are
// each compared with their own formula.
[[nodiscard]] inline Tolerance pointwise_tolerance(PointwiseMode mode, DataType out) {
  const double rounding = out == DataType::Half       ? 0x1p-11
                          : out == DataType::BFloat16 ? 0x1p-8
                                                      : 0x1p-23;
  bool exact = false;
  switch (mode) {
    case PointwiseMode::Add:
    case PointwiseMode::AddSquare:
    case PointwiseMode::Sub:
    case PointwiseMode::Mul:
    case PointwiseMode::Div:
    case PointwiseMode::Max:
    case PointwiseMode::Min:
    case PointwiseMode::Mod:
    case PointwiseMode::Abs:
    case PointwiseMode::Ceil:
    case PointwiseMode::Floor:
    case PointwiseMode::Neg:
    case PointwiseMode::Identity:
    case PointwiseMode::ReluFwd:
    case PointwiseMode::ReluBwd:
    case PointwiseMode::BinarySelect: exact = true; break;
    default:
      exact =
          family(mode) == PointwiseFamily::Comparison || family(mode) == PointwiseFamily::Logical;
  }
  if (mode == PointwiseMode::Mod) {
    // x - b * trunc(x / b) in fp32 loses up to an ulp of |x| <= 3.2 before the output rounds.
    return {.abs = 4 * rounding + 4 * 0x1p-23, .rel = 4 * rounding};
  }
  if (exact) {
    // Div may use a fast reciprocal (2 ulp of fp32), far below one fp16 rounding.
    return {.abs = 4 * rounding, .rel = 4 * rounding};
  }
  const double loose = out == DataType::BFloat16 ? 1e-2 : 2e-3;
  return {.abs = loose, .rel = loose};
}

}  // namespace dnngraph::test
