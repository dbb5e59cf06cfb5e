// Attributes of graph nodes (one struct per node kind), with chainable setters.
#pragma once

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

template <class Derived>
class ConvolutionAttributes;
template <class Self>
class NormAttributes;
template <class Self>
class AttentionAttributes;
template <class Self>
class ResampleWindowAttributes;
template <class Self>
class BatchStatisticsAttributes;

// What every node's attributes have: a name (in errors and LoweringSummary; a default from the
// node kind and index when empty) and a compute type (the math or accumulation type; unset, the
// graph's compute data type, then Float). Self is the attributes class, so setters chain.
template <class Self>
class NodeAttributes {
 public:
  Self& set_name(std::string name) {
    name_ = std::move(name);
    return self();
  }
  Self& set_compute_data_type(DataType type) {
    compute_data_type_ = type;
    return self();
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::optional<DataType> compute_data_type() const noexcept {
    return compute_data_type_;
  }

 private:
  // Only Self (and the shared bases of the convolution, normalization and attention attributes)
  // can make one: a NodeAttributes<A> never stands in for another type.
  NodeAttributes() = default;
  friend Self;
  friend class ConvolutionAttributes<Self>;
  friend class NormAttributes<Self>;
  friend class AttentionAttributes<Self>;
  friend class ResampleWindowAttributes<Self>;
  friend class BatchStatisticsAttributes<Self>;
  Self& self() noexcept { return static_cast<Self&>(*this); }

  std::string name_;
  std::optional<DataType> compute_data_type_;
};

class MatmulAttributes final : public NodeAttributes<MatmulAttributes> {
 public:
  MatmulAttributes() = default;  // user-declared: `{}` value-initializes
};

class PointwiseAttributes final : public NodeAttributes<PointwiseAttributes> {
 public:
  PointwiseAttributes() = default;  // user-declared: `{}` value-initializes
  PointwiseAttributes& set_mode(PointwiseMode mode) {
    mode_ = mode;
    return *this;
  }
  // SwishFwd only: x * sigmoid(beta * x).
  PointwiseAttributes& set_swish_beta(double beta) {
    swish_beta_ = beta;
    return *this;
  }
  [[nodiscard]] std::optional<PointwiseMode> mode() const noexcept { return mode_; }
  [[nodiscard]] std::optional<double> swish_beta() const noexcept { return swish_beta_; }

 private:
  std::optional<PointwiseMode> mode_;
  std::optional<double> swish_beta_;
};

// Settings every convolution node takes: geometry (one value per spatial dim) and math. A list
// left unset means padding 0, stride 1 and dilation 1 in every spatial dim. ConvFpropAttributes,
// ConvDgradAttributes and ConvWgradAttributes are this with their own type, so the setters chain.
template <class Derived>
class ConvolutionAttributes : public NodeAttributes<Derived> {
 public:
  // The same zero-padding before and after each spatial dim.
  Derived& set_padding(std::vector<std::int64_t> padding) {
    pre_padding_ = padding;
    post_padding_ = std::move(padding);
    return self();
  }
  // Zero-padding before (top, left, ...) each spatial dim.
  Derived& set_pre_padding(std::vector<std::int64_t> padding) {
    pre_padding_ = std::move(padding);
    return self();
  }
  // Zero-padding after (bottom, right, ...) each spatial dim.
  Derived& set_post_padding(std::vector<std::int64_t> padding) {
    post_padding_ = std::move(padding);
    return self();
  }
  Derived& set_stride(std::vector<std::int64_t> stride) {
    stride_ = std::move(stride);
    return self();
  }
  Derived& set_dilation(std::vector<std::int64_t> dilation) {
    dilation_ = std::move(dilation);
    return self();
  }
  // CrossCorrelation unless set.
  Derived& set_convolution_mode(ConvolutionMode mode) {
    mode_ = mode;
    return self();
  }
  // Grouped convolution: C and K split into `groups` independent groups, W [K, C / groups,
  // filter...]; depthwise when groups = C. 1 unless set. cuDNN reads the count from W's dims;
  // stating it lets validate() check them against it.
  Derived& set_group_count(std::int64_t groups) {
    group_count_ = groups;
    return self();
  }

  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& pre_padding() const noexcept {
    return pre_padding_;
  }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& post_padding() const noexcept {
    return post_padding_;
  }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& stride() const noexcept {
    return stride_;
  }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& dilation() const noexcept {
    return dilation_;
  }
  [[nodiscard]] ConvolutionMode convolution_mode() const noexcept { return mode_; }
  [[nodiscard]] std::int64_t group_count() const noexcept { return group_count_; }

 private:
  // Only Derived can be made: a ConvolutionAttributes<A> can never stand in for another type.
  ConvolutionAttributes() = default;
  friend Derived;
  Derived& self() noexcept { return NodeAttributes<Derived>::self(); }

  std::optional<std::vector<std::int64_t>> pre_padding_;
  std::optional<std::vector<std::int64_t>> post_padding_;
  std::optional<std::vector<std::int64_t>> stride_;
  std::optional<std::vector<std::int64_t>> dilation_;
  ConvolutionMode mode_ = ConvolutionMode::CrossCorrelation;
  std::int64_t group_count_ = 1;
};

// Y = conv(X, W): X [N, C, spatial...], W [K, C / groups, filter...] -> Y [N, K, out...].
class ConvFpropAttributes final : public ConvolutionAttributes<ConvFpropAttributes> {
 public:
  ConvFpropAttributes() =
      default;  // user-declared: `{}` value-initializes, not aggregate-initializes
};

// dX from dY and W of the forward convolution with these settings.
class ConvDgradAttributes final : public ConvolutionAttributes<ConvDgradAttributes> {
 public:
  ConvDgradAttributes() =
      default;  // user-declared: `{}` value-initializes, not aggregate-initializes
};

// dW from X and dY of the forward convolution with these settings.
class ConvWgradAttributes final : public ConvolutionAttributes<ConvWgradAttributes> {
 public:
  ConvWgradAttributes() =
      default;  // user-declared: `{}` value-initializes, not aggregate-initializes
};

// What a reduction computes over the reduced dims (cuDNN's cudnnReduceTensorOp_t).
enum class ReductionMode : std::uint8_t {
  Add,  // sum
  Mul,  // product
  Min,
  Max,
  Amax,        // max |x|
  Avg,         // mean
  Norm1,       // sum |x|
  Norm2,       // sqrt(sum x^2)
  MulNoZeros,  // product of the non-zero elements
};

[[nodiscard]] std::string_view to_string(ReductionMode mode) noexcept;
// Whether the value is one of the enumerators (see is_known(DataType)).
[[nodiscard]] bool is_known(ReductionMode mode) noexcept;

// Y = mode(X) over the dims where Y has extent 1 and X does not. Set Y's dims on the returned
// tensor: X alone does not say which dims to reduce.
class ReductionAttributes final : public NodeAttributes<ReductionAttributes> {
 public:
  ReductionAttributes() = default;  // user-declared: `{}` value-initializes
  ReductionAttributes& set_mode(ReductionMode mode) {
    mode_ = mode;
    return *this;
  }
  [[nodiscard]] std::optional<ReductionMode> mode() const noexcept { return mode_; }

 private:
  std::optional<ReductionMode> mode_;
};

// Random numbers (Graph::rng): Y's elements drawn independently from a Bernoulli distribution
// (1 with `probability`, else 0) by cuDNN's Philox generator, keyed by the seed and offset
// tensors: the same seed, offset and Y shape give the same Y in any graph, so a backward pass
// regenerates its forward's dropout mask. Y's dims are set on the returned tensor.
class RngAttributes final : public NodeAttributes<RngAttributes> {
 public:
  RngAttributes() = default;  // user-declared: `{}` value-initializes
  RngAttributes& set_bernoulli_probability(double probability) {
    probability_ = probability;
    return *this;
  }
  [[nodiscard]] std::optional<double> bernoulli_probability() const noexcept {
    return probability_;
  }

 private:
  std::optional<double> probability_;
};

// What a resample node computes over each window (cuDNN's cudnnResampleMode_t, its pooling
// modes).
enum class ResampleMode : std::uint8_t {
  MaxPool,                // the window's maximum; padding reads as -infinity
  AvgPoolIncludePadding,  // the window's sum over its size; padding reads as 0
  AvgPoolExcludePadding,  // the sum over the window's input elements over their count
};

[[nodiscard]] std::string_view to_string(ResampleMode mode) noexcept;
// Whether the value is one of the enumerators (see is_known(DataType)).
[[nodiscard]] bool is_known(ResampleMode mode) noexcept;

// What resample and resample_backward share: the mode and the window geometry, one value per
// spatial dim each. The mode, window and stride have no default; the paddings are 0 unless set.
template <class Self>
class ResampleWindowAttributes : public NodeAttributes<Self> {
 public:
  Self& set_mode(ResampleMode mode) {
    mode_ = mode;
    return this->self();
  }
  Self& set_window(std::vector<std::int64_t> window) {
    window_ = std::move(window);
    return this->self();
  }
  Self& set_stride(std::vector<std::int64_t> stride) {
    stride_ = std::move(stride);
    return this->self();
  }
  // The same padding before and after each spatial dim.
  Self& set_padding(std::vector<std::int64_t> padding) {
    pre_padding_ = padding;
    post_padding_ = std::move(padding);
    return this->self();
  }
  // Padding before (top, left, ...) each spatial dim.
  Self& set_pre_padding(std::vector<std::int64_t> padding) {
    pre_padding_ = std::move(padding);
    return this->self();
  }
  // Padding after (bottom, right, ...) each spatial dim.
  Self& set_post_padding(std::vector<std::int64_t> padding) {
    post_padding_ = std::move(padding);
    return this->self();
  }
  [[nodiscard]] std::optional<ResampleMode> mode() const noexcept { return mode_; }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& window() const noexcept {
    return window_;
  }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& stride() const noexcept {
    return stride_;
  }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& pre_padding() const noexcept {
    return pre_padding_;
  }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& post_padding() const noexcept {
    return post_padding_;
  }

 private:
  ResampleWindowAttributes() = default;  // only ResampleAttributes and its backward derive
  friend Self;

  std::optional<ResampleMode> mode_;
  std::optional<std::vector<std::int64_t>> window_;
  std::optional<std::vector<std::int64_t>> stride_;
  std::optional<std::vector<std::int64_t>> pre_padding_;
  std::optional<std::vector<std::int64_t>> post_padding_;
};

// Pooling (Graph::resample): Y [N, C, out...] from X [N, C, spatial...], out = floor((in + pre +
// post - window) / stride) + 1 per spatial dim.
class ResampleAttributes final : public ResampleWindowAttributes<ResampleAttributes> {
 public:
  ResampleAttributes() = default;  // user-declared: `{}` value-initializes
  // MaxPool only: also write Index, each maximum's position in its window, for
  // resample_backward (training). Off unless set.
  ResampleAttributes& set_generate_index(bool generate) {
    generate_index_ = generate;
    return *this;
  }
  [[nodiscard]] bool generate_index() const noexcept { return generate_index_; }

 private:
  bool generate_index_ = false;
};

// The gradient of pooling (Graph::resample_backward), with the forward's mode and geometry. Max
// pooling needs to know where each maximum was: the forward's Index (set_index), or its X and Y
// (set_x, set_y). X also gives dX its dims; without X, set dX's dims on the returned tensor.
class ResampleBackwardAttributes final
    : public ResampleWindowAttributes<ResampleBackwardAttributes> {
 public:
  ResampleBackwardAttributes() = default;  // user-declared: `{}` value-initializes
  ResampleBackwardAttributes& set_x(std::shared_ptr<TensorAttributes> x) {
    x_ = std::move(x);
    return *this;
  }
  ResampleBackwardAttributes& set_y(std::shared_ptr<TensorAttributes> y) {
    y_ = std::move(y);
    return *this;
  }
  ResampleBackwardAttributes& set_index(std::shared_ptr<TensorAttributes> index) {
    index_ = std::move(index);
    return *this;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& x() const noexcept { return x_; }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& y() const noexcept { return y_; }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& index() const noexcept { return index_; }

 private:
  std::shared_ptr<TensorAttributes> x_, y_, index_;
};

// Y = X under other dims and strides, as a view of X's memory (cuDNN's reshape): Y's element at
// memory offset o is X's element at offset o. Either set Y's dims on the returned tensor (a merge
// or split of dims: X's element count, X and Y without gaps; Y's strides, unless set, packed), or
// set a permutation here (a transpose: Y's dim i is X's dim permutation[i], with its stride).
// A reshape computes nothing: it takes no compute data type.
class ReshapeAttributes final : public NodeAttributes<ReshapeAttributes> {
 public:
  ReshapeAttributes() = default;  // user-declared: `{}` value-initializes
  ReshapeAttributes& set_permutation(std::vector<std::int64_t> permutation) {
    permutation_ = std::move(permutation);
    return *this;
  }
  [[nodiscard]] const std::optional<std::vector<std::int64_t>>& permutation() const noexcept {
    return permutation_;
  }

 private:
  std::optional<std::vector<std::int64_t>> permutation_;
};

// Concatenate: the inputs one after another along `axis` (0 for the first dim); every other dim
// agrees. With an in-place index k, input k already lies in Y's memory at its place (its device
// pointer is Y's plus its offset there, its strides are Y's) and is not copied.
class ConcatenateAttributes final : public NodeAttributes<ConcatenateAttributes> {
 public:
  ConcatenateAttributes() = default;  // user-declared: `{}` value-initializes
  ConcatenateAttributes& set_axis(std::int64_t axis) {
    axis_ = axis;
    return *this;
  }
  ConcatenateAttributes& set_in_place_index(std::int64_t index) {
    in_place_index_ = index;
    return *this;
  }
  [[nodiscard]] std::optional<std::int64_t> axis() const noexcept { return axis_; }
  [[nodiscard]] std::optional<std::int64_t> in_place_index() const noexcept {
    return in_place_index_;
  }

 private:
  std::optional<std::int64_t> axis_;
  std::optional<std::int64_t> in_place_index_;
};

// Slice: Y = X[start:limit:stride] in each dim, one {start, limit} pair per dim of X (the
// elements from start up to but not including limit), and optionally one stride (step) per dim
// (1 where unset).
class SliceAttributes final : public NodeAttributes<SliceAttributes> {
 public:
  SliceAttributes() = default;  // user-declared: `{}` value-initializes
  SliceAttributes& set_slices(std::vector<std::pair<std::int64_t, std::int64_t>> slices) {
    slices_ = std::move(slices);
    return *this;
  }
  SliceAttributes& set_strides(std::vector<std::int64_t> strides) {
    strides_ = std::move(strides);
    return *this;
  }
  [[nodiscard]] const std::vector<std::pair<std::int64_t, std::int64_t>>& slices() const noexcept {
    return slices_;
  }
  [[nodiscard]] const std::vector<std::int64_t>& strides() const noexcept { return strides_; }

 private:
  std::vector<std::pair<std::int64_t, std::int64_t>> slices_;
  std::vector<std::int64_t> strides_;
};

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

// Where a causal mask's diagonal starts: TopLeft keeps key j for query i when j <= i;
// BottomRight aligns the last query with the last key (j <= i + s_kv - s_q, per batch with the
// actual lengths when a padding mask is set), as in decoding with a KV cache.
enum class DiagonalAlignment : std::uint8_t { TopLeft, BottomRight };

// What the attention nodes (sdpa and sdpa_backward) share: the scale, the masks and dropout. The
// backward node takes the forward's settings, so that it recomputes the same probabilities.
template <class Self>
class AttentionAttributes : public NodeAttributes<Self> {
 public:
  // Multiplies Q K^T; unset, 1 (as cudnn-frontend; torch's default is 1 / sqrt(head dim)).
  Self& set_attn_scale(float scale) {
    attn_scale_ = scale;
    return this->self();
  }
  Self& set_causal_mask(bool causal) {
    causal_ = causal ? std::optional(DiagonalAlignment::TopLeft) : std::nullopt;
    return this->self();
  }
  Self& set_causal_mask_bottom_right(bool causal) {
    causal_ = causal ? std::optional(DiagonalAlignment::BottomRight) : std::nullopt;
    return this->self();
  }
  // Masks query rows past seq_len_q and key columns past seq_len_kv, per batch: both tensors
  // Int32 [b, 1, 1, 1] in device memory (set them with set_seq_len_q / set_seq_len_kv).
  Self& set_padding_mask(bool padding) {
    padding_mask_ = padding;
    return this->self();
  }
  Self& set_seq_len_q(std::shared_ptr<TensorAttributes> seq_len) {
    seq_len_q_ = std::move(seq_len);
    return this->self();
  }
  Self& set_seq_len_kv(std::shared_ptr<TensorAttributes> seq_len) {
    seq_len_kv_ = std::move(seq_len);
    return this->self();
  }
  // Dropout on the attention probabilities: each is kept with probability 1 - probability and
  // then scaled by 1 / (1 - probability), else 0, by a Bernoulli mask [b, h_q, s_q, s_kv] that
  // cuDNN's Philox generator draws from seed and offset (graph inputs of one Int64 or Int32 value
  // each, in device memory). probability is in [0, 1); 0 is no dropout (no mask; seed and offset
  // are not read). The backward node given the forward's probability, seed and offset regenerates
  // the forward's mask.
  Self& set_dropout(double probability, std::shared_ptr<TensorAttributes> seed,
                    std::shared_ptr<TensorAttributes> offset) {
    dropout_probability_ = probability;
    dropout_seed_ = std::move(seed);
    dropout_offset_ = std::move(offset);
    return this->self();
  }
  // Also write the dropout mask (Float [b, h_q, s_q, s_kv], packed, 0 or 1) as an output, for
  // checks and debugging (cudnn-frontend's RNG_DUMP): Graph::dropout_mask(O) gives the tensor;
  // mark it set_output(true). Needs a dropout probability above 0.
  Self& set_dropout_mask_output(bool write) {
    dropout_mask_output_ = write;
    return this->self();
  }
  [[nodiscard]] std::optional<float> attn_scale() const noexcept { return attn_scale_; }
  [[nodiscard]] std::optional<double> dropout_probability() const noexcept {
    return dropout_probability_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& dropout_seed() const noexcept {
    return dropout_seed_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& dropout_offset() const noexcept {
    return dropout_offset_;
  }
  [[nodiscard]] bool dropout_mask_output() const noexcept { return dropout_mask_output_; }
  [[nodiscard]] std::optional<DiagonalAlignment> causal() const noexcept { return causal_; }
  [[nodiscard]] bool padding_mask() const noexcept { return padding_mask_; }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& seq_len_q() const noexcept {
    return seq_len_q_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& seq_len_kv() const noexcept {
    return seq_len_kv_;
  }

 private:
  AttentionAttributes() = default;
  friend Self;

  std::optional<float> attn_scale_;
  std::optional<DiagonalAlignment> causal_;
  bool padding_mask_ = false;
  std::shared_ptr<TensorAttributes> seq_len_q_;
  std::shared_ptr<TensorAttributes> seq_len_kv_;
  std::optional<double> dropout_probability_;
  std::shared_ptr<TensorAttributes> dropout_seed_;
  std::shared_ptr<TensorAttributes> dropout_offset_;
  bool dropout_mask_output_ = false;
};

// Scaled dot-product attention O = softmax(scale * Q K^T + masks) V (see Graph::sdpa).
class SdpaAttributes final : public AttentionAttributes<SdpaAttributes> {
 public:
  SdpaAttributes() = default;  // user-declared: `{}` value-initializes
  // Training: also write Stats, the row-wise log-sum-exp of the masked, scaled scores (Float
  // [b, h_q, s_q, 1]) that a backward pass reads. Inference (false, the default): O only.
  SdpaAttributes& set_generate_stats(bool generate) {
    generate_stats_ = generate;
    return *this;
  }
  // K and V read from a paged cache, as serving systems (vLLM) keep them. sdpa()'s K and V are
  // then the containers of pages, K [num_blocks, h_k, block_size, d] and V [num_blocks_v, h_v,
  // block_size_v, d_v] (any strides with the head dim innermost, so [num_blocks, block_size, h, d]
  // memory too), and page_table_k / page_table_v (Int32 [b, 1, pages, 1], packed, in device
  // memory) hold, for batch i and page p, the block that holds that batch's key positions
  // p * block_size .. (p + 1) * block_size - 1. max_seq_len_kv is the attention's key length
  // s_kv (each page table holds exactly ceil(max_seq_len_kv / block_size) pages); the padding
  // mask's seq_len_kv (at most max_seq_len_kv) gives each batch's length. Needs the padding mask
  // and cuDNN 9.5; forward only (docs/attention.md, "Paged KV cache").
  SdpaAttributes& set_paged_attention(std::shared_ptr<TensorAttributes> page_table_k,
                                      std::shared_ptr<TensorAttributes> page_table_v,
                                      std::int64_t max_seq_len_kv) {
    page_table_k_ = std::move(page_table_k);
    page_table_v_ = std::move(page_table_v);
    max_seq_len_kv_ = max_seq_len_kv;
    return *this;
  }
  [[nodiscard]] bool generate_stats() const noexcept { return generate_stats_; }
  // Whether set_paged_attention was called.
  [[nodiscard]] bool paged_attention() const noexcept { return max_seq_len_kv_.has_value(); }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& page_table_k() const noexcept {
    return page_table_k_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& page_table_v() const noexcept {
    return page_table_v_;
  }
  [[nodiscard]] std::optional<std::int64_t> max_seq_len_kv() const noexcept {
    return max_seq_len_kv_;
  }

 private:
  bool generate_stats_ = false;
  std::shared_ptr<TensorAttributes> page_table_k_;
  std::shared_ptr<TensorAttributes> page_table_v_;
  std::optional<std::int64_t> max_seq_len_kv_;
};

// The gradients of scaled dot-product attention (see Graph::sdpa_backward): the scale, masks and
// dropout (probability, seed and offset) are the forward's.
class SdpaBackwardAttributes final : public AttentionAttributes<SdpaBackwardAttributes> {
 public:
  SdpaBackwardAttributes() = default;  // user-declared: `{}` value-initializes
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
