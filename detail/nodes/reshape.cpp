// Reshape node: checks (element count, permutation, layouts without gaps, data type), Y's dims and
// strides, and lowering to OperationReshape.
#include "detail/nodes/reshape.hpp"

#include "backend/operation_reshape.hpp"
#include "detail/common/checked.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <gsl/util>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dnngraph::detail {

namespace {

// The elements from the first to one past the last that dims and strides address (same rank),
// or nullopt where that does not fit in int64. Strides that nest (check_layout's rule) address
// every element once, so a span equal to the element count means no gaps.
std::optional<std::int64_t> span_of(const std::vector<std::int64_t>& dims,
                                    const std::vector<std::int64_t>& strides) {
  std::optional<std::int64_t> last = 0;
  for (std::size_t i = 0; i < dims.size() && i < strides.size(); ++i) {
    last = last ? checked_mul_add(dims[i] - 1, strides[i], *last) : std::nullopt;
  }
  return last ? checked_add(*last, 1) : std::nullopt;
}

// "dims [2, 3] and strides [4, 1], which leave gaps (they span 6 elements for 4)", or nullopt
// where t has none.
std::optional<std::string> gaps(const TensorAttributes& t, std::int64_t count) {
  const auto span = span_of(t.dim(), t.stride());
  if (span == count) {
    return std::nullopt;
  }
  return "dims " + to_string(t.dim()) + " and strides " + to_string(t.stride()) +
         ", which leave gaps (they span " +
         (span ? std::to_string(*span) : std::string("more than int64 counts")) + " elements for " +
         std::to_string(count) + ")";
}

// The dims to suggest to a user who set none: X's first two merged, or a leading 1.
std::vector<std::int64_t> example_dims(const std::vector<std::int64_t>& x_dims) {
  if (x_dims.size() < 2) {
    return {1, x_dims.empty() ? 1 : x_dims.front()};
  }
  std::vector<std::int64_t> dims{x_dims[0] * x_dims[1]};
  dims.insert(dims.end(), x_dims.begin() + 2, x_dims.end());
  return dims;
}

}  // namespace

Result<void> ReshapeNode::infer(const GraphContext& context) {
  if (auto ok = check_no_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  const TensorAttributes& x = *inputs()[0];
  if (auto ok = check_not_by_value("input X", x); !ok) {
    return ok;
  }
  if (auto ok = settle_copied_type("X", x, *outputs()[0], x.is_virtual(),
                                   "a view of a tensor in memory keeps its data type (leave Y's "
                                   "unset); only a virtual X, which lives inside the fused "
                                   "kernel, may be given another");
      !ok) {
    return ok;
  }
  const auto& permutation = attributes_.permutation();
  return permutation ? infer_transpose(*permutation, context) : infer_view(context);
}

Result<void> ReshapeNode::infer_transpose(const std::vector<std::int64_t>& permutation,
                                          const GraphContext& context) {
  const TensorAttributes& x = *inputs()[0];
  TensorAttributes& y = *outputs()[0];
  const std::size_t rank = x.dim().size();
  if (permutation.size() != rank) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": permutation " + to_string(permutation) + " has " +
                          std::to_string(permutation.size()) + " entries, but X " + x.describe() +
                          " has dims " + to_string(x.dim()) + " (rank " + std::to_string(rank) +
                          "); give one entry per dim of X");
  }
  std::vector<std::int64_t> dims(rank);
  std::vector<std::int64_t> strides(rank);
  std::vector<char> named(rank, 0);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t p = permutation[i];
    const auto entry = [&] {
      return describe() + ": entry " + std::to_string(i) + " of permutation " +
             to_string(permutation) + " is " + std::to_string(p);
    };
    if (p < 0 || static_cast<std::size_t>(p) >= rank) {
      return make_error(ErrorCode::InvalidAttribute, entry() + "; entries are dims of X " +
                                                         x.describe() + ", 0 to " +
                                                         std::to_string(rank - 1));
    }
    const auto from = gsl::narrow_cast<std::size_t>(p);  // in 0..rank-1: checked above
    if (named[from] != 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        entry() + ", which an earlier entry names too; each dim of X appears once");
    }
    named[from] = 1;
    dims[i] = x.dim()[from];
    strides[i] = x.stride()[from];
  }
  if (y.stride().empty()) {
    y.set_stride(strides);
  } else if (y.stride() != strides) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": Y " + y.describe() + " was given strides " +
                          to_string(y.stride()) + ", but permutation " + to_string(permutation) +
                          " of X " + x.describe() + "'s strides " + to_string(x.stride()) +
                          " gives " + to_string(strides) +
                          "; a transpose is a view of X's memory (leave Y's strides unset)");
  }
  return settle_output(y, dims, context);
}

Result<void> ReshapeNode::infer_view(const GraphContext& context) {
  const TensorAttributes& x = *inputs()[0];
  TensorAttributes& y = *outputs()[0];
  const std::vector<std::int64_t> y_dims = y.dim();
  const std::int64_t x_count = element_count(x.dim()).value_or(0);  // validate() checked X
  if (y_dims.empty()) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": Y " + y.describe() +
                          " has no dims; set them on the returned tensor with X " + x.describe() +
                          "'s element count (X has dims " + to_string(x.dim()) + ", " +
                          std::to_string(x_count) + " elements: e.g. " +
                          to_string(example_dims(x.dim())) +
                          "), or set a permutation in ReshapeAttributes for a transpose");
  }
  if (y_dims.size() > max_rank) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": Y " + y.describe() + " has dims " + to_string(y_dims) +
                          " (rank " + std::to_string(y_dims.size()) + "); a tensor has 1 to " +
                          std::to_string(max_rank) + " dims (cuDNN's CUDNN_DIM_MAX)");
  }
  const auto y_count = element_count(y_dims);
  if (y_count != x_count) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": Y " + y.describe() + " has dims " + to_string(y_dims) + " (" +
                          (y_count ? std::to_string(*y_count) + " elements"
                                   : std::string("not all positive, or too many to count")) +
                          "), but X " + x.describe() + " has dims " + to_string(x.dim()) + " (" +
                          std::to_string(x_count) +
                          " elements); a reshape keeps the element count");
  }
  if (const auto x_gaps = gaps(x, x_count)) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": X " + x.describe() + " has " + *x_gaps +
                          "; a view with other dims needs X without gaps (a transpose of it, "
                          "set_permutation in ReshapeAttributes, works at any layout)");
  }
  if (y.stride().empty()) {
    y.set_stride(packed_strides(y_dims));
  }
  if (auto ok = settle_output(y, y_dims, context); !ok) {
    return ok;
  }
  // Strides check_layout refuses (not positive, overlapping) are reported by validate() right
  // after this node, naming Y; only legal ones can be judged for gaps.
  if (!detail::check_layout(y.dim(), y.stride(), 1)) {
    return {};
  }
  if (const auto y_gaps = gaps(y, x_count)) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": Y " + y.describe() + " has " + *y_gaps + "; as a view of X " +
                          x.describe() +
                          "'s elements it has none: leave its strides unset (packed) or give "
                          "packed strides in another order");
  }
  return {};
}

Result<LoweredOperation> ReshapeNode::lower(const TensorTable& tensors,
                                            const GraphContext& /*context*/) const {
  auto x = lowered(tensors, *inputs()[0]);
  auto y = lowered(tensors, *outputs()[0]);
  if (!x || !y) {
    return std::unexpected(!x ? x.error() : y.error());
  }
  auto op = backend::OperationReshape::create();
  if (!op) {
    return std::unexpected(cudnn_error(op.error(), "lower " + describe()));
  }
  auto ok = in_order([&] { return op->set_x(**x); }, [&] { return op->set_y(**y); },
                     [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(cudnn_error(ok.error(), "lower " + describe()));
  }
  return LoweredOperation{std::move(*op), {}};
}

}  // namespace dnngraph::detail
