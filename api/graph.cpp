// dnngraph::Graph, the describing part: graph settings and the functions that add tensors and
// nodes (attention in graph_attention.cpp, the norms in graph_norms.cpp). Validation is in
// graph_validate.cpp, build and the calls a built plan answers in graph_build.cpp.
#include "api/graph.hpp"

#include "detail/graph/built_graph.hpp"
#include "detail/graph/graph_builder.hpp"
#include "detail/graph/node_naming.hpp"
#include "detail/nodes/bn_finalize.hpp"
#include "detail/nodes/concatenate.hpp"
#include "detail/nodes/conv_dgrad.hpp"
#include "detail/nodes/conv_fprop.hpp"
#include "detail/nodes/conv_wgrad.hpp"
#include "detail/nodes/dbn_weight.hpp"
#include "detail/nodes/gen_stats.hpp"
#include "detail/nodes/matmul.hpp"
#include "detail/nodes/pointwise.hpp"
#include "detail/nodes/reduction.hpp"
#include "detail/nodes/resample.hpp"
#include "detail/nodes/resample_backward.hpp"
#include "detail/nodes/reshape.hpp"
#include "detail/nodes/rng.hpp"
#include "detail/nodes/slice.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <tuple>
#include <utility>

namespace dnngraph {

using Builder = detail::GraphBuilder;

using detail::name_node;
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

std::shared_ptr<TensorAttributes> detail::GraphBuilder::add_output(Graph& g,
                                                                   const std::string& node_name,
                                                                   const char* port) {
  auto t = std::make_shared<TensorAttributes>();
  t->set_name(node_name + "::" + port).set_is_virtual(true);
  t->label_ = "output " + std::string(port) + " of node #" + std::to_string(g.nodes_.size()) +
              " ('" + node_name + "')";
  t->label_from_node_ = true;
  g.owned_.insert(t.get());
  g.tensors_.push_back(t);
  return t;
}

std::shared_ptr<TensorAttributes> detail::GraphBuilder::add_internal(Graph& g,
                                                                     const std::string& node_name,
                                                                     const char* port) {
  auto t = add_output(g, node_name, port);
  t->label_ = "internal " + std::string(port) + " of node #" + std::to_string(g.nodes_.size()) +
              " ('" + node_name + "')";
  return t;
}

bool detail::GraphBuilder::check_inputs(Graph& g, std::string_view node,
                                        std::initializer_list<Input> inputs) {
  return check_inputs(g, node, std::span<const Input>(inputs.begin(), inputs.size()));
}

bool detail::GraphBuilder::check_inputs(Graph& g, std::string_view node,
                                        std::span<const Input> inputs) {
  for (const auto& [port, t] : inputs) {
    if (t == nullptr) {
      g.record(Error{ErrorCode::ForeignTensor, std::string(node) + ": input " + port + " is null"});
      return false;
    }
    if (!g.owned_.contains(t)) {
      g.record(Error{ErrorCode::ForeignTensor,
                     std::string(node) + ": input " + port + " " + t->describe() +
                         " does not belong to this graph; create it with this graph's tensor() "
                         "or take it from one of this graph's nodes"});
      return false;
    }
  }
  for (const auto& [port, t] : inputs) {
    if (!t->label_from_node_) {
      t->label_ = "input " + std::string(port) + " of node #" + std::to_string(g.nodes_.size()) +
                  " (" + std::string(node) + ")";
      t->label_from_node_ = true;
    }
  }
  return true;
}

std::shared_ptr<TensorAttributes> detail::GraphBuilder::add_node(
    Graph& g, detail::NodeKind kind, const std::string& name, std::initializer_list<Input> inputs,
    const char* output, const NodeFactory& make) {
  return add_node(g, kind, name, std::span<const Input>(inputs.begin(), inputs.size()), output,
                  make);
}

std::shared_ptr<TensorAttributes> detail::GraphBuilder::add_node(Graph& g, detail::NodeKind kind,
                                                                 const std::string& name,
                                                                 std::span<const Input> inputs,
                                                                 const char* output,
                                                                 const NodeFactory& make) {
  g.invalidate();
  auto out = add_output(g, name, output);
  if (check_inputs(g, std::string(detail::name_of(kind)) + " '" + name + "'", inputs)) {
    g.nodes_.push_back(make(out));
  }
  return out;
}

std::shared_ptr<TensorAttributes> Graph::matmul(const std::shared_ptr<TensorAttributes>& a,
                                                const std::shared_ptr<TensorAttributes>& b,
                                                MatmulAttributes attributes) {
  name_node(attributes, detail::NodeKind::Matmul, nodes_.size());
  return Builder::add_node(*this, detail::NodeKind::Matmul, attributes.name(),
                           {{"A", a.get()}, {"B", b.get()}}, "C", [&](const detail::TensorPtr& c) {
                             return std::make_unique<detail::MatmulNode>(std::move(attributes), a,
                                                                         b, c);
                           });
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   PointwiseAttributes attributes) {
  name_node(attributes, detail::NodeKind::Pointwise, nodes_.size());
  return Builder::add_node(*this, detail::NodeKind::Pointwise, attributes.name(), {{"X", x.get()}},
                           "Y", [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::PointwiseNode>(std::move(attributes),
                                                                            std::vector{x}, y);
                           });
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   const std::shared_ptr<TensorAttributes>& b,
                                                   PointwiseAttributes attributes) {
  name_node(attributes, detail::NodeKind::Pointwise, nodes_.size());
  return Builder::add_node(*this, detail::NodeKind::Pointwise, attributes.name(),
                           {{"X", x.get()}, {"B", b.get()}}, "Y", [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::PointwiseNode>(std::move(attributes),
                                                                            std::vector{x, b}, y);
                           });
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   const std::shared_ptr<TensorAttributes>& b,
                                                   const std::shared_ptr<TensorAttributes>& t,
                                                   PointwiseAttributes attributes) {
  name_node(attributes, detail::NodeKind::Pointwise, nodes_.size());
  return Builder::add_node(*this, detail::NodeKind::Pointwise, attributes.name(),
                           {{"X", x.get()}, {"B", b.get()}, {"T", t.get()}}, "Y",
                           [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::PointwiseNode>(
                                 std::move(attributes), std::vector{x, b, t}, y);
                           });
}

std::shared_ptr<TensorAttributes> Graph::conv_fprop(const std::shared_ptr<TensorAttributes>& x,
                                                    const std::shared_ptr<TensorAttributes>& w,
                                                    ConvFpropAttributes attributes) {
  name_node(attributes, detail::NodeKind::ConvFprop, nodes_.size());
  return Builder::add_node(*this, detail::NodeKind::ConvFprop, attributes.name(),
                           {{"X", x.get()}, {"W", w.get()}}, "Y", [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::ConvFpropNode>(std::move(attributes),
                                                                            x, w, y);
                           });
}

std::shared_ptr<TensorAttributes> Graph::conv_dgrad(const std::shared_ptr<TensorAttributes>& dy,
                                                    const std::shared_ptr<TensorAttributes>& w,
                                                    ConvDgradAttributes attributes) {
  name_node(attributes, detail::NodeKind::ConvDgrad, nodes_.size());
  return Builder::add_node(
      *this, detail::NodeKind::ConvDgrad, attributes.name(), {{"dY", dy.get()}, {"W", w.get()}},
      "dX", [&](const detail::TensorPtr& dx) {
        return std::make_unique<detail::ConvDgradNode>(std::move(attributes), dy, w, dx);
      });
}

std::shared_ptr<TensorAttributes> Graph::conv_wgrad(const std::shared_ptr<TensorAttributes>& x,
                                                    const std::shared_ptr<TensorAttributes>& dy,
                                                    ConvWgradAttributes attributes) {
  name_node(attributes, detail::NodeKind::ConvWgrad, nodes_.size());
  return Builder::add_node(
      *this, detail::NodeKind::ConvWgrad, attributes.name(), {{"X", x.get()}, {"dY", dy.get()}},
      "dW", [&](const detail::TensorPtr& dw) {
        return std::make_unique<detail::ConvWgradNode>(std::move(attributes), x, dy, dw);
      });
}

std::shared_ptr<TensorAttributes> Graph::reduction(const std::shared_ptr<TensorAttributes>& x,
                                                   ReductionAttributes attributes) {
  name_node(attributes, detail::NodeKind::Reduction, nodes_.size());
  return Builder::add_node(*this, detail::NodeKind::Reduction, attributes.name(), {{"X", x.get()}},
                           "Y", [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::ReductionNode>(std::move(attributes),
                                                                            x, y);
                           });
}

std::shared_ptr<TensorAttributes> Graph::rng(const std::shared_ptr<TensorAttributes>& seed,
                                             const std::shared_ptr<TensorAttributes>& offset,
                                             RngAttributes attributes) {
  name_node(attributes, detail::NodeKind::Rng, nodes_.size());
  return Builder::add_node(
      *this, detail::NodeKind::Rng, attributes.name(),
      {{"seed", seed.get()}, {"offset", offset.get()}}, "Y", [&](const detail::TensorPtr& y) {
        return std::make_unique<detail::RngNode>(std::move(attributes), seed, offset, y);
      });
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::genstats(
    const std::shared_ptr<TensorAttributes>& x, GenstatsAttributes attributes) {
  invalidate();
  name_node(attributes, detail::NodeKind::GenStats, nodes_.size());
  const std::string& name = attributes.name();
  auto sum = Builder::add_output(*this, name, "sum");
  auto sq_sum = Builder::add_output(*this, name, "sq_sum");
  if (Builder::check_inputs(
          *this, std::string(detail::name_of(detail::NodeKind::GenStats)) + " '" + name + "'",
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
  auto y = Builder::add_output(*this, name, "Y");
  // Index exists when asked for, whatever the mode: infer() refuses it for average pooling.
  auto index = attributes.generate_index() ? Builder::add_output(*this, name, "Index") : nullptr;
  if (Builder::check_inputs(
          *this, std::string(detail::name_of(detail::NodeKind::Resample)) + " '" + name + "'",
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
                                  .dx = Builder::add_output(*this, name, "dX")};
  const std::string node =
      std::string(detail::name_of(detail::NodeKind::ResampleBackward)) + " '" + name + "'";
  const auto given = [&](const char* port, const std::shared_ptr<TensorAttributes>& t) {
    return !t || Builder::check_inputs(*this, node, {{port, t.get()}});
  };
  if (Builder::check_inputs(*this, node, {{"dY", dy.get()}}) && given("X", p.x) &&
      given("Y", p.y) && given("Index", p.index)) {
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
  const detail::BnFinalizePorts p{
      .sum = sum,
      .sq_sum = sq_sum,
      .scale = scale,
      .bias = bias,
      .epsilon = named.epsilon(),
      .accumulation_count = named.accumulation_count(),
      .prev_running_mean = named.prev_running_mean(),
      .prev_running_var = named.prev_running_var(),
      .momentum = named.momentum(),
      .eq_scale = Builder::add_output(*this, name, "eq_scale"),
      .eq_bias = Builder::add_output(*this, name, "eq_bias"),
      .mean = Builder::add_output(*this, name, "mean"),
      .inv_variance = Builder::add_output(*this, name, "inv_variance"),
      .next_running_mean = Builder::add_output(*this, name, "next_running_mean"),
      .next_running_var = Builder::add_output(*this, name, "next_running_var")};
  if (Builder::check_inputs(
          *this, std::string(detail::name_of(detail::NodeKind::BnFinalize)) + " '" + name + "'",
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
                                 .dscale = Builder::add_output(*this, name, "dScale"),
                                 .dbias = Builder::add_output(*this, name, "dBias"),
                                 .eq_scale_dy = Builder::add_output(*this, name, "eq_scale_dy"),
                                 .eq_scale_x = Builder::add_output(*this, name, "eq_scale_x"),
                                 .eq_bias = Builder::add_output(*this, name, "eq_bias")};
  if (Builder::check_inputs(
          *this, std::string(detail::name_of(detail::NodeKind::DbnWeight)) + " '" + name + "'",
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
  return Builder::add_node(*this, detail::NodeKind::Reshape, attributes.name(), {{"X", x.get()}},
                           "Y", [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::ReshapeNode>(std::move(attributes), x,
                                                                          y);
                           });
}

std::shared_ptr<TensorAttributes> Graph::concatenate(
    const std::vector<std::shared_ptr<TensorAttributes>>& inputs,
    ConcatenateAttributes attributes) {
  name_node(attributes, detail::NodeKind::Concatenate, nodes_.size());
  std::vector<std::string> ports;  // "0", "1", ...: each Input's port points into one
  ports.reserve(inputs.size());
  std::vector<Builder::Input> named;
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
    return Builder::add_output(*this, attributes.name(), "Y");
  }
  return Builder::add_node(*this, detail::NodeKind::Concatenate, attributes.name(), named, "Y",
                           [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::ConcatenateNode>(std::move(attributes),
                                                                              inputs, y);
                           });
}

std::shared_ptr<TensorAttributes> Graph::slice(const std::shared_ptr<TensorAttributes>& x,
                                               SliceAttributes attributes) {
  name_node(attributes, detail::NodeKind::Slice, nodes_.size());
  return Builder::add_node(*this, detail::NodeKind::Slice, attributes.name(), {{"X", x.get()}}, "Y",
                           [&](const detail::TensorPtr& y) {
                             return std::make_unique<detail::SliceNode>(std::move(attributes), x,
                                                                        y);
                           });
}

}  // namespace dnngraph
