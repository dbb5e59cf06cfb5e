// Normalization backward nodes: input shapes and types, the gradients' shapes, and lowering to
// OperationNormBackward (the attribute order cudnn-frontend 1.32's DLN / DRMSNorm nodes use,
// read for facts).
#include "detail/nodes/norm_backward.hpp"

#include "backend/operation_norm_backward.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <algorithm>
#include <array>

namespace dnngraph::detail {

std::vector<TensorPtr> NormBackwardPorts::inputs() const {
  std::vector<TensorPtr> list;
  for (const TensorPtr& t : {dy, x, scale, mean, inv_variance}) {
    if (t) {
      list.push_back(t);
    }
  }
  return list;
}

std::vector<TensorPtr> NormBackwardPorts::outputs() const {
  std::vector<TensorPtr> list;
  for (const TensorPtr& t : {dx, dscale, dbias}) {
    if (t) {
      list.push_back(t);
    }
  }
  return list;
}

namespace {

std::string type_text(const TensorAttributes& t) {
  const auto type = t.data_type();
  return type ? std::string(to_string(*type)) : std::string("none");
}

std::string types_text(std::initializer_list<DataType> types) {
  std::string text;
  for (const DataType type : types) {
    text += (text.empty() ? "" : " or ") + std::string(to_string(type));
  }
  return text;
}

}  // namespace

Result<void> NormBackwardNode::check_input(const char* role, const TensorAttributes& t,
                                           const std::vector<std::int64_t>& dims,
                                           std::initializer_list<DataType> types) const {
  if (t.dim() != dims) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": " + role + " " + t.describe() + " has dims " +
                          to_string(t.dim()) + ", expected " + to_string(dims) + " for X " +
                          ports_.x->describe() + " of dims " + to_string(ports_.x->dim()));
  }
  const auto type = t.data_type();
  if (!type || std::ranges::find(types, *type) == types.end()) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": " + role + " " + t.describe() + " has data type " +
                          type_text(t) + "; it takes " + types_text(types));
  }
  return {};
}

Result<void> NormBackwardNode::settle_gradient(TensorAttributes& out,
                                               const std::vector<std::int64_t>& dims,
                                               const TensorAttributes& like,
                                               std::optional<DataType> type,
                                               const GraphContext& context) const {
  if (out.stride().empty() && out.dim().empty()) {
    out.set_stride(like.stride());
  }
  if (!out.data_type() && type) {
    out.set_data_type(*type);
  }
  return settle_output(out, dims, context);
}

Result<void> NormBackwardNode::infer(const GraphContext& context) {
  if (auto ok = check_float_compute(compute_, context, "normalization computes in Float"); !ok) {
    return ok;
  }
  if (auto ok = check_norm_available(norm_, describe()); !ok) {
    return ok;
  }
  const TensorAttributes& x = *ports_.x;
  const std::size_t rank = x.dim().size();
  const std::size_t min_rank = norm_min_rank(norm_);  // as the forward
  if (rank < min_rank || rank > 5) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": X " + x.describe() + " has dims " +
                                                    to_string(x.dim()) + " (rank " +
                                                    std::to_string(rank) + "); it takes rank " +
                                                    std::to_string(min_rank) + " to 5");
  }
  const std::initializer_list<DataType> io_types{DataType::Half, DataType::BFloat16,
                                                 DataType::Float};
  if (auto ok = check_input("X", x, x.dim(), io_types); !ok) {
    return ok;
  }
  if (auto ok = check_input("dY", *ports_.dy, x.dim(), io_types); !ok) {
    return ok;
  }
  // As the forward: the parameters' and the statistics' dims, statistics in Float.
  const std::vector<std::int64_t> parameter_dims = norm_parameter_dims(norm_, x.dim());
  const std::vector<std::int64_t> statistic_dims = norm_statistic_dims(norm_, x.dim());
  if (auto ok = check_input("scale", *ports_.scale, parameter_dims, io_types); !ok) {
    return ok;
  }
  if (ports_.mean) {
    if (auto ok = check_input("mean", *ports_.mean, statistic_dims, {DataType::Float}); !ok) {
      return ok;
    }
  }
  if (auto ok =
          check_input("inv_variance", *ports_.inv_variance, statistic_dims, {DataType::Float});
      !ok) {
    return ok;
  }
  if (auto ok = settle_gradient(*ports_.dx, x.dim(), x, std::nullopt, context); !ok) {
    return ok;
  }
  for (const TensorPtr& gradient : {ports_.dscale, ports_.dbias}) {
    if (gradient) {
      // cuDNN accumulates the parameter gradients over N in Float and writes them so.
      if (auto ok =
              settle_gradient(*gradient, parameter_dims, *ports_.scale, DataType::Float, context);
          !ok) {
        return ok;
      }
    }
  }
  return {};
}

Result<LoweredOperation> NormBackwardNode::lower(const TensorTable& tensors,
                                                 const GraphContext& /*context*/) const {
  auto op = backend::OperationNormBackward::create();
  if (!op) {
    return std::unexpected(cudnn_error(op.error(), "lower " + describe()));
  }
  const auto mode = to_cudnn(norm_);
  if (!mode) {
    return std::unexpected(lowering_failed(mode.error()));
  }
  auto ok = op->set_mode(*mode);
  using Op = backend::OperationNormBackward;
  using Setter = backend::Expected<void> (Op::*)(const backend::Tensor&);
  const std::array<std::pair<const TensorPtr*, Setter>, 8> roles{{
      {&ports_.x, &Op::set_x},
      {&ports_.dy, &Op::set_dy},
      {&ports_.scale, &Op::set_scale},
      {&ports_.mean, &Op::set_mean},
      {&ports_.inv_variance, &Op::set_inv_variance},
      {&ports_.dscale, &Op::set_dscale},
      {&ports_.dbias, &Op::set_dbias},
      {&ports_.dx, &Op::set_dx},
  }};
  return lower_roles<Op>(std::move(*op), std::move(ok), roles, tensors);
}

}  // namespace dnngraph::detail
