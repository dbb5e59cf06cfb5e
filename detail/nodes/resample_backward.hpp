// Pooling backward node (resample_backward): dX from dY with the forward's mode and window. Max
// pooling reads where each maximum was, from the forward's Index or from its X and Y; X and Y may
// be given to average pooling too. dX has X's dims (or the dims the user set on it), which must
// pool to dY's, and follows X's (else dY's) layout.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/resample.hpp"

namespace dnngraph::detail {

// The node's tensors by role; x, y and index are null when not given.
struct ResampleBackwardPorts {
  TensorPtr dy, x, y, index;  // inputs
  TensorPtr dx;               // output

  [[nodiscard]] std::vector<TensorPtr> inputs() const;
};

class ResampleBackwardNode final : public ResampleNodeBase {
 public:
  ResampleBackwardNode(const ResampleBackwardAttributes& attributes, ResampleBackwardPorts ports)
      : ResampleNodeBase(attributes.name(), ResampleSettings::of(attributes), ports.inputs(),
                         {ports.dx}),
        ports_(std::move(ports)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::ResampleBackward; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  // Which of X, Y and Index the mode needs or takes.
  [[nodiscard]] Result<void> check_given() const;
  // The dims dX has: X's, else the user's; an error when neither is there.
  [[nodiscard]] Result<std::vector<std::int64_t>> dx_dims() const;
  // t (Y or Index) has dY's dims.
  [[nodiscard]] Result<void> check_like_dy(const char* role, const TensorAttributes& t) const;

  ResampleBackwardPorts ports_;
};

}  // namespace dnngraph::detail
