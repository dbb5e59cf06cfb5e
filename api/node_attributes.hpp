// Attributes of graph nodes (one struct per node kind), with chainable setters.
// The base class is in node_attributes_base.hpp; the norm and attention nodes' attributes are in
// norm_attributes.hpp and attention_attributes.hpp, included here.
#pragma once

#include "api/attention_attributes.hpp"
#include "api/node_attributes_base.hpp"
#include "api/norm_attributes.hpp"
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

}  // namespace dnngraph
