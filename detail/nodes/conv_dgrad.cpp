// Conv dgrad node: checks, shape inference (dX follows dY's layout) and lowering to
// OperationConvDgrad.
#include "detail/nodes/conv_dgrad.hpp"

#include "backend/operation_conv_dgrad.hpp"
#include "detail/cudnn/cudnn_error.hpp"

namespace dnngraph::detail {

Result<void> ConvDgradNode::infer(const GraphContext& context) {
  if (auto ok = check_known_convolution(attributes_); !ok) {
    return ok;
  }
  const std::string node = describe();
  const ConvTensor dy{"dY", *inputs()[0], inputs()[0]->dim()};
  const ConvTensor w{"W", *inputs()[1], inputs()[1]->dim()};
  TensorAttributes& dx = *outputs()[0];
  const ConvTensor dx_named{"dX", dx, dx.dim()};
  if (auto ok = check_conv_rank(node, dy); !ok) return ok;
  if (auto ok = check_same_rank(node, dy, w); !ok) return ok;
  if (auto ok = check_same_extent(node, "K", w, 0, dy, 1); !ok) return ok;
  auto geometry = resolve_geometry(node, dy, attributes_.pre_padding(), attributes_.post_padding(),
                                   attributes_.stride(), attributes_.dilation());
  if (!geometry) return std::unexpected(geometry.error());
  const std::size_t rank = dy.dims.size();
  // dX dims of the right rank are the user's choice among the inputs that give dY (a stride
  // above 1 maps several input sizes to one output size); anything else goes to settle_output.
  const bool user_dims = dx.dim().size() == rank;
  // dX has every input channel: C = W's C per group times the groups.
  const std::int64_t groups = attributes_.group_count();
  std::int64_t c = 0;
  if (groups < 1 || __builtin_mul_overflow(w.dims[1], groups, &c)) {
    return make_error(ErrorCode::InvalidAttribute, node + ": the group count " +
                                                       std::to_string(groups) +
                                                       " must be at least 1 and fit C in int64");
  }
  const std::vector<std::int64_t> dx_channels{dy.dims[0], c};
  if (auto ok = check_groups(node, groups, {"dX", dx, dx_channels}, w, w.dims[0]); !ok) {
    return ok;
  }
  std::vector<std::int64_t> dx_dims{dy.dims[0], c};
  for (std::size_t i = 0; i + 2 < rank; ++i) {
    if (!user_dims) {
      auto size = smallest_input_size(node, *geometry, i, dy, w);
      if (!size) return std::unexpected(size.error());
      dx_dims.push_back(*size);
      continue;
    }
    const std::int64_t in = dx.dim()[i + 2];
    if (in <= 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": dim " + std::to_string(i + 2) + " of dX " + dx.describe() +
                            " is " + std::to_string(in) + "; dims must be positive (dims " +
                            to_string(dx.dim()) + ")");
    }
    auto out = forward_output_size(node, *geometry, i, dx_named, w);
    if (!out) return std::unexpected(out.error());
    if (*out != dy.dims[i + 2]) {
      return make_error(ErrorCode::ShapeMismatch,
                        node + ": dim " + std::to_string(i + 2) + " of dX " + dx.describe() +
                            " is " + std::to_string(in) + ", whose forward output is " +
                            std::to_string(*out) + ", but dim " + std::to_string(i + 2) +
                            " of dY " + dy.t.describe() + " is " + std::to_string(dy.dims[i + 2]));
    }
    dx_dims.push_back(in);
  }
  for (const ConvTensor& t : {dy, w}) {
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
  follow_layout(dx, dx_dims, dy.t);
  return settle_output(dx, dx_dims, context);
}

Result<LoweredOperation> ConvDgradNode::lower(const TensorTable& tensors,
                                              const GraphContext& context) const {
  using Op = backend::OperationConvDgrad;
  return lower_convolution<Op>(
      describe(),
      {lowered(tensors, *inputs()[0]), lowered(tensors, *inputs()[1]),
       lowered(tensors, *outputs()[0])},
      {&Op::set_dy, &Op::set_w, &Op::set_dx},
      make_convolution(geometry_, attributes_.convolution_mode(), compute_type(context)));
}

}  // namespace dnngraph::detail
