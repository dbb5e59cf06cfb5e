// Concatenate node: the axis, the inputs' ranks, dims and data types, the in-place index, Y's
// dims, strides and type, and lowering to OperationConcat (attributes as cudnn-frontend 1.32's
// concatenate node sets them, read for facts).
#include "detail/nodes/concatenate.hpp"

#include "api/layout.hpp"
#include "backend/features.hpp"
#include "backend/operation_concat.hpp"
#include "detail/common/checked.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <gsl/util>

#include <algorithm>
#include <string>
#include <vector>

namespace dnngraph::detail {

namespace {

std::string input_role(std::size_t i) { return "input " + std::to_string(i); }

}  // namespace

Result<void> ConcatenateNode::infer(const GraphContext& context) {
  if (auto ok = check_no_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  if (inputs().empty()) {  // Graph::concatenate records this first; a node never has none
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": no inputs; give one tensor or more to concatenate");
  }
  for (std::size_t i = 0; i < inputs().size(); ++i) {
    if (auto ok = check_not_by_value(input_role(i), *inputs()[i]); !ok) {
      return ok;
    }
  }
  const TensorAttributes& first = *inputs()[0];
  const std::size_t rank = first.dim().size();
  const auto axis = attributes_.axis();
  if (!axis) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": no axis; set_axis in ConcatenateAttributes to the dim to "
                          "concatenate along, 0 to " +
                          std::to_string(rank - 1) + " (input 0 " + first.describe() +
                          " has dims " + to_string(first.dim()) + ")");
  }
  if (*axis < 0 || static_cast<std::size_t>(*axis) >= rank) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": axis " + std::to_string(*axis) +
                          " is out of range: input 0 " + first.describe() + " has dims " +
                          to_string(first.dim()) + " (rank " + std::to_string(rank) +
                          "), so the axis is 0 to " + std::to_string(rank - 1));
  }
  const auto along = gsl::narrow_cast<std::size_t>(*axis);  // in 0..rank-1: checked above
  std::vector<std::int64_t> dims = first.dim();
  for (std::size_t i = 1; i < inputs().size(); ++i) {
    if (auto ok = check_like_first(i, along); !ok) {
      return ok;
    }
    const auto sum = checked_add(dims[along], inputs()[i]->dim()[along]);
    if (!sum) {
      return make_error(ErrorCode::InvalidAttribute,
                        describe() + ": the inputs' extents along axis " + std::to_string(along) +
                            " add up to more than int64 counts");
    }
    dims[along] = *sum;
  }
  // Y's type, unless set, the inputs'; another one only where every input is virtual.
  const bool all_virtual =
      std::ranges::all_of(inputs(), [](const TensorPtr& t) { return t->is_virtual(); });
  if (auto ok = settle_copied_type("input 0", first, *outputs()[0], all_virtual,
                                   "a concatenate of tensors in memory copies them as they are "
                                   "(leave Y's type unset); only virtual inputs, which live "
                                   "inside the fused kernel, may give Y another");
      !ok) {
    return ok;
  }
  TensorAttributes& y = *outputs()[0];
  if (y.stride().empty() && y.dim().empty()) {
    y.set_stride(strides_like(dims, first));  // input 0's memory order
  }
  if (auto ok = settle_output(y, dims, context); !ok) {
    return ok;
  }
  return check_in_place();
}

Result<void> ConcatenateNode::check_like_first(std::size_t i, std::size_t axis) const {
  const TensorAttributes& first = *inputs()[0];
  const TensorAttributes& t = *inputs()[i];
  const std::string subject = describe() + ": " + input_role(i) + " " + t.describe();
  if (t.dim().size() != first.dim().size()) {
    return make_error(ErrorCode::ShapeMismatch, subject + " has dims " + to_string(t.dim()) +
                                                    " (rank " + std::to_string(t.dim().size()) +
                                                    "), but input 0 " + first.describe() +
                                                    " has dims " + to_string(first.dim()) +
                                                    " (rank " + std::to_string(first.dim().size()) +
                                                    "); concatenated inputs have the same rank");
  }
  for (std::size_t d = 0; d < t.dim().size(); ++d) {
    if (d != axis && t.dim()[d] != first.dim()[d]) {
      return make_error(ErrorCode::ShapeMismatch,
                        subject + " has dims " + to_string(t.dim()) + ": dim " + std::to_string(d) +
                            " is " + std::to_string(t.dim()[d]) + ", but input 0 " +
                            first.describe() + " has " + std::to_string(first.dim()[d]) +
                            " there (dims " + to_string(first.dim()) +
                            "); the inputs agree in every dim but the "
                            "axis, " +
                            std::to_string(axis));
    }
  }
  if (t.data_type() != first.data_type()) {
    return make_error(ErrorCode::UnsupportedDataType,
                      subject + " has data type " + data_type_name(t) + ", but input 0 " +
                          first.describe() + " has " + data_type_name(first) +
                          "; concatenated inputs share one data type (set it on a virtual "
                          "input, which takes the graph's intermediate type unless set)");
  }
  return {};
}

Result<void> ConcatenateNode::check_in_place() const {
  const auto index = attributes_.in_place_index();
  if (!index) {
    return {};
  }
  const std::size_t n = inputs().size();
  if (*index < 0 || static_cast<std::size_t>(*index) >= n) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": in-place index " + std::to_string(*index) +
                          " is out of range for " + std::to_string(n) +
                          " inputs; it names an input, 0 to " + std::to_string(n - 1));
  }
  const TensorAttributes& t = *inputs()[gsl::narrow_cast<std::size_t>(*index)];  // checked
  const TensorAttributes& y = *outputs()[0];
  const std::string subject =
      describe() + ": in-place input " + std::to_string(*index) + " " + t.describe();
  if (t.is_virtual()) {
    return make_error(ErrorCode::InvalidAttribute,
                      subject +
                          " is virtual; in place, the input already lies in Y's device "
                          "memory: make it a graph input that points into Y's buffer");
  }
  if (y.is_virtual()) {
    return make_error(ErrorCode::InvalidAttribute,
                      subject + " lies in Y's device memory, but Y " + y.describe() +
                          " is virtual; in place, Y is in memory (set_output(true) on it)");
  }
  if (t.stride() != y.stride()) {
    return make_error(ErrorCode::ShapeMismatch,
                      subject + " has strides " + to_string(t.stride()) + ", but Y " +
                          y.describe() + " has " + to_string(y.stride()) +
                          "; in place, the input is a view of its part of Y, with Y's strides");
  }
  return {};
}

Result<LoweredOperation> ConcatenateNode::lower(const TensorTable& tensors,
                                                const GraphContext& /*context*/) const {
  if (!backend::available(backend::Feature::ConcatOperation)) {
    return std::unexpected(
        version_too_old(backend::Feature::ConcatOperation, "lower " + describe()));
  }
  std::vector<const backend::Tensor*> xs;
  xs.reserve(inputs().size());
  for (const TensorPtr& t : inputs()) {
    auto x = lowered(tensors, *t);
    if (!x) {
      return std::unexpected(x.error());
    }
    xs.push_back(*x);
  }
  auto y = lowered(tensors, *outputs()[0]);
  if (!y) {
    return std::unexpected(y.error());
  }
  auto op = backend::OperationConcat::create();
  if (!op) {
    return std::unexpected(lowering_failed(op.error()));
  }
  // infer() checked the axis and the index: both in range.
  const auto in_place = attributes_.in_place_index();
  auto ok = in_order([&] { return op->set_axis(attributes_.axis().value_or(0)); },
                     [&] { return op->set_inputs(xs); },
                     when(in_place, [&] { return op->set_in_place_index(*in_place); }),
                     [&] { return op->set_y(**y); }, [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(lowering_failed(ok.error()));
  }
  return LoweredOperation{std::move(*op), {}};
}

}  // namespace dnngraph::detail
