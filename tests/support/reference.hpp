// CPU reference for batched matmul (+ bias, + ReLU or GELU) in double, and the comparison of a
// GPU result with it. Inputs are the exact values the GPU sees (already rounded to their storage
// type), so the only differences left are the GPU's own rounding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dnngraph::test {

enum class Epilogue : std::uint8_t { None, Relu, Gelu };

// Packed row-major A [batch..., M, K] and B [batch..., K, N] of equal rank (>= 3); each batch dim
// pair is equal or one of them is 1 (broadcast).
struct MatmulShape {
  std::vector<std::int64_t> a_dims;
  std::vector<std::int64_t> b_dims;

  [[nodiscard]] std::size_t rank() const noexcept { return a_dims.size(); }
  [[nodiscard]] std::int64_t m() const { return a_dims[rank() - 2]; }
  [[nodiscard]] std::int64_t k() const { return a_dims[rank() - 1]; }
  [[nodiscard]] std::int64_t n() const { return b_dims[rank() - 1]; }
  // [max(batch)..., M, N]
  [[nodiscard]] std::vector<std::int64_t> c_dims() const {
    std::vector<std::int64_t> dims(rank());
    for (std::size_t i = 0; i + 2 < rank(); ++i) {
      dims[i] = std::max(a_dims[i], b_dims[i]);
    }
    dims[rank() - 2] = m();
    dims[rank() - 1] = n();
    return dims;
  }
  // [1..., 1, N]: one bias value per output column.
  [[nodiscard]] std::vector<std::int64_t> bias_dims() const {
    std::vector<std::int64_t> dims(rank(), 1);
    dims[rank() - 1] = n();
    return dims;
  }
};

[[nodiscard]] inline std::size_t element_count(const std::vector<std::int64_t>& dims) {
  std::size_t count = 1;
  for (const std::int64_t d : dims) {
    count *= static_cast<std::size_t>(d);
  }
  return count;
}

// GELU in its exact (erf) form, which is what CUDNN_POINTWISE_GELU_FWD computes; the tanh
// approximation is a different mode (GELU_APPROX_TANH_FWD).
[[nodiscard]] inline double gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// epilogue(A x B + bias), bias empty for none (else N values). Returns C packed row-major in
// shape.c_dims(). Sizes must match the shape; the caller checks that.
[[nodiscard]] inline std::vector<double> reference_matmul(const MatmulShape& shape,
                                                          std::span<const float> a,
                                                          std::span<const float> b,
                                                          std::span<const float> bias,
                                                          Epilogue epilogue) {
  const std::vector<std::int64_t> c_dims = shape.c_dims();
  const std::size_t batch_rank = shape.rank() - 2;
  const auto m = static_cast<std::size_t>(shape.m());
  const auto k = static_cast<std::size_t>(shape.k());
  const auto n = static_cast<std::size_t>(shape.n());
  const std::size_t batches = element_count(c_dims) / (m * n);
  std::vector<double> c(batches * m * n);
  for (std::size_t batch = 0; batch < batches; ++batch) {
    // Output batch index -> the A and B batch it reads; a dim of 1 always reads index 0.
    std::size_t rest = batch;
    std::size_t a_batch = 0;
    std::size_t b_batch = 0;
    std::size_t a_scale = 1;
    std::size_t b_scale = 1;
    for (std::size_t i = batch_rank; i-- > 0;) {
      const auto extent = static_cast<std::size_t>(c_dims[i]);
      const std::size_t index = rest % extent;
      rest /= extent;
      const auto a_extent = static_cast<std::size_t>(shape.a_dims[i]);
      const auto b_extent = static_cast<std::size_t>(shape.b_dims[i]);
      a_batch += (a_extent == 1 ? 0 : index) * a_scale;
      b_batch += (b_extent == 1 ? 0 : index) * b_scale;
      a_scale *= a_extent;
      b_scale *= b_extent;
    }
    const float* a_mat = a.data() + a_batch * m * k;
    const float* b_mat = b.data() + b_batch * k * n;
    double* c_mat = c.data() + batch * m * n;
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::size_t p = 0; p < k; ++p) {
          sum += static_cast<double>(a_mat[i * k + p]) * static_cast<double>(b_mat[p * n + j]);
        }
        if (!bias.empty()) {
          sum += static_cast<double>(bias[j]);
        }
        switch (epilogue) {
          case Epilogue::None: break;
          case Epilogue::Relu: sum = std::max(sum, 0.0); break;
          case Epilogue::Gelu: sum = gelu(sum); break;
        }
        c_mat[i * n + j] = sum;
      }
    }
  }
  return c;
}

// An element passes when |got - expected| <= abs + rel * |expected|.
struct Tolerance {
  double abs = 0;
  double rel = 0;
};

struct Comparison {
  std::size_t count = 0;
  std::size_t failures = 0;          // elements outside the tolerance, NaNs included
  std::size_t nan_count = 0;         // elements of got that are NaN or infinite
  double max_abs_error = 0;          // over finite elements
  double max_rel_error = 0;          // over elements with |expected| > tolerance.abs
  std::optional<std::size_t> worst;  // index of the element furthest outside (or nearest to) it
  double worst_got = 0;
  double worst_expected = 0;
  Tolerance tolerance;
  bool size_mismatch = false;

  [[nodiscard]] bool passed() const noexcept { return !size_mismatch && failures == 0; }

  [[nodiscard]] std::string describe() const {
    if (size_mismatch) {
      return "result and reference differ in size";
    }
    char text[320];
    std::snprintf(text, sizeof text,
                  "max abs error %.3g, max rel error %.3g (tolerance abs %.3g + rel %.3g), "
                  "%zu of %zu elements outside, %zu not finite",
                  max_abs_error, max_rel_error, tolerance.abs, tolerance.rel, failures, count,
                  nan_count);
    std::string out = text;
    if (worst) {
      std::snprintf(text, sizeof text, "; worst at %zu: got %.6g, expected %.6g", *worst, worst_got,
                    worst_expected);
      out += text;
    }
    return out;
  }
};

[[nodiscard]] inline Comparison compare(std::span<const float> got,
                                        std::span<const double> expected, Tolerance tolerance) {
  Comparison result;
  result.tolerance = tolerance;
  result.count = expected.size();
  if (got.size() != expected.size()) {
    result.size_mismatch = true;
    return result;
  }
  double worst_ratio = -1;  // error / allowed error of the worst element so far
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    const double e = expected[i];
    const double error = std::fabs(g - e);
    const double allowed = tolerance.abs + tolerance.rel * std::fabs(e);
    if (!std::isfinite(g)) {
      ++result.nan_count;
    } else {
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (std::fabs(e) > tolerance.abs) {
        result.max_rel_error = std::max(result.max_rel_error, error / std::fabs(e));
      }
    }
    // Written so that a NaN error counts as outside.
    if (!(error <= allowed)) {
      ++result.failures;
    }
    double ratio = HUGE_VAL;
    if (std::isfinite(error)) {
      ratio = allowed > 0 ? error / allowed : error;
    }
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      result.worst = i;
      result.worst_got = g;
      result.worst_expected = e;
    }
  }
  return result;
}

}  // namespace dnngraph::test
