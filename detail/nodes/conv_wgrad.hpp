// Conv wgrad node: dW [K, C, filter...] from X [N, C, spatial...] and dY [N, K, out...], the
// gradient of a forward convolution with the same settings with respect to its filter. The
// filter size is not implied by X and dY (a stride above 1 allows several), so dW's dims must be
// set.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/convolution.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

class ConvWgradNode final : public Node {
 public:
  ConvWgradNode(ConvWgradAttributes attributes, TensorPtr x, TensorPtr dy, TensorPtr dw)
      : Node(attributes.name(), {std::move(x), std::move(dy)}, {std::move(dw)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::ConvWgrad; }
  // Checks dW's dims against X and dY. Also settles geometry_, which lower() reads.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;
  void note_traits(GraphTraits& traits) const override {
    note_channels_first_conv(*inputs()[0], *inputs()[1], traits);
  }

 private:
  [[nodiscard]] DataType compute_type(const GraphContext& context) const {
    return attributes_.compute_data_type().value_or(context.compute.value_or(DataType::Float));
  }
  ConvWgradAttributes attributes_;
  ConvolutionGeometry geometry_;
};

}  // namespace dnngraph::detail
