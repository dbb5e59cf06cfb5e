// Batch-norm backward weight node: X and dY, the per-channel inputs' dims and types, the five
// per-channel Float outputs, and lowering to OperationBnBwdWeights (attribute names as
// cudnn-frontend 1.32's dbn_weight node sets them, read for facts).
#include "detail/nodes/dbn_weight.hpp"

#include "backend/operation_bn_bwd_weights.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <array>

namespace dnngraph::detail {

std::vector<TensorPtr> DbnWeightPorts::inputs() const { return {dy, x, mean, inv_variance, scale}; }

std::vector<TensorPtr> DbnWeightPorts::outputs() const {
  return {dscale, dbias, eq_scale_dy, eq_scale_x, eq_bias};
}

Result<void> DbnWeightNode::infer(const GraphContext& context) {
  if (auto ok = check_float_compute(compute_, context, "the gradients are reduced in Float"); !ok) {
    return ok;
  }
  const TensorAttributes& x = *ports_.x;
  if (auto ok = check_image_input("X", x); !ok) {
    return ok;
  }
  const TensorAttributes& dy = *ports_.dy;
  if (dy.dim() != x.dim()) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": dY " + dy.describe() + " has dims " + to_string(dy.dim()) +
                          ", expected " + to_string(x.dim()) + " (X " + x.describe() + "'s)");
  }
  if (auto ok = check_image_input("dY", dy); !ok) {
    return ok;
  }
  std::vector<std::int64_t> channel(x.dim().size(), 1);
  channel[1] = x.dim()[1];
  const std::string whose = "per channel of X " + x.describe() + " of dims " + to_string(x.dim());
  for (const auto& [role, t] :
       {std::pair{"mean", ports_.mean}, std::pair{"inv_variance", ports_.inv_variance},
        std::pair{"scale", ports_.scale}}) {
    if (auto ok = check_channel_input(role, *t, channel, whose); !ok) {
      return ok;
    }
  }
  for (const auto& [role, t] :
       {std::pair{"dScale", ports_.dscale}, std::pair{"dBias", ports_.dbias},
        std::pair{"eq_scale_dy", ports_.eq_scale_dy}, std::pair{"eq_scale_x", ports_.eq_scale_x},
        std::pair{"eq_bias", ports_.eq_bias}}) {
    if (auto ok = settle_statistic_output(role, *t, channel, x, context); !ok) {
      return ok;
    }
  }
  return {};
}

Result<LoweredOperation> DbnWeightNode::lower(const TensorTable& tensors,
                                              const GraphContext& /*context*/) const {
  auto op = backend::OperationBnBwdWeights::create();
  if (!op) {
    return std::unexpected(cudnn_error(op.error(), "lower " + describe()));
  }
  auto ok = op->set_math_precision(CUDNN_DATA_FLOAT);
  // Each role's setter, in the order cudnn-frontend sets them.
  using Op = backend::OperationBnBwdWeights;
  using Setter = backend::Expected<void> (Op::*)(const backend::Tensor&);
  const std::array<std::pair<const TensorPtr*, Setter>, 10> roles{{
      {&ports_.x, &Op::set_x},
      {&ports_.dy, &Op::set_dy},
      {&ports_.mean, &Op::set_mean},
      {&ports_.inv_variance, &Op::set_inv_std},
      {&ports_.scale, &Op::set_scale},
      {&ports_.dscale, &Op::set_dscale},
      {&ports_.dbias, &Op::set_dbias},
      {&ports_.eq_scale_dy, &Op::set_eq_dy_scale},
      {&ports_.eq_scale_x, &Op::set_eq_x_scale},
      {&ports_.eq_bias, &Op::set_eq_bias},
  }};
  return lower_roles<Op>(std::move(*op), std::move(ok), roles, tensors);
}

}  // namespace dnngraph::detail
