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
};

// CrossCorrelation (the default, what deep-learning frameworks call convolution) slides the
// filter as stored; Convolution flips it in every spatial dim first.
enum class ConvolutionMode : std::uint8_t { CrossCorrelation, Convolution };

[[nodiscard]] std::string_view to_string(DataType type) noexcept;
[[nodiscard]] std::string_view to_string(HeuristicMode mode) noexcept;
[[nodiscard]] std::string_view to_string(PointwiseMode mode) noexcept;
[[nodiscard]] std::string_view to_string(ConvolutionMode mode) noexcept;

// Bytes per element (fp8 types: 1).
[[nodiscard]] std::int64_t size_of(DataType type) noexcept;
// Number of inputs the mode takes: 1 or 2.
[[nodiscard]] int arity(PointwiseMode mode) noexcept;

}  // namespace dnngraph
