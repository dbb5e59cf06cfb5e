// Pointwise node: checks, broadcast shape inference and lowering to OperationPointwise.
#include "api/nodes/pointwise.hpp"

#include "api/cudnn_error.hpp"
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

Result<void> PointwiseNode::infer(const GraphContext& context) {
  if (!attributes_.mode()) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": no mode set");
  }
  const PointwiseMode mode = *attributes_.mode();
  const auto needed = static_cast<std::size_t>(arity(mode));
  if (inputs().size() != needed) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": mode " + std::string(to_string(mode)) + " takes " +
                          std::to_string(needed) + " input(s), given " +
                          std::to_string(inputs().size()));
  }
  for (const TensorPtr& t : inputs()) {
    if (!is_pointwise_type(*t->data_type())) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": input " + t->describe() + " has data type " +
                            std::string(to_string(*t->data_type())) +
                            "; pointwise takes Half, BFloat16, Float, Int32, Int8, Uint8 or Fp8");
    }
  }
  std::vector<std::int64_t> y_dims = inputs()[0]->dim();
  if (needed == 2) {
    const TensorAttributes& x = *inputs()[0];
    const TensorAttributes& b = *inputs()[1];
    if (b.dim().size() != x.dim().size()) {
      return make_error(ErrorCode::ShapeMismatch, describe() + ": " + x.describe() + " has dims " +
                                                      to_string(x.dim()) + " and " + b.describe() +
                                                      " has dims " + to_string(b.dim()) +
                                                      "; broadcasting needs the same rank");
    }
    for (std::size_t i = 0; i < y_dims.size(); ++i) {
      const std::int64_t dx = x.dim()[i];
      const std::int64_t db = b.dim()[i];
      if (dx != db && dx != 1 && db != 1) {
        return make_error(ErrorCode::ShapeMismatch,
                          describe() + ": dim " + std::to_string(i) + " of " + x.describe() +
                              " is " + std::to_string(dx) + " and of " + b.describe() + " is " +
                              std::to_string(db) + "; they must be equal or one of them 1");
      }
      y_dims[i] = std::max(dx, db);
    }
  }
  return settle_output(*outputs()[0], y_dims, context);
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
  auto ok = desc->set_mode(to_cudnn(*attributes_.mode()));
  if (ok) ok = desc->set_math_precision(to_cudnn(math));
  if (ok && attributes_.swish_beta()) ok = desc->set_swish_beta(*attributes_.swish_beta());
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
