// Forward normalization nodes: parameter and statistics shapes, data types, and lowering to
// OperationNormForward.
#include "detail/nodes/norm.hpp"

#include "backend/operation_norm_forward.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <array>
#include <cmath>

namespace dnngraph::detail {

namespace {

std::vector<TensorPtr> present(std::initializer_list<TensorPtr> tensors) {
  std::vector<TensorPtr> out;
  for (const TensorPtr& t : tensors) {
    if (t) {
      out.push_back(t);
    }
  }
  return out;
}

bool is_float_type(DataType type) {
  return type == DataType::Half || type == DataType::BFloat16 || type == DataType::Float;
}

std::string type_name(const TensorAttributes& t) {
  const auto type = t.data_type();
  return type ? std::string(to_string(*type)) : std::string("none");
}

}  // namespace

backend::Expected<cudnnBackendNormMode_t> to_cudnn(NormKind kind) {
  switch (kind) {
    case NormKind::Layer: return CUDNN_LAYER_NORM;
    case NormKind::Rms: return CUDNN_RMS_NORM;
    case NormKind::Batch: return CUDNN_BATCH_NORM;
    case NormKind::Instance: return CUDNN_INSTANCE_NORM;
    case NormKind::Adaptive: return backend::adaptive_layer_norm_mode();
  }
  return CUDNN_LAYER_NORM;  // not reached
}

Result<void> check_norm_available(NormKind kind, std::string_view node) {
  if (kind == NormKind::Adaptive && !backend::available(backend::Feature::AdaptiveLayerNorm)) {
    return std::unexpected(version_too_old(backend::Feature::AdaptiveLayerNorm, node));
  }
  return {};
}

NodeKind norm_node_kind(NormKind kind, bool backward) noexcept {
  switch (kind) {
    case NormKind::Layer: return backward ? NodeKind::LayerNormBackward : NodeKind::LayerNorm;
    case NormKind::Rms: return backward ? NodeKind::RmsNormBackward : NodeKind::RmsNorm;
    case NormKind::Batch: return backward ? NodeKind::BatchNormBackward : NodeKind::BatchNorm;
    case NormKind::Instance:
      return backward ? NodeKind::InstanceNormBackward : NodeKind::InstanceNorm;
    case NormKind::Adaptive:
      return backward ? NodeKind::AdaLayerNormBackward : NodeKind::AdaLayerNorm;
  }
  return NodeKind::LayerNorm;  // not reached
}

std::vector<std::int64_t> norm_parameter_dims(NormKind kind,
                                              const std::vector<std::int64_t>& x_dims) {
  std::vector<std::int64_t> dims(x_dims.size(), 1);
  if (per_channel(kind)) {
    dims[1] = x_dims[1];
  } else if (kind == NormKind::Adaptive) {  // per sample: [B, 1, D...]
    dims = x_dims;
    dims[1] = 1;
  } else {
    std::copy(x_dims.begin() + 1, x_dims.end(), dims.begin() + 1);
  }
  return dims;
}

std::vector<std::int64_t> norm_statistic_dims(NormKind kind,
                                              const std::vector<std::int64_t>& x_dims) {
  std::vector<std::int64_t> dims(x_dims.size(), 1);
  if (kind != NormKind::Batch) {
    dims[0] = x_dims[0];
  }
  if (per_channel(kind) || kind == NormKind::Adaptive) {
    dims[1] = x_dims[1];
  }
  return dims;
}

bool per_channel(NormKind kind) noexcept {
  return kind == NormKind::Batch || kind == NormKind::Instance;
}

std::size_t norm_min_rank(NormKind kind) noexcept {
  if (per_channel(kind)) {
    return 4;
  }
  return kind == NormKind::Adaptive ? 3 : 2;
}

NormForwardNode::NormForwardNode(NormSettings settings, NormPorts ports)
    : Node(settings.name,
           present({ports.x, ports.scale, ports.bias, ports.epsilon, ports.momentum,
                    ports.prev_running_mean, ports.prev_running_var}),
           present({ports.y, ports.mean_out, ports.inv_variance_out, ports.next_running_mean,
                    ports.next_running_var})),
      settings_(std::move(settings)),
      ports_(std::move(ports)) {}

NodeKind NormForwardNode::kind() const noexcept { return norm_node_kind(settings_.kind, false); }

Result<void> NormForwardNode::check_parameter(const char* role, const TensorAttributes& t,
                                              const std::vector<std::int64_t>& dims) const {
  if (t.dim() != dims) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": " + role + " " + t.describe() + " has dims " +
                          to_string(t.dim()) + ", expected " + to_string(dims) + " for X " +
                          ports_.x->describe() + " of dims " + to_string(ports_.x->dim()));
  }
  const auto type = t.data_type();
  if (!type || !is_float_type(*type)) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": " + role + " " + t.describe() + " has data type " +
                          type_name(t) + "; it takes Half, BFloat16 or Float");
  }
  return {};
}

Result<void> NormForwardNode::check_running_statistics() const {
  const TensorAttributes& x = *ports_.x;
  const std::vector<std::int64_t> dims = norm_statistic_dims(settings_.kind, x.dim());
  for (const auto& [role, t] : {std::pair{"previous running mean", ports_.prev_running_mean},
                                std::pair{"previous running variance", ports_.prev_running_var}}) {
    if (t->dim() != dims) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": " + role + " " + t->describe() + " has dims " +
                            to_string(t->dim()) + ", expected " + to_string(dims) + " for X " +
                            x.describe() + " of dims " + to_string(x.dim()));
    }
    if (t->data_type() != DataType::Float) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": " + role + " " + t->describe() + " has data type " +
                            type_name(*t) + "; running statistics are Float");
    }
  }
  return check_scalar_input("momentum", *ports_.momentum, x.dim().size(), 1.0F);
}

Result<void> NormForwardNode::settle_statistic(const char* role, TensorAttributes& t,
                                               const GraphContext& context) const {
  return settle_statistic_output(role, t, norm_statistic_dims(settings_.kind, ports_.x->dim()),
                                 *ports_.x, context);
}

Result<void> NormForwardNode::infer(const GraphContext& context) {
  if (auto ok = check_known("forward phase", "NormFwdPhase", std::optional(settings_.phase)); !ok) {
    return ok;
  }
  if (auto ok = check_norm_available(settings_.kind, describe()); !ok) {
    return ok;
  }
  const TensorAttributes& x = *ports_.x;
  const auto x_type = x.data_type();
  if (!x_type || !is_float_type(*x_type)) {
    return make_error(ErrorCode::UnsupportedDataType, describe() + ": input X " + x.describe() +
                                                          " has data type " + type_name(x) +
                                                          "; it takes Half, BFloat16 or Float");
  }
  const std::size_t rank = x.dim().size();
  const std::size_t min_rank = norm_min_rank(settings_.kind);
  if (rank < min_rank || rank > 5) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": input X " + x.describe() +
                                                    " has dims " + to_string(x.dim()) + " (rank " +
                                                    std::to_string(rank) + "); it takes rank " +
                                                    std::to_string(min_rank) + " to 5");
  }
  if (settings_.kind == NormKind::Batch && settings_.phase != NormFwdPhase::Training) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": batch normalization here is the training phase (for "
                          "inference use Graph::batchnorm_inference)");
  }
  if (auto ok = check_float_compute(settings_.compute, context, "normalization computes in Float");
      !ok) {
    return ok;
  }
  const std::vector<std::int64_t> parameter_dims = norm_parameter_dims(settings_.kind, x.dim());
  if (auto ok = check_parameter("scale", *ports_.scale, parameter_dims); !ok) {
    return ok;
  }
  if (ports_.bias) {
    if (auto ok = check_parameter("bias", *ports_.bias, parameter_dims); !ok) {
      return ok;
    }
  }
  {
    if (auto ok = settle_scalar_inputs(rank); !ok) {
      return ok;
    }
    if (auto ok = check_scalar_input("epsilon", *ports_.epsilon, rank, 1e38F); !ok) {
      return ok;
    }
    if (ports_.momentum) {
      if (auto ok = check_running_statistics(); !ok) {
        return ok;
      }
    }
  }
  TensorAttributes& y = *ports_.y;
  if (y.stride().empty() && y.dim().empty()) {
    y.set_stride(x.stride());  // Y keeps X's layout
  }
  if (auto ok = settle_output(y, x.dim(), context); !ok) {
    return ok;
  }
  const DataType y_type = y.data_type().value_or(DataType::Boolean);  // settle_output gave one
  if (!is_float_type(y_type) && y_type != DataType::Fp8E4M3 && y_type != DataType::Fp8E5M2) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": output Y " + y.describe() + " has data type " + type_name(y) +
                          "; it takes Half, BFloat16, Float or Fp8");
  }
  if (ports_.mean_out) {
    if (auto ok = settle_statistic("mean", *ports_.mean_out, context); !ok) {
      return ok;
    }
  }
  if (ports_.inv_variance_out) {
    if (auto ok = settle_statistic("inv_variance", *ports_.inv_variance_out, context); !ok) {
      return ok;
    }
  }
  for (const auto& [role, t] : {std::pair{"next running mean", ports_.next_running_mean},
                                std::pair{"next running variance", ports_.next_running_var}}) {
    if (t) {
      if (auto ok = settle_statistic(role, *t, context); !ok) {
        return ok;
      }
    }
  }
  return {};
}

Result<LoweredOperation> NormForwardNode::lower(const TensorTable& tensors,
                                                const GraphContext& /*context*/) const {
  auto op = backend::OperationNormForward::create();
  if (!op) {
    return std::unexpected(cudnn_error(op.error(), "lower " + describe()));
  }
  const auto mode = to_cudnn(settings_.kind);
  if (!mode) {
    return std::unexpected(lowering_failed(mode.error()));
  }
  auto ok = in_order([&] { return op->set_mode(*mode); },
                     [&] { return op->set_phase(to_cudnn(settings_.phase)); });
  // Each role's setter, in the order cuDNN's documentation lists them.
  using Op = backend::OperationNormForward;
  using Setter = backend::Expected<void> (Op::*)(const backend::Tensor&);
  const std::array<std::pair<const TensorPtr*, Setter>, 12> roles{{
      {&ports_.x, &Op::set_x},
      {&ports_.mean_out, &Op::set_mean},
      {&ports_.inv_variance_out, &Op::set_inv_variance},
      {&ports_.scale, &Op::set_scale},
      {&ports_.bias, &Op::set_bias},
      {&ports_.epsilon, &Op::set_epsilon},
      {&ports_.momentum, &Op::set_exp_avg_factor},
      {&ports_.prev_running_mean, &Op::set_input_running_mean},
      {&ports_.prev_running_var, &Op::set_input_running_var},
      {&ports_.next_running_mean, &Op::set_output_running_mean},
      {&ports_.next_running_var, &Op::set_output_running_var},
      {&ports_.y, &Op::set_y},
  }};
  return lower_roles<Op>(std::move(*op), std::move(ok), roles, tensors);
}

}  // namespace dnngraph::detail
