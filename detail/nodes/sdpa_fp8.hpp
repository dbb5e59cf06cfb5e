// FP8 scaled dot-product attention forward (Hopper): with Q, K, V in Fp8E4M3 and per-tensor
// Float factors,
//   P = softmax(attn_scale * descale_q * descale_k * Q K^T + masks),  Amax_S = max |P|,
//   O~ = descale_s * descale_v * (FP8(scale_s * P) V),               Amax_O = max |O~|,
//   O = FP8(scale_o * O~),
// lowered to the composite pattern cuDNN's fused FP8 flash-attention engine matches: the one
// cudnn-frontend's SDPA FP8 node builds (facts and sources in docs/attention.md, "FP8 attention
// (forward)").
#pragma once

#include "api/attention_attributes.hpp"
#include "detail/nodes/node.hpp"
#include "detail/nodes/sdpa_common.hpp"

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace dnngraph::detail {

// The node's tensors by role. Null where the attributes need none.
struct SdpaFp8Ports {
  // Inputs: the user's, then the by-value scalars the node makes.
  TensorPtr q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s, scale_o;
  TensorPtr seq_len_q, seq_len_kv;
  TensorPtr scale;    // the attention scale, when the attributes set one
  TensorPtr neg_inf;  // -infinity, what a masked score becomes (only with a mask)
  // Outputs: O, Stats (training only), the amax of P and of O before scale_o.
  TensorPtr o, stats, amax_s, amax_o;
  // Internal virtual tensors, in lowering order: Q K^T, times the attention scale, descale_q and
  // descale_k; the masks; the softmax; scale_s P in FP8; P V, times descale_s and descale_v.
  TensorPtr scores, scaled, descaled_q, descaled;
  AttentionMaskPorts masks;
  SoftmaxPorts softmax;
  TensorPtr probs_fp8, pv, pv_descaled_s, o_float;

  // Q, K, V and the six factors (descale_q, descale_k, descale_v, descale_s, scale_s, scale_o)
  // with their port names, in Graph::sdpa_fp8's order: pointers into p (const or not).
  template <class Ports>
  [[nodiscard]] static auto named_inputs(Ports& p) {
    return std::array{std::pair{"Q", &p.q},
                      std::pair{"K", &p.k},
                      std::pair{"V", &p.v},
                      std::pair{"descale_q", &p.descale_q},
                      std::pair{"descale_k", &p.descale_k},
                      std::pair{"descale_v", &p.descale_v},
                      std::pair{"descale_s", &p.descale_s},
                      std::pair{"scale_s", &p.scale_s},
                      std::pair{"scale_o", &p.scale_o}};
  }
  static constexpr std::size_t factor_count = 6;  // the last six of named_inputs
  // Makes the scalars and the internal tensors `settings` asks for, with scalar(what, value) and
  // internal(port).
  void make_internals(const AttentionSettings& settings,
                      const std::function<TensorPtr(const char*, float)>& scalar,
                      const std::function<TensorPtr(const char*)>& internal);
  [[nodiscard]] std::vector<TensorPtr> inputs() const;
  [[nodiscard]] std::vector<TensorPtr> outputs() const;
  [[nodiscard]] std::vector<TensorPtr> internals() const;
};

class SdpaFp8Node final
    : public CompositeAttentionNode<NodeKind::SdpaFp8, SdpaFp8Attributes, SdpaFp8Ports> {
 public:
  using CompositeAttentionNode::CompositeAttentionNode;

  // The loaded cuDNN serves FP8 attention (Feature::Fp8Attention); Q, K, V Fp8E4M3 with head
  // dims multiples of 16 up to 256; the masks as sdpa's, but no bottom-right causal mask and no
  // packed (ragged) sequences; each scale factor one Float in device memory ([1, 1, 1, 1]); then
  // O (Fp8E4M3), Stats and the two amax outputs (Float [1, 1, 1, 1]) are settled.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  [[nodiscard]] Result<std::vector<LoweredOperation>> lower_all(
      const TensorTable& tensors, const GraphContext& context) const override;

 private:
  // What sdpa_fp8 refuses beyond the attention checks: bottom-right causal, ragged tensors.
  [[nodiscard]] Result<void> check_fp8_form() const;
  [[nodiscard]] Result<void> settle_outputs(const GraphContext& context);
  void settle_internals() const;
};

}  // namespace dnngraph::detail
