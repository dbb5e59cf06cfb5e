// Conv dgrad node: dX [N, C, spatial...] from dY [N, K, out...] and W [K, C, filter...], the
// gradient of a forward convolution with the same settings with respect to its input.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/convolution.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

class ConvDgradNode final : public Node {
 public:
  ConvDgradNode(ConvDgradAttributes attributes, TensorPtr dy, TensorPtr w, TensorPtr dx)
      : Node(attributes.name(), {std::move(dy), std::move(w)}, {std::move(dx)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::ConvDgrad; }
  // dX's spatial dims: the ones the user set (checked against dY), else the smallest that give
  // dY. Also settles geometry_, which lower() reads.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;
  void note_traits(GraphTraits& traits) const override {
    note_channels_first_conv(*outputs().front(), *inputs().front(), traits);
  }

 private:
  [[nodiscard]] DataType compute_type(const GraphContext& context) const {
    return attributes_.compute_data_type().value_or(context.compute.value_or(DataType::Float));
  }
  ConvDgradAttributes attributes_;
  ConvolutionGeometry geometry_;
};

}  // namespace dnngraph::detail
