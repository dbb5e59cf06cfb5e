// Pointwise node: Y = mode(X), mode(X, B) or mode(X, B, T); dX = mode(dY, X) for the backward
// modes. Inputs broadcast their size-1 dims against each other.
#pragma once

#include "api/node_attributes.hpp"
#include "api/nodes/node.hpp"

#include <memory>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

class PointwiseNode final : public Node {
 public:
  PointwiseNode(PointwiseAttributes attributes, std::vector<TensorPtr> inputs, TensorPtr y)
      : Node(attributes.name(), std::move(inputs), {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Pointwise; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<std::vector<std::int64_t>> output_dims(
      std::span<const ShapedTensor> inputs) const override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  PointwiseAttributes attributes_;
};

}  // namespace dnngraph::detail
