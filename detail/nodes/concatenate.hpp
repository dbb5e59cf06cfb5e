// Concatenate node: Y = the inputs one after another along one axis, cuDNN's concatenate
// operation (cuDNN >= 9.7, backend::Feature::ConcatOperation). Every input has the same rank,
// the same dims but along the axis, and the same data type; Y's extent along the axis is the sum.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <vector>

namespace dnngraph::detail {

class ConcatenateNode final : public Node {
 public:
  ConcatenateNode(ConcatenateAttributes attributes, std::vector<TensorPtr> inputs, TensorPtr y)
      : Node(attributes.name(), std::move(inputs), {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Concatenate; }
  // Checks the axis, the inputs against the first and the in-place index, then settles Y.
  // output_dims() keeps the default refusal: no override of a concatenate was measured.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  // VersionTooOld below cuDNN 9.7.
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  // Input i against input 0: rank, the dims off the axis, data type.
  [[nodiscard]] Result<void> check_like_first(std::size_t i, std::size_t axis) const;
  // The in-place input lies in Y's memory: both in memory, with Y's strides.
  [[nodiscard]] Result<void> check_in_place() const;

  ConcatenateAttributes attributes_;
};

}  // namespace dnngraph::detail
