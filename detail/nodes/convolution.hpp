// What the conv_fprop, conv_dgrad and conv_wgrad nodes share: rank and type checks, the settled
// geometry (padding, stride, dilation), the output-size arithmetic with its error messages, the
// layout an output follows, the backend Convolution descriptor, and the lowering of the three
// operations.
#pragma once

#include "api/error.hpp"
#include "api/tensor_attributes.hpp"
#include "api/types.hpp"
#include "backend/convolution.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/nodes/lowering.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

struct GraphTraits;

// Notes in traits a convolution (conv_fprop, conv_dgrad or conv_wgrad) whose activations — X or
// dX, and Y or dY — are not channels-last: the known-issues table's engine4-channels-first-conv
// asks. The filter is left out: a 1x1 filter's bytes are the same in both layouts.
void note_channels_first_conv(const TensorAttributes& x, const TensorAttributes& y,
                              GraphTraits& traits);

// One value per spatial dim each; strides and dilations >= 1, paddings >= 0.
struct ConvolutionGeometry {
  std::vector<std::int64_t> pre_padding;
  std::vector<std::int64_t> post_padding;
  std::vector<std::int64_t> stride;
  std::vector<std::int64_t> dilation;
};

// A tensor of a convolution: its role in messages ("X", "dW"), its attributes, and the dims it
// has in this shape inference (its own, or execute-time override dims).
struct ConvTensor {
  std::string_view role;
  const TensorAttributes& t;
  const std::vector<std::int64_t>& dims;
};

// t is [N, C, spatial...] with 2 or 3 spatial dims (4-D or 5-D).
[[nodiscard]] Result<void> check_conv_rank(std::string_view node, ConvTensor t);
// other has as many dims as t ([K, C, filter...] or [N, K, out...]).
[[nodiscard]] Result<void> check_same_rank(std::string_view node, ConvTensor t, ConvTensor other);
// Dim `dim_a` of a equals dim `dim_b` of b; `what` names it ("C", "K", "N").
[[nodiscard]] Result<void> check_same_extent(std::string_view node, std::string_view what,
                                             ConvTensor a, std::size_t dim_a, ConvTensor b,
                                             std::size_t dim_b);
// The group count fits the channels: at least 1, dividing C (of `full`, the tensor with every
// input channel: X, or dX) and k (output channels), and dim 1 of `w` (W or dW) is C / groups.
[[nodiscard]] Result<void> check_groups(std::string_view node, std::int64_t groups, ConvTensor full,
                                        ConvTensor w, std::int64_t k);
[[nodiscard]] Result<void> check_data_type(std::string_view node, ConvTensor t,
                                           std::initializer_list<DataType> allowed);
[[nodiscard]] Result<void> check_compute_type(std::string_view node, DataType compute,
                                              std::initializer_list<DataType> allowed);

// One value per spatial dim of `spatial` ([N, C, spatial...]), each at least `minimum`: the
// user's list `set` (`what` names it in errors: "stride"), or `fallback` in every dim when unset.
[[nodiscard]] Result<std::vector<std::int64_t>> resolve_spatial_list(
    std::string_view node, ConvTensor spatial, std::string_view what,
    const std::optional<std::vector<std::int64_t>>& set, std::int64_t fallback,
    std::int64_t minimum);

// The user's lists, or the defaults, for the spatial dims of `spatial` ([N, C, spatial...]).
[[nodiscard]] Result<ConvolutionGeometry> resolve_geometry(
    std::string_view node, ConvTensor spatial,
    const std::optional<std::vector<std::int64_t>>& pre_padding,
    const std::optional<std::vector<std::int64_t>>& post_padding,
    const std::optional<std::vector<std::int64_t>>& stride,
    const std::optional<std::vector<std::int64_t>>& dilation);

// floor((in + pre + post - dilation * (filter - 1) - 1) / stride) + 1 for spatial dim i (tensor
// dim i + 2) of input and filter: the forward output size. An error naming both tensors when the
// dilated filter does not fit in the padded input, or the arithmetic overflows int64.
[[nodiscard]] Result<std::int64_t> forward_output_size(std::string_view node,
                                                       const ConvolutionGeometry& geometry,
                                                       std::size_t i, ConvTensor input,
                                                       ConvTensor filter);

// The smallest input size of spatial dim i whose forward output is `out` (larger inputs can give
// the same output when the stride is above 1); an error naming the tensors when none does.
[[nodiscard]] Result<std::int64_t> smallest_input_size(std::string_view node,
                                                       const ConvolutionGeometry& geometry,
                                                       std::size_t i, ConvTensor output,
                                                       ConvTensor filter);

// An output without strides gets channels-last strides for `dims` when `like` is channels-last;
// otherwise it is left for Node::settle_output to give packed (channels-first) strides.
void follow_layout(TensorAttributes& out, const std::vector<std::int64_t>& dims,
                   const TensorAttributes& like);

// The finalized backend Convolution descriptor for these settings.
[[nodiscard]] backend::Expected<backend::Convolution> make_convolution(
    const ConvolutionGeometry& geometry, ConvolutionMode mode, DataType compute);

// A convolution operation's setter for one of its three tensors (X/W/Y, dY/W/dX or X/dY/dW).
template <class Op>
using ConvTensorSetter = backend::Expected<void> (Op::*)(const backend::Tensor&);

// Builds and finalizes operation Op (conv fprop, dgrad or wgrad): each tensor through its
// setter, then the convolution descriptor, alpha 1 and beta 0. `node` names the node in errors.
template <class Op>
[[nodiscard]] Result<LoweredOperation> lower_convolution(
    std::string_view node, const std::array<Result<const backend::Tensor*>, 3>& tensors,
    const std::array<ConvTensorSetter<Op>, 3>& setters,
    backend::Expected<backend::Convolution> convolution) {
  for (const auto& t : tensors) {
    if (!t) {
      return std::unexpected(t.error());
    }
  }
  const std::string doing = "lower " + std::string(node);
  if (!convolution) {
    return std::unexpected(cudnn_error(convolution.error(), doing));
  }
  auto op = Op::create();
  if (!op) {
    return std::unexpected(cudnn_error(op.error(), doing));
  }
  auto ok = in_order([&] { return ((*op).*setters[0])(**tensors[0]); },
                     [&] { return ((*op).*setters[1])(**tensors[1]); },
                     [&] { return ((*op).*setters[2])(**tensors[2]); },
                     [&] { return op->set_convolution(*convolution); },
                     [&] { return op->set_alpha(1.0F); }, [&] { return op->set_beta(0.0F); },
                     [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(cudnn_error(ok.error(), doing));
  }
  LoweredOperation lowered_op{std::move(*op), {}};
  lowered_op.parts.push_back(std::move(*convolution));
  return lowered_op;
}

}  // namespace dnngraph::detail
