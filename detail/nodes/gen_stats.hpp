// Statistics node: the per-channel sum and sum of squares of X [N, C, (D,) H, W] over N and the
// spatial dims ([1, C, 1, ...] Float each), cuDNN's GenStats operation. Fused behind a
// convolution it gives what a batch norm is finalized from in the same pass.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

class GenStatsNode final : public Node {
 public:
  GenStatsNode(GenstatsAttributes attributes, TensorPtr x, TensorPtr sum, TensorPtr sq_sum)
      : Node(attributes.name(), {std::move(x)}, {std::move(sum), std::move(sq_sum)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::GenStats; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  GenstatsAttributes attributes_;
};

}  // namespace dnngraph::detail
