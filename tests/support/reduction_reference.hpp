// CPU reference for a reduction in double: Y = mode(X) over the dims where Y has extent 1 and X
// does not, both packed row-major. Inputs are the exact values the GPU sees (already rounded to
// their storage type), so the only differences left are the GPU's own rounding.
// Include after support/dnngraph.hpp (it names ReductionMode).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace dnngraph::test {

// Packed row-major Y of y_dims from packed row-major X of x_dims (same rank; each Y dim is the X
// dim or 1). T is float (device inputs) or double (another reference's output). Sizes must match
// the dims; the caller checks that.
template <class T>
[[nodiscard]] std::vector<double> reference_reduction(std::span<const T> x,
                                                      const std::vector<std::int64_t>& x_dims,
                                                      const std::vector<std::int64_t>& y_dims,
                                                      ReductionMode mode) {
  std::size_t y_count = 1;
  for (const std::int64_t d : y_dims) {
    y_count *= static_cast<std::size_t>(d);
  }
  const std::size_t reduced_count = x.size() / y_count;
  double start = 0;
  switch (mode) {
    case ReductionMode::Mul:
    case ReductionMode::MulNoZeros: start = 1; break;
    case ReductionMode::Min: start = std::numeric_limits<double>::infinity(); break;
    case ReductionMode::Max: start = -std::numeric_limits<double>::infinity(); break;
    default: start = 0; break;  // Amax starts at 0: it takes |x|
  }
  std::vector<double> y(y_count, start);
  const std::size_t rank = x_dims.size();
  for (std::size_t i = 0; i < x.size(); ++i) {
    // X's flat index -> coordinates -> Y's flat index, a reduced dim reading coordinate 0.
    std::size_t rest = i;
    std::size_t y_index = 0;
    std::size_t y_scale = 1;
    for (std::size_t d = rank; d-- > 0;) {
      const auto extent = static_cast<std::size_t>(x_dims[d]);
      const std::size_t coordinate = rest % extent;
      rest /= extent;
      const auto y_extent = static_cast<std::size_t>(y_dims[d]);
      y_index += (y_extent == 1 ? 0 : coordinate) * y_scale;
      y_scale *= y_extent;
    }
    const auto v = static_cast<double>(x[i]);
    double& acc = y[y_index];
    switch (mode) {
      case ReductionMode::Add:
      case ReductionMode::Avg: acc += v; break;
      case ReductionMode::Mul: acc *= v; break;
      case ReductionMode::MulNoZeros: acc *= (v == 0 ? 1.0 : v); break;
      case ReductionMode::Min: acc = std::fmin(acc, v); break;
      case ReductionMode::Max: acc = std::fmax(acc, v); break;
      case ReductionMode::Amax: acc = std::fmax(acc, std::fabs(v)); break;
      case ReductionMode::Norm1: acc += std::fabs(v); break;
      case ReductionMode::Norm2: acc += v * v; break;
    }
  }
  for (double& value : y) {
    if (mode == ReductionMode::Avg) {
      value /= static_cast<double>(reduced_count);
    } else if (mode == ReductionMode::Norm2) {
      value = std::sqrt(value);
    }
  }
  return y;
}

}  // namespace dnngraph::test
