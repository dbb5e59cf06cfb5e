// CPU references for convolution, in double (or, to simulate a GPU's fp32 accumulation, in
// float): forward (+ per-channel bias, + ReLU), backward data
// and backward filter, over tensors in any layout (dims plus strides, as the device reads them).
// Inputs are the exact values the GPU sees (already rounded to their storage type), so the only
// differences left are the GPU's own rounding. No CUDA and no dnngraph headers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dnngraph::test {

using Dims = std::vector<std::int64_t>;

// One convolution: X [N, C, spatial...] and W [K, C / groups, filter...] with 1 to 3 spatial dims;
// one value per spatial dim in each list. flip: ConvolutionMode::Convolution (the filter is applied
// mirrored in every spatial dim), else cross-correlation.
struct ConvProblem {
  Dims x_dims;
  Dims w_dims;
  Dims pre_padding;
  Dims post_padding;
  Dims stride;
  Dims dilation;
  bool flip = false;

  [[nodiscard]] std::size_t spatial() const noexcept { return x_dims.size() - 2; }
  // Grouped convolution: W [K, C / groups, filter...]; output channel k reads the input channels
  // of its group, k / (K / groups).
  [[nodiscard]] std::int64_t groups() const noexcept { return x_dims[1] / w_dims[1]; }
  // floor((in + pre + post - dilation * (filter - 1) - 1) / stride) + 1 per spatial dim.
  [[nodiscard]] Dims y_dims() const {
    Dims dims{x_dims[0], w_dims[0]};
    for (std::size_t d = 0; d < spatial(); ++d) {
      const std::int64_t room =
          x_dims[d + 2] + pre_padding[d] + post_padding[d] - dilation[d] * (w_dims[d + 2] - 1) - 1;
      dims.push_back(room / stride[d] + 1);
    }
    return dims;
  }
};

[[nodiscard]] inline std::int64_t product(std::span<const std::int64_t> values) {
  std::int64_t p = 1;
  for (const std::int64_t v : values) {
    p *= v;
  }
  return p;
}

// Elements a buffer of these dims and strides spans: 1 + sum((dim - 1) * stride).
[[nodiscard]] inline std::size_t storage_size(const Dims& dims, const Dims& strides) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    last += (dims[i] - 1) * strides[i];
  }
  return static_cast<std::size_t>(last + 1);
}

// Row-major index -> multi-index over `extents`.
inline void unflatten(std::int64_t flat, std::span<const std::int64_t> extents,
                      std::span<std::int64_t> index) {
  for (std::size_t d = extents.size(); d-- > 0;) {
    index[d] = flat % extents[d];
    flat /= extents[d];
  }
}

// Calls visit(x_offset, w_offset, y_offset) once for every product x * w that the forward
// convolution adds into an element of Y: every (n, k, c, output position, filter tap) whose input
// position lies inside X (padding contributes zeros, so it is skipped). Offsets are element
// offsets through the given strides. The backward passes are the same products, accumulated into
// dX or dW instead of Y.
template <class Visit>
void for_each_product(const ConvProblem& p, const Dims& x_strides, const Dims& w_strides,
                      const Dims& y_strides, Visit visit) {
  const std::size_t s = p.spatial();
  const Dims y_dims = p.y_dims();
  const std::span<const std::int64_t> out_extents(y_dims.data() + 2, s);
  const std::span<const std::int64_t> tap_extents(p.w_dims.data() + 2, s);
  const std::int64_t outputs = product(out_extents);
  const std::int64_t taps = product(tap_extents);
  // Per filter tap: its spatial index and its offset within one (k, c) filter slice (mirrored
  // in convolution mode).
  std::vector<std::int64_t> tap_index(static_cast<std::size_t>(taps) * s);
  std::vector<std::int64_t> tap_offset(static_cast<std::size_t>(taps), 0);
  for (std::int64_t fi = 0; fi < taps; ++fi) {
    const auto f = std::span(tap_index).subspan(static_cast<std::size_t>(fi) * s, s);
    unflatten(fi, tap_extents, f);
    for (std::size_t d = 0; d < s; ++d) {
      const std::int64_t tap = p.flip ? p.w_dims[d + 2] - 1 - f[d] : f[d];
      tap_offset[static_cast<std::size_t>(fi)] += tap * w_strides[d + 2];
    }
  }
  // The bounds check runs once per (output position, tap); the (n, k, c) loops inside only add.
  std::vector<std::int64_t> o(s);
  for (std::int64_t oi = 0; oi < outputs; ++oi) {
    unflatten(oi, out_extents, o);
    std::int64_t y_position = 0;
    for (std::size_t d = 0; d < s; ++d) {
      y_position += o[d] * y_strides[d + 2];
    }
    for (std::int64_t fi = 0; fi < taps; ++fi) {
      const auto f = std::span(tap_index).subspan(static_cast<std::size_t>(fi) * s, s);
      std::int64_t x_position = 0;
      bool inside = true;
      for (std::size_t d = 0; d < s && inside; ++d) {
        const std::int64_t i = o[d] * p.stride[d] - p.pre_padding[d] + f[d] * p.dilation[d];
        inside = i >= 0 && i < p.x_dims[d + 2];
        x_position += i * x_strides[d + 2];
      }
      if (!inside) {
        continue;
      }
      const std::int64_t w_position = tap_offset[static_cast<std::size_t>(fi)];
      const std::int64_t per_group_c = p.w_dims[1];
      const std::int64_t per_group_k = p.w_dims[0] / p.groups();
      for (std::int64_t n = 0; n < p.x_dims[0]; ++n) {
        for (std::int64_t k = 0; k < p.w_dims[0]; ++k) {
          const std::int64_t y_offset = n * y_strides[0] + k * y_strides[1] + y_position;
          const std::int64_t first_c = k / per_group_k * per_group_c;
          for (std::int64_t c = 0; c < per_group_c; ++c) {
            visit(static_cast<std::size_t>(n * x_strides[0] + (first_c + c) * x_strides[1] +
                                           x_position),
                  static_cast<std::size_t>(k * w_strides[0] + c * w_strides[1] + w_position),
                  static_cast<std::size_t>(y_offset));
          }
        }
      }
    }
  }
}

// Y = relu?(conv(X, W) + bias[k]), bias empty for none (else K values). Returned in Y's layout
// (storage_size(y_dims, y_strides) elements; elements outside Y, if any, stay 0).
template <class Acc = double>
[[nodiscard]] std::vector<Acc> reference_conv_fprop(const ConvProblem& p, std::span<const float> x,
                                                    const Dims& x_strides, std::span<const float> w,
                                                    const Dims& w_strides, const Dims& y_strides,
                                                    std::span<const float> bias, bool relu) {
  const Dims y_dims = p.y_dims();
  std::vector<Acc> y(storage_size(y_dims, y_strides), Acc{0});
  for_each_product(p, x_strides, w_strides, y_strides,
                   [&](std::size_t xo, std::size_t wo, std::size_t yo) {
                     y[yo] += static_cast<Acc>(x[xo]) * static_cast<Acc>(w[wo]);
                   });
  if (bias.empty() && !relu) {
    return y;
  }
  // The epilogue visits each element of Y once: (n, k, position) through Y's strides.
  const std::size_t s = p.spatial();
  const std::span<const std::int64_t> extents(y_dims.data() + 2, s);
  const std::int64_t outputs = product(extents);
  std::vector<std::int64_t> o(s);
  for (std::int64_t n = 0; n < y_dims[0]; ++n) {
    for (std::int64_t k = 0; k < y_dims[1]; ++k) {
      for (std::int64_t oi = 0; oi < outputs; ++oi) {
        unflatten(oi, extents, o);
        std::int64_t offset = n * y_strides[0] + k * y_strides[1];
        for (std::size_t d = 0; d < s; ++d) {
          offset += o[d] * y_strides[d + 2];
        }
        Acc& value = y[static_cast<std::size_t>(offset)];
        if (!bias.empty()) {
          value += static_cast<Acc>(bias[static_cast<std::size_t>(k)]);
        }
        if (relu) {
          value = std::max(value, Acc{0});
        }
      }
    }
  }
  return y;
}

// dX = the gradient of sum(Y * dY) with respect to X; returned in dX's layout (p.x_dims).
template <class Acc = double>
[[nodiscard]] std::vector<Acc> reference_conv_dgrad(const ConvProblem& p, std::span<const float> dy,
                                                    const Dims& dy_strides,
                                                    std::span<const float> w, const Dims& w_strides,
                                                    const Dims& dx_strides) {
  std::vector<Acc> dx(storage_size(p.x_dims, dx_strides), Acc{0});
  for_each_product(p, dx_strides, w_strides, dy_strides,
                   [&](std::size_t xo, std::size_t wo, std::size_t yo) {
                     dx[xo] += static_cast<Acc>(dy[yo]) * static_cast<Acc>(w[wo]);
                   });
  return dx;
}

// dW = the gradient of sum(Y * dY) with respect to W; returned in dW's layout (p.w_dims).
template <class Acc = double>
[[nodiscard]] std::vector<Acc> reference_conv_wgrad(const ConvProblem& p, std::span<const float> x,
                                                    const Dims& x_strides,
                                                    std::span<const float> dy,
                                                    const Dims& dy_strides,
                                                    const Dims& dw_strides) {
  std::vector<Acc> dw(storage_size(p.w_dims, dw_strides), Acc{0});
  for_each_product(p, x_strides, dw_strides, dy_strides,
                   [&](std::size_t xo, std::size_t wo, std::size_t yo) {
                     dw[wo] += static_cast<Acc>(x[xo]) * static_cast<Acc>(dy[yo]);
                   });
  return dw;
}

}  // namespace dnngraph::test
