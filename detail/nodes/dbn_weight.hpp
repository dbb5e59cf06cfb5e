// Batch-norm backward weight node (dbn_weight): the weight half of a batch norm's backward split,
// cuDNN's BN_BWD_WEIGHTS operation. From dY and X [N, C, (D,) H, W] and the forward's saved mean,
// inverse standard deviation and scale ([1, C, 1, ...] Float) it gives, per channel in Float,
// dScale = sum dY * x_hat and dBias = sum dY (x_hat = (X - mean) * inv_std, sums over the
// M = N * (D *) H * W elements of a channel), and the equivalent dY scale, X scale and bias with
// which dX = eq_scale_dy * dY + eq_scale_x * X + eq_bias is the batch norm's data gradient:
// eq_scale_dy = scale * inv_std, eq_scale_x = -eq_scale_dy * inv_std * dScale / M, eq_bias =
// eq_scale_dy * (inv_std * mean * dScale - dBias) / M.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

// The node's tensors by role.
struct DbnWeightPorts {
  TensorPtr dy, x, mean, inv_variance, scale;                 // inputs
  TensorPtr dscale, dbias, eq_scale_dy, eq_scale_x, eq_bias;  // outputs

  [[nodiscard]] std::vector<TensorPtr> inputs() const;
  [[nodiscard]] std::vector<TensorPtr> outputs() const;
};

class DbnWeightNode final : public Node {
 public:
  DbnWeightNode(const DbnWeightAttributes& attributes, DbnWeightPorts ports)
      : Node(attributes.name(), ports.inputs(), ports.outputs()),
        compute_(attributes.compute_data_type()),
        ports_(std::move(ports)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::DbnWeight; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  std::optional<DataType> compute_;
  DbnWeightPorts ports_;
};

}  // namespace dnngraph::detail
