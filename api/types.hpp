// The strong enums of the API: data types, heuristic modes, pointwise and convolution modes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dnngraph {

enum class DataType : std::uint8_t {
  Half,
  BFloat16,
  Float,
  Double,
  Int8,
  Int32,
  Int64,
  Uint8,
  Boolean,
  Fp8E4M3,
  Fp8E5M2,
};

enum class HeuristicMode : std::uint8_t { A, B, Fallback };

enum class PointwiseMode : std::uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  ReluFwd,
  GeluFwd,
  SigmoidFwd,
  TanhFwd,
  SwishFwd,  // SiLU: x * sigmoid(beta * x), beta = 1 unless set
  Identity,
  // The values above keep their numbers; the rest of cuDNN's set follows, by family.
  // Binary arithmetic: AddSquare is x + b * b, Mod is fmod(x, b), Pow is x^b.
  AddSquare,
  Mod,
  Pow,
  // Unary math.
  Abs,
  Ceil,
  Cos,
  Exp,
  Floor,
  Log,
  Neg,
  Rsqrt,
  Sin,
  Sqrt,
  Tan,
  Erf,
  Reciprocal,
  // Comparisons of x with b; the output is Boolean unless its data type is set.
  CmpEq,
  CmpNeq,
  CmpGt,
  CmpGe,
  CmpLt,
  CmpLe,
  // Logical: Boolean inputs, Boolean output unless set.
  LogicalAnd,
  LogicalOr,
  LogicalNot,
  // Forward activations besides those above. GeluFwd is the erf form; this is the tanh one.
  EluFwd,
  GeluApproxTanhFwd,
  SoftplusFwd,
  // Backward activations: dX = dY * f'(X), called as pointwise(dy, x, ...); the output is dX.
  ReluBwd,
  TanhBwd,
  SigmoidBwd,
  EluBwd,
  GeluBwd,
  GeluApproxTanhBwd,
  SoftplusBwd,
  SwishBwd,
  // y = t ? x : b, called as pointwise(x, b, t, ...) with t Boolean.
  BinarySelect,
};

// CrossCorrelation (the default, what deep-learning frameworks call convolution) slides the
// filter as stored; Convolution flips it in every spatial dim first.
enum class ConvolutionMode : std::uint8_t { CrossCorrelation, Convolution };

// to_string's answer for a value that is none of the enumerators (an integer cast to the enum).
inline constexpr std::string_view unknown_enumerator = "Unknown";

[[nodiscard]] std::string_view to_string(DataType type) noexcept;
[[nodiscard]] std::string_view to_string(HeuristicMode mode) noexcept;
[[nodiscard]] std::string_view to_string(PointwiseMode mode) noexcept;
[[nodiscard]] std::string_view to_string(ConvolutionMode mode) noexcept;

// Whether the value is one of the enumerators. A value cast from an integer may be none, and
// lowering would give cuDNN some other value for it (DataType(77) became FLOAT): validate()
// refuses such values where the user gave them.
[[nodiscard]] bool is_known(DataType type) noexcept;
[[nodiscard]] bool is_known(HeuristicMode mode) noexcept;
[[nodiscard]] bool is_known(PointwiseMode mode) noexcept;
[[nodiscard]] bool is_known(ConvolutionMode mode) noexcept;

// Bytes per element (fp8 types: 1).
[[nodiscard]] std::int64_t size_of(DataType type) noexcept;
// Number of inputs the mode takes: 1, 2 or 3 (BinarySelect).
[[nodiscard]] int arity(PointwiseMode mode) noexcept;

}  // namespace dnngraph
