// Forward normalization nodes (layernorm, rmsnorm, batchnorm, instancenorm, adalayernorm): one
// room over cuDNN's NormForward operation. Checks the parameter shapes against X, infers Y (X's
// dims and layout) and, in training, the statistics in Float: [N, 1, ...] for layer and RMS norm
// (over every dim but the first), [1, C, 1, ...] for batch norm (over every dim but the
// channel's), which in training also updates running statistics when given them; [N, C, 1, ...]
// for instance norm; [B, S, 1, ...] for adaptive layer norm (over the dims from the third on,
// its parameters per sample). (batchnorm_inference is made of pointwise nodes: see
// Graph::batchnorm_inference.)
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <optional>
#include <string_view>

namespace dnngraph::detail {

enum class NormKind : std::uint8_t { Layer, Rms, Batch, Instance, Adaptive };

// cuDNN's norm mode; too old where the headers or the library lack it (adaptive: 9.9).
[[nodiscard]] backend::Expected<cudnnBackendNormMode_t> to_cudnn(NormKind kind);
// VersionTooOld, naming `node` and the version, where the mode needs a newer cuDNN.
[[nodiscard]] Result<void> check_norm_available(NormKind kind, std::string_view node);
// The node kind of a normalization, forward or backward.
[[nodiscard]] NodeKind norm_node_kind(NormKind kind, bool backward) noexcept;
// The dims of the parameters (scale, bias) and of the statistics for an X of `x_dims`: layer and
// RMS norm [1, X dims but the first] and [N, 1, ...]; batch norm [1, C, 1, ...] for both;
// instance norm [1, C, 1, ...] and [N, C, 1, ...]; adaptive layer norm [B, 1, X dims from the
// third] and [B, S, 1, ...].
// Batch and instance norm: parameters per channel (X is N, C, (D,) H, W).
[[nodiscard]] bool per_channel(NormKind kind) noexcept;
// The least rank of X: 4 for the per-channel norms (as cuDNN takes them), 3 for adaptive layer
// norm (B, S, D), else 2.
[[nodiscard]] std::size_t norm_min_rank(NormKind kind) noexcept;
[[nodiscard]] std::vector<std::int64_t> norm_parameter_dims(
    NormKind kind, const std::vector<std::int64_t>& x_dims);
[[nodiscard]] std::vector<std::int64_t> norm_statistic_dims(
    NormKind kind, const std::vector<std::int64_t>& x_dims);

// The node's tensors by role; absent ones are null. The running statistics and momentum are
// batch norm's (in training, all or none).
struct NormPorts {
  TensorPtr x, scale, bias, epsilon;                        // inputs
  TensorPtr momentum, prev_running_mean, prev_running_var;  // inputs
  TensorPtr y, mean_out, inv_variance_out;                  // outputs
  TensorPtr next_running_mean, next_running_var;            // outputs
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
  [[nodiscard]] Result<void> check_running_statistics() const;
  [[nodiscard]] Result<void> settle_statistic(const char* role, TensorAttributes& t,
                                              const GraphContext& context) const;

  NormSettings settings_;
  NormPorts ports_;
};

}  // namespace dnngraph::detail
