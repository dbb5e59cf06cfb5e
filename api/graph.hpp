// dnngraph::Graph: describe a fused operation graph, validate it, build it once with a cuDNN
// handle, then execute it many times. Mistakes come back as Error values from validate(),
// lower(), build() and execute(); nothing here throws or aborts on user input.
#pragma once

#include "api/error.hpp"
#include "api/handle.hpp"
#include "api/kernel_cache.hpp"
#include "api/node_attributes.hpp"
#include "api/plan.hpp"
#include "api/tensor_attributes.hpp"
#include "api/types.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dnngraph {

namespace detail {
class Node;
class BuiltGraph;
struct GraphAccess;
struct GraphBuilder;
}  // namespace detail

// What lower() made: backend descriptors, all finalized without a GPU.
struct LoweringSummary {
  std::size_t tensor_count = 0;
  std::size_t operation_count = 0;
  bool all_finalized = false;           // every backend tensor and operation descriptor finalized
  std::vector<std::string> operations;  // "matmul 'mm'", in graph order
  // cuDNN's operation descriptors, in lowering order ("OperationMatmul", "OperationRng", ...): a
  // composite node (sdpa) is several.
  std::vector<std::string> backend_operations;
};

class Graph {
 public:
  Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  ~Graph();

  Graph& set_name(std::string name);
  // Type of non-virtual tensors that set none.
  Graph& set_io_data_type(DataType type);
  // Type of virtual tensors that set none (Float if unset).
  Graph& set_intermediate_data_type(DataType type);
  // Math type of nodes that set none (Float if unset).
  Graph& set_compute_data_type(DataType type);
  // Marks the operation graph dynamic (CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED).
  Graph& set_dynamic_shape_enabled(bool enabled);
  // Plans of this (dynamic-shape) graph store their compiled kernels in `cache` and reuse the
  // kernels of earlier graphs of the same topology. A cache on a graph without dynamic shapes is
  // an error at build. Share one cache between graphs and threads with std::shared_ptr.
  Graph& set_kernel_cache(std::shared_ptr<KernelCache> cache);
  // With a kernel cache: try configs the cache already compiled before the heuristics' order
  // (default on). Off: plain heuristics order, the cache only stores and looks up.
  Graph& set_cache_first_plan_choice(bool enabled);
  // Build once on a "cache shape", then pass each run's real shapes to execute() and
  // get_workspace_size(). Needs cuDNN >= 9.18 (an Error at build says so otherwise); on cuDNN
  // >= 9.21 it uses the operation graph's override flag, below that a dynamic-shape graph
  // (PlanInfo::override_path says which).
  Graph& set_override_shape_enabled(bool enabled);

  // Adds a graph input; the graph keeps the returned tensor.
  std::shared_ptr<TensorAttributes> tensor(const TensorAttributes& attributes);
  // Adds a Float scalar passed by value (TensorAttributes::set_value): an epsilon, a scale, a
  // constant operand of a pointwise node. Not in the variant pack.
  std::shared_ptr<TensorAttributes> tensor(float value);
  // Adds an Int64 scalar passed by value (TensorAttributes::set_int_value), e.g. bn_finalize's
  // accumulation count. Not in the variant pack.
  std::shared_ptr<TensorAttributes> int64_scalar(std::int64_t value);
  // C = A x B. The result is virtual until set_output(true).
  std::shared_ptr<TensorAttributes> matmul(const std::shared_ptr<TensorAttributes>& a,
                                           const std::shared_ptr<TensorAttributes>& b,
                                           MatmulAttributes attributes = {});
  // Y = mode(X).
  std::shared_ptr<TensorAttributes> pointwise(const std::shared_ptr<TensorAttributes>& x,
                                              PointwiseAttributes attributes);
  // Y = mode(X, B), broadcasting size-1 dims. For the *Bwd modes x is dY, b is X and Y is dX.
  std::shared_ptr<TensorAttributes> pointwise(const std::shared_ptr<TensorAttributes>& x,
                                              const std::shared_ptr<TensorAttributes>& b,
                                              PointwiseAttributes attributes);
  // Y = mode(X, B, T), broadcasting size-1 dims: BinarySelect, Y = T ? X : B with T Boolean.
  std::shared_ptr<TensorAttributes> pointwise(const std::shared_ptr<TensorAttributes>& x,
                                              const std::shared_ptr<TensorAttributes>& b,
                                              const std::shared_ptr<TensorAttributes>& t,
                                              PointwiseAttributes attributes);
  // Y [N, K, out...] = conv(X [N, C, spatial...], W [K, C, filter...]), 2 or 3 spatial dims.
  // Y's strides, unless set, follow X's layout (channels-last when X is).
  std::shared_ptr<TensorAttributes> conv_fprop(const std::shared_ptr<TensorAttributes>& x,
                                               const std::shared_ptr<TensorAttributes>& w,
                                               ConvFpropAttributes attributes);
  // dX [N, C, spatial...] from dY [N, K, out...] and W. dX's spatial dims, unless set, are the
  // smallest that give dY; its strides, unless set, follow dY's layout.
  std::shared_ptr<TensorAttributes> conv_dgrad(const std::shared_ptr<TensorAttributes>& dy,
                                               const std::shared_ptr<TensorAttributes>& w,
                                               ConvDgradAttributes attributes);
  // dW [K, C, filter...] from X and dY. Set dW's dims (X and dY do not determine the filter
  // size); its strides, unless set, follow X's layout.
  std::shared_ptr<TensorAttributes> conv_wgrad(const std::shared_ptr<TensorAttributes>& x,
                                               const std::shared_ptr<TensorAttributes>& dy,
                                               ConvWgradAttributes attributes);
  // Y = mode(X) over the dims where Y has extent 1. Set Y's dims on the returned tensor (X's
  // dims with 1 in each reduced dim); its strides, unless set, are packed.
  std::shared_ptr<TensorAttributes> reduction(const std::shared_ptr<TensorAttributes>& x,
                                              ReductionAttributes attributes);
  // Random numbers: Y drawn from a Bernoulli distribution (attributes.set_bernoulli_probability)
  // by cuDNN's Philox generator keyed by seed and offset (graph inputs of one Int64 or Int32
  // value each, in device memory). Set Y's dims on the returned tensor; its strides, unless set,
  // are packed. Dropout with keep probability q: Y = X * rng(q) * (1 / q), two pointwise nodes.
  std::shared_ptr<TensorAttributes> rng(const std::shared_ptr<TensorAttributes>& seed,
                                        const std::shared_ptr<TensorAttributes>& offset,
                                        RngAttributes attributes);
  // Pooling over the spatial dims of X [N, C, spatial...] (2 or 3 spatial dims; Half, BFloat16
  // or Float): Y [N, C, out...], out = floor((in + pre + post - window) / stride) + 1, following
  // X's layout (channels-last, as cuDNN's pooling samples use, when X is). Set the mode, window
  // and stride in the attributes. Returns {Y, Index}: Index (Int8, Y's dims and layout: where each
  // maximum was in its window, for resample_backward) with MaxPool and set_generate_index(true)
  // only, else null.
  std::array<std::shared_ptr<TensorAttributes>, 2> resample(
      const std::shared_ptr<TensorAttributes>& x, ResampleAttributes attributes);
  // The gradient of resample(): dX from dY with the forward's mode, window and stride. Max
  // pooling also reads the forward's Index (attributes.set_index) or its X and Y (set_x,
  // set_y). dX has X's dims, or without X the dims set on the returned tensor; they must pool to
  // dY's. Its strides, unless set, follow X's (else dY's) layout.
  std::shared_ptr<TensorAttributes> resample_backward(const std::shared_ptr<TensorAttributes>& dy,
                                                      ResampleBackwardAttributes attributes);
  // Y = X under other dims and strides, a view of X's memory. Either set Y's dims on the returned
  // tensor (X's element count; X without gaps; Y's strides, unless set, packed), or a permutation
  // in the attributes for a transpose (Y's dims and strides are X's in that order). Y's data
  // type, unless set, is X's.
  std::shared_ptr<TensorAttributes> reshape(const std::shared_ptr<TensorAttributes>& x,
                                            ReshapeAttributes attributes = {});
  // Y = the inputs one after another along attributes.set_axis (needed): every input of the
  // same rank, dims and data type but along the axis, where Y's extent is their sum. Y's strides,
  // unless set, are packed in the first input's memory order; its type, unless set, the inputs'.
  // cuDNN's concatenate operation: build() refuses it below cuDNN 9.7 (VersionTooOld).
  std::shared_ptr<TensorAttributes> concatenate(
      const std::vector<std::shared_ptr<TensorAttributes>>& inputs,
      ConcatenateAttributes attributes);
  // Y = X[start:limit:stride] in each dim: attributes.set_slices gives one {start, limit} pair
  // per dim of X (0 <= start < limit <= extent), set_strides the steps (1 unless set). Y's dims
  // are ceil((limit - start) / stride); its strides, unless set, packed in X's memory order; its
  // type X's. cuDNN's slice operation: build() refuses it below cuDNN 9.22 (VersionTooOld).
  std::shared_ptr<TensorAttributes> slice(const std::shared_ptr<TensorAttributes>& x,
                                          SliceAttributes attributes);

  // Layer normalization over every dim but the first of X [N, ...] (rank 2-5; cuDNN's examples
  // use [N, D, 1, 1] channels-last): scale and bias [1, X dims but the first]. Returns
  // {Y, mean, inv_variance}; the statistics ([N, 1, ...], Float) exist in the Training phase
  // only (null in Inference). Set the phase and epsilon in the attributes.
  std::array<std::shared_ptr<TensorAttributes>, 3> layernorm(
      const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
      const std::shared_ptr<TensorAttributes>& bias, const LayernormAttributes& attributes);
  // RMS normalization, shapes as layernorm; the bias (attributes.set_bias) is optional. Returns
  // {Y, inv_variance}; inv_variance (the inverse RMS, [N, 1, ...], Float) in Training only.
  std::array<std::shared_ptr<TensorAttributes>, 2> rmsnorm(
      const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
      const RmsnormAttributes& attributes);
  // Layer normalization backward: {dX, dScale, dBias} from dY, X, the forward's scale and its
  // saved statistics (mean and inv_variance, [N, 1, ...] Float, as layernorm() returns them in
  // Training). dX has X's dims and layout (the io type unless set); dScale and dBias the
  // scale's dims and layout, Float unless set.
  std::array<std::shared_ptr<TensorAttributes>, 3> layernorm_backward(
      const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
      const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
      const std::shared_ptr<TensorAttributes>& inv_variance,
      NormBackwardAttributes attributes = {});
  // RMS normalization backward: {dX, dScale} from dY, X, the scale and the saved inverse RMS.
  std::array<std::shared_ptr<TensorAttributes>, 2> rmsnorm_backward(
      const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
      const std::shared_ptr<TensorAttributes>& scale,
      const std::shared_ptr<TensorAttributes>& inv_variance,
      NormBackwardAttributes attributes = {});
  // Batch normalization in training over X [N, C, (D,) H, W] (channels-last strides are what
  // cuDNN's engines take): the statistics over every dim but C, scale and bias [1, C, 1, ...].
  // Returns {Y, mean, inv_variance, next_running_mean, next_running_var}: the saved statistics
  // ([1, C, 1, ...] Float, what batchnorm_backward reads) and, when the attributes give previous
  // running statistics, the updated ones (else null). Set epsilon in the attributes.
  std::array<std::shared_ptr<TensorAttributes>, 5> batchnorm(
      const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
      const std::shared_ptr<TensorAttributes>& bias, const BatchnormAttributes& attributes);
  // Batch normalization backward: {dX, dScale, dBias} from dY, X, the scale and the saved
  // statistics batchnorm() returned (mean and inv_variance, [1, C, 1, ...] Float).
  std::array<std::shared_ptr<TensorAttributes>, 3> batchnorm_backward(
      const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
      const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
      const std::shared_ptr<TensorAttributes>& inv_variance,
      NormBackwardAttributes attributes = {});
  // Per-channel statistics of X [N, C, (D,) H, W]: {sum, sq_sum}, the sum and the sum of squares
  // over N and the spatial dims ([1, C, 1, ...] Float, X's memory order). Behind a convolution
  // (conv_fprop -> genstats) cuDNN computes them in the convolution's pass.
  std::array<std::shared_ptr<TensorAttributes>, 2> genstats(
      const std::shared_ptr<TensorAttributes>& x, GenstatsAttributes attributes = {});
  // A batch norm in training finalized from genstats' sums of M elements per channel (M, the
  // accumulation count, in the attributes with epsilon and the previous running statistics):
  // {eq_scale, eq_bias, mean, inv_variance, next_running_mean, next_running_var}, each
  // [1, C, 1, ...] Float. mean = sum / M; inv_variance = 1 / sqrt(sq_sum / M - mean^2 +
  // epsilon); eq_scale = scale * inv_variance and eq_bias = bias - mean * eq_scale, so the batch
  // norm is Y = X * eq_scale + eq_bias (two pointwise nodes, fusable behind the next conv).
  std::array<std::shared_ptr<TensorAttributes>, 6> bn_finalize(
      const std::shared_ptr<TensorAttributes>& sum, const std::shared_ptr<TensorAttributes>& sq_sum,
      const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& bias,
      const BnFinalizeAttributes& attributes);
  // The weight half of a batch norm's backward split (cuDNN's BN_BWD_WEIGHTS), what a
  // conv + batchnorm + ReLU backward fuses behind a conv_dgrad and ReLU backward: from dY and X
  // [N, C, (D,) H, W] (channels-last strides, as batchnorm) and the forward's saved mean,
  // inv_variance and scale ([1, C, 1, ...] Float) returns {dScale, dBias, eq_scale_dy,
  // eq_scale_x, eq_bias}, each [1, C, 1, ...] Float: dScale = sum dY * (X - mean) * inv_variance
  // and dBias = sum dY over the M = N * H * W elements of a channel, and the batch norm's data
  // gradient is dX = eq_scale_dy * dY + eq_scale_x * X + eq_bias (pointwise nodes, fusable into
  // the next graph's convolution).
  std::array<std::shared_ptr<TensorAttributes>, 5> dbn_weight(
      const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
      const std::shared_ptr<TensorAttributes>& mean,
      const std::shared_ptr<TensorAttributes>& inv_variance,
      const std::shared_ptr<TensorAttributes>& scale, DbnWeightAttributes attributes = {});
  // Instance normalization over the spatial dims of X [N, C, (D,) H, W] per sample and channel
  // (channels-last strides, as batchnorm): scale and bias [1, C, 1, ...]. Returns {Y, mean,
  // inv_variance}; the statistics ([N, C, 1, ...], Float) in the Training phase only (null in
  // Inference). Set the phase and epsilon in the attributes.
  std::array<std::shared_ptr<TensorAttributes>, 3> instancenorm(
      const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
      const std::shared_ptr<TensorAttributes>& bias, const InstancenormAttributes& attributes);
  // Instance normalization backward: {dX, dScale, dBias} from dY, X, the scale and the saved
  // statistics instancenorm() returned in Training ([N, C, 1, ...] Float).
  std::array<std::shared_ptr<TensorAttributes>, 3> instancenorm_backward(
      const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
      const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
      const std::shared_ptr<TensorAttributes>& inv_variance,
      NormBackwardAttributes attributes = {});
  // Adaptive layer normalization (needs cuDNN >= 9.9): layer normalization of X [B, S, D...]
  // (rank 3-5, e.g. [B, S, D] packed) over the dims from the third on, per sample and row, with
  // a scale and bias per sample: [B, 1, D...] (they vary across the batch). Returns {Y, mean,
  // inv_variance}; the statistics ([B, S, 1, ...], Float) in the Training phase only (null in
  // Inference). Set the phase and epsilon in the attributes.
  std::array<std::shared_ptr<TensorAttributes>, 3> adalayernorm(
      const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
      const std::shared_ptr<TensorAttributes>& bias, const AdaLayernormAttributes& attributes);
  // Adaptive layer normalization backward: {dX, dScale, dBias} from dY, X, the scale and the
  // saved statistics adalayernorm() returned in Training ([B, S, 1, ...] Float); dScale and dBias
  // per sample as the scale ([B, 1, D...], Float unless set).
  std::array<std::shared_ptr<TensorAttributes>, 3> adalayernorm_backward(
      const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
      const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
      const std::shared_ptr<TensorAttributes>& inv_variance,
      NormBackwardAttributes attributes = {});
  // Batch normalization for inference with the caller's statistics:
  // Y = (X - mean) * inv_variance * scale + bias, the parameters [1, C, 1, 1] for X [N, C, H, W]
  // (they broadcast like pointwise operands). Made of four pointwise nodes named
  // "<name>::center", "::normalize", "::scale", "::shift", so it fuses after a convolution.
  std::shared_ptr<TensorAttributes> batchnorm_inference(
      const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& mean,
      const std::shared_ptr<TensorAttributes>& inv_variance,
      const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& bias,
      BatchnormInferenceAttributes attributes);

  // Scaled dot-product attention: O = softmax(scale * Q K^T + masks) V for Q [b, h_q, s_q, d],
  // K [b, h_k, s_kv, d], V [b, h_v, s_kv, d_v] (Half or BFloat16, head dim innermost: BHSD or
  // BSHD strides), h_k and h_v dividing h_q (grouped-query attention). Returns {O, Stats}: O
  // [b, h_q, s_q, d_v] in Q's type (packed BHSD unless its strides are set), Stats (Float
  // [b, h_q, s_q, 1], the log-sum-exp per row) with set_generate_stats(true) only (else null).
  // Mark them set_output(true). With set_dropout the probabilities are dropped out before they
  // multiply V (Stats are not); dropout_mask(O) gives the mask with set_dropout_mask_output.
  // Lowered to the operation pattern cuDNN's fused flash-attention engines match
  // (docs/attention.md).
  std::array<std::shared_ptr<TensorAttributes>, 2> sdpa(const std::shared_ptr<TensorAttributes>& q,
                                                        const std::shared_ptr<TensorAttributes>& k,
                                                        const std::shared_ptr<TensorAttributes>& v,
                                                        SdpaAttributes attributes);

  // FP8 scaled dot-product attention forward (cuDNN >= 9.1 on Hopper): Q [b, h_q, s_q, d], K
  // [b, h_k, s_kv, d], V [b, h_v, s_kv, d_v] in Fp8E4M3 (head dims multiples of 16 up to 256,
  // innermost: BHSD or BSHD strides; h_k, h_v dividing h_q), and six per-tensor factors, each one
  // Float [1, 1, 1, 1] in device memory: P = softmax(attn_scale * descale_q * descale_k Q K^T +
  // masks), O = scale_o * descale_s * descale_v * (FP8(scale_s * P) V). Returns {O, Stats,
  // Amax_S, Amax_O}: O [b, h_q, s_q, d_v] in Fp8E4M3 (packed BHSD unless its strides are set),
  // Stats (Float [b, h_q, s_q, 1]) with set_generate_stats(true) only (else null), Amax_S = max |P|
  // and Amax_O = max |O / scale_o| (Float [1, 1, 1, 1]) for the next step's scales. Mark them all
  // set_output(true). Lowered to the pattern cuDNN's fused FP8 flash-attention engine matches
  // (docs/attention.md, "FP8 attention (forward)").
  std::array<std::shared_ptr<TensorAttributes>, 4> sdpa_fp8(
      const std::shared_ptr<TensorAttributes>& q, const std::shared_ptr<TensorAttributes>& k,
      const std::shared_ptr<TensorAttributes>& v,
      const std::shared_ptr<TensorAttributes>& descale_q,
      const std::shared_ptr<TensorAttributes>& descale_k,
      const std::shared_ptr<TensorAttributes>& descale_v,
      const std::shared_ptr<TensorAttributes>& descale_s,
      const std::shared_ptr<TensorAttributes>& scale_s,
      const std::shared_ptr<TensorAttributes>& scale_o, SdpaFp8Attributes attributes);

  // The gradients of sdpa_fp8() (cuDNN >= 9.7 on Hopper): from Q, K, V and the forward's O
  // (Fp8E4M3; head dims 128), dO (O's dims; Fp8E4M3 or Fp8E5M2), the forward's Stats (Float
  // [b, h_q, s_q, 1]) and twelve per-tensor factors, each one Float [1, 1, 1, 1] in device memory,
  // with the forward's scale and masks in the attributes. Returns {dQ, dK, dV, Amax_dQ, Amax_dK,
  // Amax_dV, Amax_dP}: the gradients with Q's, K's, V's dims in dO's FP8 type (packed BHSD unless
  // their strides are set; grouped-query attention sums dK and dV over each group of query heads),
  // dQ = scale_dQ * descale_dP * descale_k * (FP8(scale_dP dS) K) and alike, and the amax of each
  // gradient before its scale and of dS (Float [1, 1, 1, 1]) for the next step's scales. Mark
  // all seven set_output(true). The tensors and outputs in cudnn-frontend's order; lowered to
  // the pattern cuDNN's fused FP8 flash-attention backward engine matches (docs/attention.md,
  // "FP8 attention backward").
  std::array<std::shared_ptr<TensorAttributes>, 7> sdpa_fp8_backward(
      const std::shared_ptr<TensorAttributes>& q, const std::shared_ptr<TensorAttributes>& k,
      const std::shared_ptr<TensorAttributes>& v, const std::shared_ptr<TensorAttributes>& o,
      const std::shared_ptr<TensorAttributes>& d_o, const std::shared_ptr<TensorAttributes>& stats,
      const std::shared_ptr<TensorAttributes>& descale_q,
      const std::shared_ptr<TensorAttributes>& descale_k,
      const std::shared_ptr<TensorAttributes>& descale_v,
      const std::shared_ptr<TensorAttributes>& descale_o,
      const std::shared_ptr<TensorAttributes>& descale_do,
      const std::shared_ptr<TensorAttributes>& descale_s,
      const std::shared_ptr<TensorAttributes>& descale_dp,
      const std::shared_ptr<TensorAttributes>& scale_s,
      const std::shared_ptr<TensorAttributes>& scale_dq,
      const std::shared_ptr<TensorAttributes>& scale_dk,
      const std::shared_ptr<TensorAttributes>& scale_dv,
      const std::shared_ptr<TensorAttributes>& scale_dp, SdpaFp8BackwardAttributes attributes);

  // The gradients of sdpa(): from Q, K, V, the forward's O and Stats (set_generate_stats) and
  // dO (O's dims and type), with the forward's scale, masks and dropout in the attributes. Returns
  // {dQ, dK, dV, D}: dQ, dK, dV with Q's, K's, V's dims in Q's type (packed BHSD unless their
  // strides are set; grouped-query attention sums dK and dV over each group of query heads), and
  // D = rowsum(dO * O) (Float [b, h_q, s_q, 1]; with dropout (1 - p) rowsum(dO * O)), which
  // cuDNN's fused backward engines write and read back from memory: mark all four
  // set_output(true) and give D device memory too. The forward's set_dropout (same probability,
  // seed and offset) draws the forward's mask again. Lowered to the composite pattern
  // cudnn-frontend uses for backward (docs/attention.md).
  std::array<std::shared_ptr<TensorAttributes>, 4> sdpa_backward(
      const std::shared_ptr<TensorAttributes>& q, const std::shared_ptr<TensorAttributes>& k,
      const std::shared_ptr<TensorAttributes>& v, const std::shared_ptr<TensorAttributes>& o,
      const std::shared_ptr<TensorAttributes>& d_o, const std::shared_ptr<TensorAttributes>& stats,
      SdpaBackwardAttributes attributes);
  // The dropout mask an attention node writes as an output (set_dropout_mask_output(true) with a
  // dropout probability above 0): pass any output of the sdpa or sdpa_backward node (O, dQ).
  // Float [b, h_q, s_q, s_kv], packed, 0 or 1; mark it set_output(true). Null for another node
  // or one that writes no mask.
  [[nodiscard]] std::shared_ptr<TensorAttributes> dropout_mask(
      const std::shared_ptr<TensorAttributes>& output) const;
  // The bias gradient an sdpa_backward node writes (set_bias with set_dbias_output(true)): pass
  // any of its outputs (dQ). [1, h_q, s_q, s_kv] in Q's type, packed; mark it set_output(true).
  // Null for another node or one that writes none.
  [[nodiscard]] std::shared_ptr<TensorAttributes> dbias(
      const std::shared_ptr<TensorAttributes>& output) const;

  // Checks every tensor and node, infers node outputs, assigns uids to tensors without one.
  [[nodiscard]] Result<void> validate();
  // validate(), then creates and finalizes the backend tensor and operation descriptors.
  // Needs no GPU.
  [[nodiscard]] Result<LoweringSummary> lower();
  // A name for what cuDNN is given for this graph: a digest (32 hex characters) of every
  // descriptor and attribute lower() sets, in order, with addresses left out, and of the
  // dynamic-shape and override-shape settings. Equal keys: cuDNN is given the same graph, so a
  // plan or kernel cache made for one fits the other; any difference cuDNN sees (a node's mode,
  // a tensor's type, dims, strides or uid, the node order) gives another key. Scalar values
  // passed by value at execute are not part of it. Lowered for the loaded cuDNN: where a node
  // lowers differently on another version, its key differs there. Needs no GPU; validate()'s
  // or lower()'s error when the graph does not lower.
  [[nodiscard]] Result<std::string> key();
  // key() with the tensors' dims left out and their strides reduced to their order (the layout):
  // one key for the shapes of one topology, a name for its KernelCacheStore entry
  // (KernelCacheKey::topology) that no one has to invent.
  [[nodiscard]] Result<std::string> topology_key();

  // lower(), then the operation graph, heuristics in the given order, and the first execution
  // plan that finalizes.
  [[nodiscard]] Result<void> build(const Handle& handle, const std::vector<HeuristicMode>& modes);
  // build() under a plan policy: configs filtered out by engine notes, engine id or workspace
  // (a NoEngine error lists each and why when none is left), and the first plan that finalizes,
  // the one at policy.plan_index, or the pinned policy.engine (docs/plan-control.md).
  [[nodiscard]] Result<void> build(const Handle& handle, const std::vector<HeuristicMode>& modes,
                                   const PlanPolicy& policy);
  // After build() (or deserialize()): the built plan as a text document (JSON) for deserialize()
  // in another process: the loaded cuDNN's version, the GPU (name and compute capability of the
  // build's handle), key(), the engine config and its notes, and cuDNN's
  // own plan document (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION) where the engine gives
  // one. Not for graphs with set_override_shape_enabled (InvalidState). The document holds no
  // tensor data and no by-value scalars; like a kernel cache document, load only what your own
  // processes wrote (a digest catches a cut or changed plan, not a crafted one).
  [[nodiscard]] Result<std::string> serialize() const;
  // Instead of build(): the same graph described again (same tensors, uids, nodes, settings;
  // checked through key()), then its plan taken from serialize()'s document on `handle` with no
  // heuristics query — cuDNN's plan document finalized, or the saved engine config where the
  // document has none. Refused before anything is made when the document is not one
  // serialize() wrote (InvalidJson), the loaded cuDNN or the handle's GPU differ from the
  // document's (InvalidState, naming both), or the graph's key differs (InvalidAttribute,
  // naming both); NoEngine when the known-issues table rules the document's engine config out
  // for this graph on the loaded cuDNN, as build()'s plan choice would (a plan saved before the
  // entry existed: docs/known-issues.md). plan_info() then says deserialized; build_plan_at and
  // autotune rank under the document's heuristics mode. cuDNN's plan document puts no kernel
  // into a kernel cache.
  [[nodiscard]] Result<void> deserialize(const Handle& handle, std::string_view document);

  // After build(): how many candidates the plan policy's filters left, in heuristics order of
  // the modes given (duplicates removed), so build_plan_at(0 .. plan_count() - 1) can try each.
  // An error when the build ranked none (a pinned engine, or a kernel cache's known config).
  [[nodiscard]] Result<std::int64_t> plan_count() const;
  // Builds again with the last successful build's modes and policy, taking the candidate at
  // `index` (see plan_count). On failure the graph keeps the plan it had.
  [[nodiscard]] Result<void> build_plan_at(const Handle& handle, std::int64_t index);

  // After build(): builds each of the first options.max_candidates ranked candidates (see
  // plan_count) in turn, runs it on the caller's buffers (variant_pack as for execute, and a
  // workspace of workspace_bytes; a candidate needing more is skipped) warmup times, then times
  // `iterations` runs with CUDA events on the handle's stream, and keeps the candidate of the
  // smallest median GPU time. Returns the table. The outputs in variant_pack are overwritten.
  // Candidates are built as build_plan_at builds them (a runtime-compiled engine compiles; with
  // a kernel cache, into it). When none can be timed the graph keeps the plan it had and the
  // error (NoEngine) carries the table; an execute error of the caller's pack or workspace (a
  // missing uid, a null pointer) ends it at once with that error, the plan kept. Pin the result
  // across processes with PlanPolicy::engine
  // (the chosen row's choice). Needs the CUDA driver (libcuda.so.1), loaded on first use.
  [[nodiscard]] Result<AutotuneReport> autotune(
      const Handle& handle, const std::unordered_map<std::int64_t, void*>& variant_pack,
      void* workspace, std::int64_t workspace_bytes, const AutotuneOptions& options = {});

  // Checks override lists against this graph (after validate() or build()) exactly as execute()
  // and get_workspace_size() do, without running anything.
  [[nodiscard]] Result<void> check_overrides(
      std::span<const std::int64_t> override_uids,
      std::span<const std::vector<std::int64_t>> override_shapes,
      std::span<const std::vector<std::int64_t>> override_strides) const;

  // After validate() or build(): the tensors execute() reads and writes (not virtual, not by
  // value), in creation order, with the dims, strides, data type and uid validate() filled in;
  // what each variant-pack buffer must hold (the Python binding checks torch tensors against
  // them). The same error as check_overrides when the graph is not validated or changed since.
  [[nodiscard]] Result<std::vector<std::shared_ptr<const TensorAttributes>>> io_tensors() const;

  [[nodiscard]] bool is_built() const noexcept { return built_ != nullptr; }
  [[nodiscard]] Result<std::int64_t> get_workspace_size() const;
  // The workspace execute() needs with these overrides (same lists as execute). Ask right
  // before allocating the workspace for a run. Tensors not listed keep their build shapes.
  [[nodiscard]] Result<std::int64_t> get_workspace_size(
      const Handle& handle, std::span<const std::int64_t> override_uids,
      std::span<const std::vector<std::int64_t>> override_shapes,
      std::span<const std::vector<std::int64_t>> override_strides) const;
  [[nodiscard]] Result<PlanInfo> plan_info() const;

  // Runs the built plan. variant_pack maps the uid of every non-virtual tensor to its device
  // buffer; workspace holds at least get_workspace_size() bytes (may be null when that is 0).
  // A tensor edited since build() (set_dim, set_value, ...) is refused, InvalidState naming it:
  // the plan would run as built; build() again.
  [[nodiscard]] Result<void> execute(const Handle& handle,
                                     const std::unordered_map<std::int64_t, void*>& variant_pack,
                                     void* workspace) const;

  // Runs the plan with execute-time shapes: override_uids[i] (a non-virtual tensor) has dims
  // override_shapes[i] and strides override_strides[i] in this run; the three lists have the
  // same length. Needs set_override_shape_enabled(true) before build.
  [[nodiscard]] Result<void> execute(
      const Handle& handle, const std::unordered_map<std::int64_t, void*>& variant_pack,
      void* workspace, std::span<const std::int64_t> override_uids,
      std::span<const std::vector<std::int64_t>> override_shapes,
      std::span<const std::vector<std::int64_t>> override_strides) const;

 private:
  friend struct detail::GraphAccess;  // detail/graph/graph_access.hpp: internal, for tests and
                                      // fuzzers
  // The steps the node builders share (a node's tensors, its input checks, adding it; the norms'
  // and attention's common parts) and the view a built plan reads: detail/graph/graph_builder.hpp.
  friend struct detail::GraphBuilder;

  // build() without its log line (the line says what this returned and how long it took).
  [[nodiscard]] Result<void> build_checked(const Handle& handle,
                                           const std::vector<HeuristicMode>& modes,
                                           const PlanPolicy& policy);
  void record(Error error);
  [[nodiscard]] Result<std::string> key_of_lowering(bool with_shapes);
  // deserialize() without its log line.
  [[nodiscard]] Result<void> deserialize_checked(const Handle& handle, std::string_view text);
  // key_of_lowering on the graph as last validated (check_validated first).
  [[nodiscard]] Result<std::string> key_of_validated(bool with_shapes) const;
  // What build() and deserialize() check before making anything: the settings, the handle, the
  // graph complete and valid; `call` names the caller in the errors.
  [[nodiscard]] Result<void> check_before_build(const Handle& handle, std::string_view call);
  [[nodiscard]] Result<void> validate_filling();
  // build() needs a complete graph: every tensor read by a node or produced by one, and every
  // virtual node output read by another node.
  [[nodiscard]] Result<void> check_complete() const;
  void invalidate() noexcept;
  // Success when validate() succeeded last and no tensor, node or graph setting changed since;
  // what check_overrides, execute and get_workspace_size with overrides read is then what was
  // validated (and built). execute() asks it on every call. The error names `call` and the
  // first changed tensor.
  [[nodiscard]] Result<void> check_validated(std::string_view call) const;

  std::string name_;
  std::optional<DataType> io_type_;
  std::optional<DataType> intermediate_type_;
  std::optional<DataType> compute_type_;
  bool dynamic_shape_ = false;
  std::shared_ptr<KernelCache> kernel_cache_;
  bool cache_first_ = true;
  bool override_shape_ = false;

  std::vector<std::shared_ptr<TensorAttributes>> tensors_;  // inputs and node outputs
  std::unordered_set<const TensorAttributes*> owned_;       // tensors_, for ownership checks
  std::vector<std::unique_ptr<detail::Node>> nodes_;        // in creation (= topological) order
  std::optional<Error> deferred_error_;                     // first mistake made while adding nodes
  // What the last successful validate() filled in on each tensor (the values), so the next one
  // infers afresh from what the user set, and a failed one leaves the tensors as it found them.
  struct Filled {
    std::optional<std::vector<std::int64_t>> dims;
    std::optional<std::vector<std::int64_t>> strides;
    std::optional<DataType> data_type;
    std::optional<std::int64_t> uid;
  };
  std::unordered_map<const TensorAttributes*, Filled> filled_;
  // Each tensor's revision (in tensors_ order) when validate() last succeeded; nullopt when it
  // has not, or failed, or a node, tensor or graph setting was added or changed since.
  std::optional<std::vector<std::uint64_t>> validated_revisions_;
  std::unique_ptr<const detail::BuiltGraph> built_;  // null until build() succeeds
  // What the last successful build() was given, for build_plan_at.
  std::vector<HeuristicMode> built_modes_;
  PlanPolicy built_policy_;
};

}  // namespace dnngraph
