// dnngraph::Graph, the describing part: graph settings and the functions that add tensors and
// nodes. Validation is in graph_validate.cpp, build and the calls a built plan answers in
// graph_build.cpp.
#include "api/graph.hpp"

#include "backend/features.hpp"
#include "detail/graph/built_graph.hpp"
#include "detail/nodes/bn_finalize.hpp"
#include "detail/nodes/concatenate.hpp"
#include "detail/nodes/conv_dgrad.hpp"
#include "detail/nodes/conv_fprop.hpp"
#include "detail/nodes/conv_wgrad.hpp"
#include "detail/nodes/dbn_weight.hpp"
#include "detail/nodes/gen_stats.hpp"
#include "detail/nodes/matmul.hpp"
#include "detail/nodes/norm.hpp"
#include "detail/nodes/norm_backward.hpp"
#include "detail/nodes/pointwise.hpp"
#include "detail/nodes/reduction.hpp"
#include "detail/nodes/resample.hpp"
#include "detail/nodes/resample_backward.hpp"
#include "detail/nodes/reshape.hpp"
#include "detail/nodes/rng.hpp"
#include "detail/nodes/sdpa.hpp"
#include "detail/nodes/sdpa_backward.hpp"
#include "detail/nodes/slice.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <tuple>
#include <utility>

namespace dnngraph {
Graph::Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::~Graph() = default;

Graph& Graph::set_name(std::string name) {
  name_ = std::move(name);
  return *this;
}
Graph& Graph::set_io_data_type(DataType type) {
  io_type_ = type;
  invalidate();
  return *this;
}
Graph& Graph::set_intermediate_data_type(DataType type) {
  intermediate_type_ = type;
  invalidate();
  return *this;
}
Graph& Graph::set_compute_data_type(DataType type) {
  compute_type_ = type;
  invalidate();
  return *this;
}
Graph& Graph::set_dynamic_shape_enabled(bool enabled) {
  dynamic_shape_ = enabled;
  invalidate();
  return *this;
}

Graph& Graph::set_kernel_cache(std::shared_ptr<KernelCache> cache) {
  kernel_cache_ = std::move(cache);
  invalidate();
  return *this;
}
Graph& Graph::set_override_shape_enabled(bool enabled) {
  override_shape_ = enabled;
  invalidate();
  return *this;
}
Graph& Graph::set_cache_first_plan_choice(bool enabled) {
  cache_first_ = enabled;
  invalidate();
  return *this;
}

void Graph::invalidate() noexcept {
  built_.reset();
  validated_revisions_.reset();
}

void Graph::record(Error error) {
  if (!deferred_error_) {
    deferred_error_ = std::move(error);
  }
}

std::shared_ptr<TensorAttributes> Graph::tensor(const TensorAttributes& attributes) {
  invalidate();
  auto t = std::make_shared<TensorAttributes>(attributes);
  t->label_ = "tensor #" + std::to_string(tensors_.size()) + " of the graph";
  t->label_from_node_ = false;
  owned_.insert(t.get());
  tensors_.push_back(t);
  return t;
}

std::shared_ptr<TensorAttributes> Graph::tensor(float value) {
  return tensor(TensorAttributes()
                    .set_name("scalar " + std::to_string(value))
                    .set_value(value)
                    .set_data_type(DataType::Float));
}

std::shared_ptr<TensorAttributes> Graph::int64_scalar(std::int64_t value) {
  return tensor(TensorAttributes()
                    .set_name("scalar " + std::to_string(value))
                    .set_int_value(value)
                    .set_data_type(DataType::Int64));
}

std::shared_ptr<TensorAttributes> Graph::add_output(const std::string& node_name,
                                                    const char* port) {
  auto t = std::make_shared<TensorAttributes>();
  t->set_name(node_name + "::" + port).set_is_virtual(true);
  t->label_ = "output " + std::string(port) + " of node #" + std::to_string(nodes_.size()) + " ('" +
              node_name + "')";
  t->label_from_node_ = true;
  owned_.insert(t.get());
  tensors_.push_back(t);
  return t;
}

std::shared_ptr<TensorAttributes> Graph::add_internal(const std::string& node_name,
                                                      const char* port) {
  auto t = add_output(node_name, port);
  t->label_ = "internal " + std::string(port) + " of node #" + std::to_string(nodes_.size()) +
              " ('" + node_name + "')";
  return t;
}

bool Graph::check_inputs(std::string_view node, std::initializer_list<Input> inputs) {
  return check_inputs(node, std::span<const Input>(inputs.begin(), inputs.size()));
}

bool Graph::check_inputs(std::string_view node, std::span<const Input> inputs) {
  for (const auto& [port, t] : inputs) {
    if (t == nullptr) {
      record(Error{ErrorCode::ForeignTensor, std::string(node) + ": input " + port + " is null"});
      return false;
    }
    if (!owned_.contains(t)) {
      record(Error{ErrorCode::ForeignTensor,
                   std::string(node) + ": input " + port + " " + t->describe() +
                       " does not belong to this graph; create it with this graph's tensor() "
                       "or take it from one of this graph's nodes"});
      return false;
    }
  }
  for (const auto& [port, t] : inputs) {
    if (!t->label_from_node_) {
      t->label_ = "input " + std::string(port) + " of node #" + std::to_string(nodes_.size()) +
                  " (" + std::string(node) + ")";
      t->label_from_node_ = true;
    }
  }
  return true;
}

namespace {

// An unnamed node is called after its kind and position: "matmul_3".
template <class Attributes>
void name_node(Attributes& attributes, detail::NodeKind kind, std::size_t index) {
  if (attributes.name().empty()) {
    attributes.set_name(std::string(detail::name_of(kind)) + "_" + std::to_string(index));
  }
}

// A composite node's by-value Float scalar "<node>::<what>": a graph input the variant pack
// carries like any other.
std::shared_ptr<TensorAttributes> node_scalar(Graph& g, const std::string& node, const char* what,
                                              float value) {
  return g.tensor(TensorAttributes()
                      .set_name(node + "::" + what)
                      .set_value(value)
                      .set_data_type(DataType::Float));
}

}  // namespace

std::shared_ptr<TensorAttributes> Graph::add_node(detail::NodeKind kind, const std::string& name,
                                                  std::initializer_list<Input> inputs,
                                                  const char* output, const NodeFactory& make) {
  return add_node(kind, name, std::span<const Input>(inputs.begin(), inputs.size()), output, make);
}

std::shared_ptr<TensorAttributes> Graph::add_node(detail::NodeKind kind, const std::string& name,
                                                  std::span<const Input> inputs, const char* output,
                                                  const NodeFactory& make) {
  invalidate();
  auto out = add_output(name, output);
  if (check_inputs(std::string(detail::name_of(kind)) + " '" + name + "'", inputs)) {
    nodes_.push_back(make(out));
  }
  return out;
}

std::shared_ptr<TensorAttributes> Graph::matmul(const std::shared_ptr<TensorAttributes>& a,
                                                const std::shared_ptr<TensorAttributes>& b,
                                                MatmulAttributes attributes) {
  name_node(attributes, detail::NodeKind::Matmul, nodes_.size());
  return add_node(detail::NodeKind::Matmul, attributes.name(), {{"A", a.get()}, {"B", b.get()}},
                  "C", [&](const detail::TensorPtr& c) {
                    return std::make_unique<detail::MatmulNode>(std::move(attributes), a, b, c);
                  });
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   PointwiseAttributes attributes) {
  name_node(attributes, detail::NodeKind::Pointwise, nodes_.size());
  return add_node(detail::NodeKind::Pointwise, attributes.name(), {{"X", x.get()}}, "Y",
                  [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::PointwiseNode>(std::move(attributes),
                                                                   std::vector{x}, y);
                  });
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   const std::shared_ptr<TensorAttributes>& b,
                                                   PointwiseAttributes attributes) {
  name_node(attributes, detail::NodeKind::Pointwise, nodes_.size());
  return add_node(detail::NodeKind::Pointwise, attributes.name(), {{"X", x.get()}, {"B", b.get()}},
                  "Y", [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::PointwiseNode>(std::move(attributes),
                                                                   std::vector{x, b}, y);
                  });
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   const std::shared_ptr<TensorAttributes>& b,
                                                   const std::shared_ptr<TensorAttributes>& t,
                                                   PointwiseAttributes attributes) {
  name_node(attributes, detail::NodeKind::Pointwise, nodes_.size());
  return add_node(detail::NodeKind::Pointwise, attributes.name(),
                  {{"X", x.get()}, {"B", b.get()}, {"T", t.get()}}, "Y",
                  [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::PointwiseNode>(std::move(attributes),
                                                                   std::vector{x, b, t}, y);
                  });
}

std::shared_ptr<TensorAttributes> Graph::conv_fprop(const std::shared_ptr<TensorAttributes>& x,
                                                    const std::shared_ptr<TensorAttributes>& w,
                                                    ConvFpropAttributes attributes) {
  name_node(attributes, detail::NodeKind::ConvFprop, nodes_.size());
  return add_node(detail::NodeKind::ConvFprop, attributes.name(), {{"X", x.get()}, {"W", w.get()}},
                  "Y", [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::ConvFpropNode>(std::move(attributes), x, w, y);
                  });
}

std::shared_ptr<TensorAttributes> Graph::conv_dgrad(const std::shared_ptr<TensorAttributes>& dy,
                                                    const std::shared_ptr<TensorAttributes>& w,
                                                    ConvDgradAttributes attributes) {
  name_node(attributes, detail::NodeKind::ConvDgrad, nodes_.size());
  return add_node(detail::NodeKind::ConvDgrad, attributes.name(),
                  {{"dY", dy.get()}, {"W", w.get()}}, "dX", [&](const detail::TensorPtr& dx) {
                    return std::make_unique<detail::ConvDgradNode>(std::move(attributes), dy, w,
                                                                   dx);
                  });
}

std::shared_ptr<TensorAttributes> Graph::conv_wgrad(const std::shared_ptr<TensorAttributes>& x,
                                                    const std::shared_ptr<TensorAttributes>& dy,
                                                    ConvWgradAttributes attributes) {
  name_node(attributes, detail::NodeKind::ConvWgrad, nodes_.size());
  return add_node(detail::NodeKind::ConvWgrad, attributes.name(),
                  {{"X", x.get()}, {"dY", dy.get()}}, "dW", [&](const detail::TensorPtr& dw) {
                    return std::make_unique<detail::ConvWgradNode>(std::move(attributes), x, dy,
                                                                   dw);
                  });
}

std::shared_ptr<TensorAttributes> Graph::reduction(const std::shared_ptr<TensorAttributes>& x,
                                                   ReductionAttributes attributes) {
  name_node(attributes, detail::NodeKind::Reduction, nodes_.size());
  return add_node(detail::NodeKind::Reduction, attributes.name(), {{"X", x.get()}}, "Y",
                  [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::ReductionNode>(std::move(attributes), x, y);
                  });
}

std::shared_ptr<TensorAttributes> Graph::rng(const std::shared_ptr<TensorAttributes>& seed,
                                             const std::shared_ptr<TensorAttributes>& offset,
                                             RngAttributes attributes) {
  name_node(attributes, detail::NodeKind::Rng, nodes_.size());
  return add_node(
      detail::NodeKind::Rng, attributes.name(), {{"seed", seed.get()}, {"offset", offset.get()}},
      "Y", [&](const detail::TensorPtr& y) {
        return std::make_unique<detail::RngNode>(std::move(attributes), seed, offset, y);
      });
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::genstats(
    const std::shared_ptr<TensorAttributes>& x, GenstatsAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::GenStats, nodes_.size());
  const std::string& name = attributes.name();
  auto sum = add_output(name, "sum");
  auto sq_sum = add_output(name, "sq_sum");
  if (check_inputs(std::string(detail::name_of(detail::NodeKind::GenStats)) + " '" + name + "'",
                   {{"X", x.get()}})) {
    nodes_.push_back(std::make_unique<detail::GenStatsNode>(std::move(attributes), x, sum, sq_sum));
  }
  return {sum, sq_sum};
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::resample(
    const std::shared_ptr<TensorAttributes>& x, ResampleAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::Resample, nodes_.size());
  const std::string& name = attributes.name();
  auto y = add_output(name, "Y");
  // Index exists when asked for, whatever the mode: infer() refuses it for average pooling.
  auto index = attributes.generate_index() ? add_output(name, "Index") : nullptr;
  if (check_inputs(std::string(detail::name_of(detail::NodeKind::Resample)) + " '" + name + "'",
                   {{"X", x.get()}})) {
    nodes_.push_back(std::make_unique<detail::ResampleNode>(attributes, x, y, index));
  }
  return {y, index};
}

std::shared_ptr<TensorAttributes> Graph::resample_backward(
    const std::shared_ptr<TensorAttributes>& dy, ResampleBackwardAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::ResampleBackward, nodes_.size());
  const std::string& name = attributes.name();
  detail::ResampleBackwardPorts p{.dy = dy,
                                  .x = attributes.x(),
                                  .y = attributes.y(),
                                  .index = attributes.index(),
                                  .dx = add_output(name, "dX")};
  const std::string node =
      std::string(detail::name_of(detail::NodeKind::ResampleBackward)) + " '" + name + "'";
  const auto given = [&](const char* port, const std::shared_ptr<TensorAttributes>& t) {
    return !t || check_inputs(node, {{port, t.get()}});
  };
  if (check_inputs(node, {{"dY", dy.get()}}) && given("X", p.x) && given("Y", p.y) &&
      given("Index", p.index)) {
    nodes_.push_back(std::make_unique<detail::ResampleBackwardNode>(attributes, p));
  }
  return p.dx;
}

std::array<std::shared_ptr<TensorAttributes>, 6> Graph::bn_finalize(
    const std::shared_ptr<TensorAttributes>& sum, const std::shared_ptr<TensorAttributes>& sq_sum,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& bias,
    const BnFinalizeAttributes& attributes) {
  invalidate();
  BnFinalizeAttributes named = attributes;
  name_node(named, detail::NodeKind::BnFinalize, nodes_.size());
  const std::string& name = named.name();
  const detail::BnFinalizePorts p{.sum = sum,
                                  .sq_sum = sq_sum,
                                  .scale = scale,
                                  .bias = bias,
                                  .epsilon = named.epsilon(),
                                  .accumulation_count = named.accumulation_count(),
                                  .prev_running_mean = named.prev_running_mean(),
                                  .prev_running_var = named.prev_running_var(),
                                  .momentum = named.momentum(),
                                  .eq_scale = add_output(name, "eq_scale"),
                                  .eq_bias = add_output(name, "eq_bias"),
                                  .mean = add_output(name, "mean"),
                                  .inv_variance = add_output(name, "inv_variance"),
                                  .next_running_mean = add_output(name, "next_running_mean"),
                                  .next_running_var = add_output(name, "next_running_var")};
  if (check_inputs(std::string(detail::name_of(detail::NodeKind::BnFinalize)) + " '" + name + "'",
                   {{"sum", sum.get()},
                    {"sq_sum", sq_sum.get()},
                    {"scale", scale.get()},
                    {"bias", bias.get()},
                    {"epsilon", p.epsilon.get()},
                    {"accumulation count", p.accumulation_count.get()},
                    {"previous running mean", p.prev_running_mean.get()},
                    {"previous running variance", p.prev_running_var.get()},
                    {"momentum", p.momentum.get()}})) {
    nodes_.push_back(std::make_unique<detail::BnFinalizeNode>(named, p));
  }
  return {p.eq_scale, p.eq_bias, p.mean, p.inv_variance, p.next_running_mean, p.next_running_var};
}

std::array<std::shared_ptr<TensorAttributes>, 5> Graph::dbn_weight(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance,
    const std::shared_ptr<TensorAttributes>& scale, DbnWeightAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::DbnWeight, nodes_.size());
  const std::string& name = attributes.name();
  const detail::DbnWeightPorts p{.dy = dy,
                                 .x = x,
                                 .mean = mean,
                                 .inv_variance = inv_variance,
                                 .scale = scale,
                                 .dscale = add_output(name, "dScale"),
                                 .dbias = add_output(name, "dBias"),
                                 .eq_scale_dy = add_output(name, "eq_scale_dy"),
                                 .eq_scale_x = add_output(name, "eq_scale_x"),
                                 .eq_bias = add_output(name, "eq_bias")};
  if (check_inputs(std::string(detail::name_of(detail::NodeKind::DbnWeight)) + " '" + name + "'",
                   {{"dY", dy.get()},
                    {"X", x.get()},
                    {"mean", mean.get()},
                    {"inv_variance", inv_variance.get()},
                    {"scale", scale.get()}})) {
    nodes_.push_back(std::make_unique<detail::DbnWeightNode>(attributes, p));
  }
  return {p.dscale, p.dbias, p.eq_scale_dy, p.eq_scale_x, p.eq_bias};
}

std::shared_ptr<TensorAttributes> Graph::reshape(const std::shared_ptr<TensorAttributes>& x,
                                                 ReshapeAttributes attributes) {
  name_node(attributes, detail::NodeKind::Reshape, nodes_.size());
  return add_node(detail::NodeKind::Reshape, attributes.name(), {{"X", x.get()}}, "Y",
                  [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::ReshapeNode>(std::move(attributes), x, y);
                  });
}

std::shared_ptr<TensorAttributes> Graph::concatenate(
    const std::vector<std::shared_ptr<TensorAttributes>>& inputs,
    ConcatenateAttributes attributes) {
  name_node(attributes, detail::NodeKind::Concatenate, nodes_.size());
  std::vector<std::string> ports;  // "0", "1", ...: each Input's port points into one
  ports.reserve(inputs.size());
  std::vector<Input> named;
  named.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ports.push_back(std::to_string(i));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    named.emplace_back(ports[i].c_str(), inputs[i].get());
  }
  if (inputs.empty()) {  // no node: the output is returned, the mistake surfaces at validate()
    invalidate();
    record(Error{ErrorCode::InvalidAttribute,
                 std::string(detail::name_of(detail::NodeKind::Concatenate)) + " '" +
                     attributes.name() + "': no inputs; give one tensor or more to concatenate"});
    return add_output(attributes.name(), "Y");
  }
  return add_node(detail::NodeKind::Concatenate, attributes.name(), named, "Y",
                  [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::ConcatenateNode>(std::move(attributes), inputs,
                                                                     y);
                  });
}

std::shared_ptr<TensorAttributes> Graph::slice(const std::shared_ptr<TensorAttributes>& x,
                                               SliceAttributes attributes) {
  name_node(attributes, detail::NodeKind::Slice, nodes_.size());
  return add_node(detail::NodeKind::Slice, attributes.name(), {{"X", x.get()}}, "Y",
                  [&](const detail::TensorPtr& y) {
                    return std::make_unique<detail::SliceNode>(std::move(attributes), x, y);
                  });
}

bool Graph::check_attention_inputs(const std::string& node,
                                   const detail::AttentionSettings& settings) {
  // Seed and offset are read only with dropout (a probability of 0 draws no mask).
  const bool dropout = settings.has_dropout();
  const std::array<Input, 4> optional{
      {{"seq_len_q", settings.seq_len_q.get()},
       {"seq_len_kv", settings.seq_len_kv.get()},
       {"dropout seed", dropout ? settings.seed.get() : nullptr},
       {"dropout offset", dropout ? settings.offset.get() : nullptr}}};
  return std::ranges::all_of(optional, [&](const Input& input) {
    return input.second == nullptr || check_inputs(node, {input});
  });
}

detail::DropoutPorts Graph::dropout_ports(const std::string& node_name,
                                          const detail::AttentionSettings& settings) {
  return detail::DropoutPorts::make(
      settings,
      [&](const char* what, float value) { return node_scalar(*this, node_name, what, value); },
      [&](const char* port) { return add_output(node_name, port); },
      [&](const char* port) { return add_internal(node_name, port); });
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

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::sdpa(
    const std::shared_ptr<TensorAttributes>& q, const std::shared_ptr<TensorAttributes>& k,
    const std::shared_ptr<TensorAttributes>& v, SdpaAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::Sdpa, nodes_.size());
  const std::string& name = attributes.name();
  const std::string node = std::string(detail::name_of(detail::NodeKind::Sdpa)) + " '" + name + "'";
  const auto settings = detail::AttentionSettings::of(attributes);
  const auto internal = [&](const char* port, bool wanted) {
    return wanted ? add_internal(name, port) : nullptr;
  };
  detail::SdpaPorts p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.seq_len_q = attributes.seq_len_q();
  p.seq_len_kv = attributes.seq_len_kv();
  p.o = add_output(name, "O");
  p.stats = attributes.generate_stats() ? add_output(name, "Stats") : nullptr;
  if (!check_inputs(node, {{"Q", q.get()}, {"K", k.get()}, {"V", v.get()}}) ||
      !check_attention_inputs(node, settings) ||
      (attributes.paged_attention() &&
       !check_inputs(node, {{"page_table_k", attributes.page_table_k().get()},
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
      attributes, [&](const char* port) { return add_internal(name, port); });
  // Only with a mask: cuDNN 9.19 refuses a variant pack with a uid no operation reads
  // (CUDNN_STATUS_BAD_PARAM_NULL_POINTER at execute, measured on the H200).
  if (settings.padding || settings.causal) {
    p.neg_inf = scalar("neg_inf", -std::numeric_limits<float>::infinity());
  }
  p.scores = internal("scores", true);
  p.scaled = internal("scaled", p.scale != nullptr);
  p.masks = detail::AttentionMaskPorts::make(
      settings, [&](const char* port) { return add_internal(name, port); });
  p.row_max = internal("row_max", true);
  p.centered = internal("centered", true);
  p.exps = internal("exps", true);
  p.row_sum = internal("row_sum", true);
  p.log_sum = internal("log_sum", true);
  p.unused_stats = internal("unused_stats", p.stats == nullptr);
  p.probs = internal("probs", true);
  p.dropout = dropout_ports(name, settings);
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
  const auto internal = [&](const char* port) { return add_internal(name, port); };
  detail::SdpaBackwardPorts p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.d_o = d_o;
  p.stats = stats;
  p.seq_len_q = settings.seq_len_q;
  p.seq_len_kv = settings.seq_len_kv;
  p.dq = add_output(name, "dQ");
  p.dk = add_output(name, "dK");
  p.dv = add_output(name, "dV");
  p.d_sum = add_output(name, "D");
  const std::array outputs{p.dq, p.dk, p.dv, p.d_sum};
  if (!check_inputs(node, {{"Q", q.get()},
                           {"K", k.get()},
                           {"V", v.get()},
                           {"O", o.get()},
                           {"dO", d_o.get()},
                           {"Stats", stats.get()}}) ||
      !check_attention_inputs(node, settings)) {
    return outputs;
  }
  const auto scalar = [&](const char* what, float value) {
    return node_scalar(*this, name, what, value);
  };
  if (const auto scale = attributes.attn_scale()) {
    p.scale = scalar("attn_scale", *scale);
  }
  if (settings.padding || settings.causal) {  // as in sdpa(): only where an operation reads it
    p.neg_inf = scalar("neg_inf", -std::numeric_limits<float>::infinity());
  }
  // D's factor: 1 - p, the keep probability (cudnn-frontend's Dropout_scale_inv), or 1.
  p.d_scale = settings.has_dropout() ? scalar("dropout_keep", static_cast<float>(settings.keep()))
                                     : scalar("one", 1.0F);
  p.do_o = internal("dO_O");
  p.do_o_sum = internal("dO_O_sum");
  p.scores = internal("scores");
  p.scaled = p.scale ? internal("scaled") : nullptr;
  p.masks = detail::AttentionMaskPorts::make(settings, internal);
  p.centered = internal("centered");
  p.probs = internal("probs");
  p.dropout = dropout_ports(name, settings);
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
  if (backend::available(backend::Feature::SdpaBackwardAccumulator)) {
    p.dq_accum = internal("dQ_accum");
  }
  nodes_.push_back(std::make_unique<detail::SdpaBackwardNode>(std::move(attributes), p));
  return outputs;
}

namespace {

// A norm node's name: the attributes' or "<kind>_<index>".
std::string norm_name(const std::string& given, detail::NodeKind kind, std::size_t index) {
  return given.empty() ? std::string(detail::name_of(kind)) + "_" + std::to_string(index) : given;
}

// The ports of a norm backward node before it has outputs (add_norm_backward makes them).
detail::NormBackwardPorts backward_inputs(const std::shared_ptr<TensorAttributes>& dy,
                                          const std::shared_ptr<TensorAttributes>& x,
                                          const std::shared_ptr<TensorAttributes>& scale,
                                          const std::shared_ptr<TensorAttributes>& mean,
                                          const std::shared_ptr<TensorAttributes>& inv_variance) {
  return {.dy = dy,
          .x = x,
          .scale = scale,
          .mean = mean,
          .inv_variance = inv_variance,
          .dx = nullptr,
          .dscale = nullptr,
          .dbias = nullptr};
}

}  // namespace

detail::NormPorts Graph::add_norm(const NormRequest& r) {
  invalidate();
  const std::string node =
      std::string(detail::name_of(detail::norm_node_kind(r.kind, false))) + " '" + r.name + "'";
  const bool training = r.phase == NormFwdPhase::Training;
  const bool running = r.momentum || r.prev_running_mean || r.prev_running_var;
  detail::NormPorts ports{
      .x = r.x,
      .scale = r.scale,
      .bias = r.bias,
      .epsilon = r.epsilon,
      .momentum = r.momentum,
      .prev_running_mean = r.prev_running_mean,
      .prev_running_var = r.prev_running_var,
      .y = add_output(r.name, "Y"),
      .mean_out =
          training && r.kind != detail::NormKind::Rms ? add_output(r.name, "mean") : nullptr,
      .inv_variance_out = training ? add_output(r.name, "inv_variance") : nullptr,
      .next_running_mean = running ? add_output(r.name, "next_running_mean") : nullptr,
      .next_running_var = running ? add_output(r.name, "next_running_var") : nullptr};
  if (!r.phase) {
    record(Error{ErrorCode::InvalidAttribute,
                 node + ": no forward phase; set_forward_phase(NormFwdPhase::Inference or "
                        "NormFwdPhase::Training)"});
  } else if (!r.epsilon) {
    record(Error{ErrorCode::InvalidAttribute,
                 node + ": no epsilon; set_epsilon(graph.tensor(1e-5F)) for example"});
  } else if (check_inputs(
                 node,
                 {{"X", r.x.get()}, {"scale", r.scale.get()}, {"epsilon", r.epsilon.get()}}) &&
             // rmsnorm's bias is optional; layernorm's is not (check_inputs refuses a null one)
             ((!r.bias && r.kind == detail::NormKind::Rms) ||
              check_inputs(node, {{"bias", r.bias.get()}})) &&
             // batchnorm's running statistics: all three or none
             (!running ||
              check_inputs(node, {{"previous running mean", r.prev_running_mean.get()},
                                  {"previous running variance", r.prev_running_var.get()},
                                  {"momentum", r.momentum.get()}}))) {
    nodes_.push_back(std::make_unique<detail::NormForwardNode>(
        detail::NormSettings{r.kind, r.name, *r.phase, r.compute}, ports));
  }
  return ports;
}

template <class Attributes>
std::array<std::shared_ptr<TensorAttributes>, 3> Graph::add_mean_norm(
    detail::NormKind kind, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& bias,
    const Attributes& attributes) {
  const detail::NormPorts ports = add_norm(
      {.kind = kind,
       .name = norm_name(attributes.name(), detail::norm_node_kind(kind, false), nodes_.size()),
       .phase = attributes.forward_phase(),
       .epsilon = attributes.epsilon(),
       .compute = attributes.compute_data_type(),
       .x = x,
       .scale = scale,
       .bias = bias,
       .momentum = nullptr,
       .prev_running_mean = nullptr,
       .prev_running_var = nullptr});
  return {ports.y, ports.mean_out, ports.inv_variance_out};
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::layernorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const LayernormAttributes& attributes) {
  return add_mean_norm(detail::NormKind::Layer, x, scale, bias, attributes);
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::rmsnorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const RmsnormAttributes& attributes) {
  const std::string name = norm_name(attributes.name(), detail::NodeKind::RmsNorm, nodes_.size());
  const detail::NormPorts ports = add_norm({detail::NormKind::Rms, name, attributes.forward_phase(),
                                            attributes.epsilon(), attributes.compute_data_type(), x,
                                            scale, attributes.bias(), nullptr, nullptr, nullptr});
  return {ports.y, ports.inv_variance_out};
}

detail::NormBackwardPorts Graph::add_norm_backward(detail::NormKind kind,
                                                   NormBackwardAttributes attributes,
                                                   detail::NormBackwardPorts p) {
  invalidate();
  const auto node_kind = detail::norm_node_kind(kind, true);
  name_node(attributes, node_kind, nodes_.size());
  const std::string& name = attributes.name();
  p.dx = add_output(name, "dX");
  p.dscale = add_output(name, "dScale");
  p.dbias = kind != detail::NormKind::Rms ? add_output(name, "dBias") : nullptr;
  const std::string node = std::string(detail::name_of(node_kind)) + " '" + name + "'";
  if (!check_inputs(node, {{"dY", p.dy.get()},
                           {"X", p.x.get()},
                           {"scale", p.scale.get()},
                           {"inv_variance", p.inv_variance.get()}}) ||
      (kind != detail::NormKind::Rms && !check_inputs(node, {{"mean", p.mean.get()}}))) {
    return p;
  }
  nodes_.push_back(std::make_unique<detail::NormBackwardNode>(kind, attributes, p));
  return p;
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::add_mean_norm_backward(
    detail::NormKind kind, const std::shared_ptr<TensorAttributes>& dy,
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  const auto p = add_norm_backward(kind, std::move(attributes),
                                   backward_inputs(dy, x, scale, mean, inv_variance));
  return {p.dx, p.dscale, p.dbias};
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::layernorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  return add_mean_norm_backward(detail::NormKind::Layer, dy, x, scale, mean, inv_variance,
                                std::move(attributes));
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::rmsnorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  const auto p = add_norm_backward(detail::NormKind::Rms, std::move(attributes),
                                   backward_inputs(dy, x, scale, nullptr, inv_variance));
  return {p.dx, p.dscale};
}

std::array<std::shared_ptr<TensorAttributes>, 5> Graph::batchnorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const BatchnormAttributes& attributes) {
  const std::string name = norm_name(attributes.name(), detail::NodeKind::BatchNorm, nodes_.size());
  const detail::NormPorts ports = add_norm({.kind = detail::NormKind::Batch,
                                            .name = name,
                                            .phase = NormFwdPhase::Training,
                                            .epsilon = attributes.epsilon(),
                                            .compute = attributes.compute_data_type(),
                                            .x = x,
                                            .scale = scale,
                                            .bias = bias,
                                            .momentum = attributes.momentum(),
                                            .prev_running_mean = attributes.prev_running_mean(),
                                            .prev_running_var = attributes.prev_running_var()});
  return {ports.y, ports.mean_out, ports.inv_variance_out, ports.next_running_mean,
          ports.next_running_var};
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::batchnorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  return add_mean_norm_backward(detail::NormKind::Batch, dy, x, scale, mean, inv_variance,
                                std::move(attributes));
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::instancenorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const InstancenormAttributes& attributes) {
  return add_mean_norm(detail::NormKind::Instance, x, scale, bias, attributes);
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::instancenorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  return add_mean_norm_backward(detail::NormKind::Instance, dy, x, scale, mean, inv_variance,
                                std::move(attributes));
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::adalayernorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const AdaLayernormAttributes& attributes) {
  return add_mean_norm(detail::NormKind::Adaptive, x, scale, bias, attributes);
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::adalayernorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  return add_mean_norm_backward(detail::NormKind::Adaptive, dy, x, scale, mean, inv_variance,
                                std::move(attributes));
}

std::shared_ptr<TensorAttributes> Graph::batchnorm_inference(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& bias,
    BatchnormInferenceAttributes attributes) {
  if (attributes.name().empty()) {
    attributes.set_name("batchnorm_inference_" + std::to_string(nodes_.size()));
  }
  // Four pointwise nodes, not cuDNN's NormForward in BATCH_NORM inference mode: cuDNN 9.19 on
  // the H200 offers no engine for that operation on its own, while these fuse after a
  // convolution and run standalone. Each parameter broadcasts into X (detail::PerChannelOperand).
  std::shared_ptr<TensorAttributes> current = x;
  for (const auto& [what, mode, role, parameter] :
       {std::tuple{"center", PointwiseMode::Sub, "mean", &mean},
        std::tuple{"normalize", PointwiseMode::Mul, "inv_variance", &inv_variance},
        std::tuple{"scale", PointwiseMode::Mul, "scale", &scale},
        std::tuple{"shift", PointwiseMode::Add, "bias", &bias}}) {
    PointwiseAttributes p;
    p.set_name(attributes.name() + "::" + what).set_mode(mode);
    if (const auto compute = attributes.compute_data_type()) {
      p.set_compute_data_type(*compute);
    }
    current = add_node(detail::NodeKind::Pointwise, p.name(),
                       {{"X", current.get()}, {role, parameter->get()}}, "Y",
                       [&](const detail::TensorPtr& y) {
                         return std::make_unique<detail::PointwiseNode>(
                             std::move(p), std::vector{current, *parameter}, y,
                             detail::PerChannelOperand{x, role});
                       });
  }
  return current;
}

}  // namespace dnngraph
