// Conv fprop node: Y [N, K, out...] = conv(X [N, C, spatial...], W [K, C, filter...]).
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/convolution.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

class ConvFpropNode final : public Node {
 public:
  ConvFpropNode(ConvFpropAttributes attributes, TensorPtr x, TensorPtr w, TensorPtr y)
      : Node(attributes.name(), {std::move(x), std::move(w)}, {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::ConvFprop; }
  // Also settles geometry_, which lower() reads.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  // Y's dims for X and W of the given dims: rank, channel and geometry checks included.
  [[nodiscard]] Result<std::vector<std::int64_t>> output_dims(
      std::span<const ShapedTensor> inputs) const override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;
  void note_traits(GraphTraits& traits) const override {
    traits.channels_first_conv_fprop =
        traits.channels_first_conv_fprop || !is_channels_last(*inputs().front());
    note_channels_first_conv(*inputs().front(), *outputs().front(), traits);
  }

 private:
  [[nodiscard]] DataType compute_type(const GraphContext& context) const {
    return attributes_.compute_data_type().value_or(context.compute.value_or(DataType::Float));
  }
  [[nodiscard]] Result<ConvolutionGeometry> geometry(ConvTensor x) const;
  ConvFpropAttributes attributes_;
  ConvolutionGeometry geometry_;
};

}  // namespace dnngraph::detail
