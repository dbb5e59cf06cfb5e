// Scaled dot-product attention node: checks, shape inference and the composite lowering.
#include "detail/nodes/sdpa.hpp"

#include "api/layout.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <utility>

namespace dnngraph::detail {

std::vector<TensorPtr> SdpaPorts::inputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {q, k, v, seq_len_q, seq_len_kv, scale, neg_inf, bias, alibi_slopes, window,
                        dropout.seed, dropout.offset, dropout.scale});
  paged.append_inputs(list);
  return list;
}

std::vector<TensorPtr> SdpaPorts::outputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {o, stats, dropout.output_mask()});
  return list;
}

std::vector<TensorPtr> SdpaPorts::internals() const {
  std::vector<TensorPtr> list;
  append_present(list, {scores, scaled, biased});
  masks.append_to(list);
  softmax.append_to(list);
  append_present(list, {dropout.internal_mask(), kept, dropped});
  paged.append_internals(list);
  return list;
}

void SdpaNode::settle_internals() {
  const auto& q = ports_.q->dim();
  const std::vector<std::int64_t> score_dims{q[0], q[1], q[2], ports_.keys()->dim()[2]};
  const auto settle = [](const TensorPtr& t, const std::vector<std::int64_t>& dims, DataType type) {
    if (t) {
      t->set_dim(dims).set_stride(packed_strides(dims)).set_data_type(type);
    }
  };
  for (const TensorPtr& t : {ports_.scores, ports_.scaled, ports_.biased, ports_.kept}) {
    settle(t, score_dims, DataType::Float);
  }
  ports_.masks.settle(score_dims);
  // The second matmul reads P (with dropout: P * mask / (1 - p)) in the io type (cuDNN's pattern:
  // its A operand is Q's type). check_attention_inputs() made sure Q has one (Half or BFloat16).
  const DataType io = ports_.q->data_type().value_or(DataType::Half);
  ports_.softmax.settle(score_dims, ports_.dropped ? DataType::Float : io);
  settle(ports_.dropped, score_dims, io);
}

Result<void> SdpaNode::infer(const GraphContext& context) {
  if (auto ok = check_known_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  // A paged cache first: the attention's checks read the caches gathered from its pages.
  if (auto ok = ports_.paged.check_and_settle(describe(), attributes_.padding_mask(), *ports_.q,
                                              *ports_.k, *ports_.v);
      !ok) {
    return ok;
  }
  if (auto ok = check_attention(describe(), attributes_.compute_data_type(),
                                AttentionSettings::of(attributes_), *ports_.q, *ports_.keys(),
                                *ports_.values());
      !ok) {
    return ok;
  }
  if (auto ok = settle_scalar_inputs(4); !ok) {
    return ok;
  }
  const auto& q = ports_.q->dim();
  if (!ports_.o->data_type()) {
    ports_.o->set_data_type(ports_.q->data_type().value_or(DataType::Half));  // checked: set
  }
  if (auto ok = settle_output(*ports_.o, {q[0], q[1], q[2], ports_.values()->dim()[3]}, context);
      !ok) {
    return ok;
  }
  if (ports_.o->data_type() != ports_.q->data_type() || ports_.o->stride()[3] != 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": O " + ports_.o->describe() + " has data type " +
                          type_name(*ports_.o) + " and strides " + to_string(ports_.o->stride()) +
                          "; O takes Q's type (" + type_name(*ports_.q) +
                          ") and an innermost head dim (stride 1)");
  }
  if (auto ok = check_ragged_needs_padding(
          describe(), attributes_.padding_mask(),
          {ports_.q.get(), ports_.k.get(), ports_.v.get(), ports_.o.get(), ports_.stats.get()});
      !ok) {
    return ok;
  }
  if (ports_.stats) {
    if (!ports_.stats->data_type()) {
      ports_.stats->set_data_type(DataType::Float);
    }
    if (ports_.stats->data_type() != DataType::Float) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": Stats " + ports_.stats->describe() + " has data type " +
                            type_name(*ports_.stats) + "; the statistics are Float");
    }
    if (auto ok = settle_output(*ports_.stats, {q[0], q[1], q[2], 1}, context); !ok) {
      return ok;
    }
  }
  const auto settle_mask = [&](TensorAttributes& mask, const std::vector<std::int64_t>& dims) {
    return settle_output(mask, dims, context);
  };
  if (auto ok = ports_.dropout.settle(describe(), {q[0], q[1], q[2], ports_.keys()->dim()[2]},
                                      settle_mask);
      !ok) {
    return ok;
  }
  settle_internals();
  return {};
}

bool SdpaNode::in_override_form() const {
  return ports_.q->is_ragged() && ports_.o->is_ragged() && attributes_.padding_mask() &&
         !ports_.paged.present() && !ports_.stats && !ports_.dropout.output_mask() &&
         attributes_.dropout_probability().value_or(0.0) == 0.0 &&
         attributes_.causal().value_or(DiagonalAlignment::TopLeft) == DiagonalAlignment::TopLeft;
}

Result<void> SdpaNode::check_override_form(std::span<const ShapedTensor> inputs) const {
  const auto find = [&](const TensorPtr& port) -> const ShapedTensor* {
    for (const ShapedTensor& in : inputs) {
      if (in.tensor == port.get()) {
        return &in;
      }
    }
    return nullptr;
  };
  const std::string form =
      " (known issue sdpa-override-shapes: cuDNN runs an override exact only in the ragged form, "
      "where Q's and O's sequence dim is the one that changes)";
  for (const TensorPtr& t : {ports_.k, ports_.v, ports_.seq_len_q, ports_.seq_len_kv}) {
    if (const ShapedTensor* in = find(t); in != nullptr && *in->dims != t->dim()) {
      return make_error(ErrorCode::ShapeMismatch, describe() + ": " + t->describe() +
                                                      " is overridden to " + to_string(*in->dims) +
                                                      ", built " + to_string(t->dim()) +
                                                      "; it keeps its build dims" + form);
    }
  }
  const ShapedTensor* q = find(ports_.q);
  if (q == nullptr) {
    return {};
  }
  const auto& built = ports_.q->dim();
  const auto& dims = *q->dims;
  for (const std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
    if (dims.size() == 4 && dims[i] != built[i]) {
      return make_error(ErrorCode::ShapeMismatch, describe() + ": Q " + ports_.q->describe() +
                                                      " is overridden to " + to_string(dims) +
                                                      ", built " + to_string(built) + ": dim " +
                                                      std::to_string(i) + " may not change" + form);
    }
  }
  if (q->strides != nullptr && q->strides->size() == 4) {
    for (std::size_t i = 1; i < 4; ++i) {
      if ((*q->strides)[i] != ports_.q->stride()[i]) {
        return make_error(ErrorCode::InvalidAttribute,
                          describe() + ": Q " + ports_.q->describe() + " has stride " +
                              std::to_string(i) + " " + std::to_string((*q->strides)[i]) +
                              " under the override, " + std::to_string(ports_.q->stride()[i]) +
                              " at build; the head, token and element strides stay" + form);
      }
    }
  }
  if (dims.size() == 4 && dims[2] < 2) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": Q " + ports_.q->describe() + " is overridden to s_q " +
                          std::to_string(dims[2]) +
                          "; one query token is not served through overrides (cuDNN 9.28 "
                          "answers NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE at execute): build a "
                          "graph with s_q 1 for decoding");
  }
  return {};
}

Result<std::vector<std::vector<std::int64_t>>> SdpaNode::all_output_dims(
    std::span<const ShapedTensor> inputs) const {
  if (ports_.paged.present()) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": K and V from a paged cache take no execute-time overrides (cuDNN "
                          "was not measured serving them; the containers and page tables are "
                          "not sequences): build a graph per shape, and give each batch's "
                          "lengths through seq_len_q / seq_len_kv");
  }
  if (in_override_form()) {
    if (auto ok = check_override_form(inputs); !ok) {
      return std::unexpected(ok.error());
    }
  }
  const auto dims_of = [&](const TensorPtr& port) -> const std::vector<std::int64_t>& {
    for (const ShapedTensor& in : inputs) {
      if (in.tensor == port.get()) {
        return *in.dims;
      }
    }
    return port->dim();
  };
  const auto& q = dims_of(ports_.q);
  const auto& k = dims_of(ports_.k);
  const auto& v = dims_of(ports_.v);
  const std::array<std::tuple<const char*, const TensorPtr*, const std::vector<std::int64_t>*>, 3>
      qkv{{{"Q", &ports_.q, &q}, {"K", &ports_.k, &k}, {"V", &ports_.v, &v}}};
  for (const auto& [port, tensor, dims] : qkv) {
    const auto& built = (*tensor)->dim();
    if (dims->size() != 4 || (*dims)[1] != built[1] || (*dims)[3] != built[3]) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": " + port + " " + (*tensor)->describe() + " " +
                            to_string(*dims) + " has other heads or head dim than at build " +
                            to_string(built) +
                            "; an override may change the batch and the sequence lengths only");
    }
    if ((*dims)[0] != q[0]) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": " + port + " " + (*tensor)->describe() + " has batch " +
                            std::to_string((*dims)[0]) + ", Q has " + std::to_string(q[0]));
    }
  }
  if (v[2] != k[2]) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": V " + ports_.v->describe() + " has length " +
                          std::to_string(v[2]) + ", K " + ports_.k->describe() + " has " +
                          std::to_string(k[2]) + "; they are one sequence of keys and values");
  }
  const std::vector<std::int64_t> lengths{q[0], 1, 1, 1};
  for (const TensorPtr& t : {ports_.seq_len_q, ports_.seq_len_kv}) {
    if (t && dims_of(t) != lengths) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": " + t->describe() + " is " + to_string(dims_of(t)) +
                            ", expected " + to_string(lengths) + " (one length per batch)");
    }
  }
  if (attributes_.causal() == DiagonalAlignment::BottomRight && !attributes_.padding_mask() &&
      q[2] != k[2]) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": a bottom-right causal mask without a padding mask is exact "
                          "only for s_q == s_kv; the overrides give s_q " +
                          std::to_string(q[2]) + " and s_kv " + std::to_string(k[2]));
  }
  const std::vector<std::int64_t> score_dims{q[0], q[1], q[2], k[2]};
  const std::vector<std::int64_t> row_dims{q[0], q[1], q[2], 1};
  std::vector<std::vector<std::int64_t>> all{{q[0], q[1], q[2], v[3]}};
  if (ports_.stats) {
    all.push_back(row_dims);
  }
  if (ports_.dropout.output_mask()) {
    all.push_back(score_dims);
  }
  for (const TensorPtr& t : internals()) {
    all.push_back(ports_.softmax.is_row(t.get()) ? row_dims : score_dims);
  }
  return all;
}

Result<LoweredOperation> SdpaNode::lower(const TensorTable& /*tensors*/,
                                         const GraphContext& /*context*/) const {
  return make_error(ErrorCode::InvalidState,
                    describe() + ": a composite node lowers through lower_all()");
}

Result<std::vector<LoweredOperation>> SdpaNode::lower_all(const TensorTable& tensors,
                                                          const GraphContext& /*context*/) const {
  const SdpaPorts& p = ports_;
  AttentionSteps ops(describe(), [&](const TensorAttributes& t) { return lowered(tensors, t); });
  const backend::Tensor* q = ops.tensor(p.q);
  const backend::Tensor* v = ops.tensor(p.values());
  const backend::Tensor* seq_q = ops.tensor(p.seq_len_q);
  const backend::Tensor* seq_kv = ops.tensor(p.seq_len_kv);
  const backend::Tensor* neg_inf = ops.tensor(p.neg_inf);
  std::optional<AttentionSteps::Pages> k_pages;
  if (p.paged.present()) {
    k_pages = AttentionSteps::Pages{ops.tensor(p.k), ops.tensor(p.paged.page_table_k)};
  }
  AttentionSteps::Scores scores = ops.scores_of(p, *p.keys(), q, attributes_.padding_mask());
  scores.k_pages = k_pages;
  scores.bias = ops.tensor(p.bias);
  scores.biased = p.biased;
  scores.alibi_slopes = ops.tensor(p.alibi_slopes);
  scores.alibi_ports = &p.masks;
  const backend::Tensor* current = ops.scores(scores);
  if (const auto causal = attributes_.causal()) {
    current = ops.causal_mask(p.masks, *causal, current, seq_q, seq_kv, neg_inf);
  }
  if (p.window) {  // the left bound after the right one, as cudnn-frontend orders them
    current = ops.sliding_window(p.masks, current, ops.tensor(p.window), neg_inf);
  }
  const backend::Tensor* o = ops.tensor(p.o);
  const backend::Tensor* probs =
      ops.softmax(p.softmax, current, p.stats ? p.stats : p.softmax.unused_stats);
  // Dropout after the softmax (Stats are the undropped log-sum-exp) and before P V, as
  // cudnn-frontend 1.32's composite node places it: P * mask * (1 / (1 - p)).
  const backend::Tensor* p_for_v = probs;
  if (p.dropout.mask) {
    const backend::Tensor* mask = ops.tensor(p.dropout.mask);
    const backend::Tensor* kept = ops.tensor(p.kept);
    p_for_v = ops.tensor(p.dropped);
    ops.rng("dropout mask", AttentionSettings::of(attributes_).keep(), ops.tensor(p.dropout.seed),
            ops.tensor(p.dropout.offset), mask);
    ops.pointwise("P * mask", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {probs, mask, nullptr}, kept);
    ops.pointwise("P * mask / (1 - p)", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                  {kept, ops.tensor(p.dropout.scale), nullptr}, p_for_v);
  }
  if (p.paged.present()) {  // where cudnn-frontend 1.32 gathers V: right before P V
    ops.paged_cache_load("V from pages", ops.tensor(p.v), ops.tensor(p.paged.page_table_v), seq_kv,
                         v);
  }
  ops.matmul("P V", {p_for_v, v, o}, {seq_q, nullptr, seq_kv});
  return std::move(ops).finish();
}

}  // namespace dnngraph::detail
