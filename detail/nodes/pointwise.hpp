// Pointwise node: Y = mode(X), mode(X, B) or mode(X, B, T); dX = mode(dY, X) for the backward
// modes. Inputs broadcast their size-1 dims against each other.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

// B of a step of Graph::batchnorm_inference (mean, inv_variance, scale, bias), per channel of x,
// the tensor normalized: B broadcasts into x (each dim 1 or x's), never x into B. Pointwise
// broadcasting alone widened a 1-channel x to 32-channel parameters.
struct PerChannelOperand {
  TensorPtr x;
  std::string role;  // B's name in messages: "mean"
};

class PointwiseNode final : public Node {
 public:
  PointwiseNode(PointwiseAttributes attributes, std::vector<TensorPtr> inputs, TensorPtr y,
                std::optional<PerChannelOperand> per_channel = std::nullopt)
      : Node(attributes.name(), std::move(inputs), {std::move(y)}),
        attributes_(std::move(attributes)),
        per_channel_(std::move(per_channel)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Pointwise; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<std::vector<std::int64_t>> output_dims(
      std::span<const ShapedTensor> inputs) const override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  [[nodiscard]] Result<void> check_per_channel() const;

  PointwiseAttributes attributes_;
  std::optional<PerChannelOperand> per_channel_;
};

}  // namespace dnngraph::detail
