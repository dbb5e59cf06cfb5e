// Attention backward node: dQ, dK, dV of O = dropout(softmax(scale * Q K^T + masks)) V from Q,
// K, V, O, dO and the forward's Stats, lowered to the composite pattern cudnn-frontend 1.32 uses
// for backward on every cuDNN version (its CompositeSDPABackwardNode; see /docs/attention.md).
// With dropout, M is the forward's mask drawn again from the same seed and offset, and k = 1 - p:
//   M  = rng(k)                                    (first, as the frontend orders it)
//   D  = rowsum(dO * O) * k                        (k = 1 without dropout; Float [b, h_q, s_q, 1],
//                                                   in memory)
//   P  = exp(masks(scale * Q K^T + bias + ALiBi) - Stats)  (the forward's P, recomputed)
//   dV = (P * M / k)^T dO                          (P^T in the io type)
//   dS = (dO V^T * M - D) * P / k * scale
//   dBias = sum over the batch of dS / scale        (before the scale's MUL, as the frontend)
//   dK = dS^T Q                                    (dS^T in the io type)
//   dQ = dS K                                     (in a Float accumulator, then copied)
// Grouped-query attention: dK and dV are computed per query head ([b, h_q, s_kv, d], io type)
// and summed over each group of h_q / h_k heads by a REDUCTION ADD, as cudnn-frontend does.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"
#include "detail/nodes/sdpa_common.hpp"

namespace dnngraph::detail {

// The node's tensors by role. Null where the attributes need none.
struct SdpaBackwardPorts {
  // Inputs: the user's, then by-value scalars Graph::sdpa_backward makes.
  TensorPtr q, k, v, o, d_o, stats, seq_len_q, seq_len_kv;
  TensorPtr scale;    // the attention scale, when the attributes set one
  TensorPtr neg_inf;  // -infinity: what a masked score becomes (only with a mask)
  // D is rowsum(dO * O) times it: 1, or 1 - p with dropout (the frontend's Dropout_scale_inv).
  TensorPtr d_scale;
  TensorPtr bias;          // the forward's additive bias (set_bias)
  TensorPtr alibi_slopes;  // ALiBi's per-head slopes (set_alibi_slopes)
  TensorPtr window;  // the sliding window's length, a by-value Float (set_sliding_window_length)
  // Outputs. d_sum is D, which cuDNN's engines read from memory (with the dropout mask among the
  // outputs with set_dropout_mask_output). dbias: the bias's gradient (set_dbias_output).
  TensorPtr dq, dk, dv, d_sum, dbias;
  // Internal virtual tensors, in lowering order.
  TensorPtr do_o, do_o_sum;          // dO * O, its row sums
  TensorPtr scores, scaled, biased;  // Q K^T, times scale, plus the bias
  AttentionMaskPorts masks;
  TensorPtr centered, probs, probs_t, dv_heads;  // S - Stats, P, P^T, per-query-head dV (GQA)
  TensorPtr dp, dp_centered, ds_unscaled, ds, ds_t, dk_heads;  // dO V^T, - D, * P, * scale
  // Dropout (null without): the key, 1 / (1 - p), the mask; P * M, that / (1 - p) (what dV
  // reads instead of P), dP * M, and dS's / (1 - p).
  DropoutPorts dropout;
  TensorPtr probs_kept, probs_dropped, dp_kept, ds_dropped;
  TensorPtr k_view;  // K again, from K^T (reshape)
  // dS K accumulated in Float, then copied to dQ (cuDNN >= 9.6, which zeroes it itself): the
  // pattern cudnn-frontend 1.32 builds on every cuDNN 9; memory in the workspace.
  TensorPtr dq_accum;

  [[nodiscard]] std::vector<TensorPtr> inputs() const;
  [[nodiscard]] std::vector<TensorPtr> outputs() const;
  [[nodiscard]] std::vector<TensorPtr> internals() const;
};

class SdpaBackwardNode final
    : public CompositeAttentionNode<NodeKind::SdpaBackward, SdpaBackwardAttributes,
                                    SdpaBackwardPorts> {
 public:
  using CompositeAttentionNode::CompositeAttentionNode;

  // The dropout mask as an output (set_dropout_mask_output); null otherwise.
  [[nodiscard]] TensorPtr dropout_mask_output() const { return ports_.dropout.output_mask(); }
  // dBias (set_dbias_output); null otherwise.
  [[nodiscard]] TensorPtr dbias_output() const { return ports_.dbias; }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] std::vector<const TensorAttributes*> workspace_tensors() const override {
    if (ports_.dq_accum) {
      return {ports_.dq_accum.get()};
    }
    return {};
  }
  [[nodiscard]] Result<std::vector<LoweredOperation>> lower_all(
      const TensorTable& tensors, const GraphContext& context) const override;

 private:
  // O and dO [b, h_q, s_q, d_v] in Q's type, head dim innermost; Stats Float [b, h_q, s_q, 1].
  [[nodiscard]] Result<void> check_forward_tensors() const;
  // dQ, dK, dV (Q's, K's, V's dims, Q's type, head dim innermost), D and the dropout mask.
  [[nodiscard]] Result<void> settle_gradients(const GraphContext& context) const;
  // dBias: asked only with a bias of [1, h_q, s_q, s_kv]; the bias's dims, Q's type, packed.
  [[nodiscard]] Result<void> settle_dbias(const GraphContext& context) const;
  void settle_internals();
};

}  // namespace dnngraph::detail
