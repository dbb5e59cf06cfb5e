// Reduction node: Y = mode(X) over the dims where Y has extent 1 and X does not. Y's dims are the
// user's (X alone does not say which dims to reduce); its strides, unless set, are packed.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

class ReductionNode final : public Node {
 public:
  ReductionNode(ReductionAttributes attributes, TensorPtr x, TensorPtr y)
      : Node(attributes.name(), {std::move(x)}, {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Reduction; }
  // Checks Y's dims against X. output_dims() keeps the default refusal: where X has extent 1 at
  // build, an override could not tell a reduced dim from a kept one.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  [[nodiscard]] DataType compute_type(const GraphContext& context) const {
    return attributes_.compute_data_type().value_or(context.compute.value_or(DataType::Float));
  }
  ReductionAttributes attributes_;
};

}  // namespace dnngraph::detail
