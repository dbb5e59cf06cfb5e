// Batch-norm finalize node: from the per-channel sums genstats gives (sum and sum of squares of
// M = N * H * W elements, the count an input), the saved mean and inverse standard deviation, the
// equivalent scale and bias (Y = X * eq_scale + eq_bias is the batch norm), and the running
// statistics' update: cuDNN's BN_FINALIZE_STATISTICS operation in training.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

namespace dnngraph::detail {

// The node's tensors by role.
struct BnFinalizePorts {
  TensorPtr sum, sq_sum, scale, bias, epsilon, accumulation_count;  // inputs
  TensorPtr prev_running_mean, prev_running_var, momentum;          // inputs
  TensorPtr eq_scale, eq_bias, mean, inv_variance;                  // outputs
  TensorPtr next_running_mean, next_running_var;                    // outputs

  [[nodiscard]] std::vector<TensorPtr> inputs() const;
  [[nodiscard]] std::vector<TensorPtr> outputs() const;
};

class BnFinalizeNode final : public Node {
 public:
  BnFinalizeNode(const BnFinalizeAttributes& attributes, BnFinalizePorts ports)
      : Node(attributes.name(), ports.inputs(), ports.outputs()),
        compute_(attributes.compute_data_type()),
        ports_(std::move(ports)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::BnFinalize; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  std::optional<DataType> compute_;
  BnFinalizePorts ports_;
};

}  // namespace dnngraph::detail
