// Scaled dot-product attention node: O = dropout(softmax(scale * Q K^T + bias + ALiBi + masks)) V,
// lowered to the composite pattern cuDNN's fused flash-attention engines match (matmul, pointwise
// masks, softmax as reductions and pointwise steps, the dropout mask from an rng operation,
// matmul), the one route that serves causal masks and dynamic shapes on cuDNN 9.19 (see
// /docs/attention.md and the facts there).
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"
#include "detail/nodes/sdpa_common.hpp"
#include "detail/nodes/sdpa_paged.hpp"

namespace dnngraph::detail {

// The node's tensors by role. Null where the attributes need none.
struct SdpaPorts {
  // Inputs: the user's, then by-value scalars Graph::sdpa makes.
  TensorPtr q, k, v, seq_len_q, seq_len_kv;
  TensorPtr scale;         // the attention scale, when the attributes set one
  TensorPtr neg_inf;       // -infinity: what a masked score becomes
  TensorPtr bias;          // the user's additive bias (set_bias)
  TensorPtr alibi_slopes;  // ALiBi's per-head slopes (set_alibi_slopes)
  TensorPtr window;  // the sliding window's length, a by-value Float (set_sliding_window_length)
  // Outputs (the dropout mask among them with set_dropout_mask_output).
  TensorPtr o, stats;
  // Internal virtual tensors, in lowering order.
  TensorPtr scores, scaled, biased;  // Q K^T, times scale, plus the bias
  AttentionMaskPorts masks;
  SoftmaxPorts softmax;
  // Dropout (null without): the key, 1 / (1 - p) and the mask; then P * mask (Float) and that
  // times 1 / (1 - p) in the io type, what P V reads instead of P.
  DropoutPorts dropout;
  TensorPtr kept, dropped;
  // A paged K/V cache (set_paged_attention; empty without): k and v are then its containers.
  PagedCachePorts paged;

  // What the attention reads as K and V: the caches gathered from the pages, or k and v.
  [[nodiscard]] const TensorPtr& keys() const { return paged.present() ? paged.k_view : k; }
  [[nodiscard]] const TensorPtr& values() const { return paged.present() ? paged.v_view : v; }
  [[nodiscard]] std::vector<TensorPtr> inputs() const;
  [[nodiscard]] std::vector<TensorPtr> outputs() const;
  [[nodiscard]] std::vector<TensorPtr> internals() const;
};

class SdpaNode final : public Node {
 public:
  SdpaNode(SdpaAttributes attributes, const SdpaPorts& ports)
      : Node(attributes.name(), ports.inputs(), ports.outputs(), ports.internals()),
        attributes_(std::move(attributes)),
        ports_(ports) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Sdpa; }
  // The dropout mask as an output (set_dropout_mask_output); null otherwise.
  [[nodiscard]] TensorPtr dropout_mask_output() const { return ports_.dropout.output_mask(); }
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  // Known issue sdpa-dynamic-shape: a dynamic-shape graph of this node is refused at plan choice;
  // sdpa-override-shapes: so is an override-shape graph, outside in_override_form().
  void note_traits(GraphTraits& traits) const override {
    traits.sdpa = true;
    traits.sdpa_outside_override_form = traits.sdpa_outside_override_form || !in_override_form();
  }
  // The one form cuDNN runs exact under execute-time overrides (measured on cuDNN 9.28.1 with
  // cudnn-frontend 1.32's own SDPA; docs/attention.md): Q and O ragged (THD), a padding mask,
  // inference, no dropout, no causal mask or a top-left one, K and V in memory (a paged cache was
  // not measured with overrides).
  [[nodiscard]] bool in_override_form() const;
  // Execute-time overrides. In in_override_form() (the one form that builds with them) they may
  // change Q's and O's sequence dim (the longest sequence of the batch), nothing else: K, V and
  // the length tensors keep their build dims, Q and O their head, token and element strides; one
  // query token is refused (cuDNN answers NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE at execute).
  // Outside it (refused at build, known issue sdpa-override-shapes) the checks say what an
  // override would mean: the batch and the sequence lengths may change, not the heads or head
  // dims. O, Stats, the dropout mask and the internal score and row tensors follow. A paged cache
  // takes no overrides at all (its containers and page tables are not sequences).
  [[nodiscard]] Result<std::vector<std::vector<std::int64_t>>> all_output_dims(
      std::span<const ShapedTensor> inputs) const override;
  // Composite: lower_all() makes every operation; lower() alone cannot stand for the node.
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;
  [[nodiscard]] Result<std::vector<LoweredOperation>> lower_all(
      const TensorTable& tensors, const GraphContext& context) const override;

 private:
  void settle_internals();
  // all_output_dims' first step: what in_override_form() lets an override change.
  [[nodiscard]] Result<void> check_override_form(std::span<const ShapedTensor> inputs) const;

  SdpaAttributes attributes_;
  SdpaPorts ports_;
};

}  // namespace dnngraph::detail
