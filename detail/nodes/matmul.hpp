// Matmul node: C[..., M, N] = A[..., M, K] x B[..., K, N]; batch dims broadcast where one is 1.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

class MatmulNode final : public Node {
 public:
  MatmulNode(MatmulAttributes attributes, TensorPtr a, TensorPtr b, TensorPtr c)
      : Node(attributes.name(), {std::move(a), std::move(b)}, {std::move(c)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Matmul; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] bool exact_overrides_on_dynamic_graphs() const noexcept override { return true; }
  [[nodiscard]] Result<std::vector<std::int64_t>> output_dims(
      std::span<const ShapedTensor> inputs) const override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  [[nodiscard]] DataType compute_type(const GraphContext& context) const {
    return attributes_.compute_data_type().value_or(context.compute.value_or(DataType::Float));
  }
  MatmulAttributes attributes_;
};

}  // namespace dnngraph::detail
