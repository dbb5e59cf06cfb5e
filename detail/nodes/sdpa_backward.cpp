// Attention backward node: checks, shape inference and the composite lowering (the operation
// sequence, dims and types of cudnn-frontend 1.32's CompositeSDPABackwardNode, read for facts).
#include "detail/nodes/sdpa_backward.hpp"

#include "api/layout.hpp"
#include "backend/features.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <utility>

namespace dnngraph::detail {

std::vector<TensorPtr> SdpaBackwardPorts::inputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {q, k, v, o, d_o, stats, seq_len_q, seq_len_kv, scale, neg_inf, d_scale,
                        bias, alibi_slopes, window, dropout.seed, dropout.offset, dropout.scale});
  return list;
}

std::vector<TensorPtr> SdpaBackwardPorts::outputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {dq, dk, dv, d_sum, dropout.output_mask(), dbias});
  return list;
}

std::vector<TensorPtr> SdpaBackwardPorts::internals() const {
  std::vector<TensorPtr> list;
  append_present(list, {do_o, do_o_sum, scores, scaled, biased});
  masks.append_to(list);
  append_present(list, {centered, probs, dropout.internal_mask(), probs_kept, probs_dropped,
                        probs_t, dv_heads, dp, dp_kept, dp_centered, ds_unscaled, ds_dropped, ds,
                        ds_t, dk_heads, k_view, dq_accum});
  return list;
}

Result<void> SdpaBackwardNode::check_forward_tensors() const {
  if (auto ok = check_forward_shapes(describe(), *ports_.q, *ports_.v, *ports_.o, *ports_.d_o,
                                     *ports_.stats);
      !ok) {
    return ok;
  }
  for (const auto& [port, t] :
       {std::pair{"O", ports_.o.get()}, std::pair{"dO", ports_.d_o.get()}}) {
    if (t->data_type() != ports_.q->data_type() || t->stride()[3] != 1) {
      return make_error(ErrorCode::InvalidAttribute,
                        describe() + ": " + port + " " + t->describe() + " has data type " +
                            type_name(*t) + " and strides " + to_string(t->stride()) +
                            "; it takes Q's type (" + type_name(*ports_.q) +
                            ") and an innermost head dim (stride 1)");
    }
  }
  // cudnn-frontend 1.32 refuses this shape for backward ("s_q = s_kv = 1 is not supported").
  if (ports_.q->dim()[2] == 1 && ports_.k->dim()[2] == 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": s_q = s_kv = 1; cuDNN's attention backward takes longer "
                          "sequences (cudnn-frontend refuses this shape too)");
  }
  return {};
}

Result<void> SdpaBackwardNode::settle_gradients(const GraphContext& context) const {
  const DataType io = ports_.q->data_type().value_or(DataType::Half);  // checked: set
  const SettleOutput settle = [&](TensorAttributes& t, const std::vector<std::int64_t>& dims) {
    return settle_output(t, dims, context);
  };
  auto settled = detail::settle_gradients(
      {ports_.dq.get(), ports_.dk.get(), ports_.dv.get(), ports_.q.get(), ports_.k.get(),
       ports_.v.get()},
      io, settle, [&](const char* port, const TensorAttributes& grad) -> Result<void> {
        if (grad.data_type() != io || grad.stride()[3] != 1) {
          return make_error(ErrorCode::InvalidAttribute,
                            describe() + ": " + port + " " + grad.describe() + " has data type " +
                                type_name(grad) + " and strides " + to_string(grad.stride()) +
                                "; it takes Q's type (" + type_name(*ports_.q) +
                                ") and an innermost head dim (stride 1)");
        }
        return {};
      });
  if (!settled) {
    return settled;
  }
  if (!ports_.d_sum->data_type()) {
    ports_.d_sum->set_data_type(DataType::Float);
  }
  if (ports_.d_sum->data_type() != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": D " + ports_.d_sum->describe() + " has data type " +
                          type_name(*ports_.d_sum) + "; rowsum(dO * O) is Float");
  }
  const auto& q = ports_.q->dim();
  if (auto ok = settle_output(*ports_.d_sum, {q[0], q[1], q[2], 1}, context); !ok) {
    return ok;
  }
  return ports_.dropout.settle(describe(), {q[0], q[1], q[2], ports_.k->dim()[2]}, settle);
}

Result<void> SdpaBackwardNode::settle_dbias(const GraphContext& context) const {
  if (!attributes_.dbias_output()) {
    return {};
  }
  if (!ports_.bias) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": set_dbias_output(true) asks for the bias's gradient, but no "
                          "bias is set (set_bias)");
  }
  const auto& q = ports_.q->dim();
  const std::int64_t s_kv = ports_.k->dim()[2];
  const std::vector<std::int64_t> served{1, q[1], q[2], s_kv};
  // cudnn-frontend's tests and XLA (openxla/xla#11967) ask cuDNN for dBias of this shape only;
  // TransformerEngine disables its fused backward for the others.
  if (ports_.bias->dim() != served) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": dBias of bias " + ports_.bias->describe() + " " +
                          to_string(ports_.bias->dim()) + ": cuDNN's attention backward serves " +
                          "dBias only for a bias of [1, h_q, s_q, s_kv] = " + to_string(served));
  }
  if ((attributes_.padding_mask() || q[2] % 64 != 0 || s_kv % 64 != 0) &&
      !backend::available(backend::Feature::SdpaBiasGradientAnyLength)) {
    return std::unexpected(
        version_too_old(backend::Feature::SdpaBiasGradientAnyLength, describe() + ": dBias"));
  }
  TensorAttributes& dbias = *ports_.dbias;
  if (!dbias.data_type()) {
    dbias.set_data_type(ports_.q->data_type().value_or(DataType::Half));  // checked: set
  }
  if (auto ok = settle_output(dbias, served, context); !ok) {
    return ok;
  }
  if (dbias.data_type() != ports_.q->data_type() || dbias.stride() != packed_strides(served)) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": dBias " + dbias.describe() + " has data type " +
                          type_name(dbias) + " and strides " + to_string(dbias.stride()) +
                          "; dBias takes Q's type (" + type_name(*ports_.q) +
                          ") and packed strides " + to_string(packed_strides(served)));
  }
  return {};
}

void SdpaBackwardNode::settle_internals() {
  const auto& q = ports_.q->dim();
  const std::int64_t b = q[0], h_q = q[1], s_q = q[2], d = q[3];
  const std::int64_t s_kv = ports_.k->dim()[2];
  const std::int64_t d_v = ports_.v->dim()[3];
  const DataType io = ports_.q->data_type().value_or(DataType::Half);  // checked: set
  const std::vector<std::int64_t> score_dims{b, h_q, s_q, s_kv};
  const auto settle = [](const TensorPtr& t, const std::vector<std::int64_t>& dims, DataType type) {
    if (t) {
      t->set_dim(dims).set_stride(packed_strides(dims)).set_data_type(type);
    }
  };
  settle(ports_.do_o, {b, h_q, s_q, d_v}, DataType::Float);
  settle(ports_.do_o_sum, {b, h_q, s_q, 1}, DataType::Float);
  for (const TensorPtr& t :
       {ports_.scores, ports_.scaled, ports_.biased, ports_.centered, ports_.probs,
        ports_.probs_kept, ports_.probs_dropped, ports_.dp, ports_.dp_kept, ports_.dp_centered,
        ports_.ds_unscaled, ports_.ds_dropped, ports_.ds}) {
    settle(t, score_dims, DataType::Float);
  }
  ports_.masks.settle(score_dims);
  // P^T and dS^T: views of the scores' memory order with the last two dims swapped, in the io
  // type (the A operands of the dV and dK matmuls).
  for (const TensorPtr& t : {ports_.probs_t, ports_.ds_t}) {
    t->set_dim({b, h_q, s_kv, s_q})
        .set_stride({h_q * s_q * s_kv, s_q * s_kv, 1, s_kv})
        .set_data_type(io);
  }
  settle(ports_.dv_heads, {b, h_q, s_kv, d_v}, io);
  settle(ports_.dk_heads, {b, h_q, s_kv, d}, io);
  settle(ports_.dq_accum, {b, h_q, s_q, d}, DataType::Float);
  // K from K^T by a reshape: K's dims and strides; Float, the intermediate type cudnn-frontend
  // gives this virtual tensor.
  ports_.k_view->set_dim(ports_.k->dim())
      .set_stride(ports_.k->stride())
      .set_data_type(DataType::Float);
}

Result<void> SdpaBackwardNode::infer(const GraphContext& context) {
  if (auto ok = check_known_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  if (auto ok =
          check_attention(describe(), attributes_.compute_data_type(),
                          AttentionSettings::of(attributes_), *ports_.q, *ports_.k, *ports_.v);
      !ok) {
    return ok;
  }
  if (auto ok = check_forward_tensors(); !ok) {
    return ok;
  }
  if (auto ok = check_per_head_gradients(
          describe(), *ports_.q,
          {{ports_.dk_heads.get(), ports_.k.get()}, {ports_.dv_heads.get(), ports_.v.get()}},
          size_of(ports_.q->data_type().value_or(DataType::Half)));  // checked: set
      !ok) {
    return ok;
  }
  if (auto ok = settle_scalar_inputs(4); !ok) {
    return ok;
  }
  if (auto ok = settle_gradients(context); !ok) {
    return ok;
  }
  if (auto ok = settle_dbias(context); !ok) {
    return ok;
  }
  if (auto ok = check_ragged_needs_padding(
          describe(), attributes_.padding_mask(),
          {ports_.q.get(), ports_.k.get(), ports_.v.get(), ports_.o.get(), ports_.d_o.get(),
           ports_.stats.get(), ports_.dq.get(), ports_.dk.get(), ports_.dv.get()});
      !ok) {
    return ok;
  }
  settle_internals();
  return {};
}

namespace {

// The inputs every step reads, looked up first and in this order (the first failed lookup is the
// error lowering returns).
struct BackwardOperands {
  const backend::Tensor *q, *o, *d_o, *stats, *seq_q, *seq_kv, *scale, *neg_inf;
};

BackwardOperands look_up_operands(AttentionSteps& ops, const SdpaBackwardPorts& p) {
  return {.q = ops.tensor(p.q),
          .o = ops.tensor(p.o),
          .d_o = ops.tensor(p.d_o),
          .stats = ops.tensor(p.stats),
          .seq_q = ops.tensor(p.seq_len_q),
          .seq_kv = ops.tensor(p.seq_len_kv),
          .scale = ops.tensor(p.scale),
          .neg_inf = ops.tensor(p.neg_inf)};
}

// The dropout mask M and 1 / (1 - p); both null without dropout.
struct DropoutOperands {
  const backend::Tensor *mask, *scale;
};

// The forward's dropout mask, drawn again from its seed and offset: the first operation, where
// cudnn-frontend 1.32 puts it.
DropoutOperands redraw_dropout_mask(AttentionSteps& ops, const DropoutPorts& dropout, double keep) {
  const DropoutOperands drawn{.mask = ops.tensor(dropout.mask), .scale = ops.tensor(dropout.scale)};
  if (drawn.mask != nullptr) {
    ops.rng("dropout mask", keep, ops.tensor(dropout.seed), ops.tensor(dropout.offset), drawn.mask);
  }
  return drawn;
}

// D = rowsum(dO * O) * (1 - p) (* 1 without dropout), written to memory (cuDNN's engines read
// it back). Returns D.
const backend::Tensor* lower_d(AttentionSteps& ops, const SdpaBackwardPorts& p,
                               const BackwardOperands& in) {
  const backend::Tensor* do_o = ops.tensor(p.do_o);
  const backend::Tensor* do_o_sum = ops.tensor(p.do_o_sum);
  const backend::Tensor* d_sum = ops.tensor(p.d_sum);
  ops.pointwise("dO * O", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {in.d_o, in.o, nullptr}, do_o);
  ops.reduction("rowsum(dO * O)", CUDNN_REDUCE_TENSOR_ADD, do_o, do_o_sum);
  ops.pointwise("D", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {do_o_sum, ops.tensor(p.d_scale), nullptr}, d_sum);
  return d_sum;
}

// P = exp(masks(scale * Q K^T) - Stats), the causal mask after the subtraction as
// cudnn-frontend orders it. Returns P.
const backend::Tensor* recompute_probabilities(AttentionSteps& ops, const SdpaBackwardPorts& p,
                                               const SdpaBackwardAttributes& attributes,
                                               const BackwardOperands& in) {
  AttentionSteps::Scores scores = ops.scores_of(p, *p.k, in.q, attributes.padding_mask());
  scores.bias = ops.tensor(p.bias);
  scores.biased = p.biased;
  scores.alibi_slopes = ops.tensor(p.alibi_slopes);
  scores.alibi_ports = &p.masks;
  const backend::Tensor* current = ops.scores(scores);
  const backend::Tensor* centered = ops.tensor(p.centered);
  ops.pointwise("minus Stats", CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, {current, in.stats, nullptr},
                centered);
  current = centered;
  if (const auto causal = attributes.causal()) {
    current = ops.causal_mask(p.masks, *causal, current, in.seq_q, in.seq_kv, in.neg_inf);
  }
  if (p.window) {  // the left bound after the right one, as cudnn-frontend orders them
    current = ops.sliding_window(p.masks, current, ops.tensor(p.window), in.neg_inf);
  }
  const backend::Tensor* probs = ops.tensor(p.probs);
  ops.pointwise("P", CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, {current, nullptr, nullptr}, probs);
  return probs;
}

// dV = P^T dO (per query head, then summed over each group for grouped-query attention); with
// dropout P * M / (1 - p), the P the forward's P V read.
void lower_dv(AttentionSteps& ops, const SdpaBackwardPorts& p, const BackwardOperands& in,
              const DropoutOperands& dropout, const backend::Tensor* probs) {
  const backend::Tensor* p_for_dv = probs;
  if (dropout.mask != nullptr) {
    const backend::Tensor* kept = ops.tensor(p.probs_kept);
    p_for_dv = ops.tensor(p.probs_dropped);
    ops.pointwise("P * mask", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {probs, dropout.mask, nullptr},
                  kept);
    ops.pointwise("P * mask / (1 - p)", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                  {kept, dropout.scale, nullptr}, p_for_dv);
  }
  const backend::Tensor* probs_t = ops.tensor(p.probs_t);
  ops.reshape("P^T", p_for_dv, probs_t);
  ops.gradient("P^T dO", probs_t, in.d_o, p.dv_heads, ops.tensor(p.dv), {in.seq_kv, in.seq_q});
}

// What dS reads besides the inputs: the dropout mask, P, D and V^T (which the step keeps).
struct ScoreGradientOperands {
  DropoutOperands dropout;
  const backend::Tensor *probs, *d_sum;
  backend::Tensor vt;
};

// dS = (dO V^T - D) * P * scale; with dropout (dO V^T * M - D) * P / (1 - p) * scale. Returns dS.
const backend::Tensor* lower_ds(AttentionSteps& ops, const SdpaBackwardPorts& p,
                                const BackwardOperands& in, ScoreGradientOperands s) {
  const backend::Tensor* dp = ops.tensor(p.dp);
  const backend::Tensor* dp_centered = ops.tensor(p.dp_centered);
  const backend::Tensor* ds_unscaled = ops.tensor(p.ds_unscaled);
  ops.matmul("dO V^T", {in.d_o, &s.vt, dp}, {in.seq_q, in.seq_kv, nullptr});
  ops.keep(std::move(s.vt));
  if (s.dropout.mask != nullptr) {
    const backend::Tensor* kept = ops.tensor(p.dp_kept);
    ops.pointwise("dP * mask", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {dp, s.dropout.mask, nullptr},
                  kept);
    dp = kept;
  }
  ops.pointwise("dP - D", CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, {dp, s.d_sum, nullptr},
                dp_centered);
  ops.pointwise("(dP - D) * P", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {dp_centered, s.probs, nullptr}, ds_unscaled);
  const backend::Tensor* ds = ds_unscaled;
  if (s.dropout.mask != nullptr) {
    ds = ops.tensor(p.ds_dropped);
    ops.pointwise("dS / (1 - p)", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                  {ds_unscaled, s.dropout.scale, nullptr}, ds);
  }
  if (p.dbias) {  // the gradient of the bias: dS before the attention scale, summed over batches
    ops.reduction("dBias", CUDNN_REDUCE_TENSOR_ADD, ds, ops.tensor(p.dbias));
  }
  if (in.scale != nullptr) {
    const backend::Tensor* unscaled = ds;
    ds = ops.tensor(p.ds);
    ops.pointwise("dS", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {unscaled, in.scale, nullptr}, ds);
  }
  return ds;
}

// dK = dS^T Q (per query head, then summed over each group).
void lower_dk(AttentionSteps& ops, const SdpaBackwardPorts& p, const BackwardOperands& in,
              const backend::Tensor* ds) {
  const backend::Tensor* ds_t = ops.tensor(p.ds_t);
  ops.reshape("dS^T", ds, ds_t);
  ops.gradient("dS^T Q", ds_t, in.q, p.dk_heads, ops.tensor(p.dk), {in.seq_kv, in.seq_q});
}

// dQ = dS K, K read back from K^T by a reshape.
Result<void> lower_dq(AttentionSteps& ops, const SdpaBackwardPorts& p, const BackwardOperands& in,
                      const backend::Tensor* ds) {
  auto kt_again = lower_transposed(*p.k, ops.tensor(p.k->ragged_offset()));
  if (!kt_again) {
    return std::unexpected(kt_again.error());
  }
  const backend::Tensor* k_view = ops.tensor(p.k_view);
  ops.reshape("K from K^T", &*kt_again, k_view);
  ops.keep(std::move(*kt_again));
  if (p.dq_accum) {
    const backend::Tensor* dq_accum = ops.tensor(p.dq_accum);
    ops.matmul("dS K", {ds, k_view, dq_accum}, {in.seq_q, nullptr, in.seq_kv});
    ops.pointwise("dQ", CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, {dq_accum, nullptr, nullptr},
                  ops.tensor(p.dq));
  } else {
    ops.matmul("dS K", {ds, k_view, ops.tensor(p.dq)}, {in.seq_q, nullptr, in.seq_kv});
  }
  return {};
}

}  // namespace

Result<std::vector<LoweredOperation>> SdpaBackwardNode::lower_all(
    const TensorTable& tensors, const GraphContext& /*context*/) const {
  const SdpaBackwardPorts& p = ports_;
  AttentionSteps ops(describe(), [&](const TensorAttributes& t) { return lowered(tensors, t); });
  const BackwardOperands in = look_up_operands(ops, p);
  // V^T: V's uid with its last two dims and strides swapped (K^T likewise, in scores()).
  auto vt = lower_transposed(*p.v, ops.tensor(p.v->ragged_offset()));
  if (!vt) {
    return std::unexpected(vt.error());
  }
  const DropoutOperands dropout =
      redraw_dropout_mask(ops, p.dropout, AttentionSettings::of(attributes_).keep());
  const backend::Tensor* d_sum = lower_d(ops, p, in);
  const backend::Tensor* probs = recompute_probabilities(ops, p, attributes_, in);
  lower_dv(ops, p, in, dropout, probs);
  const backend::Tensor* ds = lower_ds(ops, p, in, {dropout, probs, d_sum, std::move(*vt)});
  lower_dk(ops, p, in, ds);
  if (auto ok = lower_dq(ops, p, in, ds); !ok) {
    return std::unexpected(ok.error());
  }
  return std::move(ops).finish();
}

}  // namespace dnngraph::detail
