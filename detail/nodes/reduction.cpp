// Reduction node: checks, shape checks (Y's dims are the user's) and lowering to
// OperationReduction.
#include "detail/nodes/reduction.hpp"

#include "api/version.hpp"
#include "backend/operation_reduction.hpp"
#include "backend/reduction.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <algorithm>
#include <array>

namespace dnngraph::detail {

namespace {

// Floating-point types only; cuDNN's reduction engines take no integer or fp8 tensors.
constexpr std::array reduction_types{DataType::Half, DataType::BFloat16, DataType::Float};

bool is_reduction_type(DataType type) {
  return std::ranges::find(reduction_types, type) != reduction_types.end();
}

}  // namespace

Result<void> ReductionNode::infer(const GraphContext& context) {
  if (!attributes_.mode()) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": no mode set");
  }
  if (auto ok = check_known("mode", "ReductionMode", attributes_.mode()); !ok) {
    return ok;
  }
  if (auto ok = check_known_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  const TensorAttributes& x = *inputs()[0];
  TensorAttributes& y = *outputs()[0];
  const auto x_type = x.data_type();
  if (!x_type || !is_reduction_type(*x_type)) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": input X " + x.describe() + " has data type " +
                          std::string(x_type ? to_string(*x_type) : "none") +
                          "; reduction takes Half, BFloat16 or Float");
  }
  const std::vector<std::int64_t>& x_dims = x.dim();
  if (x_dims.empty()) {
    // Only a by-value scalar without dims gets here (validate() gives every other input dims);
    // a pointwise node would give it the rank of its operands, a reduction has none to give.
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": input X " + x.describe() +
                          " has no dims; set them (a by-value scalar takes its rank from a "
                          "pointwise node, not from a reduction)");
  }
  if (y.dim().empty()) {
    std::vector<std::int64_t> example = x_dims;
    example.back() = 1;
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": Y " + y.describe() + " has no dims; set them to X's dims " +
                          to_string(x_dims) + " with 1 in each reduced dim (e.g. " +
                          to_string(example) +
                          " to reduce the last): X alone does not say "
                          "which dims to reduce");
  }
  const std::vector<std::int64_t> y_dims = y.dim();
  if (y_dims.size() != x_dims.size()) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": Y " + y.describe() + " has dims " + to_string(y_dims) +
                          " (rank " + std::to_string(y_dims.size()) + "), but X " + x.describe() +
                          " has dims " + to_string(x_dims) + " (rank " +
                          std::to_string(x_dims.size()) + "); they need the same rank");
  }
  for (std::size_t i = 0; i < y_dims.size(); ++i) {
    if (y_dims[i] != x_dims[i] && y_dims[i] != 1) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": dim " + std::to_string(i) + " of Y " + y.describe() +
                            " is " + std::to_string(y_dims[i]) + ", but dim " + std::to_string(i) +
                            " of X " + x.describe() + " is " + std::to_string(x_dims[i]) +
                            "; a Y dim is X's (kept) or 1 (reduced)");
    }
  }
  if (y_dims == x_dims) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": Y " + y.describe() + " has X's dims " + to_string(x_dims) +
                          ", so nothing is reduced; set 1 in the dims to reduce (a copy is a "
                          "pointwise Identity)");
  }
  const DataType compute = compute_type(context);
  if (compute != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": compute data type " + std::string(to_string(compute)) +
                          " is not supported; reduction accumulates in Float");
  }
  if (auto ok = settle_output(y, y_dims, context); !ok) {
    return ok;
  }
  const auto y_type = y.data_type();  // settle_output gave it one
  if (!y_type || !is_reduction_type(*y_type)) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": output Y " + y.describe() + " has data type " +
                          std::string(y_type ? to_string(*y_type) : "none") +
                          "; reduction writes Half, BFloat16 or Float");
  }
  return {};
}

Result<LoweredOperation> ReductionNode::lower(const TensorTable& tensors,
                                              const GraphContext& context) const {
  auto x = lowered(tensors, *inputs()[0]);
  auto y = lowered(tensors, *outputs()[0]);
  if (!x || !y) {
    return std::unexpected(!x ? x.error() : y.error());
  }
  const auto mode = attributes_.mode();
  if (!mode) {  // infer() refused this graph already
    return make_error(ErrorCode::InvalidState, describe() + ": lowered without a mode");
  }
  auto desc = backend::Reduction::create();
  auto op = backend::OperationReduction::create();
  if (!desc || !op) {
    return std::unexpected(cudnn_error(!desc ? desc.error() : op.error(), "lower " + describe()));
  }
  auto ok = in_order([&] { return desc->set_operator(to_cudnn(*mode)); },
                     [&] { return desc->set_compute_type(to_cudnn(compute_type(context))); },
                     [&] { return desc->finalize(); });
  if (!ok) {
    // Measured on cuDNN 9.19: the Reduction descriptor finalizes Add, Mul, Min, Max and Amax;
    // Avg, Norm1, Norm2 and MulNoZeros give CUDNN_STATUS_NOT_SUPPORTED, even without a GPU.
    // No version is hard-coded: the error names the mode and the cuDNN that refused it.
    return std::unexpected(cudnn_error(
        ok.error(), "lower " + describe() + " (mode " + std::string(to_string(*mode)) + ", cuDNN " +
                        cudnn_version_string(cudnn_runtime_version()) + ")"));
  }
  ok = in_order([&] { return op->set_x(**x); }, [&] { return op->set_y(**y); },
                [&] { return op->set_reduction(*desc); }, [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(cudnn_error(ok.error(), "lower " + describe()));
  }
  LoweredOperation lowered_op{std::move(*op), {}};
  lowered_op.parts.push_back(std::move(*desc));
  return lowered_op;
}

}  // namespace dnngraph::detail
