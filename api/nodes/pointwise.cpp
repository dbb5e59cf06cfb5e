// Pointwise node: checks, broadcast shape inference and lowering to OperationPointwise.
#include "api/nodes/pointwise.hpp"

#include "api/cudnn_error.hpp"
#include "api/nodes/convolution.hpp"
#include "backend/operation_pointwise.hpp"
#include "backend/pointwise.hpp"

#include <algorithm>

namespace dnngraph::detail {

namespace {

bool is_pointwise_type(DataType type) {
  switch (type) {
    case DataType::Half:
    case DataType::BFloat16:
    case DataType::Float:
    case DataType::Int32:
    case DataType::Int8:
    case DataType::Uint8:
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2: return true;
    default: return false;
  }
}

}  // namespace

Result<std::vector<std::int64_t>> PointwiseNode::output_dims(
    std::span<const ShapedTensor> inputs) const {
  std::vector<std::int64_t> y_dims = *inputs[0].dims;
  if (inputs.size() < 2) {
    return y_dims;
  }
  const TensorAttributes& x = *inputs[0].tensor;
  const TensorAttributes& b = *inputs[1].tensor;
  const std::vector<std::int64_t>& x_dims = *inputs[0].dims;
  const std::vector<std::int64_t>& b_dims = *inputs[1].dims;
  if (b_dims.size() != x_dims.size()) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": " + x.describe() + " has dims " +
                                                    to_string(x_dims) + " and " + b.describe() +
                                                    " has dims " + to_string(b_dims) +
                                                    "; broadcasting needs the same rank");
  }
  for (std::size_t i = 0; i < y_dims.size(); ++i) {
    const std::int64_t dx = x_dims[i];
    const std::int64_t db = b_dims[i];
    if (dx != db && dx != 1 && db != 1) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": dim " + std::to_string(i) + " of " + x.describe() + " is " +
                            std::to_string(dx) + " and of " + b.describe() + " is " +
                            std::to_string(db) + "; they must be equal or one of them 1");
    }
    y_dims[i] = std::max(dx, db);
  }
  return y_dims;
}

Result<void> PointwiseNode::infer(const GraphContext& context) {
  const auto chosen = attributes_.mode();
  if (!chosen) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": no mode set");
  }
  const PointwiseMode mode = *chosen;
  const auto needed = static_cast<std::size_t>(arity(mode));
  if (inputs().size() != needed) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": mode " + std::string(to_string(mode)) + " takes " +
                          std::to_string(needed) + " input(s), given " +
                          std::to_string(inputs().size()));
  }
  for (const TensorPtr& t : inputs()) {
    const auto type = t->data_type();
    if (!type || !is_pointwise_type(*type)) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": input " + t->describe() + " has data type " +
                            std::string(type ? to_string(*type) : "none") +
                            "; pointwise takes Half, BFloat16, Float, Int32, Int8, Uint8 or Fp8");
    }
  }
  std::vector<ShapedTensor> shaped;
  for (const TensorPtr& t : inputs()) {
    shaped.push_back({t.get(), &t->dim()});
  }
  auto y_dims = output_dims(shaped);
  if (!y_dims) {
    return std::unexpected(y_dims.error());
  }
  // An image-like output keeps its input's memory order (NHWC stays NHWC through bias + ReLU),
  // as cuDNN's fusions expect; matmul-like tensors (rank 3) stay packed row-major.
  if (y_dims->size() >= 4) {
    follow_layout(*outputs()[0], *y_dims, *inputs()[0]);
  }
  return settle_output(*outputs()[0], *y_dims, context);
}

Result<LoweredOperation> PointwiseNode::lower(const TensorTable& tensors,
                                              const GraphContext& context) const {
  auto x = lowered(tensors, *inputs()[0]);
  auto y = lowered(tensors, *outputs()[0]);
  if (!x || !y) {
    return std::unexpected(!x ? x.error() : y.error());
  }
  const backend::Tensor* b = nullptr;
  if (inputs().size() == 2) {
    auto found = lowered(tensors, *inputs()[1]);
    if (!found) {
      return std::unexpected(found.error());
    }
    b = *found;
  }
  auto desc = backend::Pointwise::create();
  auto op = backend::OperationPointwise::create();
  if (!desc || !op) {
    return std::unexpected(cudnn_error(!desc ? desc.error() : op.error(), "lower " + describe()));
  }
  const DataType math =
      attributes_.compute_data_type().value_or(context.compute.value_or(DataType::Float));
  const auto mode = attributes_.mode();
  if (!mode) {  // infer() refused this graph already
    return make_error(ErrorCode::InvalidState, describe() + ": lowered without a mode");
  }
  auto ok = desc->set_mode(to_cudnn(*mode));
  if (ok) ok = desc->set_math_precision(to_cudnn(math));
  if (const auto beta = attributes_.swish_beta(); ok && beta) ok = desc->set_swish_beta(*beta);
  if (ok) ok = desc->finalize();
  if (ok) ok = op->set_pointwise(*desc);
  if (ok) ok = op->set_x(**x);
  if (ok && b != nullptr) ok = op->set_b(*b);
  if (ok) ok = op->set_y(**y);
  if (ok) ok = op->finalize();
  if (!ok) {
    return std::unexpected(cudnn_error(ok.error(), "lower " + describe()));
  }
  LoweredOperation lowered_op{std::move(*op), {}};
  lowered_op.parts.push_back(std::move(*desc));
  return lowered_op;
}

}  // namespace dnngraph::detail
