// Conv wgrad node: checks, shape checks (dW's dims are the user's; its strides follow X's
// layout) and lowering to OperationConvWgrad.
#include "detail/nodes/conv_wgrad.hpp"

#include "backend/operation_conv_wgrad.hpp"
#include "detail/cudnn/cudnn_error.hpp"

namespace dnngraph::detail {

Result<void> ConvWgradNode::infer(const GraphContext& context) {
  if (auto ok = check_known_convolution(attributes_); !ok) {
    return ok;
  }
  const std::string node = describe();
  const ConvTensor x{"X", *inputs()[0], inputs()[0]->dim()};
  const ConvTensor dy{"dY", *inputs()[1], inputs()[1]->dim()};
  TensorAttributes& dw = *outputs()[0];
  const ConvTensor dw_named{"dW", dw, dw.dim()};
  if (auto ok = check_conv_rank(node, x); !ok) return ok;
  if (auto ok = check_same_rank(node, x, dy); !ok) return ok;
  if (auto ok = check_same_extent(node, "N", dy, 0, x, 0); !ok) return ok;
  if (dw.dim().empty()) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": dW " + dw.describe() +
                          " has no dims; set them to [K, C / groups, filter...] (K = " +
                          std::to_string(dy.dims[1]) + ", C = " + std::to_string(x.dims[1]) +
                          "): X and dY do not determine the filter size");
  }
  if (auto ok = check_same_rank(node, x, dw_named); !ok) return ok;
  for (std::size_t i = 0; i < dw.dim().size(); ++i) {
    if (dw.dim()[i] <= 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": dim " + std::to_string(i) + " of dW " + dw.describe() + " is " +
                            std::to_string(dw.dim()[i]) + "; dims must be positive (dims " +
                            to_string(dw.dim()) + ")");
    }
  }
  if (auto ok = check_same_extent(node, "K", dw_named, 0, dy, 1); !ok) return ok;
  if (auto ok = check_groups(node, attributes_.group_count(), x, dw_named, dy.dims[1]); !ok) {
    return ok;
  }
  auto geometry = resolve_geometry(node, x, attributes_.pre_padding(), attributes_.post_padding(),
                                   attributes_.stride(), attributes_.dilation());
  if (!geometry) return std::unexpected(geometry.error());
  for (std::size_t i = 0; i + 2 < x.dims.size(); ++i) {
    auto out = forward_output_size(node, *geometry, i, x, dw_named);
    if (!out) return std::unexpected(out.error());
    if (*out != dy.dims[i + 2]) {
      return make_error(ErrorCode::ShapeMismatch,
                        node + ": dim " + std::to_string(i + 2) + " of X " + x.t.describe() +
                            " is " + std::to_string(x.dims[i + 2]) + " and of dW " + dw.describe() +
                            " is " + std::to_string(dw.dim()[i + 2]) +
                            ", which give a forward output of " + std::to_string(*out) +
                            ", but dim " + std::to_string(i + 2) + " of dY " + dy.t.describe() +
                            " is " + std::to_string(dy.dims[i + 2]));
    }
  }
  for (const ConvTensor& t : {x, dy}) {
    if (auto ok = check_data_type(node, t, {DataType::Half, DataType::BFloat16, DataType::Float});
        !ok) {
      return ok;
    }
  }
  if (auto ok = check_compute_type(node, compute_type(context), {DataType::Float, DataType::Half});
      !ok) {
    return ok;
  }
  geometry_ = std::move(*geometry);
  const std::vector<std::int64_t> dw_dims = dw.dim();
  follow_layout(dw, dw_dims, x.t);
  return settle_output(dw, dw_dims, context);
}

Result<LoweredOperation> ConvWgradNode::lower(const TensorTable& tensors,
                                              const GraphContext& context) const {
  using Op = backend::OperationConvWgrad;
  return lower_convolution<Op>(
      describe(),
      {lowered(tensors, *inputs()[0]), lowered(tensors, *inputs()[1]),
       lowered(tensors, *outputs()[0])},
      {&Op::set_x, &Op::set_dy, &Op::set_dw},
      make_convolution(geometry_, attributes_.convolution_mode(), compute_type(context)));
}

}  // namespace dnngraph::detail
