// dnngraph::Graph: node creation, validation, lowering, build and execute.
#include "api/graph.hpp"

#include "api/built_graph.hpp"
#include "api/cudnn_error.hpp"
#include "api/nodes/conv_dgrad.hpp"
#include "api/nodes/conv_fprop.hpp"
#include "api/nodes/conv_wgrad.hpp"
#include "api/nodes/matmul.hpp"
#include "api/nodes/norm.hpp"
#include "api/nodes/pointwise.hpp"
#include "api/nodes/reduction.hpp"
#include "api/override_shapes.hpp"
#include "api/plan_choice.hpp"
#include "backend/variant_pack.hpp"
#include "backend/version.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>
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

Result<void> Graph::check_validated(std::string_view call) const {
  if (!validated_revisions_ || validated_revisions_->size() != tensors_.size()) {
    return make_error(ErrorCode::NotBuilt,
                      std::string(call) +
                          ": the graph is not validated, or a node, tensor or graph setting "
                          "changed since; call validate() or build() first");
  }
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i]->revision_ != (*validated_revisions_)[i]) {
      return make_error(ErrorCode::InvalidState,
                        std::string(call) + ": tensor " + tensors_[i]->describe() +
                            " was changed after the last validate(); call validate() (and "
                            "build() again) first");
    }
  }
  return {};
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

bool Graph::check_inputs(std::string_view node,
                         std::initializer_list<std::pair<const char*, TensorAttributes*>> inputs) {
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

std::shared_ptr<TensorAttributes> Graph::matmul(const std::shared_ptr<TensorAttributes>& a,
                                                const std::shared_ptr<TensorAttributes>& b,
                                                MatmulAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("matmul_" + std::to_string(nodes_.size()));
  }
  auto c = add_output(attributes.name(), "C");
  if (check_inputs("matmul '" + attributes.name() + "'", {{"A", a.get()}, {"B", b.get()}})) {
    nodes_.push_back(std::make_unique<detail::MatmulNode>(std::move(attributes), a, b, c));
  }
  return c;
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   PointwiseAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("pointwise_" + std::to_string(nodes_.size()));
  }
  auto y = add_output(attributes.name(), "Y");
  if (check_inputs("pointwise '" + attributes.name() + "'", {{"X", x.get()}})) {
    nodes_.push_back(
        std::make_unique<detail::PointwiseNode>(std::move(attributes), std::vector{x}, y));
  }
  return y;
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   const std::shared_ptr<TensorAttributes>& b,
                                                   PointwiseAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("pointwise_" + std::to_string(nodes_.size()));
  }
  auto y = add_output(attributes.name(), "Y");
  if (check_inputs("pointwise '" + attributes.name() + "'", {{"X", x.get()}, {"B", b.get()}})) {
    nodes_.push_back(
        std::make_unique<detail::PointwiseNode>(std::move(attributes), std::vector{x, b}, y));
  }
  return y;
}

std::shared_ptr<TensorAttributes> Graph::pointwise(const std::shared_ptr<TensorAttributes>& x,
                                                   const std::shared_ptr<TensorAttributes>& b,
                                                   const std::shared_ptr<TensorAttributes>& t,
                                                   PointwiseAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("pointwise_" + std::to_string(nodes_.size()));
  }
  auto y = add_output(attributes.name(), "Y");
  if (check_inputs("pointwise '" + attributes.name() + "'",
                   {{"X", x.get()}, {"B", b.get()}, {"T", t.get()}})) {
    nodes_.push_back(
        std::make_unique<detail::PointwiseNode>(std::move(attributes), std::vector{x, b, t}, y));
  }
  return y;
}

std::shared_ptr<TensorAttributes> Graph::conv_fprop(const std::shared_ptr<TensorAttributes>& x,
                                                    const std::shared_ptr<TensorAttributes>& w,
                                                    ConvFpropAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("conv_fprop_" + std::to_string(nodes_.size()));
  }
  auto y = add_output(attributes.name(), "Y");
  if (check_inputs("conv_fprop '" + attributes.name() + "'", {{"X", x.get()}, {"W", w.get()}})) {
    nodes_.push_back(std::make_unique<detail::ConvFpropNode>(std::move(attributes), x, w, y));
  }
  return y;
}

std::shared_ptr<TensorAttributes> Graph::conv_dgrad(const std::shared_ptr<TensorAttributes>& dy,
                                                    const std::shared_ptr<TensorAttributes>& w,
                                                    ConvDgradAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("conv_dgrad_" + std::to_string(nodes_.size()));
  }
  auto dx = add_output(attributes.name(), "dX");
  if (check_inputs("conv_dgrad '" + attributes.name() + "'", {{"dY", dy.get()}, {"W", w.get()}})) {
    nodes_.push_back(std::make_unique<detail::ConvDgradNode>(std::move(attributes), dy, w, dx));
  }
  return dx;
}

std::shared_ptr<TensorAttributes> Graph::conv_wgrad(const std::shared_ptr<TensorAttributes>& x,
                                                    const std::shared_ptr<TensorAttributes>& dy,
                                                    ConvWgradAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("conv_wgrad_" + std::to_string(nodes_.size()));
  }
  auto dw = add_output(attributes.name(), "dW");
  if (check_inputs("conv_wgrad '" + attributes.name() + "'", {{"X", x.get()}, {"dY", dy.get()}})) {
    nodes_.push_back(std::make_unique<detail::ConvWgradNode>(std::move(attributes), x, dy, dw));
  }
  return dw;
}

std::shared_ptr<TensorAttributes> Graph::reduction(const std::shared_ptr<TensorAttributes>& x,
                                                   ReductionAttributes attributes) {
  invalidate();
  if (attributes.name().empty()) {
    attributes.set_name("reduction_" + std::to_string(nodes_.size()));
  }
  auto y = add_output(attributes.name(), "Y");
  if (check_inputs("reduction '" + attributes.name() + "'", {{"X", x.get()}})) {
    nodes_.push_back(std::make_unique<detail::ReductionNode>(std::move(attributes), x, y));
  }
  return y;
}

detail::NormPorts Graph::add_norm(const NormRequest& r) {
  invalidate();
  const std::string node =
      std::string(r.kind == detail::NormKind::Layer ? "layernorm" : "rmsnorm") + " '" + r.name +
      "'";
  const bool training = r.phase == NormFwdPhase::Training;
  detail::NormPorts ports{
      .x = r.x,
      .scale = r.scale,
      .bias = r.bias,
      .epsilon = r.epsilon,
      .y = add_output(r.name, "Y"),
      .mean_out =
          training && r.kind == detail::NormKind::Layer ? add_output(r.name, "mean") : nullptr,
      .inv_variance_out = training ? add_output(r.name, "inv_variance") : nullptr};
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
              check_inputs(node, {{"bias", r.bias.get()}}))) {
    nodes_.push_back(std::make_unique<detail::NormForwardNode>(
        detail::NormSettings{r.kind, r.name, *r.phase, r.compute}, ports));
  }
  return ports;
}

std::array<std::shared_ptr<TensorAttributes>, 3> Graph::layernorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const std::shared_ptr<TensorAttributes>& bias, const LayernormAttributes& attributes) {
  const std::string name =
      attributes.name().empty() ? "layernorm_" + std::to_string(nodes_.size()) : attributes.name();
  const detail::NormPorts ports =
      add_norm({detail::NormKind::Layer, name, attributes.forward_phase(), attributes.epsilon(),
                attributes.compute_data_type(), x, scale, bias});
  return {ports.y, ports.mean_out, ports.inv_variance_out};
}

std::array<std::shared_ptr<TensorAttributes>, 2> Graph::rmsnorm(
    const std::shared_ptr<TensorAttributes>& x, const std::shared_ptr<TensorAttributes>& scale,
    const RmsnormAttributes& attributes) {
  const std::string name =
      attributes.name().empty() ? "rmsnorm_" + std::to_string(nodes_.size()) : attributes.name();
  const detail::NormPorts ports =
      add_norm({detail::NormKind::Rms, name, attributes.forward_phase(), attributes.epsilon(),
                attributes.compute_data_type(), x, scale, attributes.bias()});
  return {ports.y, ports.inv_variance_out};
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
  // convolution and run standalone. The parameters broadcast like any pointwise operand.
  const auto step = [&](const char* what, PointwiseMode mode) {
    PointwiseAttributes p;
    p.set_name(attributes.name() + "::" + what).set_mode(mode);
    if (attributes.compute_data_type()) {
      p.set_compute_data_type(*attributes.compute_data_type());
    }
    return p;
  };
  auto centered = pointwise(x, mean, step("center", PointwiseMode::Sub));
  auto normalized = pointwise(centered, inv_variance, step("normalize", PointwiseMode::Mul));
  auto scaled = pointwise(normalized, scale, step("scale", PointwiseMode::Mul));
  return pointwise(scaled, bias, step("shift", PointwiseMode::Add));
}

namespace {

// detail::check_layout (the one rule for layouts, overrides use it too) on t's dims and
// strides, the message naming t.
Result<void> check_layout(const TensorAttributes& t) {
  if (t.dim().empty()) {
    return make_error(ErrorCode::InvalidAttribute, "tensor " + t.describe() + " has no dims");
  }
  const auto type = t.data_type();
  const std::int64_t element = type && is_known(*type) ? size_of(*type) : 1;
  if (auto ok = detail::check_layout(t.dim(), t.stride(), element); !ok) {
    return make_error(ok.error().code, "tensor " + t.describe() + ": " + ok.error().message);
  }
  return {};
}

// An enum value cast from an integer would be lowered as some other type.
Result<void> check_known(const std::string& what, std::optional<DataType> type) {
  if (!type || is_known(*type)) {
    return {};
  }
  return make_error(ErrorCode::InvalidAttribute, what + " has value " +
                                                     std::to_string(static_cast<int>(*type)) +
                                                     ", which is no DataType enumerator");
}

// A by-value tensor is one Float value in host memory.
Result<void> check_by_value(const TensorAttributes& t) {
  if (const auto type = t.data_type(); type && *type != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType,
                      "tensor " + t.describe() + " is passed by value (set_value) with data type " +
                          std::string(to_string(*type)) + "; by-value tensors are Float");
  }
  if (t.dim().empty()) {
    return {};
  }
  if (auto ok = check_layout(t); !ok) {
    return ok;
  }
  if (element_count(t.dim()) != 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      "tensor " + t.describe() + " is passed by value (set_value), but has dims " +
                          to_string(t.dim()) + "; a by-value tensor holds one value (all dims 1)");
  }
  return {};
}

}  // namespace

Result<void> Graph::validate() {
  // A tensor changed since the last validation: a plan built from that one no longer describes
  // the graph (execute-time overrides would be checked against shapes it was not built for).
  if (!check_validated("validate")) {
    invalidate();
  }
  // Take back what the last validation filled in, where the user has not changed it since;
  // `taken` keeps it, for a failed validation to put back.
  std::unordered_map<const TensorAttributes*, Filled> taken;
  for (const auto& t : tensors_) {
    auto it = filled_.find(t.get());
    if (it == filled_.end()) {
      continue;
    }
    const Filled& f = it->second;
    Filled& back = taken[t.get()];
    if (f.dims && t->dims_ == *f.dims) back.dims = std::exchange(t->dims_, {});
    if (f.strides && t->strides_ == *f.strides) back.strides = std::exchange(t->strides_, {});
    if (f.data_type && t->data_type_ == f.data_type)
      back.data_type = std::exchange(t->data_type_, {});
    if (f.uid && t->uid_ == f.uid) back.uid = std::exchange(t->uid_, {});
  }
  filled_.clear();
  // What is unset now is what this validation may fill in.
  struct Unset {
    bool dims, strides, data_type, uid;
  };
  std::unordered_map<const TensorAttributes*, Unset> unset;
  for (const auto& t : tensors_) {
    unset[t.get()] = {t->dims_.empty(), t->strides_.empty(), !t->data_type_, !t->uid_};
  }
  auto ok = validate_filling();
  for (const auto& t : tensors_) {
    const Unset& u = unset[t.get()];
    Filled f;
    if (u.dims && !t->dims_.empty()) f.dims = t->dims_;
    if (u.strides && !t->strides_.empty()) f.strides = t->strides_;
    if (u.data_type && t->data_type_) f.data_type = t->data_type_;
    if (u.uid && t->uid_) f.uid = t->uid_;
    if (!ok) {
      // A failed validation changes nothing: neither what the user gave nor what the last
      // successful one filled in (found by tests/fuzz/graph_fuzz.cpp).
      if (f.dims) t->dims_.clear();
      if (f.strides) t->strides_.clear();
      if (f.data_type) t->data_type_.reset();
      if (f.uid) t->uid_.reset();
      if (auto it = taken.find(t.get()); it != taken.end()) {
        const Filled& back = it->second;
        if (back.dims) t->dims_ = *back.dims;
        if (back.strides) t->strides_ = *back.strides;
        if (back.data_type) t->data_type_ = back.data_type;
        if (back.uid) t->uid_ = back.uid;
        filled_.emplace(t.get(), back);
      }
    } else if (f.dims || f.strides || f.data_type || f.uid) {
      filled_.emplace(t.get(), std::move(f));
    }
  }
  if (!ok) {
    validated_revisions_.reset();
    return ok;
  }
  validated_revisions_.emplace();
  validated_revisions_->reserve(tensors_.size());
  for (const auto& t : tensors_) {
    validated_revisions_->push_back(t->revision_);
  }
  return ok;
}

Result<void> Graph::check_complete() const {
  std::unordered_set<const TensorAttributes*> produced;
  std::unordered_set<const TensorAttributes*> consumed;
  for (const auto& node : nodes_) {
    for (const auto& out : node->outputs()) {
      produced.insert(out.get());
    }
    for (const auto& in : node->inputs()) {
      consumed.insert(in.get());
    }
  }
  // An input no node reads would be demanded in the variant pack of a graph that never touches
  // it; a virtual output nothing reads is computed for nothing (and cuDNN refuses such graphs).
  for (const auto& t : tensors_) {
    if (!produced.contains(t.get()) && !consumed.contains(t.get())) {
      return make_error(ErrorCode::InvalidAttribute,
                        "build: tensor " + t->describe() +
                            " is not used by any node; remove it or give it to a node");
    }
    if (produced.contains(t.get()) && t->is_virtual() && !consumed.contains(t.get())) {
      return make_error(ErrorCode::InvalidAttribute,
                        "build: tensor " + t->describe() +
                            " is virtual and no node reads it; mark it set_output(true) or "
                            "remove the node that makes it");
    }
  }
  return {};
}

Result<void> Graph::validate_filling() {
  if (deferred_error_) {
    return std::unexpected(*deferred_error_);
  }
  const std::string graph = name_.empty() ? std::string("graph: ") : "graph '" + name_ + "': ";
  for (const auto& [what, type] : {std::pair{"io data type", io_type_},
                                   std::pair{"intermediate data type", intermediate_type_},
                                   std::pair{"compute data type", compute_type_}}) {
    if (auto ok = check_known(graph + what, type); !ok) {
      return ok;
    }
  }
  for (const auto& t : tensors_) {
    if (auto ok = check_known("tensor " + t->describe() + ": data type", t->data_type()); !ok) {
      return ok;
    }
  }
  std::unordered_set<const TensorAttributes*> produced;
  for (const auto& node : nodes_) {
    for (const auto& out : node->outputs()) {
      produced.insert(out.get());
    }
  }
  // Graph inputs first: nodes read their dims and types.
  for (const auto& t : tensors_) {
    if (produced.contains(t.get())) {
      if (t->is_pass_by_value()) {
        return make_error(ErrorCode::InvalidAttribute,
                          "tensor " + t->describe() +
                              " has a value (set_value), but a node produces it; only graph "
                              "inputs are passed by value");
      }
      continue;
    }
    if (t->is_virtual()) {
      return make_error(ErrorCode::InvalidAttribute,
                        "tensor " + t->describe() + " is virtual, but no node produces it");
    }
    if (t->is_pass_by_value()) {
      if (auto ok = check_by_value(*t); !ok) {
        return ok;
      }
      if (t->dim().empty()) {
        continue;  // the first node that reads it gives it its rank
      }
    }
    if (auto ok = check_layout(*t); !ok) {
      return ok;
    }
    if (!t->data_type() && !io_type_ && !t->is_pass_by_value()) {
      return make_error(
          ErrorCode::UnsupportedDataType,
          "tensor " + t->describe() + " has no data type and the graph has no io data type");
    }
  }
  const detail::GraphContext context{io_type_, intermediate_type_, compute_type_};
  for (const auto& t : tensors_) {
    if (produced.contains(t.get())) {
      continue;
    }
    if (!t->data_type() && t->is_pass_by_value()) {
      t->set_data_type(DataType::Float);
    } else if (!t->data_type() && io_type_) {  // the loop above refused the other case
      t->set_data_type(*io_type_);
    }
    if (t->stride().empty() && !t->dim().empty()) {
      t->set_stride(packed_strides(t->dim()));
    }
    // Again with the data type: the extent in bytes must fit too.
    if (!t->dim().empty()) {
      if (auto ok = check_layout(*t); !ok) {
        return ok;
      }
    }
  }
  for (const auto& node : nodes_) {
    if (auto ok = node->infer(context); !ok) {
      return ok;
    }
    for (const auto& out : node->outputs()) {
      if (auto ok = check_layout(*out); !ok) {
        return ok;
      }
    }
  }
  if (auto ok = detail::check_pointwise_only_graph(
          nodes_, [](const TensorAttributes& t) -> const auto& { return t.dim(); }, "");
      !ok) {
    return ok;
  }
  for (const auto& t : tensors_) {
    if (t->is_pass_by_value() && t->dim().empty()) {  // no node reads it (build() refuses)
      t->set_dim({1});
      if (t->stride().empty()) {
        t->set_stride({1});
      } else if (auto ok = check_layout(*t); !ok) {  // the user's strides stay as they are
        return ok;
      }
    }
  }
  // Uids: user-given ones must be unique; the rest get fresh ones above the largest.
  std::unordered_map<std::int64_t, const TensorAttributes*> by_uid;
  std::int64_t largest = 0;
  for (const auto& t : tensors_) {
    const auto uid = t->uid();
    if (!uid) {
      continue;
    }
    auto [it, inserted] = by_uid.emplace(*uid, t.get());
    if (!inserted) {
      return make_error(ErrorCode::DuplicateUid, "tensors " + it->second->describe() + " and " +
                                                     t->describe() + " have the same uid");
    }
    largest = std::max(largest, *uid);
  }
  // Room is checked before any uid is assigned, so ++largest cannot overflow and a failed
  // validate() leaves every uid as it was.
  const auto has_no_uid = [](const auto& t) { return !t->uid(); };
  const auto missing = std::ranges::count_if(tensors_, has_no_uid);
  const std::int64_t room = std::numeric_limits<std::int64_t>::max() - largest;
  if (missing > room) {
    return make_error(ErrorCode::InvalidAttribute,
                      "tensor " + (*std::ranges::find_if(tensors_, has_no_uid))->describe() +
                          " needs a uid, but tensor " + by_uid.at(largest)->describe() +
                          " has the largest uid, which leaves " + std::to_string(room) +
                          " above it for " + std::to_string(missing) +
                          " tensor(s) without one; set their uids or use smaller ones");
  }
  for (const auto& t : tensors_) {
    if (!t->uid()) {
      t->set_uid(++largest);
    }
  }
  return {};
}

namespace {

Result<detail::Lowered> lower_graph(const std::vector<std::shared_ptr<TensorAttributes>>& tensors,
                                    const std::vector<std::unique_ptr<detail::Node>>& nodes,
                                    const detail::GraphContext& context) {
  detail::Lowered lowered;
  for (const auto& t : tensors) {
    if (auto ok = lowered.tensors.add(*t); !ok) {
      return std::unexpected(ok.error());
    }
  }
  for (const auto& node : nodes) {
    auto op = node->lower(lowered.tensors, context);
    if (!op) {
      return std::unexpected(op.error());
    }
    lowered.operations.push_back(std::move(*op));
  }
  return lowered;
}

}  // namespace

Result<LoweringSummary> Graph::lower() {
  if (auto ok = validate(); !ok) {
    return std::unexpected(ok.error());
  }
  auto lowered = lower_graph(tensors_, nodes_, {io_type_, intermediate_type_, compute_type_});
  if (!lowered) {
    return std::unexpected(lowered.error());
  }
  LoweringSummary summary;
  summary.tensor_count = lowered->tensors.size();
  summary.operation_count = lowered->operations.size();
  summary.all_finalized = lowered->tensors.all_finalized();
  for (const auto& op : lowered->operations) {
    summary.all_finalized = summary.all_finalized && op.operation.is_finalized();
  }
  for (const auto& node : nodes_) {
    summary.operations.push_back(node->describe());
  }
  return summary;
}

Result<void> Graph::build(const Handle& handle, const std::vector<HeuristicMode>& modes) {
  if (kernel_cache_ && !dynamic_shape_) {
    return make_error(ErrorCode::InvalidAttribute,
                      "build: a kernel cache applies only to dynamic-shape graphs; call "
                      "set_dynamic_shape_enabled(true) or remove the cache");
  }
  if (!deferred_error_) {
    if (auto complete = check_complete(); !complete) {
      return complete;
    }
  }
  for (std::size_t i = 0; i < modes.size(); ++i) {
    if (!is_known(modes[i])) {
      return make_error(ErrorCode::InvalidAttribute,
                        "build: heuristic mode " + std::to_string(i) + " has the value " +
                            std::to_string(static_cast<int>(modes[i])) +
                            ", which is none of A, B, Fallback");
    }
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle,
                      "build: the Handle is empty; create one with Handle::create()");
  }
  if (override_shape_) {
    // The variant pack's override attributes exist from cuDNN 9.18, in the headers we were
    // compiled with and in the library loaded now.
    constexpr std::int64_t needed = 91800;
    const std::int64_t loaded = backend::runtime_version();
    if (backend::compiled_version < needed || loaded < needed) {
      return make_error(ErrorCode::VersionTooOld,
                        "build: set_override_shape_enabled needs cuDNN >= 9.18; dnngraph was "
                        "compiled against " +
                            backend::version_string(backend::compiled_version) + " and cuDNN " +
                            backend::version_string(loaded) + " is loaded");
    }
  }
  if (nodes_.empty() && !deferred_error_) {
    return make_error(ErrorCode::InvalidAttribute, "build: the graph has no operations");
  }
  if (auto ok = validate(); !ok) {
    return ok;
  }
  auto lowered = lower_graph(tensors_, nodes_, {io_type_, intermediate_type_, compute_type_});
  if (!lowered) {
    return std::unexpected(lowered.error());
  }
  auto op_graph = backend::OperationGraph::create();
  if (!op_graph) {
    return std::unexpected(detail::cudnn_error(op_graph.error(), "build: operation graph"));
  }
  std::vector<cudnnBackendDescriptor_t> ops;
  ops.reserve(lowered->operations.size());
  for (const auto& op : lowered->operations) {
    ops.push_back(op.operation.native());
  }
  // Overrides: the operation graph's own flag from 9.21; below it a dynamic-shape graph, whose
  // plans take the variant pack's override shapes (9.18+; exact on the H200 with 9.19).
  const bool native_override =
      override_shape_ && backend::compiled_version >= 92100 && backend::runtime_version() >= 92100;
  if (override_shape_ && !native_override) {
    for (const auto& node : nodes_) {
      if (!node->exact_overrides_on_dynamic_graphs()) {
        return make_error(
            ErrorCode::VersionTooOld,
            "build: override shapes on " + node->describe() +
                " need cuDNN >= 9.21 (its operation graph override flag); dnngraph was compiled "
                "against " +
                backend::version_string(backend::compiled_version) + " and cuDNN " +
                backend::version_string(backend::runtime_version()) +
                " is loaded. Below 9.21 overrides go through a dynamic-shape graph; on the H200 "
                "with cuDNN 9.19 only a matmul alone ran exact there (convolutions returned "
                "wrong numbers, a pointwise node after a matmul failed in the driver at "
                "execute). Without overrides, build per shape with a dynamic-shape graph and "
                "a kernel cache");
      }
    }
  }
  const bool dynamic = dynamic_shape_ || (override_shape_ && !native_override);
  auto ok = op_graph->set_handle(handle.native());
  if (ok) ok = op_graph->set_ops(ops);
  if (ok && dynamic) ok = op_graph->set_dynamic_shape_enabled(true);
#if CUDNN_VERSION >= 92100
  if (ok && native_override) ok = op_graph->set_override_shape_enabled(true);
#endif
  if (ok) ok = op_graph->finalize();
  if (!ok) {
    return std::unexpected(detail::cudnn_error(ok.error(), "build: operation graph"));
  }
  // Plans for other override shapes (the workspace query below 9.23) reuse this plan's kernel
  // through a cache: the user's, or one of the graph's own.
  std::shared_ptr<KernelCache> cache = kernel_cache_;
  if (!cache && dynamic && override_shape_) {
    cache = std::make_shared<KernelCache>();
  }
  if (cache) {
    if (auto built_cache = cache->build(*op_graph); !built_cache) {
      return built_cache;
    }
  }
  detail::GraphTraits traits;
  for (const auto& node : nodes_) {
    node->note_traits(traits);
  }
  traits.override_shapes = override_shape_;
  auto chosen =
      detail::choose_plan({*op_graph, handle.native(), modes, cache.get(), cache_first_, traits});
  if (!chosen) {
    if (native_override && chosen.error().code == ErrorCode::NoEngine) {
      // Measured with cuDNN 9.27: conv_fprop + ReLU gets no engine config at all with the flag.
      return make_error(ErrorCode::NoEngine,
                        chosen.error().message +
                            "\n  (the operation graph has the override-shape flag: cuDNN " +
                            backend::version_string(backend::runtime_version()) +
                            " offers no engine for execute-time shapes on this graph; build "
                            "without set_override_shape_enabled, or per shape with a kernel "
                            "cache)");
    }
    return std::unexpected(chosen.error());
  }
  struct Io {
    std::int64_t uid;
    std::string name;
    std::optional<float> value;
  };
  std::vector<Io> io;
  for (const auto& t : tensors_) {
    if (const auto uid = t->uid(); uid && !t->is_virtual()) {  // validate() gave every one
      io.push_back({*uid, t->describe(), t->value()});
    }
  }
  std::ranges::sort(io, {}, &Io::uid);
  auto built = std::make_unique<detail::BuiltGraph>(
      std::move(*lowered), std::move(*op_graph), std::move(chosen->plan), std::move(chosen->info));
  built->values.resize(io.size());  // never resized again: execute() points cuDNN into it
  for (std::size_t i = 0; i < io.size(); ++i) {
    built->io_uids.push_back(io[i].uid);
    built->io_names.push_back(std::move(io[i].name));
    built->by_value.push_back(io[i].value.has_value());
    built->values[i] = io[i].value.value_or(0.0F);
  }
  built->cache = std::move(cache);
  if (override_shape_) {
    built->override_enabled = true;
    built->native_override = native_override;
    built->native_workspace = backend::has_workspace_size_for();
    built->info.override_path = native_override ? "operation graph override flag (cuDNN >= 9.21)"
                                                : "dynamic-shape graph (cuDNN < 9.21)";
    built->info.override_workspace_path =
        built->native_workspace
            ? "cudnnGetExecutionPlanWorkspaceSize (cuDNN >= 9.23)"
            : "a plan built for the override shapes with the same engine config";
  }
  built_ = std::move(built);
  return {};
}

Result<std::int64_t> Graph::get_workspace_size() const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "get_workspace_size: the graph is not built");
  }
  return built_->info.workspace_size;
}

Result<PlanInfo> Graph::plan_info() const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "plan_info: the graph is not built");
  }
  return built_->info;
}

Result<void> Graph::execute(const Handle& handle,
                            const std::unordered_map<std::int64_t, void*>& variant_pack,
                            void* workspace) const {
  return execute_with(handle, variant_pack, workspace, detail::Overrides{});
}

Result<void> Graph::execute(const Handle& handle,
                            const std::unordered_map<std::int64_t, void*>& variant_pack,
                            void* workspace, std::span<const std::int64_t> override_uids,
                            std::span<const std::vector<std::int64_t>> override_shapes,
                            std::span<const std::vector<std::int64_t>> override_strides) const {
  return execute_with(handle, variant_pack, workspace,
                      detail::Overrides{override_uids, override_shapes, override_strides});
}

namespace {

Error overrides_not_enabled(std::string_view call) {
  return Error{ErrorCode::InvalidState, std::string(call) +
                                            ": shape overrides on a graph without "
                                            "set_override_shape_enabled(true)"};
}

// The lists cuDNN reads, in the type it reads (see backend/variant_pack.hpp). One per thread
// and reused: after the first call with a given rank no execute allocates for them.
struct OverrideScratch {
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::vector<std::int64_t>> strides;

  void assign(const detail::Overrides& o) {
    shapes.resize(o.shapes.size());
    strides.resize(o.strides.size());
    for (std::size_t i = 0; i < o.shapes.size(); ++i) {
      shapes[i].assign(o.shapes[i].begin(), o.shapes[i].end());
      strides[i].assign(o.strides[i].begin(), o.strides[i].end());
    }
  }
};

bool same_lists(const detail::OverrideMemo& memo, const detail::Overrides& o) {
  return memo.valid && std::ranges::equal(memo.uids, o.uids) &&
         std::ranges::equal(memo.shapes, o.shapes) && std::ranges::equal(memo.strides, o.strides);
}

}  // namespace

Result<void> Graph::check_overrides(
    std::span<const std::int64_t> override_uids,
    std::span<const std::vector<std::int64_t>> override_shapes,
    std::span<const std::vector<std::int64_t>> override_strides) const {
  // Before build too: the answer must be the one execute() would give.
  if (!override_shape_ || (built_ && !built_->override_enabled)) {
    return std::unexpected(overrides_not_enabled("check_overrides"));
  }
  if (auto ok = check_validated("check_overrides"); !ok) {
    return ok;
  }
  auto checked =
      detail::check_overrides({override_uids, override_shapes, override_strides}, tensors_, nodes_);
  if (!checked) {
    return std::unexpected(checked.error());
  }
  return {};
}

Result<void> Graph::check_overrides_once(const detail::Overrides& overrides) const {
  detail::OverrideMemo& memo = *built_->memo;
  {
    std::scoped_lock lock(memo.mutex);
    if (same_lists(memo, overrides)) {
      return {};
    }
  }
  auto checked = detail::check_overrides(overrides, tensors_, nodes_);
  if (!checked) {
    return std::unexpected(checked.error());
  }
  std::scoped_lock lock(memo.mutex);
  memo.uids.assign(overrides.uids.begin(), overrides.uids.end());
  memo.shapes.assign(overrides.shapes.begin(), overrides.shapes.end());
  memo.strides.assign(overrides.strides.begin(), overrides.strides.end());
  memo.valid = true;
  return {};
}

Result<void> Graph::execute_with(const Handle& handle,
                                 const std::unordered_map<std::int64_t, void*>& variant_pack,
                                 void* workspace, const detail::Overrides& overrides) const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "execute: the graph is not built; call build() first");
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle, "execute: the Handle is empty");
  }
  // Overrides first: they decide what the rest of the call means.
  if (!overrides.empty()) {
    if (!built_->override_enabled) {
      return std::unexpected(overrides_not_enabled("execute"));
    }
    if (auto ok = check_validated("execute"); !ok) {
      return ok;
    }
    if (auto ok = check_overrides_once(overrides); !ok) {
      return ok;
    }
  }
  const auto& uids = built_->io_uids;
  for (const auto& [uid, pointer] : variant_pack) {
    if (!std::ranges::binary_search(uids, uid)) {
      return make_error(ErrorCode::InvalidAttribute,
                        "execute: the variant pack names uid " + std::to_string(uid) +
                            ", which is no non-virtual tensor of this graph");
    }
  }
  std::vector<void*> pointers;
  pointers.reserve(uids.size());
  for (std::size_t i = 0; i < uids.size(); ++i) {
    auto it = variant_pack.find(uids[i]);
    if (built_->by_value[i]) {
      if (it != variant_pack.end()) {
        return make_error(ErrorCode::InvalidAttribute,
                          "execute: the variant pack names uid " + std::to_string(uids[i]) +
                              ", but tensor " + built_->io_names[i] +
                              " is passed by value (its value was fixed at build); leave it out");
      }
      // cuDNN reads a by-value tensor through a host pointer and does not write it.
      pointers.push_back(const_cast<float*>(&built_->values[i]));  // NOLINT(*-const-cast)
      continue;
    }
    if (it == variant_pack.end()) {
      return make_error(ErrorCode::MissingTensor,
                        "execute: the variant pack has no device "
                        "pointer for tensor " +
                            built_->io_names[i]);
    }
    if (it->second == nullptr) {
      return make_error(ErrorCode::NullPointer, "execute: the device pointer for tensor " +
                                                    built_->io_names[i] + " is null");
    }
    pointers.push_back(it->second);
  }
  if (workspace == nullptr && !overrides.empty()) {
    // What these shapes need (a memoized query), not what the build shape needed.
    auto needed = get_workspace_size(handle, overrides.uids, overrides.shapes, overrides.strides);
    if (!needed) {
      return std::unexpected(needed.error());
    }
    if (*needed > 0) {
      return make_error(ErrorCode::NullPointer,
                        "execute: with these overrides the plan needs a workspace of " +
                            std::to_string(*needed) + " bytes, but the workspace pointer is null");
    }
  } else if (workspace == nullptr && built_->info.workspace_size > 0) {
    return make_error(ErrorCode::NullPointer, "execute: the plan needs a workspace of " +
                                                  std::to_string(built_->info.workspace_size) +
                                                  " bytes, but the workspace pointer is null");
  }
  auto pack = backend::VariantPack::create();
  if (!pack) {
    return std::unexpected(detail::cudnn_error(pack.error(), "execute: variant pack"));
  }
  auto ok = pack->set_unique_ids(uids);
  if (ok) ok = pack->set_data_pointers(pointers);
  if (ok) ok = pack->set_workspace(workspace);
#if CUDNN_VERSION >= 91800
  thread_local OverrideScratch scratch;
  if (ok && !overrides.empty()) {
    scratch.assign(overrides);
    ok = pack->set_override_unique_ids(overrides.uids);
    if (ok) ok = pack->set_override_shapes(scratch.shapes);
    if (ok) ok = pack->set_override_strides(scratch.strides);
  }
#endif
  if (ok) ok = pack->finalize();
  if (ok) {
    ok = built_->cache ? built_->cache->execute_plan(handle.native(), built_->plan, *pack)
                       : backend::execute(handle.native(), built_->plan, *pack);
  }
  if (!ok) {
    return std::unexpected(detail::cudnn_error(ok.error(), "execute"));
  }
  return {};
}

Result<std::int64_t> Graph::get_workspace_size(
    const Handle& handle, std::span<const std::int64_t> override_uids,
    std::span<const std::vector<std::int64_t>> override_shapes,
    std::span<const std::vector<std::int64_t>> override_strides) const {
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "get_workspace_size: the graph is not built");
  }
  const detail::Overrides overrides{override_uids, override_shapes, override_strides};
  if (overrides.empty()) {
    return built_->info.workspace_size;
  }
  if (!built_->override_enabled) {
    return std::unexpected(overrides_not_enabled("get_workspace_size"));
  }
  if (auto ok = check_validated("get_workspace_size"); !ok) {
    return std::unexpected(ok.error());
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle, "get_workspace_size: the Handle is empty");
  }
  auto layout = detail::check_overrides(overrides, tensors_, nodes_);
  if (!layout) {
    return std::unexpected(layout.error());
  }
  // One key per distinct set of overrides: uid, rank, dims, strides of each.
  std::vector<std::int64_t> key;
  for (std::size_t i = 0; i < overrides.uids.size(); ++i) {
    key.push_back(overrides.uids[i]);
    key.push_back(static_cast<std::int64_t>(overrides.shapes[i].size()));
    key.insert(key.end(), overrides.shapes[i].begin(), overrides.shapes[i].end());
    key.insert(key.end(), overrides.strides[i].begin(), overrides.strides[i].end());
  }
  {
    std::scoped_lock lock(built_->memo->mutex);
    if (auto it = built_->memo->workspace.find(key); it != built_->memo->workspace.end()) {
      return it->second;
    }
  }
  std::int64_t bytes = 0;
  if (built_->native_workspace) {
#if CUDNN_VERSION >= 91800
    // cuDNN >= 9.23 answers for a variant pack that carries the overrides; no data is read.
    std::vector<void*> no_data(built_->io_uids.size(), nullptr);
    for (std::size_t i = 0; i < no_data.size(); ++i) {
      if (built_->by_value[i]) {
        no_data[i] = const_cast<float*>(&built_->values[i]);  // NOLINT(*-const-cast): read only
      }
    }
    OverrideScratch lists;
    lists.assign(overrides);
    auto pack = backend::VariantPack::create();
    if (!pack) {
      return std::unexpected(detail::cudnn_error(pack.error(), "get_workspace_size"));
    }
    auto ok = pack->set_unique_ids(built_->io_uids);
    if (ok) ok = pack->set_data_pointers(no_data);
    if (ok) ok = pack->set_workspace(nullptr);
    if (ok) ok = pack->set_override_unique_ids(overrides.uids);
    if (ok) ok = pack->set_override_shapes(lists.shapes);
    if (ok) ok = pack->set_override_strides(lists.strides);
    if (ok) ok = pack->finalize();
    if (!ok) {
      return std::unexpected(detail::cudnn_error(ok.error(), "get_workspace_size"));
    }
    auto queried = backend::workspace_size_for(handle.native(), built_->plan, *pack);
    if (!queried) {
      return std::unexpected(detail::cudnn_error(queried.error(), "get_workspace_size"));
    }
    bytes = *queried;
#endif
  } else {
    // Before 9.23: build a plan of the same engine config for the override shapes (through the
    // kernel cache: no compilation) and ask it. Lowered like build(), with the shapes replaced.
    detail::TensorTable tensors;
    for (const auto& t : tensors_) {
      TensorAttributes shaped = *t;
      if (auto it = layout->find(t.get()); it != layout->end()) {
        shaped.set_dim(it->second.dims).set_stride(it->second.strides);
      }
      if (auto added = tensors.add(shaped); !added) {
        return std::unexpected(added.error());
      }
    }
    std::vector<detail::LoweredOperation> operations;
    std::vector<cudnnBackendDescriptor_t> ops;
    for (const auto& node : nodes_) {
      auto op = node->lower(tensors, {io_type_, intermediate_type_, compute_type_});
      if (!op) {
        return std::unexpected(op.error());
      }
      ops.push_back(op->operation.native());
      operations.push_back(std::move(*op));
    }
    auto op_graph = backend::OperationGraph::create();
    if (!op_graph) {
      return std::unexpected(detail::cudnn_error(op_graph.error(), "get_workspace_size"));
    }
    auto ok = op_graph->set_handle(handle.native());
    if (ok) ok = op_graph->set_ops(ops);
    if (ok) ok = op_graph->set_dynamic_shape_enabled(true);
    if (ok) ok = op_graph->finalize();
    if (!ok) {
      return std::unexpected(detail::cudnn_error(ok.error(), "get_workspace_size"));
    }
    auto plan = detail::plan_for_choice(*op_graph, handle.native(),
                                        EngineChoice{built_->info.engine_id, built_->info.knobs},
                                        built_->cache.get());
    if (!plan) {
      return make_error(plan.error().code,
                        "get_workspace_size: no plan of the built engine config for these "
                        "overrides: " +
                            plan.error().message);
    }
    auto workspace = plan->workspace_size();
    if (!workspace) {
      return std::unexpected(detail::cudnn_error(workspace.error(), "get_workspace_size"));
    }
    bytes = *workspace;
  }
  std::scoped_lock lock(built_->memo->mutex);
  built_->memo->workspace.emplace(std::move(key), bytes);
  return bytes;
}

}  // namespace dnngraph
