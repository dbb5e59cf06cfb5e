// Attributes of the normalization nodes: layer, RMS, instance and adaptive layer norm, the
// batch statistics (genstats, bn_finalize, dbn_weight, batchnorm), and the norm backward nodes.
#pragma once

#include "api/node_attributes_base.hpp"
#include "api/tensor_attributes.hpp"
#include "api/types.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph {

// Whether a forward normalization computes for training (it also writes the statistics it
// used) or for inference (it writes Y only).
enum class NormFwdPhase : std::uint8_t { Inference, Training };

[[nodiscard]] std::string_view to_string(NormFwdPhase phase) noexcept;
// Whether the value is one of the enumerators (see is_known(DataType)).
[[nodiscard]] bool is_known(NormFwdPhase phase) noexcept;

// What layer, RMS, instance and adaptive layer norm share: a name, the phase, epsilon (one
// value, usually Graph::tensor(1e-5F)) and the compute type (Float, the only one cuDNN takes).
template <class Self>
class NormAttributes : public NodeAttributes<Self> {
 public:
  Self& set_forward_phase(NormFwdPhase phase) {
    phase_ = phase;
    return this->self();
  }
  Self& set_epsilon(std::shared_ptr<TensorAttributes> epsilon) {
    epsilon_ = std::move(epsilon);
    return this->self();
  }
  [[nodiscard]] std::optional<NormFwdPhase> forward_phase() const noexcept { return phase_; }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& epsilon() const noexcept {
    return epsilon_;
  }

 private:
  NormAttributes() = default;  // only the forward norms' attributes derive
  friend Self;
  std::optional<NormFwdPhase> phase_;
  std::shared_ptr<TensorAttributes> epsilon_;
};

// Y = (X - mean) * inv_variance * scale + bias, the statistics over every dim but the first.
class LayernormAttributes final : public NormAttributes<LayernormAttributes> {
 public:
  LayernormAttributes() = default;  // user-declared: `{}` value-initializes
};

// Y = X * inv_rms * scale (+ bias), inv_rms = 1 / sqrt(mean(X^2) + epsilon) over every dim but
// the first. The bias is optional.
class RmsnormAttributes final : public NormAttributes<RmsnormAttributes> {
 public:
  RmsnormAttributes() = default;  // user-declared: `{}` value-initializes
  RmsnormAttributes& set_bias(std::shared_ptr<TensorAttributes> bias) {
    bias_ = std::move(bias);
    return *this;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& bias() const noexcept { return bias_; }

 private:
  std::shared_ptr<TensorAttributes> bias_;
};

// Y = (X - mean) * inv_variance * scale + bias, the statistics per sample and channel (over the
// spatial dims of X [N, C, (D,) H, W]), scale and bias per channel.
class InstancenormAttributes final : public NormAttributes<InstancenormAttributes> {
 public:
  InstancenormAttributes() = default;  // user-declared: `{}` value-initializes
};

// Adaptive layer normalization (Graph::adalayernorm): Y = (X - mean) * inv_variance * scale +
// bias over X [B, S, D...], the statistics per sample and row ([B, S, 1, ...]: over the dims from
// the third on), scale and bias per sample ([B, 1, D...]: they vary across the batch, as a
// diffusion transformer's conditioning gives them). Needs cuDNN >= 9.9.
class AdaLayernormAttributes final : public NormAttributes<AdaLayernormAttributes> {
 public:
  AdaLayernormAttributes() = default;  // user-declared: `{}` value-initializes
};

// Per-channel statistics of X [N, C, (D,) H, W] (Graph::genstats): the sum and the sum of squares
// over N and the spatial dims, what a batch norm fused behind a convolution is finalized from. A
// name and a compute type (Float) only.
class GenstatsAttributes final : public NodeAttributes<GenstatsAttributes> {
 public:
  GenstatsAttributes() = default;  // user-declared: `{}` value-initializes
};

// What batchnorm and bn_finalize share: epsilon and the previous running statistics with the
// momentum.
template <class Self>
class BatchStatisticsAttributes : public NodeAttributes<Self> {
 public:
  Self& set_epsilon(std::shared_ptr<TensorAttributes> epsilon) {
    epsilon_ = std::move(epsilon);
    return static_cast<Self&>(*this);
  }
  Self& set_previous_running_stats(std::shared_ptr<TensorAttributes> mean,
                                   std::shared_ptr<TensorAttributes> variance,
                                   std::shared_ptr<TensorAttributes> momentum) {
    prev_running_mean_ = std::move(mean);
    prev_running_var_ = std::move(variance);
    momentum_ = std::move(momentum);
    return static_cast<Self&>(*this);
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& epsilon() const noexcept {
    return epsilon_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& prev_running_mean() const noexcept {
    return prev_running_mean_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& prev_running_var() const noexcept {
    return prev_running_var_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& momentum() const noexcept {
    return momentum_;
  }

 private:
  BatchStatisticsAttributes() = default;
  friend Self;

  std::shared_ptr<TensorAttributes> epsilon_, prev_running_mean_, prev_running_var_, momentum_;
};

// A batch norm finalized from genstats' sums (Graph::bn_finalize): epsilon, the number of
// elements each channel's sums hold (N * H * W: one Int64 value in device memory), and the
// previous running statistics with the momentum (all required, as cuDNN's operation takes them).
class BnFinalizeAttributes final : public BatchStatisticsAttributes<BnFinalizeAttributes> {
 public:
  BnFinalizeAttributes() = default;  // user-declared: `{}` value-initializes
  BnFinalizeAttributes& set_accumulation_count(std::shared_ptr<TensorAttributes> count) {
    accumulation_count_ = std::move(count);
    return *this;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& accumulation_count() const noexcept {
    return accumulation_count_;
  }

 private:
  std::shared_ptr<TensorAttributes> accumulation_count_;
};

// The weight half of a batch norm's backward split (Graph::dbn_weight): a name and a compute type
// (Float) only; the forward's epsilon is in the saved statistics.
class DbnWeightAttributes final : public NodeAttributes<DbnWeightAttributes> {
 public:
  DbnWeightAttributes() = default;  // user-declared: `{}` value-initializes
};

// The norm backward nodes (layernorm_backward, rmsnorm_backward, batchnorm_backward,
// instancenorm_backward, adalayernorm_backward): a name and a compute type (Float) only; the
// forward's epsilon is in the saved statistics.
class NormBackwardAttributes final : public NodeAttributes<NormBackwardAttributes> {
 public:
  NormBackwardAttributes() = default;  // user-declared: `{}` value-initializes
};

// Y = (X - mean) * inv_variance * scale + bias with per-channel statistics the caller gives.
class BatchnormInferenceAttributes final : public NodeAttributes<BatchnormInferenceAttributes> {
 public:
  BatchnormInferenceAttributes() = default;  // user-declared: `{}` value-initializes
};

// Batch normalization in training (Graph::batchnorm): epsilon (one value, usually
// Graph::tensor(1e-5F)) and, to update running statistics, the previous ones ([1, C, 1, ...]
// Float, graph inputs) with the momentum (one Float value in [0, 1]): next = (1 - momentum) *
// previous + momentum * batch statistic, the variance's batch statistic unbiased (N / (N - 1)).
class BatchnormAttributes final : public BatchStatisticsAttributes<BatchnormAttributes> {
 public:
  BatchnormAttributes() = default;  // user-declared: `{}` value-initializes
};

}  // namespace dnngraph
