// Pointwise node: arity and data-type checks per mode family, broadcast shape inference and
// lowering to OperationPointwise (X/B/T -> Y, or DY/X -> DX for the backward modes).
#include "detail/nodes/pointwise.hpp"

#include "backend/operation_pointwise.hpp"
#include "backend/pointwise.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/nodes/convolution.hpp"

#include <algorithm>
#include <cmath>

namespace dnngraph::detail {

namespace {

bool is_backward(PointwiseMode mode) { return family(mode) == PointwiseFamily::Backward; }
bool is_logical(PointwiseMode mode) { return family(mode) == PointwiseFamily::Logical; }
bool is_comparison(PointwiseMode mode) { return family(mode) == PointwiseFamily::Comparison; }

// The name cuDNN gives the operand in position i, for messages.
std::string_view role(PointwiseMode mode, std::size_t i) {
  if (is_backward(mode)) {
    return i == 0 ? "dY" : "X";
  }
  constexpr std::string_view names[] = {"X", "B", "T"};
  return i < std::size(names) ? names[i] : "input";
}

// Whether operand i of the mode must be Boolean (true) or numeric (false).
bool wants_boolean(PointwiseMode mode, std::size_t i) {
  return is_logical(mode) || (mode == PointwiseMode::BinarySelect && i == 2);
}

}  // namespace

Result<std::vector<std::int64_t>> PointwiseNode::output_dims(
    std::span<const ShapedTensor> inputs) const {
  std::vector<std::int64_t> y_dims = *inputs[0].dims;
  const TensorAttributes& x = *inputs[0].tensor;
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const TensorAttributes& b = *inputs[k].tensor;
    const std::vector<std::int64_t>& b_dims = *inputs[k].dims;
    if (b_dims.size() != y_dims.size()) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": " + x.describe() + " has dims " +
                            to_string(*inputs[0].dims) + " and " + b.describe() + " has dims " +
                            to_string(b_dims) + "; broadcasting needs the same rank");
    }
    for (std::size_t i = 0; i < y_dims.size(); ++i) {
      const std::int64_t dy = y_dims[i];
      const std::int64_t db = b_dims[i];
      if (dy != db && dy != 1 && db != 1) {
        return make_error(ErrorCode::ShapeMismatch,
                          describe() + ": dim " + std::to_string(i) + " of " +
                              (k == 1 ? x.describe() : "the earlier inputs") + " is " +
                              std::to_string(dy) + " and of " + b.describe() + " is " +
                              std::to_string(db) + "; they must be equal or one of them 1");
      }
      y_dims[i] = std::max(dy, db);
    }
  }
  return y_dims;
}

Result<void> PointwiseNode::check_per_channel() const {
  if (!per_channel_ || !per_channel_->x || inputs().size() != 2) {
    return {};
  }
  const TensorAttributes& x = *per_channel_->x;
  const TensorAttributes& b = *inputs()[1];
  const auto& xd = x.dim();
  const auto& bd = b.dim();
  const std::string what = describe() + ": " + per_channel_->role + " " + b.describe();
  if (xd.size() < 2 || bd.size() != xd.size()) {
    return make_error(ErrorCode::ShapeMismatch,
                      what + " has dims " + to_string(bd) + ", X " + x.describe() + " has " +
                          to_string(xd) +
                          "; batch normalization takes X [N, C, ...] and parameters of its rank");
  }
  for (std::size_t i = 0; i < xd.size(); ++i) {
    if (bd[i] == 1 || bd[i] == xd[i]) {
      continue;
    }
    if (i == 1) {
      return make_error(ErrorCode::ShapeMismatch,
                        what + " has " + std::to_string(bd[1]) + " channels (dim 1), X " +
                            x.describe() + " has " + std::to_string(xd[1]) +
                            "; the parameters hold one value per channel of X");
    }
    return make_error(ErrorCode::ShapeMismatch,
                      what + " has dims " + to_string(bd) + ", X " + x.describe() + " has " +
                          to_string(xd) + ": dim " + std::to_string(i) + " is " +
                          std::to_string(bd[i]) +
                          "; a parameter broadcasts into X (each dim 1 or X's), never X into it");
  }
  return {};
}

Result<void> PointwiseNode::infer(const GraphContext& context) {
  const auto chosen = attributes_.mode();
  if (!chosen) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": no mode set");
  }
  if (auto ok = check_known("mode", "PointwiseMode", chosen); !ok) {
    return ok;
  }
  if (auto ok = check_known_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  // cuDNN writes the value into the operation graph (and the kernel cache's JSON, where a NaN
  // makes the document unreadable); no finite-valued activation comes from NaN or Inf.
  if (const auto beta = attributes_.swish_beta(); beta && !std::isfinite(*beta)) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": attribute swish beta is " +
                                                       std::to_string(*beta) +
                                                       "; it must be a finite number");
  }
  const PointwiseMode mode = *chosen;
  const std::string mode_name(to_string(mode));
  const auto needed = static_cast<std::size_t>(arity(mode));
  if (inputs().size() != needed) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": mode " + mode_name + " takes " + std::to_string(needed) +
                          " input(s), given " + std::to_string(inputs().size()));
  }
  for (std::size_t i = 0; i < inputs().size(); ++i) {
    const TensorAttributes& t = *inputs()[i];
    const auto type = t.data_type();
    const std::string given(type ? to_string(*type) : "none");
    const std::string operand =
        describe() + ": " + std::string(role(mode, i)) + " " + t.describe() + " has data type ";
    std::string message = operand;
    message += given;
    message += "; mode ";
    message += mode_name;
    if (wants_boolean(mode, i)) {
      if (type != DataType::Boolean) {
        return make_error(ErrorCode::UnsupportedDataType, message + " takes it as Boolean");
      }
    } else if (!type || !is_numeric(*type)) {
      return make_error(ErrorCode::UnsupportedDataType,
                        message + " takes Half, BFloat16, Float, Int32, Int8, Uint8 or Fp8");
    }
  }
  std::size_t rank = 0;
  for (const TensorPtr& t : inputs()) {
    rank = std::max(rank, t->dim().size());
  }
  if (auto ok = settle_scalar_inputs(rank); !ok) {
    return ok;
  }
  if (auto ok = check_per_channel(); !ok) {
    return ok;
  }
  std::vector<ShapedTensor> shaped;
  for (const TensorPtr& t : inputs()) {
    shaped.push_back({t.get(), &t->dim()});
  }
  auto y_dims = output_dims(shaped);
  if (!y_dims) {
    return std::unexpected(y_dims.error());
  }
  TensorAttributes& y = *outputs()[0];
  // A truth value is Boolean wherever it lives, virtual or not, unless the caller chose.
  if ((is_comparison(mode) || is_logical(mode)) && !y.data_type()) {
    y.set_data_type(DataType::Boolean);
  }
  // An image-like output keeps its input's memory order (NHWC stays NHWC through bias + ReLU),
  // as cuDNN's fusions expect; matmul-like tensors (rank 3) stay packed row-major.
  if (y_dims->size() >= 4) {
    follow_layout(y, *y_dims, *inputs()[0]);
  }
  return settle_output(y, *y_dims, context);
}

Result<LoweredOperation> PointwiseNode::lower(const TensorTable& tensors,
                                              const GraphContext& context) const {
  const auto mode = attributes_.mode();
  if (!mode) {  // infer() refused this graph already
    return make_error(ErrorCode::InvalidState, describe() + ": lowered without a mode");
  }
  std::vector<const backend::Tensor*> in;
  for (const TensorPtr& t : inputs()) {
    auto found = lowered(tensors, *t);
    if (!found) {
      return std::unexpected(found.error());
    }
    in.push_back(*found);
  }
  auto y = lowered(tensors, *outputs()[0]);
  if (!y) {
    return std::unexpected(y.error());
  }
  if (in.size() != static_cast<std::size_t>(arity(*mode))) {  // infer() checked this too
    return make_error(ErrorCode::InvalidState, describe() + ": lowered with the wrong input count");
  }
  auto desc = backend::Pointwise::create();
  auto op = backend::OperationPointwise::create();
  if (!desc || !op) {
    return std::unexpected(cudnn_error(!desc ? desc.error() : op.error(), "lower " + describe()));
  }
  // Logical modes work on truth values: their math is Boolean unless the node says otherwise
  // (cuDNN finds no engine for a Float LogicalAnd/Or/Not).
  const DataType fallback =
      is_logical(*mode) ? DataType::Boolean : context.compute.value_or(DataType::Float);
  const DataType math = attributes_.compute_data_type().value_or(fallback);
  const auto beta = attributes_.swish_beta();
  const bool backward = is_backward(*mode);
  auto ok = in_order([&] { return desc->set_mode(to_cudnn(*mode)); },
                     [&] { return desc->set_math_precision(to_cudnn(math)); },
                     when(beta, [&] { return desc->set_swish_beta(*beta); }),
                     [&] { return desc->finalize(); }, [&] { return op->set_pointwise(*desc); },
                     when(backward,
                          [&] {
                            return in_order([&] { return op->set_dy(*in[0]); },
                                            [&] { return op->set_x(*in[1]); },
                                            [&] { return op->set_dx(**y); });
                          }),
                     when(!backward,
                          [&] {
                            return in_order([&] { return op->set_x(*in[0]); },
                                            when(in.size() > 1, [&] { return op->set_b(*in[1]); }),
                                            when(in.size() > 2, [&] { return op->set_t(*in[2]); }),
                                            [&] { return op->set_y(**y); });
                          }),
                     [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(cudnn_error(ok.error(), "lower " + describe()));
  }
  LoweredOperation lowered_op{std::move(*op), {}};
  lowered_op.parts.push_back(std::move(*desc));
  return lowered_op;
}

}  // namespace dnngraph::detail
