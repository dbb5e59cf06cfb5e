// Pooling backward node: which forward tensors the mode needs, dX's dims against dY's, and
// lowering to OperationResampleBackward (DXDESC, DYDESC, and IDXDESC or XDESC and YDESC, as
// cudnn_graph.h names them).
#include "detail/nodes/resample_backward.hpp"

#include "backend/operation_resample_backward.hpp"
#include "detail/nodes/convolution.hpp"

#include <array>
#include <string>

namespace dnngraph::detail {

std::vector<TensorPtr> ResampleBackwardPorts::inputs() const {
  std::vector<TensorPtr> list;
  for (const TensorPtr& t : {dy, x, y, index}) {
    if (t) {
      list.push_back(t);
    }
  }
  return list;
}

Result<void> ResampleBackwardNode::check_given() const {
  const ResampleMode mode = window().mode;
  if (ports_.index && mode != ResampleMode::MaxPool) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": set_index with mode " +
                                                       std::string(to_string(mode)) +
                                                       "; only MaxPool reads an index");
  }
  if (!ports_.x != !ports_.y) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": " + (ports_.x ? "X" : "Y") + " without " +
                          (ports_.x ? "Y" : "X") +
                          "; give the forward's X and Y together (set_x and set_y), or neither");
  }
  // Max pooling backward from X and Y without the Index: cuDNN 9.19 crashes the process in
  // build() (SIGSEGV, Half and Float NHWC, H200; known issue resample-max-backward-without-index).
  if (mode == ResampleMode::MaxPool && !ports_.index) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": max pooling backward needs the forward's Index (resample with "
                          "set_generate_index(true), then set_index here); from X and Y alone "
                          "cuDNN 9.19 crashes the process while building the plan (known issue "
                          "resample-max-backward-without-index)");
  }
  return {};
}

Result<std::vector<std::int64_t>> ResampleBackwardNode::dx_dims() const {
  if (ports_.x) {
    return ports_.x->dim();
  }
  if (!ports_.dx->dim().empty()) {
    return ports_.dx->dim();
  }
  return make_error(ErrorCode::InvalidAttribute,
                    describe() + ": dX " + ports_.dx->describe() +
                        " has no dims; give the forward's X (set_x) or set dX's dims on the "
                        "returned tensor (dY's dims do not tell the input's size when the stride "
                        "is above 1)");
}

Result<void> ResampleBackwardNode::check_like_dy(const char* role,
                                                 const TensorAttributes& t) const {
  const TensorAttributes& dy = *ports_.dy;
  if (t.dim() != dy.dim()) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": " + role + " " + t.describe() +
                                                    " has dims " + to_string(t.dim()) +
                                                    ", expected dY's " + to_string(dy.dim()) +
                                                    " (the forward's output dims)");
  }
  return {};
}

Result<void> ResampleBackwardNode::infer(const GraphContext& context) {
  const TensorAttributes& dy = *ports_.dy;
  if (auto ok = settle_window("dY", dy, context); !ok) {
    return ok;
  }
  if (auto ok = check_given(); !ok) {
    return ok;
  }
  auto dims = dx_dims();
  if (!dims) {
    return std::unexpected(dims.error());
  }
  // The tensor that gives dX its dims: X when given, else dX itself.
  const char* source_role = ports_.x ? "X" : "dX";
  const TensorAttributes& source = ports_.x ? *ports_.x : *ports_.dx;
  if (ports_.x) {
    if (auto ok = check_pooled("X", *ports_.x); !ok) {
      return ok;
    }
  }
  if (dims->size() != dy.dim().size()) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": " + source_role + " " + source.describe() + " has dims " +
                          to_string(*dims) + " but dY " + dy.describe() + " has " +
                          to_string(dy.dim()) + "; they need the same number of dims");
  }
  auto pooled = pooled_dims(source_role, source, *dims);
  if (!pooled) {
    return std::unexpected(pooled.error());
  }
  if (*pooled != dy.dim()) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": dY " + dy.describe() + " has dims " + to_string(dy.dim()) +
                          ", but pooling " + source_role + " " + source.describe() + " of dims " +
                          to_string(*dims) + " with this window gives " + to_string(*pooled) +
                          "; dY has the forward output's dims");
  }
  if (ports_.y) {
    if (auto ok = check_like_dy("Y", *ports_.y); !ok) {
      return ok;
    }
    if (auto ok = check_pooling_type("Y", *ports_.y); !ok) {
      return ok;
    }
  }
  if (ports_.index) {
    if (auto ok = check_like_dy("Index", *ports_.index); !ok) {
      return ok;
    }
    if (auto ok = check_index(*ports_.index); !ok) {
      return ok;
    }
  }
  TensorAttributes& dx = *ports_.dx;
  follow_layout(dx, *dims, ports_.x ? *ports_.x : dy);
  if (auto ok = settle_output(dx, *dims, context); !ok) {
    return ok;
  }
  return check_pooling_type("dX", dx);
}

Result<LoweredOperation> ResampleBackwardNode::lower(const TensorTable& tensors,
                                                     const GraphContext& /*context*/) const {
  using Op = backend::OperationResampleBackward;
  using Setter = backend::Expected<void> (Op::*)(const backend::Tensor&);
  const std::array<std::pair<const TensorPtr*, Setter>, 5> roles{{
      {&ports_.dy, &Op::set_dy},
      {&ports_.x, &Op::set_x},
      {&ports_.y, &Op::set_y},
      {&ports_.index, &Op::set_index},
      {&ports_.dx, &Op::set_dx},
  }};
  return lower_resample<Op>(roles, tensors);
}

}  // namespace dnngraph::detail
