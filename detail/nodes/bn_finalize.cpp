// Batch-norm finalize node: the per-channel inputs' dims and types, the scalars, the element
// count, and lowering to OperationBnFinalize (attribute names as cudnn-frontend 1.32's
// bn_finalize node sets them, read for facts).
#include "detail/nodes/bn_finalize.hpp"

#include "backend/operation_bn_finalize.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <array>
#include <tuple>

namespace dnngraph::detail {

std::vector<TensorPtr> BnFinalizePorts::inputs() const {
  return {sum,
          sq_sum,
          scale,
          bias,
          epsilon,
          accumulation_count,
          prev_running_mean,
          prev_running_var,
          momentum};
}

std::vector<TensorPtr> BnFinalizePorts::outputs() const {
  return {eq_scale, eq_bias, mean, inv_variance, next_running_mean, next_running_var};
}

Result<void> BnFinalizeNode::infer(const GraphContext& context) {
  if (auto ok = check_float_compute(compute_, context, "the statistics are finalized in Float");
      !ok) {
    return ok;
  }
  const TensorAttributes& sum = *ports_.sum;
  const std::vector<std::int64_t>& dims = sum.dim();
  const bool per_channel =
      (dims.size() == 4 || dims.size() == 5) && dims[0] == 1 && element_count(dims) == dims[1];
  if (!per_channel) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": sum " + sum.describe() + " has dims " + to_string(dims) +
                          "; it takes per-channel dims [1, C, 1, 1] or [1, C, 1, 1, 1] (what "
                          "genstats gives)");
  }
  if (auto ok = check_channel_input("sum", sum, dims, "the sum's"); !ok) {
    return ok;
  }
  for (const auto& [role, t] : {std::pair{"sq_sum", ports_.sq_sum},
                                std::pair{"scale", ports_.scale}, std::pair{"bias", ports_.bias},
                                std::pair{"previous running mean", ports_.prev_running_mean},
                                std::pair{"previous running variance", ports_.prev_running_var}}) {
    if (auto ok = check_channel_input(role, *t, dims, "the sum's"); !ok) {
      return ok;
    }
  }
  // cuDNN 9.19's BN_FINALIZE finalize answers CUDNN_STATUS_BAD_PARAM for an epsilon, momentum
  // or count in device memory (measured on the CPU: "!hasBnAccumCnt || !hasBnExpAverageFactor",
  // then finalize_internal()); cudnn-frontend's samples pass all three by value.
  for (const auto& [role, t, maker] :
       {std::tuple{"epsilon", ports_.epsilon, "Graph::tensor(float)"},
        std::tuple{"momentum", ports_.momentum, "Graph::tensor(float)"},
        std::tuple{"accumulation count", ports_.accumulation_count, "Graph::int64_scalar"}}) {
    if (!t->is_pass_by_value()) {
      return make_error(ErrorCode::InvalidAttribute,
                        describe() + ": " + role + " " + t->describe() +
                            " is in device memory; cuDNN's BN_FINALIZE takes it by value (make "
                            "it with " +
                            maker + ")");
    }
  }
  if (auto ok = settle_scalar_inputs(dims.size()); !ok) {
    return ok;
  }
  if (auto ok = check_scalar_input("epsilon", *ports_.epsilon, dims.size(), 1e38F); !ok) {
    return ok;
  }
  if (auto ok = check_scalar_input("momentum", *ports_.momentum, dims.size(), 1.0F); !ok) {
    return ok;
  }
  const TensorAttributes& count = *ports_.accumulation_count;
  if (element_count(count.dim()) != 1 || count.data_type() != DataType::Int64) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": accumulation count " + count.describe() + " has dims " +
                          to_string(count.dim()) + " and data type " + data_type_name(count) +
                          "; it holds one Int64 value (the elements per channel, N * H * W)");
  }
  // The mean divides by the count and the unbiased variance by count - 1: a count below 1 gives
  // infinities or negative variances, never statistics.
  if (const auto n = count.int_value(); n && *n <= 0) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": accumulation count " + count.describe() + " has value " +
                          std::to_string(*n) +
                          "; it is the number of elements per channel (N * H * W), positive");
  }
  for (const auto& [role, t] :
       {std::pair{"eq_scale", ports_.eq_scale}, std::pair{"eq_bias", ports_.eq_bias},
        std::pair{"mean", ports_.mean}, std::pair{"inv_variance", ports_.inv_variance},
        std::pair{"next running mean", ports_.next_running_mean},
        std::pair{"next running variance", ports_.next_running_var}}) {
    if (auto ok = settle_statistic_output(role, *t, dims, sum, context); !ok) {
      return ok;
    }
  }
  return {};
}

Result<LoweredOperation> BnFinalizeNode::lower(const TensorTable& tensors,
                                               const GraphContext& /*context*/) const {
  auto op = backend::OperationBnFinalize::create();
  if (!op) {
    return std::unexpected(cudnn_error(op.error(), "lower " + describe()));
  }
  auto ok = in_order([&] { return op->set_mode(CUDNN_BN_FINALIZE_STATISTICS_TRAINING); },
                     [&] { return op->set_math_precision(CUDNN_DATA_FLOAT); });
  // Each role's setter, in the order cudnn-frontend sets them.
  using Op = backend::OperationBnFinalize;
  using Setter = backend::Expected<void> (Op::*)(const backend::Tensor&);
  const std::array<std::pair<const TensorPtr*, Setter>, 15> roles{{
      {&ports_.sum, &Op::set_sum},
      {&ports_.sq_sum, &Op::set_sq_sum},
      {&ports_.scale, &Op::set_scale},
      {&ports_.bias, &Op::set_bias},
      {&ports_.eq_scale, &Op::set_eq_scale},
      {&ports_.eq_bias, &Op::set_eq_bias},
      {&ports_.prev_running_mean, &Op::set_prev_running_mean},
      {&ports_.prev_running_var, &Op::set_prev_running_var},
      {&ports_.next_running_mean, &Op::set_next_running_mean},
      {&ports_.next_running_var, &Op::set_next_running_var},
      {&ports_.mean, &Op::set_saved_mean},
      {&ports_.inv_variance, &Op::set_saved_inv_std},
      {&ports_.epsilon, &Op::set_epsilon},
      {&ports_.momentum, &Op::set_momentum},
      {&ports_.accumulation_count, &Op::set_accumulation_count},
  }};
  return lower_roles<Op>(std::move(*op), std::move(ok), roles, tensors);
}

}  // namespace dnngraph::detail
