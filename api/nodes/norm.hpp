// Forward normalization nodes (layernorm, rmsnorm): one node kind over cuDNN's NormForward
// operation. Checks the parameter shapes against X, infers Y (X's dims and layout) and, in
// training, the statistics [N, 1, ...] in Float. (batchnorm_inference is made of pointwise
// nodes: see Graph::batchnorm_inference.)
#pragma once

#include "api/node_attributes.hpp"
#include "api/nodes/node.hpp"

#include <optional>

namespace dnngraph::detail {

enum class NormKind : std::uint8_t { Layer, Rms };

// The node's tensors by role; absent ones are null.
struct NormPorts {
  TensorPtr x, scale, bias, epsilon;        // inputs
  TensorPtr y, mean_out, inv_variance_out;  // outputs
};

struct NormSettings {
  NormKind kind = NormKind::Layer;
  std::string name;
  NormFwdPhase phase = NormFwdPhase::Inference;
  std::optional<DataType> compute;
};

class NormForwardNode final : public Node {
 public:
  NormForwardNode(NormSettings settings, NormPorts ports);

  [[nodiscard]] NodeKind kind() const noexcept override;
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  [[nodiscard]] Result<void> check_parameter(const char* role, const TensorAttributes& t,
                                             const std::vector<std::int64_t>& dims) const;
  [[nodiscard]] Result<void> settle_statistic(const char* role, TensorAttributes& t,
                                              const GraphContext& context) const;

  NormSettings settings_;
  NormPorts ports_;
};

}  // namespace dnngraph::detail
