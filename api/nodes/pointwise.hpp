// Pointwise node: Y = mode(X), mode(X, B) or mode(X, B, T); dX = mode(dY, X) for the backward
// modes. Inputs broadcast their size-1 dims against each other.
#pragma once

#include "api/node_attributes.hpp"
#include "api/nodes/node.hpp"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

class PointwiseNode final : public Node {
 public:
  PointwiseNode(PointwiseAttributes attributes, std::vector<TensorPtr> inputs, TensorPtr y)
      : Node(attributes.name(), std::move(inputs), {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] std::string_view kind() const noexcept override { return "pointwise"; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<std::vector<std::int64_t>> output_dims(
      std::span<const ShapedTensor> inputs) const override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  PointwiseAttributes attributes_;
};

// A graph of pointwise (and reduction) nodes alone runs on cuDNN's generic fusion engine, which
// returned success and wrong values on the H200 (cuDNN 9.19, tests/gpu/pointwise_test.cpp) for
// pointwise outputs of rank 2, and at rank 3 for an operand broadcast along two dims ([1, 1, n]
// against [2, 3, n]). Refuses those shapes with an Error naming the node, the tensor and the
// dims; graphs with a matmul, convolution or normalization follow their epilogue rules and are
// not checked here. dims_of gives a tensor's dims (its own, or execute-time overrides); context
// prefixes the message.
[[nodiscard]] Result<void> check_pointwise_only_graph(
    const std::vector<std::unique_ptr<Node>>& nodes,
    const std::function<const std::vector<std::int64_t>&(const TensorAttributes&)>& dims_of,
    std::string_view context);

}  // namespace dnngraph::detail
