// Reshape node: Y = X under other dims and strides, a view of X's memory (Y's element at offset o
// is X's at offset o). A merge or split of dims takes Y's dims from the user; a transpose takes a
// permutation and gives Y X's dims and strides in that order.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

class ReshapeNode final : public Node {
 public:
  ReshapeNode(ReshapeAttributes attributes, TensorPtr x, TensorPtr y)
      : Node(attributes.name(), {std::move(x)}, {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Reshape; }
  // Checks Y's dims, strides and data type against X. output_dims() keeps the default refusal:
  // Y's dims are the user's (or follow a permutation), and no override of a reshape was measured.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  // Y's dims and strides from the permutation: X's, in its order.
  [[nodiscard]] Result<void> infer_transpose(const std::vector<std::int64_t>& permutation,
                                             const GraphContext& context);
  // Y's dims from the user: X's element count, both without gaps.
  [[nodiscard]] Result<void> infer_view(const GraphContext& context);

  ReshapeAttributes attributes_;
};

}  // namespace dnngraph::detail
