// Slice node: the slices and strides against X, Y's dims, strides and type, and lowering to
// OperationSlice (attributes as cudnn-frontend 1.32's slice node sets them, read for facts).
//
// Below cuDNN 9.22 cudnn-frontend 1.32 lowers no operation: it makes Y a tensor in memory with
// X's strides (times the step) and, at execute, hands cuDNN X's device pointer plus the slice's
// byte offset as Y's, so the next operation reads the view. dnngraph does not: that offset breaks
// the 16-byte alignment every tensor is lowered with unless it happens to be a multiple of 16,
// a slice of a virtual X or a slice that is a graph output has no memory to point at, and the
// built graph would have to rewrite the caller's variant pack. Below 9.22 the build is refused,
// and the error says which graph input gives the same elements where one does.
#include "detail/nodes/slice.hpp"

#include "api/layout.hpp"
#include "backend/features.hpp"
#include "backend/operation_slice.hpp"
#include "detail/common/checked.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dnngraph::detail {

namespace {

// cuDNN wants 16-byte aligned device buffers; lowering declares that alignment on every tensor.
constexpr std::int64_t tensor_alignment = 16;

std::string pair_text(const std::pair<std::int64_t, std::int64_t>& p) {
  return "{" + std::to_string(p.first) + ", " + std::to_string(p.second) + "}";
}

}  // namespace

std::int64_t SliceNode::step(std::size_t d) const {
  const auto& strides = attributes_.strides();
  return d < strides.size() ? strides[d] : 1;
}

Result<void> SliceNode::infer(const GraphContext& context) {
  if (auto ok = check_no_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  const TensorAttributes& x = *inputs()[0];
  if (auto ok = check_not_by_value("input X", x); !ok) {
    return ok;
  }
  if (auto ok = check_ranges(); !ok) {
    return ok;
  }
  std::vector<std::int64_t> dims;
  dims.reserve(x.dim().size());
  for (std::size_t d = 0; d < x.dim().size(); ++d) {
    const auto& [start, limit] = attributes_.slices()[d];
    dims.push_back(1 + (limit - start - 1) / step(d));  // ceil; check_ranges: limit > start
  }
  TensorAttributes& y = *outputs()[0];
  if (auto ok = settle_copied_type("X", x, y, false,
                                   "a slice keeps X's data type (leave Y's unset, or convert "
                                   "with a pointwise Identity node after it)");
      !ok) {
    return ok;
  }
  if (y.stride().empty() && y.dim().empty()) {
    y.set_stride(strides_like(dims, x));  // packed, in X's memory order
  }
  return settle_output(y, dims, context);
}

Result<void> SliceNode::check_ranges() const {
  const TensorAttributes& x = *inputs()[0];
  const std::size_t rank = x.dim().size();
  const auto& slices = attributes_.slices();
  const auto& strides = attributes_.strides();
  const std::string of_x = "X " + x.describe() + " has dims " + to_string(x.dim()) + " (rank " +
                           std::to_string(rank) + ")";
  if (slices.empty()) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": no slices; set_slices in SliceAttributes with one "
                          "{start, limit} pair per dim: " +
                          of_x);
  }
  if (slices.size() != rank) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": " + std::to_string(slices.size()) +
                          " {start, limit} pairs were given, but " + of_x +
                          "; give one pair per dim ({0, extent} keeps a dim whole)");
  }
  if (!strides.empty() && strides.size() != rank) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": slice strides " + to_string(strides) + " have " +
                          std::to_string(strides.size()) + " entries, but " + of_x +
                          "; give one stride (step) per dim, or none for 1 everywhere");
  }
  for (std::size_t d = 0; d < rank; ++d) {
    const auto& [start, limit] = slices[d];
    const std::int64_t extent = x.dim()[d];
    const std::string dim = describe() + ": dim " + std::to_string(d) + " of X " + x.describe() +
                            ": slice " + pair_text(slices[d]);
    if (step(d) <= 0) {
      return make_error(ErrorCode::InvalidAttribute, describe() + ": dim " + std::to_string(d) +
                                                         ": slice stride " +
                                                         std::to_string(step(d)) +
                                                         " is not positive; a stride (step) is 1 "
                                                         "or more");
    }
    if (start < 0 || start >= extent) {
      return make_error(ErrorCode::InvalidAttribute,
                        dim + " starts out of range: X has " + std::to_string(extent) +
                            " there, so start is 0 to " + std::to_string(extent - 1) +
                            " (counted from the front)");
    }
    if (limit > extent) {
      return make_error(ErrorCode::InvalidAttribute,
                        dim + " ends beyond X's extent " + std::to_string(extent) +
                            " there; limit (one past the last index taken) is at most " +
                            std::to_string(extent));
    }
    if (limit <= start) {
      return make_error(ErrorCode::InvalidAttribute,
                        dim + " is empty (limit " + std::to_string(limit) + " is not above start " +
                            std::to_string(start) +
                            "); a slice takes at least one element in every dim");
    }
  }
  return {};
}

std::string SliceNode::view_hint() const {
  const TensorAttributes& x = *inputs()[0];
  const TensorAttributes& y = *outputs()[0];
  const auto type = x.data_type();
  if (x.is_virtual() || !type) {
    return "";
  }
  std::optional<std::int64_t> offset = 0;
  std::vector<std::int64_t> strides;
  for (std::size_t d = 0; d < x.dim().size() && offset; ++d) {
    offset = checked_mul_add(attributes_.slices()[d].first, x.stride()[d], *offset);
    const auto stride = checked_mul(x.stride()[d], step(d));
    if (!stride) {
      return "";
    }
    strides.push_back(*stride);
  }
  offset = offset ? checked_mul(*offset, size_of(*type)) : std::nullopt;
  if (!offset) {
    return "";
  }
  std::string hint = ". The same elements are a tensor of dims " + to_string(y.dim()) +
                     " and strides " + to_string(strides) + " starting " + std::to_string(*offset) +
                     " bytes into X " + x.describe() + "'s memory";
  if (*offset % tensor_alignment != 0) {
    return hint +
           ", which is not 16-byte aligned as cuDNN's tensors are: copy the slice out "
           "before the graph, or build against cuDNN 9.22";
  }
  return hint + ": give that to the graph as an input (X's device pointer plus " +
         std::to_string(*offset) + " bytes) in place of the slice";
}

Result<LoweredOperation> SliceNode::lower(const TensorTable& tensors,
                                          const GraphContext& /*context*/) const {
  if (!backend::available(backend::Feature::SliceOperation)) {
    Error error = version_too_old(backend::Feature::SliceOperation, "lower " + describe());
    error.message += view_hint();
    return std::unexpected(std::move(error));
  }
  auto x = lowered(tensors, *inputs()[0]);
  auto y = lowered(tensors, *outputs()[0]);
  if (!x || !y) {
    return std::unexpected(!x ? x.error() : y.error());
  }
  const std::size_t rank = inputs()[0]->dim().size();
  std::vector<std::int64_t> starts;
  std::vector<std::int64_t> limits;
  std::vector<std::int64_t> steps;
  for (std::size_t d = 0; d < rank; ++d) {
    starts.push_back(attributes_.slices()[d].first);
    limits.push_back(attributes_.slices()[d].second);
    steps.push_back(step(d));
  }
  auto op = backend::OperationSlice::create();
  if (!op) {
    return std::unexpected(lowering_failed(op.error()));
  }
  auto ok = in_order([&] { return op->set_x(**x); }, [&] { return op->set_y(**y); },
                     [&] { return op->set_start_indices(starts); },
                     [&] { return op->set_limit_indices(limits); },
                     [&] { return op->set_strides(steps); }, [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(lowering_failed(ok.error()));
  }
  return LoweredOperation{std::move(*op), {}};
}

}  // namespace dnngraph::detail
