// dnngraph::Graph's norm builders: layernorm, rmsnorm, batchnorm and instancenorm, forward and
// backward, through one request form (add_norm, add_norm_backward).
#include "api/graph.hpp"

#include "detail/graph/graph_builder.hpp"
#include "detail/graph/node_naming.hpp"
#include "detail/nodes/norm.hpp"
#include "detail/nodes/norm_backward.hpp"
#include "detail/nodes/pointwise.hpp"

#include <array>
#include <memory>
#include <string>
#include <utility>

namespace dnngraph {

using Builder = detail::GraphBuilder;

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

detail::NormPorts detail::GraphBuilder::add_norm(Graph& g, const NormRequest& r) {
  g.invalidate();
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
      .y = add_output(g, r.name, "Y"),
      .mean_out =
          training && r.kind != detail::NormKind::Rms ? add_output(g, r.name, "mean") : nullptr,
      .inv_variance_out = training ? add_output(g, r.name, "inv_variance") : nullptr,
      .next_running_mean = running ? add_output(g, r.name, "next_running_mean") : nullptr,
      .next_running_var = running ? add_output(g, r.name, "next_running_var") : nullptr};
  if (!r.phase) {
    g.record(Error{ErrorCode::InvalidAttribute,
                   node + ": no forward phase; set_forward_phase(NormFwdPhase::Inference or "
                          "NormFwdPhase::Training)"});
  } else if (!r.epsilon) {
    g.record(Error{ErrorCode::InvalidAttribute,
                   node + ": no epsilon; set_epsilon(graph.tensor(1e-5F)) for example"});
  } else if (check_inputs(
                 g, node,
                 {{"X", r.x.get()}, {"scale", r.scale.get()}, {"epsilon", r.epsilon.get()}}) &&
             // rmsnorm's bias is optional; layernorm's is not (check_inputs refuses a null one)
             ((!r.bias && r.kind == detail::NormKind::Rms) ||
              check_inputs(g, node, {{"bias", r.bias.get()}})) &&
             // batchnorm's running statistics: all three or none
             (!running || check_inputs(g, node,
                                       {{"previous running mean", r.prev_running_mean.get()},
                                        {"previous running variance", r.prev_running_var.get()},
                                        {"momentum", r.momentum.get()}}))) {
    g.nodes_.push_back(std::make_unique<detail::NormForwardNode>(
        detail::NormSettings{r.kind, r.name, *r.phase, r.compute}, ports));
  }
  return ports;
}

template <class Attributes>
std::array<std::shared_ptr<TensorAttributes>, 3> detail::GraphBuilder::add_mean_norm(
    Graph& g, detail::NormKind kind, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& bias,
    const Attributes& attributes) {
  const detail::NormPorts ports = add_norm(
      g,
      {.kind = kind,
       .name = norm_name(attributes.name(), detail::norm_node_kind(kind, false), g.nodes_.size()),
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
  return Builder::add_mean_norm(*this, detail::NormKind::Layer, x, scale, bias, attributes);
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::rmsnorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const RmsnormAttributes& attributes) {
  const std::string name = norm_name(attributes.name(), detail::NodeKind::RmsNorm, nodes_.size());
  const detail::NormPorts ports =
      Builder::add_norm(*this, {detail::NormKind::Rms, name, attributes.forward_phase(),
                                attributes.epsilon(), attributes.compute_data_type(), x, scale,
                                attributes.bias(), nullptr, nullptr, nullptr});
  return {ports.y, ports.inv_variance_out};
}

detail::NormBackwardPorts detail::GraphBuilder::add_norm_backward(Graph& g, detail::NormKind kind,
                                                                  NormBackwardAttributes attributes,
                                                                  detail::NormBackwardPorts p) {
  g.invalidate();
  const auto node_kind = detail::norm_node_kind(kind, true);
  name_node(attributes, node_kind, g.nodes_.size());
  const std::string& name = attributes.name();
  p.dx = add_output(g, name, "dX");
  p.dscale = add_output(g, name, "dScale");
  p.dbias = kind != detail::NormKind::Rms ? add_output(g, name, "dBias") : nullptr;
  const std::string node = std::string(detail::name_of(node_kind)) + " '" + name + "'";
  if (!check_inputs(g, node,
                    {{"dY", p.dy.get()},
                     {"X", p.x.get()},
                     {"scale", p.scale.get()},
                     {"inv_variance", p.inv_variance.get()}}) ||
      (kind != detail::NormKind::Rms && !check_inputs(g, node, {{"mean", p.mean.get()}}))) {
    return p;
  }
  g.nodes_.push_back(std::make_unique<detail::NormBackwardNode>(kind, attributes, p));
  return p;
}

std::array<std::shared_ptr<TensorAttributes>, 3> detail::GraphBuilder::add_mean_norm_backward(
    Graph& g, detail::NormKind kind, const std::shared_ptr<TensorAttributes>& dy,
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  const auto p = add_norm_backward(g, kind, std::move(attributes),
                                   backward_inputs(dy, x, scale, mean, inv_variance));
  return {p.dx, p.dscale, p.dbias};
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::layernorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  return Builder::add_mean_norm_backward(*this, detail::NormKind::Layer, dy, x, scale, mean,
                                         inv_variance, std::move(attributes));
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::rmsnorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  const auto p = Builder::add_norm_backward(*this, detail::NormKind::Rms, std::move(attributes),
                                            backward_inputs(dy, x, scale, nullptr, inv_variance));
  return {p.dx, p.dscale};
}

std::array<std::shared_ptr<TensorAttributes>, 5> Graph::batchnorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const BatchnormAttributes& attributes) {
  const std::string name = norm_name(attributes.name(), detail::NodeKind::BatchNorm, nodes_.size());
  const detail::NormPorts ports =
      Builder::add_norm(*this, {.kind = detail::NormKind::Batch,
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
  return Builder::add_mean_norm_backward(*this, detail::NormKind::Batch, dy, x, scale, mean,
                                         inv_variance, std::move(attributes));
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::instancenorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const InstancenormAttributes& attributes) {
  return Builder::add_mean_norm(*this, detail::NormKind::Instance, x, scale, bias, attributes);
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::instancenorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  return Builder::add_mean_norm_backward(*this, detail::NormKind::Instance, dy, x, scale, mean,
                                         inv_variance, std::move(attributes));
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::adalayernorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const AdaLayernormAttributes& attributes) {
  return Builder::add_mean_norm(*this, detail::NormKind::Adaptive, x, scale, bias, attributes);
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::adalayernorm_backward(
    const std::shared_ptr<TensorAttributes>& dy, const std::shared_ptr<TensorAttributes>& x,
    const std::shared_ptr<TensorAttributes>& scale, const std::shared_ptr<TensorAttributes>& mean,
    const std::shared_ptr<TensorAttributes>& inv_variance, NormBackwardAttributes attributes) {
  return Builder::add_mean_norm_backward(*this, detail::NormKind::Adaptive, dy, x, scale, mean,
                                         inv_variance, std::move(attributes));
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
    current = Builder::add_node(*this, detail::NodeKind::Pointwise, p.name(),
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
