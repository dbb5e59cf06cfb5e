// Convolution checks, geometry, output-size arithmetic, layout and descriptor shared by the
// conv_fprop, conv_dgrad and conv_wgrad nodes.
#include "detail/nodes/convolution.hpp"

#include "api/layout.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/known_issues.hpp"
#include "detail/nodes/lowering.hpp"

#include <gsl/util>

#include <algorithm>
#include <limits>
#include <string>

namespace dnngraph::detail {

namespace {

std::string named(ConvTensor t) { return std::string(t.role) + " " + t.t.describe(); }

// The span of a dilated filter less one, and the padded input: the two sides of the
// output-size formula. nullopt when either overflows int64.
struct Extents {
  std::int64_t padded = 0;      // in + pre + post
  std::int64_t span_less1 = 0;  // dilation * (filter - 1)
};

std::optional<Extents> extents(std::int64_t in, std::int64_t filter, std::int64_t pre,
                               std::int64_t post, std::int64_t dilation) {
  Extents e;
  if (__builtin_add_overflow(in, pre, &e.padded) ||
      __builtin_add_overflow(e.padded, post, &e.padded) ||
      __builtin_mul_overflow(dilation, filter - 1, &e.span_less1)) {
    return std::nullopt;
  }
  return e;
}

// dilation * (filter - 1) + 1, which may be one past int64.
std::string span_text(std::int64_t span_less1) {
  return span_less1 < std::numeric_limits<std::int64_t>::max()
             ? std::to_string(span_less1 + 1)
             : "more than " + std::to_string(span_less1);
}

std::string geometry_text(const ConvolutionGeometry& g, std::size_t i) {
  return "padding " + std::to_string(g.pre_padding[i]) + " + " + std::to_string(g.post_padding[i]) +
         ", stride " + std::to_string(g.stride[i]) + ", dilation " + std::to_string(g.dilation[i]);
}

}  // namespace

Result<std::vector<std::int64_t>> resolve_spatial_list(
    std::string_view node, ConvTensor spatial, std::string_view what,
    const std::optional<std::vector<std::int64_t>>& set, std::int64_t fallback,
    std::int64_t minimum) {
  const std::size_t count = spatial.dims.size() - 2;
  if (!set) {
    return std::vector<std::int64_t>(count, fallback);
  }
  if (set->size() != count) {
    return make_error(ErrorCode::InvalidAttribute,
                      std::string(node) + ": " + std::string(what) + " has " +
                          std::to_string(set->size()) + " values " + to_string(*set) + ", but " +
                          named(spatial) + " has " + std::to_string(count) +
                          " spatial dims; give one value per spatial dim");
  }
  for (std::size_t i = 0; i < count; ++i) {
    if ((*set)[i] < minimum) {
      return make_error(ErrorCode::InvalidAttribute,
                        std::string(node) + ": " + std::string(what) + " " + std::to_string(i) +
                            " is " + std::to_string((*set)[i]) + " (" + std::string(what) + " " +
                            to_string(*set) + "); it must be at least " + std::to_string(minimum));
    }
  }
  return *set;
}

namespace {

std::string type_list(std::initializer_list<DataType> types) {
  std::string out;
  std::size_t i = 0;
  for (const DataType type : types) {
    if (i > 0) {
      out += i + 1 == types.size() ? " or " : ", ";
    }
    out += to_string(type);
    ++i;
  }
  return out;
}

}  // namespace

Result<void> check_conv_rank(std::string_view node, ConvTensor t) {
  const std::size_t rank = t.dims.size();
  if (rank != 4 && rank != 5) {
    return make_error(ErrorCode::ShapeMismatch,
                      std::string(node) + ": " + named(t) + " has " + std::to_string(rank) +
                          " dims " + to_string(t.dims) +
                          "; a convolution takes 4 ([N, C, H, W]) or 5 ([N, C, D, H, W])");
  }
  return {};
}

Result<void> check_same_rank(std::string_view node, ConvTensor t, ConvTensor other) {
  if (other.dims.size() != t.dims.size()) {
    return make_error(ErrorCode::ShapeMismatch,
                      std::string(node) + ": " + named(other) + " has " +
                          std::to_string(other.dims.size()) + " dims " + to_string(other.dims) +
                          ", but " + named(t) + " has " + std::to_string(t.dims.size()) + " " +
                          to_string(t.dims) + "; they need the same number of dims");
  }
  return {};
}

Result<void> check_groups(std::string_view node, std::int64_t groups, ConvTensor full, ConvTensor w,
                          std::int64_t k) {
  const std::int64_t c = full.dims[1];
  const std::string count = "the group count " + std::to_string(groups);
  if (groups < 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      std::string(node) + ": " + count + " must be at least 1");
  }
  if (c % groups != 0 || k % groups != 0) {
    return make_error(ErrorCode::ShapeMismatch,
                      std::string(node) + ": " + count +
                          " does not divide C = " + std::to_string(c) + " (dim 1 of " +
                          named(full) + ") and K = " + std::to_string(k) +
                          "; each group takes C / groups input and K / groups "
                          "output channels");
  }
  if (w.dims[1] != c / groups) {
    std::string hint;
    if (groups == 1 && w.dims[1] > 0 && c % w.dims[1] == 0) {
      hint = " (a grouped convolution: set_group_count(" + std::to_string(c / w.dims[1]) + "))";
    }
    return make_error(ErrorCode::ShapeMismatch, std::string(node) + ": dim 1 of " + named(w) +
                                                    " is " + std::to_string(w.dims[1]) +
                                                    ", expected C / groups = " + std::to_string(c) +
                                                    " / " + std::to_string(groups) + " = " +
                                                    std::to_string(c / groups) + hint);
  }
  return {};
}

Result<void> check_same_extent(std::string_view node, std::string_view what, ConvTensor a,
                               std::size_t dim_a, ConvTensor b, std::size_t dim_b) {
  const std::int64_t ea = a.dims[dim_a];
  const std::int64_t eb = b.dims[dim_b];
  if (ea != eb) {
    return make_error(ErrorCode::ShapeMismatch,
                      std::string(node) + ": dim " + std::to_string(dim_a) + " (" +
                          std::string(what) + ") of " + named(a) + " is " + std::to_string(ea) +
                          ", but dim " + std::to_string(dim_b) + " (" + std::string(what) +
                          ") of " + named(b) + " is " + std::to_string(eb) +
                          "; they must be equal");
  }
  return {};
}

Result<void> check_data_type(std::string_view node, ConvTensor t,
                             std::initializer_list<DataType> allowed) {
  const std::optional<DataType> type = t.t.data_type();
  if (!type || std::ranges::find(allowed, *type) == allowed.end()) {
    return make_error(ErrorCode::UnsupportedDataType,
                      std::string(node) + ": " + named(t) + " has data type " +
                          std::string(type ? to_string(*type) : "none") + "; it takes " +
                          type_list(allowed));
  }
  return {};
}

Result<void> check_compute_type(std::string_view node, DataType compute,
                                std::initializer_list<DataType> allowed) {
  if (std::ranges::find(allowed, compute) == allowed.end()) {
    return make_error(ErrorCode::UnsupportedDataType,
                      std::string(node) + ": compute data type " + std::string(to_string(compute)) +
                          " is not supported; use " + type_list(allowed));
  }
  return {};
}

Result<ConvolutionGeometry> resolve_geometry(
    std::string_view node, ConvTensor spatial,
    const std::optional<std::vector<std::int64_t>>& pre_padding,
    const std::optional<std::vector<std::int64_t>>& post_padding,
    const std::optional<std::vector<std::int64_t>>& stride,
    const std::optional<std::vector<std::int64_t>>& dilation) {
  auto pre = resolve_spatial_list(node, spatial, "pre-padding", pre_padding, 0, 0);
  if (!pre) return std::unexpected(pre.error());
  auto post = resolve_spatial_list(node, spatial, "post-padding", post_padding, 0, 0);
  if (!post) return std::unexpected(post.error());
  auto strides = resolve_spatial_list(node, spatial, "stride", stride, 1, 1);
  if (!strides) return std::unexpected(strides.error());
  auto dilations = resolve_spatial_list(node, spatial, "dilation", dilation, 1, 1);
  if (!dilations) return std::unexpected(dilations.error());
  return ConvolutionGeometry{std::move(*pre), std::move(*post), std::move(*strides),
                             std::move(*dilations)};
}

Result<std::int64_t> forward_output_size(std::string_view node, const ConvolutionGeometry& geometry,
                                         std::size_t i, ConvTensor input, ConvTensor filter) {
  const std::size_t dim = i + 2;
  const std::int64_t in = input.dims[dim];
  const std::int64_t k = filter.dims[dim];
  const auto e =
      extents(in, k, geometry.pre_padding[i], geometry.post_padding[i], geometry.dilation[i]);
  const std::string where = "dim " + std::to_string(dim) + " of " + named(input) + " is " +
                            std::to_string(in) + " and of " + named(filter) + " is " +
                            std::to_string(k) + " (" + geometry_text(geometry, i) + ")";
  if (!e) {
    return make_error(ErrorCode::InvalidAttribute,
                      std::string(node) + ": " + where + "; the output size overflows int64");
  }
  // padded >= 1 and span_less1 >= 0, so this cannot overflow.
  const std::int64_t room = e->padded - 1 - e->span_less1;
  if (room < 0) {
    return make_error(ErrorCode::ShapeMismatch,
                      std::string(node) + ": " + where + "; the dilated filter spans " +
                          span_text(e->span_less1) + " but the padded input is only " +
                          std::to_string(e->padded) + ", so output dim " + std::to_string(dim) +
                          " would be empty (it must be at least 1)");
  }
  return room / geometry.stride[i] + 1;
}

Result<std::int64_t> smallest_input_size(std::string_view node, const ConvolutionGeometry& geometry,
                                         std::size_t i, ConvTensor output, ConvTensor filter) {
  const std::size_t dim = i + 2;
  const std::int64_t out = output.dims[dim];
  const std::int64_t k = filter.dims[dim];
  const std::string where = "dim " + std::to_string(dim) + " of " + named(output) + " is " +
                            std::to_string(out) + " and of " + named(filter) + " is " +
                            std::to_string(k) + " (" + geometry_text(geometry, i) + ")";
  // The forward output is at least `out` exactly when
  // in >= (out - 1) * stride + dilation * (filter - 1) + 1 - pre - post.
  std::int64_t steps = 0;
  std::int64_t span_less1 = 0;
  std::int64_t need = 0;
  if (__builtin_mul_overflow(out - 1, geometry.stride[i], &steps) ||
      __builtin_mul_overflow(geometry.dilation[i], k - 1, &span_less1) ||
      __builtin_add_overflow(steps, span_less1, &need) || __builtin_add_overflow(need, 1, &need)) {
    return make_error(ErrorCode::InvalidAttribute,
                      std::string(node) + ": " + where + "; the input size overflows int64");
  }
  // in = need - pre - post where that is positive, else 1 (written so it cannot overflow).
  const std::int64_t pre = geometry.pre_padding[i];
  const std::int64_t post = geometry.post_padding[i];
  const std::int64_t in = need > pre && need - pre > post ? need - pre - post : 1;
  const auto e = extents(in, k, pre, post, geometry.dilation[i]);
  if (!e || e->padded - 1 - e->span_less1 < 0 ||
      (e->padded - 1 - e->span_less1) / geometry.stride[i] + 1 != out) {
    return make_error(ErrorCode::ShapeMismatch,
                      std::string(node) + ": " + where +
                          "; no input size gives this output (the paddings alone make it larger)");
  }
  return in;
}

void follow_layout(TensorAttributes& out, const std::vector<std::int64_t>& dims,
                   const TensorAttributes& like) {
  // element_count: settle_output reports dims that overflow; strides of them would overflow too.
  if (out.stride().empty() && is_channels_last(like) && element_count(dims)) {
    out.set_stride(channels_last_strides(dims));
  }
}

backend::Expected<backend::Convolution> make_convolution(const ConvolutionGeometry& geometry,
                                                         ConvolutionMode mode, DataType compute) {
  auto conv = backend::Convolution::create();
  if (!conv) {
    return conv;
  }
  const auto spatial_dims = gsl::narrow_cast<std::int64_t>(geometry.stride.size());
  // The spatial dim count first: cuDNN checks the four lists against it.
  auto ok = in_order([&] { return conv->set_spatial_dims(spatial_dims); },
                     [&] { return conv->set_compute_type(to_cudnn(compute)); },
                     [&] { return conv->set_mode(to_cudnn(mode)); },
                     [&] { return conv->set_pre_paddings(geometry.pre_padding); },
                     [&] { return conv->set_post_paddings(geometry.post_padding); },
                     [&] { return conv->set_filter_strides(geometry.stride); },
                     [&] { return conv->set_dilations(geometry.dilation); },
                     [&] { return conv->finalize(); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return conv;
}

void note_channels_first_conv(const TensorAttributes& x, const TensorAttributes& y,
                              GraphTraits& traits) {
  traits.channels_first_conv =
      traits.channels_first_conv || !is_channels_last(x) || !is_channels_last(y);
}

}  // namespace dnngraph::detail
