// Normalization backward nodes (layernorm_backward, rmsnorm_backward, batchnorm_backward,
// instancenorm_backward, adalayernorm_backward): one room over cuDNN's NormBackward operation.
// From dY, X, the forward's scale and its saved statistics (mean and inverse standard deviation,
// Float, of the forward's statistic dims; RMS: the inverse RMS only) it gives dX (X's dims and
// layout, the io type), dScale and, but for RMS norm, dBias (the scale's dims, Float).
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"
#include "detail/nodes/norm.hpp"

namespace dnngraph::detail {

// The node's tensors by role; mean and dbias are null for RMS.
struct NormBackwardPorts {
  TensorPtr dy, x, scale, mean, inv_variance;  // inputs
  TensorPtr dx, dscale, dbias;                 // outputs

  [[nodiscard]] std::vector<TensorPtr> inputs() const;
  [[nodiscard]] std::vector<TensorPtr> outputs() const;
};

class NormBackwardNode final : public Node {
 public:
  NormBackwardNode(NormKind norm, const NormBackwardAttributes& attributes,
                   const NormBackwardPorts& ports)
      : Node(attributes.name(), ports.inputs(), ports.outputs()),
        norm_(norm),
        compute_(attributes.compute_data_type()),
        ports_(ports) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return norm_node_kind(norm_, true); }
  // Layer and RMS norm backward under dynamic shapes: known issue dynamic-row-norm-backward.
  void note_traits(GraphTraits& traits) const override {
    traits.row_norm_backward =
        traits.row_norm_backward || norm_ == NormKind::Layer || norm_ == NormKind::Rms;
  }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  // t has `dims` and one of `types`; `role` names it in errors.
  [[nodiscard]] Result<void> check_input(const char* role, const TensorAttributes& t,
                                         const std::vector<std::int64_t>& dims,
                                         std::initializer_list<DataType> types) const;
  // A gradient output: inferred dims, `like`'s layout unless set, the given type unless set.
  [[nodiscard]] Result<void> settle_gradient(TensorAttributes& out,
                                             const std::vector<std::int64_t>& dims,
                                             const TensorAttributes& like,
                                             std::optional<DataType> type,
                                             const GraphContext& context) const;

  NormKind norm_;
  std::optional<DataType> compute_;
  NormBackwardPorts ports_;
};

}  // namespace dnngraph::detail
