// Random-number node: Y drawn from a Bernoulli distribution by cuDNN's Philox generator, keyed by
// a seed and an offset (graph inputs of one Int64 or Int32 value each, in device memory). Y's
// dims are the user's; its strides, unless set, packed. What dropout is made of: a mask from
// rng() multiplied into a tensor (and scaled by 1 / keep probability) with pointwise nodes; the
// attention nodes draw their dropout mask with the same key check and operation (below).
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

// A random-number key (the seed or the offset, `role`) of `node`: one Int64 or Int32 value.
[[nodiscard]] Result<void> check_rng_key(const std::string& node, const char* role,
                                         const TensorAttributes& t);
// OperationRng drawing y from Bernoulli(probability) keyed by seed and offset, finalized, with its
// Rng descriptor among the parts: the rng node's operation, and dropout's inside attention.
[[nodiscard]] backend::Expected<LoweredOperation> lower_bernoulli(double probability,
                                                                  const backend::Tensor& seed,
                                                                  const backend::Tensor& offset,
                                                                  const backend::Tensor& y);

class RngNode final : public Node {
 public:
  RngNode(RngAttributes attributes, TensorPtr seed, TensorPtr offset, TensorPtr y)
      : Node(attributes.name(), {std::move(seed), std::move(offset)}, {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Rng; }
  void note_traits(GraphTraits& traits) const override { traits.rng = true; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  RngAttributes attributes_;
};

}  // namespace dnngraph::detail
