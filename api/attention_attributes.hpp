// Attributes of the attention nodes (sdpa, sdpa_backward): the scale, the masks, a bias, a
// sliding window, ALiBi and dropout.
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

// Where a causal mask's diagonal starts: TopLeft keeps key j for query i when j <= i;
// BottomRight aligns the last query with the last key (j <= i + s_kv - s_q, per batch with the
// actual lengths when a padding mask is set), as in decoding with a KV cache.
enum class DiagonalAlignment : std::uint8_t { TopLeft, BottomRight };

template <class Self>
class AttentionAttributes;

// The standard ALiBi slopes of `heads` query heads (cudnn-frontend's get_alibi_slope): with n the
// largest power of two <= heads, 2^(-8 (h + 1) / n) for head h < n, then 2^(-4 (2 k + 1) / n) for
// the k-th of the remaining heads. What set_alibi_slopes' tensor holds.
[[nodiscard]] std::vector<float> alibi_slopes(std::int64_t heads);

// What shapes an attention node's scores: the scale and the masks. Every attention node takes
// them (sdpa, sdpa_backward, sdpa_fp8, sdpa_fp8_backward).
template <class Self>
class AttentionScoreAttributes : public NodeAttributes<Self> {
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
  [[nodiscard]] std::optional<float> attn_scale() const noexcept { return attn_scale_; }
  [[nodiscard]] std::optional<DiagonalAlignment> causal() const noexcept { return causal_; }
  [[nodiscard]] bool padding_mask() const noexcept { return padding_mask_; }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& seq_len_q() const noexcept {
    return seq_len_q_;
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& seq_len_kv() const noexcept {
    return seq_len_kv_;
  }

 private:
  AttentionScoreAttributes() = default;
  friend Self;
  friend class AttentionAttributes<Self>;

  std::optional<float> attn_scale_;
  std::optional<DiagonalAlignment> causal_;
  bool padding_mask_ = false;
  std::shared_ptr<TensorAttributes> seq_len_q_;
  std::shared_ptr<TensorAttributes> seq_len_kv_;
};

// What the attention nodes of the BFloat16/Half pattern (sdpa and sdpa_backward) share: the scale
// and masks, and dropout. The backward node takes the forward's settings, so that it recomputes
// the same probabilities.
template <class Self>
class AttentionAttributes : public AttentionScoreAttributes<Self> {
 public:
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
  // An additive bias on the scaled scores, before the masks and the softmax: a graph input
  // [b or 1, h_q or 1, s_q, s_kv] in Q's type, in device memory (dims of 1 broadcast). The
  // backward node takes the forward's bias; set_dbias_output there writes its gradient.
  Self& set_bias(std::shared_ptr<TensorAttributes> bias) {
    bias_ = std::move(bias);
    return this->self();
  }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& bias() const noexcept { return bias_; }
  // A sliding window on top of the causal mask (cudnn-frontend's diagonal band left bound): query
  // i keeps key j only when i - length < j, so each query sees at most `length` keys, itself
  // included. Needs set_causal_mask(true) (top-left) and length >= 1.
  Self& set_sliding_window_length(std::int64_t length) {
    sliding_window_length_ = length;
    return this->self();
  }
  [[nodiscard]] std::optional<std::int64_t> sliding_window_length() const noexcept {
    return sliding_window_length_;
  }
  // ALiBi: adds slope_h * (j - i) to the score of query head h, row i, key j, after the bias;
  // needs the top-left causal mask. cuDNN's pattern reads the per-head slopes from device memory:
  // set_alibi_slopes takes them as a graph input, Float [1, h_q, 1, 1] holding alibi_slopes(h_q).
  Self& set_alibi_mask(bool alibi) {
    alibi_mask_ = alibi;
    return this->self();
  }
  Self& set_alibi_slopes(std::shared_ptr<TensorAttributes> slopes) {
    alibi_slopes_ = std::move(slopes);
    return this->self();
  }
  [[nodiscard]] bool alibi_mask() const noexcept { return alibi_mask_; }
  [[nodiscard]] const std::shared_ptr<TensorAttributes>& alibi_slopes() const noexcept {
    return alibi_slopes_;
  }

 private:
  AttentionAttributes() = default;
  friend Self;

  std::shared_ptr<TensorAttributes> bias_;
  std::optional<std::int64_t> sliding_window_length_;
  bool alibi_mask_ = false;
  std::shared_ptr<TensorAttributes> alibi_slopes_;
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
  // Also write dBias, the gradient of the bias (set_bias), as an output: Graph::dbias(dQ) gives
  // the tensor; mark it set_output(true). cuDNN serves it for a bias of [1, h_q, s_q, s_kv] only
  // (the sum of dS over the batch); other bias shapes are refused.
  SdpaBackwardAttributes& set_dbias_output(bool write) {
    dbias_output_ = write;
    return *this;
  }
  [[nodiscard]] bool dbias_output() const noexcept { return dbias_output_; }

 private:
  bool dbias_output_ = false;
};

// FP8 scaled dot-product attention forward (see Graph::sdpa_fp8): the scale and masks (a
// bottom-right causal mask is refused on Hopper), and Stats for training. No dropout, no paged
// cache, no packed (ragged) sequences.
class SdpaFp8Attributes final : public AttentionScoreAttributes<SdpaFp8Attributes> {
 public:
  SdpaFp8Attributes() = default;  // user-declared: `{}` value-initializes
  // Training: also write Stats (Float [b, h_q, s_q, 1], the row-wise log-sum-exp of the masked,
  // scaled, descaled scores). Inference (false, the default): O and the two amax only.
  SdpaFp8Attributes& set_generate_stats(bool generate) {
    generate_stats_ = generate;
    return *this;
  }
  [[nodiscard]] bool generate_stats() const noexcept { return generate_stats_; }

 private:
  bool generate_stats_ = false;
};

// The gradients of FP8 scaled dot-product attention (see Graph::sdpa_fp8_backward): the scale
// and masks are the forward's (sdpa_fp8's), so that it recomputes the same probabilities. No
// bottom-right causal mask on Hopper, no packed (ragged) sequences.
class SdpaFp8BackwardAttributes final : public AttentionScoreAttributes<SdpaFp8BackwardAttributes> {
 public:
  SdpaFp8BackwardAttributes() = default;  // user-declared: `{}` value-initializes
};

}  // namespace dnngraph
