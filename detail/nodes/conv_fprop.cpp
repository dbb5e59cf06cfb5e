// Conv fprop node: checks, shape inference (Y follows X's layout) and lowering to
// OperationConvFprop.
#include "detail/nodes/conv_fprop.hpp"

#include "backend/operation_conv_fprop.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <array>

namespace dnngraph::detail {

Result<ConvolutionGeometry> ConvFpropNode::geometry(ConvTensor x) const {
  return resolve_geometry(describe(), x, attributes_.pre_padding(), attributes_.post_padding(),
                          attributes_.stride(), attributes_.dilation());
}

Result<std::vector<std::int64_t>> ConvFpropNode::output_dims(
    std::span<const ShapedTensor> inputs) const {
  const std::string node = describe();
  const ConvTensor x{"X", *inputs[0].tensor, *inputs[0].dims};
  const ConvTensor w{"W", *inputs[1].tensor, *inputs[1].dims};
  if (auto ok = check_conv_rank(node, x); !ok) return std::unexpected(ok.error());
  if (auto ok = check_same_rank(node, x, w); !ok) return std::unexpected(ok.error());
  if (auto ok = check_groups(node, attributes_.group_count(), x, w, w.dims[0]); !ok) {
    return std::unexpected(ok.error());
  }
  auto settled = geometry(x);
  if (!settled) return std::unexpected(settled.error());
  std::vector<std::int64_t> y_dims{x.dims[0], w.dims[0]};
  for (std::size_t i = 0; i + 2 < x.dims.size(); ++i) {
    auto size = forward_output_size(node, *settled, i, x, w);
    if (!size) return std::unexpected(size.error());
    y_dims.push_back(*size);
  }
  return y_dims;
}

Result<void> ConvFpropNode::infer(const GraphContext& context) {
  if (auto ok = check_known_convolution(attributes_); !ok) {
    return ok;
  }
  const std::string node = describe();
  const TensorAttributes& x = *inputs()[0];
  const TensorAttributes& w = *inputs()[1];
  const std::array shaped{ShapedTensor{&x, &x.dim()}, ShapedTensor{&w, &w.dim()}};
  auto y_dims = output_dims(shaped);
  if (!y_dims) return std::unexpected(y_dims.error());
  // Input types cuDNN's convolution engines take (cuDNN 9 backend docs, convolution forward).
  for (const ConvTensor& t : {ConvTensor{"X", x, x.dim()}, ConvTensor{"W", w, w.dim()}}) {
    if (auto ok = check_data_type(node, t,
                                  {DataType::Half, DataType::BFloat16, DataType::Float,
                                   DataType::Int8, DataType::Fp8E4M3, DataType::Fp8E5M2});
        !ok) {
      return ok;
    }
  }
  if (auto ok = check_compute_type(node, compute_type(context),
                                   {DataType::Float, DataType::Half, DataType::Int32});
      !ok) {
    return ok;
  }
  auto settled = geometry(ConvTensor{"X", x, x.dim()});
  if (!settled) return std::unexpected(settled.error());
  geometry_ = std::move(*settled);
  TensorAttributes& y = *outputs()[0];
  follow_layout(y, *y_dims, x);
  return settle_output(y, *y_dims, context);
}

Result<LoweredOperation> ConvFpropNode::lower(const TensorTable& tensors,
                                              const GraphContext& context) const {
  using Op = backend::OperationConvFprop;
  return lower_convolution<Op>(
      describe(),
      {lowered(tensors, *inputs()[0]), lowered(tensors, *inputs()[1]),
       lowered(tensors, *outputs()[0])},
      {&Op::set_x, &Op::set_w, &Op::set_y},
      make_convolution(geometry_, attributes_.convolution_mode(), compute_type(context)));
}

}  // namespace dnngraph::detail
