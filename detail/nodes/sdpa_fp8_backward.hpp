// FP8 scaled dot-product attention backward (Hopper): the gradients of sdpa_fp8 from Q, K, V and
// O (Fp8E4M3), dO (Fp8E4M3 or Fp8E5M2), the forward's Stats and twelve per-tensor Float factors,
//   D   = descale_dO descale_O rowsum(dO * O)                        (virtual)
//   P   = exp(masks(attn_scale descale_q descale_k Q K^T) - Stats)  (the forward's P)
//   dV~ = descale_s descale_dO (FP8(scale_s P)^T dO),  dV = FP8(scale_dV dV~),  Amax_dV = max |dV~|
//   dS  = P (descale_dO descale_v dO V^T - D) attn_scale,             Amax_dP = max |dS|
//   dQ~ = descale_dP descale_k (FP8(scale_dP dS) K),    dQ = FP8(scale_dQ dQ~),  Amax_dQ = max
//   |dQ~| dK~ = descale_dP descale_q (FP8(scale_dP dS)^T Q),  dK = FP8(scale_dK dK~),  Amax_dK =
//   max |dK~|
// lowered to the composite pattern cuDNN's fused FP8 flash-attention backward engine matches:
// the one cudnn-frontend's SDPA FP8 backward node builds, each gradient as its FP8 matmul node
// (facts and sources in docs/attention.md, "FP8 attention backward"). Grouped-query attention:
// dK~ and dV~ are made per query head in Float and summed over each group before the descales.
#pragma once

#include "api/attention_attributes.hpp"
#include "detail/nodes/node.hpp"
#include "detail/nodes/sdpa_common.hpp"

#include <array>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace dnngraph::detail {

// One gradient's FP8 matmul (cudnn-frontend's matmul_fp8): C = A B in Float, summed over each
// group of query heads for dK and dV of grouped-query attention, times A's then B's descale (what
// the amax reads), then times the gradient's scale into the FP8 output. Internal tensors; summed
// is null without grouped-query attention.
struct Fp8MatmulPorts {
  TensorPtr product, summed, descaled_a, descaled;

  void append_to(std::vector<TensorPtr>& list) const;
};

// The node's tensors by role. Null where the attributes need none.
struct SdpaFp8BackwardPorts {
  // Inputs: the user's, then the by-value scalars the node makes.
  TensorPtr q, k, v, o, d_o, stats;
  TensorPtr descale_q, descale_k, descale_v, descale_o, descale_do, descale_s, descale_dp;
  TensorPtr scale_s, scale_dq, scale_dk, scale_dv, scale_dp;
  TensorPtr seq_len_q, seq_len_kv;
  TensorPtr scale;    // the attention scale, when the attributes set one
  TensorPtr neg_inf;  // -infinity, what a masked score becomes (only with a mask)
  // Outputs: the three gradients and the four amax.
  TensorPtr dq, dk, dv, amax_dq, amax_dk, amax_dv, amax_dp;
  // Internal virtual tensors, in lowering order: dO * O, its row sums, times descale_dO, D (times
  // descale_O); Q K^T, times the attention scale, descale_q, descale_k; the masks; S - Stats, P,
  // scale_s P in FP8, its transpose; dV's matmul; dO V^T, times descale_dO, descale_v, minus D,
  // times P (dS without the attention scale), dS, scale_dP dS in FP8; K from K^T; dQ's matmul;
  // dS^T; dK's matmul.
  TensorPtr do_o, do_o_sum, d_descaled, d_sum;
  TensorPtr scores, scaled, descaled_q, descaled;
  AttentionMaskPorts masks;
  TensorPtr centered, probs, probs_fp8, probs_t;
  Fp8MatmulPorts dv_matmul;
  TensorPtr dp, dp_descaled_do, dp_descaled, dp_centered, ds_unscaled, ds, ds_fp8;
  TensorPtr k_view;
  Fp8MatmulPorts dq_matmul;
  TensorPtr ds_t;
  Fp8MatmulPorts dk_matmul;

  // The eighteen inputs with their port names, in Graph::sdpa_fp8_backward's order (Q, K, V, O,
  // dO, Stats, then the twelve factors): pointers into p (const or not).
  template <class Ports>
  [[nodiscard]] static auto named_inputs(Ports& p) {
    return std::array{std::pair{"Q", &p.q},
                      std::pair{"K", &p.k},
                      std::pair{"V", &p.v},
                      std::pair{"O", &p.o},
                      std::pair{"dO", &p.d_o},
                      std::pair{"Stats", &p.stats},
                      std::pair{"descale_q", &p.descale_q},
                      std::pair{"descale_k", &p.descale_k},
                      std::pair{"descale_v", &p.descale_v},
                      std::pair{"descale_o", &p.descale_o},
                      std::pair{"descale_dO", &p.descale_do},
                      std::pair{"descale_s", &p.descale_s},
                      std::pair{"descale_dP", &p.descale_dp},
                      std::pair{"scale_s", &p.scale_s},
                      std::pair{"scale_dQ", &p.scale_dq},
                      std::pair{"scale_dK", &p.scale_dk},
                      std::pair{"scale_dV", &p.scale_dv},
                      std::pair{"scale_dP", &p.scale_dp}};
  }
  static constexpr std::size_t factor_count = 12;  // the last twelve of named_inputs
  // Makes the scalars and the internal tensors `settings` and the head counts of Q, K and V ask
  // for, with scalar(what, value) and internal(port).
  void make_internals(const AttentionSettings& settings,
                      const std::function<TensorPtr(const char*, float)>& scalar,
                      const std::function<TensorPtr(const char*)>& internal);
  [[nodiscard]] std::vector<TensorPtr> inputs() const;
  [[nodiscard]] std::vector<TensorPtr> outputs() const;
  [[nodiscard]] std::vector<TensorPtr> internals() const;
};

class SdpaFp8BackwardNode final
    : public CompositeAttentionNode<NodeKind::SdpaFp8Backward, SdpaFp8BackwardAttributes,
                                    SdpaFp8BackwardPorts> {
 public:
  using CompositeAttentionNode::CompositeAttentionNode;

  // The loaded cuDNN serves the FP8 attention backward (Feature::Fp8AttentionBackward); Q, K, V
  // and O Fp8E4M3, dO Fp8E4M3 or Fp8E5M2, head dims 128 (what Hopper's FP8 backward engine
  // takes); the masks as sdpa_fp8's (no bottom-right causal mask, no ragged tensors); Stats Float
  // [b, h_q, s_q, 1]; each factor one Float in device memory; then dQ, dK, dV (Fp8E4M3 or
  // Fp8E5M2, dO's type unless set) and the four amax (Float [1, 1, 1, 1]) are settled.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<std::vector<LoweredOperation>> lower_all(
      const TensorTable& tensors, const GraphContext& context) const override;

 private:
  // O and dO [b, h_q, s_q, d_v] (O Fp8E4M3, dO Fp8E4M3 or Fp8E5M2), head dim innermost; Stats
  // Float [b, h_q, s_q, 1].
  [[nodiscard]] Result<void> check_forward_tensors() const;
  [[nodiscard]] Result<void> check_head_dim_innermost(const char* port,
                                                      const TensorAttributes& t) const;
  // dQ, dK, dV: Q's, K's, V's dims, an FP8 type (dO's unless set), head dim innermost.
  [[nodiscard]] Result<void> settle_gradients(const GraphContext& context) const;
  [[nodiscard]] Result<void> settle_amax(const GraphContext& context) const;
  void settle_internals() const;
};

}  // namespace dnngraph::detail
