// What the attention nodes (sdpa, sdpa_backward, the FP8 nodes) share: the checks of Q, K, V, of
// the masks, of dropout and of FP8's factors, the virtual tensors of the masks and of dropout, and
// the builder that appends a composite node's backend operations (pointwise, reduction, matmul,
// reshape, rng) in order, the masks among them.
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph::detail {

// The scale, masks, bias, sliding window, ALiBi and dropout of an attention node's attributes.
struct AttentionSettings {
  std::optional<float> scale;
  std::optional<DiagonalAlignment> causal;
  bool padding = false;
  TensorPtr seq_len_q, seq_len_kv;
  TensorPtr bias;                      // null without
  std::optional<std::int64_t> window;  // the sliding window's length (the left bound)
  bool alibi = false;
  TensorPtr alibi_slopes;         // Float [1, h_q, 1, 1]
  std::optional<double> dropout;  // the probability as given, 0 included
  TensorPtr seed, offset;
  bool mask_output = false;

  // The scale and the masks (no dropout): what every attention node's attributes have.
  template <class A>
  [[nodiscard]] static AttentionSettings of_scores(const AttentionScoreAttributes<A>& a) {
    AttentionSettings settings;
    settings.scale = a.attn_scale();
    settings.causal = a.causal();
    settings.padding = a.padding_mask();
    settings.seq_len_q = a.seq_len_q();
    settings.seq_len_kv = a.seq_len_kv();
    return settings;
  }
  template <class A>
  [[nodiscard]] static AttentionSettings of(const AttentionAttributes<A>& a) {
    AttentionSettings settings = of_scores(a);
    settings.bias = a.bias();
    settings.window = a.sliding_window_length();
    settings.alibi = a.alibi_mask();
    settings.alibi_slopes = a.alibi_slopes();
    settings.dropout = a.dropout_probability();
    settings.seed = a.dropout_seed();
    settings.offset = a.dropout_offset();
    settings.mask_output = a.dropout_mask_output();
    return settings;
  }
  // A probability other than 0 (an invalid one too, which check_attention refuses): the node
  // draws a mask. 0 is no dropout, as in cudnn-frontend (no RNG operation).
  [[nodiscard]] bool has_dropout() const noexcept { return dropout && *dropout != 0.0; }
  // 1 - p, the Bernoulli probability of a 1 in the mask; 1 without dropout.
  [[nodiscard]] double keep() const noexcept { return 1.0 - dropout.value_or(0.0); }
};

// The internal virtual tensors of the masks; null where the settings need none.
struct AttentionMaskPorts {
  TensorPtr pad_row, pad_col, pad_row_in, pad_col_in, pad_keep, padded;
  TensorPtr causal_row, causal_col, causal_row_plus, causal_row_shifted, causal_keep, causal;
  // The sliding window: row and column indices, column + length (Float), the keep flags, the
  // masked scores.
  TensorPtr window_row, window_col, window_col_plus, window_keep, windowed;
  // ALiBi: row and column indices, column - row (Int32), times the slopes, the scores plus that.
  TensorPtr alibi_row, alibi_col, alibi_distance, alibi_bias, alibi_added;

  // Makes the tensors `settings` needs with make(port name).
  [[nodiscard]] static AttentionMaskPorts make(const AttentionSettings& settings,
                                               const std::function<TensorPtr(const char*)>& make);
  void append_to(std::vector<TensorPtr>& list) const;
  // Indices Int32, comparisons Boolean, masked scores Float, all of the scores' dims.
  void settle(const std::vector<std::int64_t>& score_dims) const;
};

// The forward softmax's internal virtual tensors: the row max M, S - M, its exp, the row sum Z,
// log Z, the log-sum-exp M + log Z written to a virtual tensor when the node has no Stats output
// (cuDNN's engines match no softmax without it: NoEngine on the H200, cuDNN 9.19 and 9.27), and
// P = exp / Z.
struct SoftmaxPorts {
  TensorPtr row_max, centered, exps, row_sum, log_sum, unused_stats, probs;

  // Makes the tensors with internal(port name); unused_stats only without a Stats output.
  [[nodiscard]] static SoftmaxPorts make(bool stats_output,
                                         const std::function<TensorPtr(const char*)>& internal);
  void append_to(std::vector<TensorPtr>& list) const;
  // Float, packed: S - M and its exp of the scores' dims, the row tensors of [b, h, s_q, 1]; P
  // of the scores' dims in probs_type.
  void settle(const std::vector<std::int64_t>& score_dims, DataType probs_type) const;
  // Whether t is one of the row tensors ([b, h, s_q, 1] whatever the key length).
  [[nodiscard]] bool is_row(const TensorAttributes* t) const;
};

// A node's settle_output (Node::settle_output with the node's context), for the shared settling
// below: gives an output its dims (or checks the user's) and packed strides unless set.
using SettleOutput =
    std::function<Result<void>(TensorAttributes&, const std::vector<std::int64_t>&)>;

// The tensors of dropout; all null without it (AttentionSettings::has_dropout).
struct DropoutPorts {
  TensorPtr seed, offset;  // the user's key: inputs
  TensorPtr scale;         // 1 / (1 - p), a by-value input
  TensorPtr mask;          // the RNG's output: a node output with mask_output, else internal
  bool mask_is_output = false;

  // With dropout: the key from settings, scale from scalar(name, value), the mask from
  // output(port) or internal(port).
  [[nodiscard]] static DropoutPorts make(const AttentionSettings& settings,
                                         const std::function<TensorPtr(const char*, float)>& scalar,
                                         const std::function<TensorPtr(const char*)>& output,
                                         const std::function<TensorPtr(const char*)>& internal);
  [[nodiscard]] TensorPtr internal_mask() const { return mask_is_output ? nullptr : mask; }
  [[nodiscard]] TensorPtr output_mask() const { return mask_is_output ? mask : nullptr; }
  // Gives the internal mask Float, packed score_dims; an output mask Float unless set, then
  // settle_output (the node's) and the check: Float and packed, since the backward draws it
  // packed.
  [[nodiscard]] Result<void> settle(const std::string& node,
                                    const std::vector<std::int64_t>& score_dims,
                                    const SettleOutput& settle_output) const;
};

// Appends each non-null tensor to list.
void append_present(std::vector<TensorPtr>& list, std::initializer_list<TensorPtr> tensors);

// A tensor's data type for messages ("none" if unset).
[[nodiscard]] std::string type_name(const TensorAttributes& t);

// What an attention pattern's engines take as Q, K and V: the data types and the head dims.
struct AttentionInputRule {
  bool (*takes)(DataType);
  const char* types;               // ends the type error: "attention takes Half or BFloat16"
  std::int64_t head_dim_multiple;  // equal to max_head_dim: that head dim only
  std::int64_t max_head_dim;
  const char* engines;  // names them in the head dim error: "cuDNN's fused attention engines"
};
// sdpa and sdpa_backward: Half or BFloat16; head dims multiples of 8, at most 256 (cuDNN's fused
// attention engines on Hopper: cudnn-frontend 1.32's support surface for cuDNN 9.19, forward and
// backward alike).
inline constexpr AttentionInputRule half_precision_inputs{
    [](DataType t) { return t == DataType::Half || t == DataType::BFloat16; },
    "attention takes Half or BFloat16", 8, 256, "cuDNN's fused attention engines"};

// Q, K, V of rank 4, of one type the rule takes, head dim innermost; one batch; K's head dim is
// Q's, V's length is K's; h_k and h_v divide h_q; head dims the rule's.
[[nodiscard]] Result<void> check_attention_inputs(
    const std::string& node, const TensorAttributes& q, const TensorAttributes& k,
    const TensorAttributes& v, const AttentionInputRule& rule = half_precision_inputs);
// The scores Q K^T, Float [b, h_q, s_q, s_kv], the nodes' largest internal tensors: their extent
// in bytes fits in int64, so their packed strides can be computed.
[[nodiscard]] Result<void> check_attention_scores(const std::string& node,
                                                  const TensorAttributes& q,
                                                  const TensorAttributes& k);
// A finite scale; the padding mask with both Int32 [b, 1, 1, 1] device length tensors and
// length tensors only with it; bottom-right causal without padding only for s_q == s_kv.
[[nodiscard]] Result<void> check_attention_masks(const std::string& node,
                                                 const AttentionSettings& settings,
                                                 const TensorAttributes& q,
                                                 const TensorAttributes& k);
// Dropout: a probability in [0, 1) (1 keeps nothing; its scale 1 / (1 - p) is infinite); above
// 0, a seed and an offset of one Int64 or Int32 value each, and no bottom-right causal mask
// (cudnn-frontend 1.32 refuses that combination: cuDNN's fused attention does not serve it); the
// mask as an output only with a probability above 0.
[[nodiscard]] Result<void> check_attention_dropout(const std::string& node,
                                                   const AttentionSettings& settings);
// The node's compute type, if set, is Float; then check_attention_inputs (with `rule`),
// check_attention_scores, check_attention_masks, the bias's, sliding window's and ALiBi's checks
// and check_attention_dropout.
[[nodiscard]] Result<void> check_attention(const std::string& node, std::optional<DataType> compute,
                                           const AttentionSettings& settings,
                                           const TensorAttributes& q, const TensorAttributes& k,
                                           const TensorAttributes& v,
                                           const AttentionInputRule& rule = half_precision_inputs);

// What the backward nodes (sdpa_backward, sdpa_fp8_backward) share.
// O and dO [b, h_q, s_q, d_v] (the forward's O), Stats Float [b, h_q, s_q, 1]; each node checks
// the types and strides of O and dO itself.
[[nodiscard]] Result<void> check_forward_shapes(const std::string& node, const TensorAttributes& q,
                                                const TensorAttributes& v,
                                                const TensorAttributes& o,
                                                const TensorAttributes& d_o,
                                                const TensorAttributes& stats);
// With grouped-query attention a backward node makes the gradient of K or V per query head first,
// [b, h_q, s_kv, d] of `element` bytes each: more elements than K, V or the scores may have, so
// its extent is checked before its strides are computed. Each pair: the per-head tensor (null
// without grouped-query attention: nothing to check) and K or V.
using PerHead = std::pair<const TensorAttributes*, const TensorAttributes*>;
[[nodiscard]] Result<void> check_per_head_gradients(const std::string& node,
                                                    const TensorAttributes& q,
                                                    std::initializer_list<PerHead> per_head,
                                                    std::int64_t element);
// dQ, dK, dV: each `type` unless set, then settle_output with Q's, K's, V's dims, then `check`
// (the node's rule on the gradient's type and strides, given its port name).
struct Gradients {
  TensorAttributes *dq, *dk, *dv;
  const TensorAttributes *q, *k, *v;
};
using GradientCheck = std::function<Result<void>(const char*, const TensorAttributes&)>;
[[nodiscard]] Result<void> settle_gradients(const Gradients& g, DataType type,
                                            const SettleOutput& settle_output,
                                            const GradientCheck& check);

// What the FP8 attention nodes (sdpa_fp8, sdpa_fp8_backward) share.
// A tensor with the port name errors give it ("descale_q").
using NamedTensor = std::pair<const char*, const TensorAttributes*>;
// Hopper's FP8 attention: no bottom-right causal mask (cuDNN serves it in FP8 on Blackwell only)
// and no ragged (packed variable-length) tensor among `tensors`; `ragged_why` ends that error
// (what does serve it).
[[nodiscard]] Result<void> check_fp8_form(const std::string& node,
                                          std::optional<DiagonalAlignment> causal,
                                          std::span<const NamedTensor> tensors,
                                          std::string_view ragged_why);
// Each per-tensor scale factor one Float [1, 1, 1, 1] value in device memory.
[[nodiscard]] Result<void> check_fp8_factors(const std::string& node,
                                             std::span<const NamedTensor> factors);
// The factors of an FP8 node's ports: the last Ports::factor_count of Ports::named_inputs.
template <class Ports>
[[nodiscard]] Result<void> check_fp8_factors_of(const std::string& node, const Ports& p) {
  const auto named = Ports::named_inputs(p);
  std::array<NamedTensor, Ports::factor_count> factors{};
  for (std::size_t i = 0; i < factors.size(); ++i) {
    const auto& [role, port] = named.at(named.size() - factors.size() + i);
    factors.at(i) = {role, port->get()};
  }
  return check_fp8_factors(node, factors);
}
// A Float output (Stats, an amax): Float unless set, then settle_output; another type is an
// error naming `role`.
[[nodiscard]] Result<void> settle_float_output(const std::string& node, const char* role,
                                               TensorAttributes& t,
                                               const std::vector<std::int64_t>& dims,
                                               const SettleOutput& settle_output);

// A composite attention node (sdpa_backward and the FP8 nodes): built from its attributes and
// ports, lowered by lower_all() alone (lower() refuses), and, as every attention node, refused
// at plan choice in a dynamic-shape or override-shape graph (known issues sdpa-dynamic-shape and
// sdpa-override-shapes; the forms cuDNN runs exact there were measured on sdpa alone).
template <NodeKind Kind, class Attributes, class Ports>
class CompositeAttentionNode : public Node {
 public:
  CompositeAttentionNode(Attributes attributes, const Ports& ports)
      : Node(attributes.name(), ports.inputs(), ports.outputs(), ports.internals()),
        attributes_(std::move(attributes)),
        ports_(ports) {}

  [[nodiscard]] NodeKind kind() const noexcept final { return Kind; }
  void note_traits(GraphTraits& traits) const final {
    traits.sdpa = true;
    traits.sdpa_outside_override_form = true;
  }
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& /*tensors*/,
                                               const GraphContext& /*context*/) const final {
    return make_error(ErrorCode::InvalidState,
                      describe() + ": a composite node lowers through lower_all()");
  }

 protected:
  Attributes attributes_;
  Ports ports_;
};

// A ragged (packed variable-length) tensor among `tensors` (null entries skipped) needs the
// padding mask: seq_len_q / seq_len_kv say how long each packed batch is.
[[nodiscard]] Result<void> check_ragged_needs_padding(
    const std::string& node, bool padding, std::initializer_list<const TensorAttributes*> tensors);

// What attention_steps.cpp defines: the step builder, and the transposed view it lowers.

// t with its last two dims and strides swapped (K^T from K: the same uid), finalized.
[[nodiscard]] Result<backend::Tensor> lower_transposed(const TensorAttributes& t,
                                                       const backend::Tensor* ragged_offset);

// A composite node's backend operations, appended in order. Tensors are looked up through
// tensor(); the first failure (a lookup or a cuDNN status) stops the rest and is what finish()
// returns.
class AttentionSteps {
 public:
  using Lookup = std::function<Result<const backend::Tensor*>(const TensorAttributes&)>;
  AttentionSteps(std::string node, Lookup lookup)
      : node_(std::move(node)), lookup_(std::move(lookup)) {}

  // The lowered tensor of t; null for a null t or after a failure.
  const backend::Tensor* tensor(const TensorPtr& t);

  void pointwise(const char* step, cudnnPointwiseMode_t mode, cudnnDataType_t math,
                 std::array<const backend::Tensor*, 3> in, const backend::Tensor* y,
                 std::optional<std::int64_t> axis = {});
  void reduction(const char* step, cudnnReduceTensorOp_t mode, const backend::Tensor* x,
                 const backend::Tensor* y);
  // C = A B with per-batch actual extents where given (null: the full extent).
  void matmul(const char* step, std::array<const backend::Tensor*, 3> abc,
              std::array<const backend::Tensor*, 3> mnk_overrides);
  // Y = X under other dims and strides (a view: P^T, dS^T, K from K^T).
  void reshape(const char* step, const backend::Tensor* x, const backend::Tensor* y);
  // The dropout mask: y drawn from Bernoulli(keep) keyed by seed and offset.
  void rng(const char* step, double keep, const backend::Tensor* seed,
           const backend::Tensor* offset, const backend::Tensor* y);
  // y (a virtual K^T or V) gathered from a paged container through a page table, each batch up to
  // its seq_len.
  void paged_cache_load(const char* step, const backend::Tensor* container,
                        const backend::Tensor* page_table, const backend::Tensor* seq_len,
                        const backend::Tensor* y);
  // Keeps a descriptor the operations use alive with them (K^T).
  void keep(backend::Descriptor part);

  // S = Q K^T (K^T: K's uid, dims 2/3 swapped; per-batch M and N with lengths), times the scale
  // where given and each factor, then the padding mask where asked: the first steps of forward and
  // backward. With k_pages, K (then the virtual cache) is first gathered from them. Returns the
  // scores so far.
  struct Pages {
    const backend::Tensor *container, *page_table;
  };
  // One more factor of the scores, after the scale (FP8's descales): `out` = scores * `by`.
  struct Factor {
    const char* step;
    const backend::Tensor* by;
    TensorPtr out;
  };
  struct Scores {
    const TensorAttributes& k;
    const backend::Tensor *q, *scale, *seq_q, *seq_kv, *neg_inf;
    TensorPtr scores, scaled;
    const AttentionMaskPorts* padding;  // null: no padding mask
    std::optional<Pages> k_pages = std::nullopt;
    // Applied in order before the padding mask. The initializer lets callers leave it out
    // (-Wmissing-designated-field-initializers).
    std::span<const Factor> factors = {};  // NOLINT(readability-redundant-member-init)
    // The additive bias (null: none), after the factors: biased = scores + bias.
    const backend::Tensor* bias = nullptr;
    TensorPtr biased = nullptr;  // NOLINT(readability-redundant-member-init)
    // ALiBi after the bias (null slopes: none), its tensors in alibi_ports.
    const backend::Tensor* alibi_slopes = nullptr;
    const AttentionMaskPorts* alibi_ports = nullptr;
  };
  const backend::Tensor* scores(const Scores& s);
  // C = A B (per-batch M and K overrides), summed over each group of query heads into `grad`
  // where `heads` (the per-query-head C) is given: dK and dV of grouped-query attention.
  void gradient(const char* step, const backend::Tensor* a, const backend::Tensor* b,
                const TensorPtr& heads, const backend::Tensor* grad,
                std::array<const backend::Tensor*, 2> m_k_overrides);

  // The padding mask (GEN_INDEX rows and columns, CMP_LT with the lengths, LOGICAL_AND,
  // BINARY_SELECT with -inf) on `scores`; returns the masked scores.
  const backend::Tensor* padding_mask(const AttentionMaskPorts& p, const backend::Tensor* scores,
                                      const backend::Tensor* seq_q, const backend::Tensor* seq_kv,
                                      const backend::Tensor* neg_inf);
  // The causal mask (GEN_INDEX rows and columns; bottom-right with lengths: row + seq_len_kv -
  // seq_len_q; CMP_GE; BINARY_SELECT with -inf); returns the masked scores.
  const backend::Tensor* causal_mask(const AttentionMaskPorts& p, DiagonalAlignment alignment,
                                     const backend::Tensor* scores, const backend::Tensor* seq_q,
                                     const backend::Tensor* seq_kv, const backend::Tensor* neg_inf);

  // ALiBi on `scores` (cudnn-frontend's alibi_mask: GEN_INDEX rows and columns, SUB column - row
  // in Int32, MUL by the [1, h_q, 1, 1] slopes, ADD to the scores); returns the new scores.
  const backend::Tensor* alibi(const AttentionMaskPorts& p, const backend::Tensor* scores,
                               const backend::Tensor* slopes);

  // The sliding window on `scores` (cudnn-frontend's diagonal-band left bound, top-left: GEN_INDEX
  // rows and columns, column + length in Float, CMP_GT with the row, BINARY_SELECT with -inf);
  // returns the masked scores.
  const backend::Tensor* sliding_window(const AttentionMaskPorts& p, const backend::Tensor* scores,
                                        const backend::Tensor* length,
                                        const backend::Tensor* neg_inf);

  // The softmax of `scores` over the keys (REDUCTION MAX, SUB, EXP, REDUCTION ADD, LOG, ADD ->
  // stats, DIV -> P); `stats` is the node's Stats output, or p.unused_stats. Returns P.
  const backend::Tensor* softmax(const SoftmaxPorts& p, const backend::Tensor* scores,
                                 const TensorPtr& stats);

  // The Scores of a node whose ports name scale, neg_inf, seq_len_q, seq_len_kv, scores, scaled
  // and masks (every attention node's), looked up here; the padding mask where asked. The caller
  // adds K's pages or further factors.
  template <class Ports>
  [[nodiscard]] Scores scores_of(const Ports& p, const TensorAttributes& k,
                                 const backend::Tensor* q, bool padding) {
    return {.k = k,
            .q = q,
            .scale = tensor(p.scale),
            .seq_q = tensor(p.seq_len_q),
            .seq_kv = tensor(p.seq_len_kv),
            .neg_inf = tensor(p.neg_inf),
            .scores = p.scores,
            .scaled = p.scaled,
            .padding = padding ? &p.masks : nullptr};
  }

  [[nodiscard]] Result<std::vector<LoweredOperation>> finish() &&;

 private:
  // A mask's Int32 row and column indices of the scores (GEN_INDEX on axes 2 and 3), written to
  // the tensors of row_port and col_port; the steps are named after `mask`.
  struct Indices {
    const backend::Tensor *row, *col;
  };
  Indices indices(const char* mask, const TensorPtr& row_port, const TensorPtr& col_port,
                  const backend::Tensor* scores);
  // keep = operands[0] `compare` operands[1] (Boolean), then the scores where keep and -inf
  // elsewhere (BINARY_SELECT), written to the tensors of keep_and_masked; returns the masked.
  const backend::Tensor* keep_where(const char* mask, cudnnPointwiseMode_t compare,
                                    std::array<const backend::Tensor*, 2> operands,
                                    std::array<TensorPtr, 2> keep_and_masked,
                                    std::array<const backend::Tensor*, 2> scores_neg_inf);

  // No earlier failure, and every tensor the step needs was found.
  bool ready(const char* step, std::initializer_list<const backend::Tensor*> needed);
  void fail(const char* step, const backend::Status& status);
  void add(backend::Operation op, std::optional<backend::Descriptor> part);

  std::string node_;
  Lookup lookup_;
  std::vector<LoweredOperation> ops_;
  std::optional<Error> error_;
};

}  // namespace dnngraph::detail
