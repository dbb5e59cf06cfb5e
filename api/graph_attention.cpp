// dnngraph::Graph's attention builders: sdpa, sdpa_backward, sdpa_fp8, sdpa_fp8_backward and what
// they share (the optional inputs' checks, the dropout ports, the dropout mask and dBias of a
// node's output).
#include "api/graph.hpp"

#include "backend/features.hpp"
#include "detail/graph/graph_builder.hpp"
#include "detail/graph/node_naming.hpp"
#include "detail/nodes/sdpa.hpp"
#include "detail/nodes/sdpa_backward.hpp"
#include "detail/nodes/sdpa_fp8.hpp"
#include "detail/nodes/sdpa_fp8_backward.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>

namespace dnngraph {

using Builder = detail::GraphBuilder;

using detail::name_node;
using detail::node_scalar;

namespace {

// The by-value scalars the masks read, on the ports p of sdpa or sdpa_backward: -inf only with a
// mask (cuDNN 9.19 refuses a variant pack with a uid no operation reads:
// CUDNN_STATUS_BAD_PARAM_NULL_POINTER at execute, measured on the H200), and the sliding
// window's length (a Float, as cudnn-frontend gives it).
template <class Ports, class Scalar>
void add_mask_scalars(Ports& p, const detail::AttentionSettings& settings, const Scalar& scalar) {
  if (settings.padding || settings.causal) {
    p.neg_inf = scalar("neg_inf", -std::numeric_limits<float>::infinity());
  }
  if (settings.window) {
    p.window = scalar("sliding_window", static_cast<float>(*settings.window));
  }
}

// Sets each port of `named` (an FP8 node's named_inputs) to the tensor given for it, in order;
// returns them as the inputs check_inputs takes.
template <class Named, std::size_t N>
std::array<Builder::Input, N> take_inputs(
    const Named& named, const std::array<std::shared_ptr<TensorAttributes>, N>& given) {
  static_assert(std::tuple_size_v<Named> == N);
  std::array<Builder::Input, N> inputs{};
  for (std::size_t i = 0; i < N; ++i) {
    *named.at(i).second = given.at(i);
    inputs.at(i) = {named.at(i).first, given.at(i).get()};
  }
  return inputs;
}

}  // namespace

bool detail::GraphBuilder::check_attention_inputs(Graph& g, const std::string& node,
                                                  const detail::AttentionSettings& settings) {
  // Seed and offset are read only with dropout (a probability of 0 draws no mask).
  const bool dropout = settings.has_dropout();
  const std::array<Input, 6> optional{
      {{"seq_len_q", settings.seq_len_q.get()},
       {"seq_len_kv", settings.seq_len_kv.get()},
       {"bias", settings.bias.get()},
       {"ALiBi slopes", settings.alibi_slopes.get()},
       {"dropout seed", dropout ? settings.seed.get() : nullptr},
       {"dropout offset", dropout ? settings.offset.get() : nullptr}}};
  return std::ranges::all_of(optional, [&](const Input& input) {
    return input.second == nullptr || check_inputs(g, node, {input});
  });
}

detail::DropoutPorts detail::GraphBuilder::dropout_ports(
    Graph& g, const std::string& node_name, const detail::AttentionSettings& settings) {
  return detail::DropoutPorts::make(
      settings,
      [&](const char* what, float value) { return node_scalar(g, node_name, what, value); },
      [&](const char* port) { return add_output(g, node_name, port); },
      [&](const char* port) { return add_internal(g, node_name, port); });
}

template <class Fp8Node, class Ports, class Attributes>
void detail::GraphBuilder::add_fp8_attention(Graph& g, const std::string& node,
                                             std::span<const Input> inputs, Ports& p,
                                             Attributes attributes) {
  const auto settings = detail::AttentionSettings::of_scores(attributes);
  p.seq_len_q = settings.seq_len_q;
  p.seq_len_kv = settings.seq_len_kv;
  if (!check_inputs(g, node, inputs) || !check_attention_inputs(g, node, settings)) {
    return;
  }
  const std::string& name = attributes.name();
  p.make_internals(
      settings, [&](const char* what, float value) { return node_scalar(g, name, what, value); },
      [&](const char* port) { return add_internal(g, name, port); });
  g.nodes_.push_back(std::make_unique<Fp8Node>(std::move(attributes), p));
}

std::shared_ptr<TensorAttributes> Graph::dropout_mask(
    const std::shared_ptr<TensorAttributes>& output) const {
  for (const auto& node : nodes_) {
    if (std::ranges::find(node->outputs(), output) == node->outputs().end()) {
      continue;
    }
    if (const auto* sdpa = dynamic_cast<const detail::SdpaNode*>(node.get())) {
      return sdpa->dropout_mask_output();
    }
    if (const auto* backward = dynamic_cast<const detail::SdpaBackwardNode*>(node.get())) {
      return backward->dropout_mask_output();
    }
    return nullptr;
  }
  return nullptr;
}

std::vector<float> alibi_slopes(std::int64_t heads) {
  std::vector<float> slopes;
  if (heads < 1) {
    return slopes;
  }
  std::int64_t n = 1;  // the largest power of two <= heads
  while (n * 2 <= heads) {
    n *= 2;
  }
  const auto slope = [&](double exponent) {
    return static_cast<float>(std::exp2(exponent / static_cast<double>(n)));
  };
  for (std::int64_t h = 0; h < n; ++h) {
    slopes.push_back(slope(-8.0 * static_cast<double>(h + 1)));
  }
  for (std::int64_t k = 0; k < heads - n; ++k) {
    slopes.push_back(slope(-4.0 * static_cast<double>((2 * k) + 1)));
  }
  return slopes;
}

std::shared_ptr<TensorAttributes> Graph::dbias(
    const std::shared_ptr<TensorAttributes>& output) const {
  for (const auto& node : nodes_) {
    if (std::ranges::find(node->outputs(), output) != node->outputs().end()) {
      const auto* backward = dynamic_cast<const detail::SdpaBackwardNode*>(node.get());
      return backward != nullptr ? backward->dbias_output() : nullptr;
    }
  }
  return nullptr;
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::sdpa(
    const std::shared_ptr<TensorAttributes>& q, const std::shared_ptr<TensorAttributes>& k,
    const std::shared_ptr<TensorAttributes>& v, SdpaAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::Sdpa, nodes_.size());
  const std::string& name = attributes.name();
  const std::string node = std::string(detail::name_of(detail::NodeKind::Sdpa)) + " '" + name + "'";
  const auto settings = detail::AttentionSettings::of(attributes);
  const auto internal = [&](const char* port, bool wanted) {
    return wanted ? Builder::add_internal(*this, name, port) : nullptr;
  };
  detail::SdpaPorts p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.seq_len_q = attributes.seq_len_q();
  p.seq_len_kv = attributes.seq_len_kv();
  p.bias = attributes.bias();
  p.alibi_slopes = settings.alibi ? settings.alibi_slopes : nullptr;
  p.o = Builder::add_output(*this, name, "O");
  p.stats = attributes.generate_stats() ? Builder::add_output(*this, name, "Stats") : nullptr;
  if (!Builder::check_inputs(*this, node, {{"Q", q.get()}, {"K", k.get()}, {"V", v.get()}}) ||
      !Builder::check_attention_inputs(*this, node, settings) ||
      (attributes.paged_attention() &&
       !Builder::check_inputs(*this, node,
                              {{"page_table_k", attributes.page_table_k().get()},
                               {"page_table_v", attributes.page_table_v().get()}}))) {
    return {p.o, p.stats};
  }
  const auto scalar = [&](const char* what, float value) {
    return node_scalar(*this, name, what, value);
  };
  if (const auto scale = attributes.attn_scale()) {
    p.scale = scalar("attn_scale", *scale);
  }
  p.paged = detail::PagedCachePorts::make(
      attributes, [&](const char* port) { return Builder::add_internal(*this, name, port); });
  add_mask_scalars(p, settings, scalar);
  p.scores = internal("scores", true);
  p.scaled = internal("scaled", p.scale != nullptr);
  p.biased = internal("biased", p.bias != nullptr);
  p.masks = detail::AttentionMaskPorts::make(
      settings, [&](const char* port) { return Builder::add_internal(*this, name, port); });
  p.softmax = detail::SoftmaxPorts::make(p.stats != nullptr, [&](const char* port) {
    return Builder::add_internal(*this, name, port);
  });
  p.dropout = Builder::dropout_ports(*this, name, settings);
  p.kept = internal("dropout_kept", p.dropout.mask != nullptr);
  p.dropped = internal("dropped", p.dropout.mask != nullptr);
  nodes_.push_back(std::make_unique<detail::SdpaNode>(std::move(attributes), p));
  return {p.o, p.stats};
}

std::array<std::shared_ptr<TensorAttributes>, 4> Graph::sdpa_backward(
    const std::shared_ptr<TensorAttributes>& q, const std::shared_ptr<TensorAttributes>& k,
    const std::shared_ptr<TensorAttributes>& v, const std::shared_ptr<TensorAttributes>& o,
    const std::shared_ptr<TensorAttributes>& d_o, const std::shared_ptr<TensorAttributes>& stats,
    SdpaBackwardAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::SdpaBackward, nodes_.size());
  const std::string& name = attributes.name();
  const std::string node =
      std::string(detail::name_of(detail::NodeKind::SdpaBackward)) + " '" + name + "'";
  const auto settings = detail::AttentionSettings::of(attributes);
  const auto internal = [&](const char* port) { return Builder::add_internal(*this, name, port); };
  detail::SdpaBackwardPorts p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.d_o = d_o;
  p.stats = stats;
  p.seq_len_q = settings.seq_len_q;
  p.seq_len_kv = settings.seq_len_kv;
  p.bias = settings.bias;
  p.alibi_slopes = settings.alibi ? settings.alibi_slopes : nullptr;
  p.dq = Builder::add_output(*this, name, "dQ");
  p.dk = Builder::add_output(*this, name, "dK");
  p.dv = Builder::add_output(*this, name, "dV");
  p.d_sum = Builder::add_output(*this, name, "D");
  p.dbias = attributes.dbias_output() ? Builder::add_output(*this, name, "dBias") : nullptr;
  const std::array outputs{p.dq, p.dk, p.dv, p.d_sum};
  if (!Builder::check_inputs(*this, node,
                             {{"Q", q.get()},
                              {"K", k.get()},
                              {"V", v.get()},
                              {"O", o.get()},
                              {"dO", d_o.get()},
                              {"Stats", stats.get()}}) ||
      !Builder::check_attention_inputs(*this, node, settings)) {
    return outputs;
  }
  const auto scalar = [&](const char* what, float value) {
    return node_scalar(*this, name, what, value);
  };
  if (const auto scale = attributes.attn_scale()) {
    p.scale = scalar("attn_scale", *scale);
  }
  add_mask_scalars(p, settings, scalar);
  // D's factor: 1 - p, the keep probability (cudnn-frontend's Dropout_scale_inv), or 1.
  p.d_scale = settings.has_dropout() ? scalar("dropout_keep", static_cast<float>(settings.keep()))
                                     : scalar("one", 1.0F);
  p.do_o = internal("dO_O");
  p.do_o_sum = internal("dO_O_sum");
  p.scores = internal("scores");
  p.scaled = p.scale ? internal("scaled") : nullptr;
  p.biased = p.bias ? internal("biased") : nullptr;
  p.masks = detail::AttentionMaskPorts::make(settings, internal);
  p.centered = internal("centered");
  p.probs = internal("probs");
  p.dropout = Builder::dropout_ports(*this, name, settings);
  const bool dropout = p.dropout.mask != nullptr;
  p.probs_kept = dropout ? internal("probs_kept") : nullptr;
  p.probs_dropped = dropout ? internal("probs_dropped") : nullptr;
  p.probs_t = internal("probs_t");
  // Grouped-query attention: per-query-head gradients, summed over each group after. The head
  // counts are read here only to choose the tensors; infer() checks them.
  const auto heads = [](const std::shared_ptr<TensorAttributes>& t) {
    return t->dim().size() == 4 ? t->dim()[1] : 0;
  };
  p.dv_heads = heads(v) != heads(q) ? internal("dV_heads") : nullptr;
  p.dp = internal("dP");
  p.dp_kept = dropout ? internal("dP_kept") : nullptr;
  p.dp_centered = internal("dP_centered");
  p.ds_unscaled = internal("dS_unscaled");
  p.ds_dropped = dropout ? internal("dS_dropped") : nullptr;
  p.ds = p.scale ? internal("dS") : nullptr;
  p.ds_t = internal("dS_t");
  p.dk_heads = heads(k) != heads(q) ? internal("dK_heads") : nullptr;
  p.k_view = internal("K_view");
  // With dBias the engine writes dBias only when dS K writes dQ itself: given the accumulator it
  // accepts the graph and leaves dBias unwritten (measured on 9.19 and 9.28.1; cudnn-frontend
  // drops its accumulator for dBias too: "dBias is only supported on workspace implementation").
  if (backend::available(backend::Feature::SdpaBackwardAccumulator) && !attributes.dbias_output()) {
    p.dq_accum = internal("dQ_accum");
  }
  nodes_.push_back(std::make_unique<detail::SdpaBackwardNode>(std::move(attributes), p));
  return outputs;
}

std::array<std::shared_ptr<TensorAttributes>, 4> Graph::sdpa_fp8(
    const std::shared_ptr<TensorAttributes>& q, const std::shared_ptr<TensorAttributes>& k,
    const std::shared_ptr<TensorAttributes>& v, const std::shared_ptr<TensorAttributes>& descale_q,
    const std::shared_ptr<TensorAttributes>& descale_k,
    const std::shared_ptr<TensorAttributes>& descale_v,
    const std::shared_ptr<TensorAttributes>& descale_s,
    const std::shared_ptr<TensorAttributes>& scale_s,
    const std::shared_ptr<TensorAttributes>& scale_o, SdpaFp8Attributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::SdpaFp8, nodes_.size());
  const std::string& name = attributes.name();
  const std::string node =
      std::string(detail::name_of(detail::NodeKind::SdpaFp8)) + " '" + name + "'";
  detail::SdpaFp8Ports p;
  const auto inputs = take_inputs(
      detail::SdpaFp8Ports::named_inputs(p),
      std::array{q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s, scale_o});
  p.o = Builder::add_output(*this, name, "O");
  p.stats = attributes.generate_stats() ? Builder::add_output(*this, name, "Stats") : nullptr;
  p.amax_s = Builder::add_output(*this, name, "Amax_S");
  p.amax_o = Builder::add_output(*this, name, "Amax_O");
  const std::array outputs{p.o, p.stats, p.amax_s, p.amax_o};
  Builder::add_fp8_attention<detail::SdpaFp8Node>(*this, node, inputs, p, std::move(attributes));
  return outputs;
}

std::array<std::shared_ptr<TensorAttributes>, 7> Graph::sdpa_fp8_backward(
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
    const std::shared_ptr<TensorAttributes>& scale_dp, SdpaFp8BackwardAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::SdpaFp8Backward, nodes_.size());
  const std::string& name = attributes.name();
  const std::string node =
      std::string(detail::name_of(detail::NodeKind::SdpaFp8Backward)) + " '" + name + "'";
  detail::SdpaFp8BackwardPorts p;
  const auto inputs = take_inputs(
      detail::SdpaFp8BackwardPorts::named_inputs(p),
      std::array{q, k, v, o, d_o, stats, descale_q, descale_k, descale_v, descale_o, descale_do,
                 descale_s, descale_dp, scale_s, scale_dq, scale_dk, scale_dv, scale_dp});
  const auto output = [&](const char* port) { return Builder::add_output(*this, name, port); };
  p.dq = output("dQ");
  p.dk = output("dK");
  p.dv = output("dV");
  p.amax_dq = output("Amax_dQ");
  p.amax_dk = output("Amax_dK");
  p.amax_dv = output("Amax_dV");
  p.amax_dp = output("Amax_dP");
  const std::array outputs{p.dq, p.dk, p.dv, p.amax_dq, p.amax_dk, p.amax_dv, p.amax_dp};
  Builder::add_fp8_attention<detail::SdpaFp8BackwardNode>(*this, node, inputs, p,
                                                          std::move(attributes));
  return outputs;
}

}  // namespace dnngraph
