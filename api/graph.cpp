// dnngraph::Graph: node creation, validation, lowering, build and execute.
#include "api/graph.hpp"

#include "api/built_graph.hpp"
#include "api/cudnn_error.hpp"
#include "api/nodes/matmul.hpp"
#include "api/nodes/pointwise.hpp"
#include "api/plan_choice.hpp"
#include "backend/variant_pack.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

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
Graph& Graph::set_cache_first_plan_choice(bool enabled) {
  cache_first_ = enabled;
  invalidate();
  return *this;
}

void Graph::invalidate() noexcept { built_.reset(); }

void Graph::record(Error error) {
  if (!deferred_error_) {
    deferred_error_ = std::move(error);
  }
}

std::shared_ptr<TensorAttributes> Graph::tensor(const TensorAttributes& attributes) {
  invalidate();
  auto t = std::make_shared<TensorAttributes>(attributes);
  owned_.insert(t.get());
  tensors_.push_back(t);
  return t;
}

std::shared_ptr<TensorAttributes> Graph::add_output(const std::string& node_name,
                                                    const char* port) {
  auto t = std::make_shared<TensorAttributes>();
  t->set_name(node_name + "::" + port).set_is_virtual(true);
  owned_.insert(t.get());
  tensors_.push_back(t);
  return t;
}

bool Graph::check_inputs(
    std::string_view node,
    std::initializer_list<std::pair<const char*, const TensorAttributes*>> inputs) {
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

namespace {

Result<void> check_layout(const TensorAttributes& t) {
  if (t.dim().empty()) {
    return make_error(ErrorCode::InvalidAttribute, "tensor " + t.describe() + " has no dims");
  }
  for (std::size_t i = 0; i < t.dim().size(); ++i) {
    if (t.dim()[i] <= 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        "tensor " + t.describe() + ": dim " + std::to_string(i) + " is " +
                            std::to_string(t.dim()[i]) + "; dims must be positive (dims " +
                            to_string(t.dim()) + ")");
    }
  }
  if (!element_count(t.dim())) {
    return make_error(ErrorCode::InvalidAttribute,
                      "tensor " + t.describe() + " has dims " + to_string(t.dim()) +
                          ", whose element count does not fit in int64");
  }
  if (t.stride().empty()) {
    return {};
  }
  if (t.stride().size() != t.dim().size()) {
    return make_error(ErrorCode::InvalidAttribute,
                      "tensor " + t.describe() + " has " + std::to_string(t.dim().size()) +
                          " dims " + to_string(t.dim()) + " but " +
                          std::to_string(t.stride().size()) + " strides " + to_string(t.stride()));
  }
  for (std::size_t i = 0; i < t.stride().size(); ++i) {
    if (t.stride()[i] <= 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        "tensor " + t.describe() + ": stride " + std::to_string(i) + " is " +
                            std::to_string(t.stride()[i]) + "; strides must be positive (strides " +
                            to_string(t.stride()) + ")");
    }
  }
  return {};
}

}  // namespace

Result<void> Graph::validate() {
  if (deferred_error_) {
    return std::unexpected(*deferred_error_);
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
      continue;
    }
    if (t->is_virtual()) {
      return make_error(ErrorCode::InvalidAttribute,
                        "tensor " + t->describe() + " is virtual, but no node produces it");
    }
    if (auto ok = check_layout(*t); !ok) {
      return ok;
    }
    if (!t->data_type() && !io_type_) {
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
    if (!t->data_type()) {
      t->set_data_type(*io_type_);
    }
    if (t->stride().empty()) {
      t->set_stride(packed_strides(t->dim()));
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
  // Uids: user-given ones must be unique; the rest get fresh ones above the largest.
  std::unordered_map<std::int64_t, const TensorAttributes*> by_uid;
  std::int64_t largest = 0;
  for (const auto& t : tensors_) {
    if (!t->uid()) {
      continue;
    }
    auto [it, inserted] = by_uid.emplace(*t->uid(), t.get());
    if (!inserted) {
      return make_error(ErrorCode::DuplicateUid, "tensors " + it->second->describe() + " and " +
                                                     t->describe() + " have the same uid");
    }
    largest = std::max(largest, *t->uid());
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
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle,
                      "build: the Handle is empty; create one with Handle::create()");
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
  auto ok = op_graph->set_handle(handle.native());
  if (ok) ok = op_graph->set_ops(ops);
  if (ok && dynamic_shape_) ok = op_graph->set_dynamic_shape_enabled(true);
  if (ok) ok = op_graph->finalize();
  if (!ok) {
    return std::unexpected(detail::cudnn_error(ok.error(), "build: operation graph"));
  }
  if (kernel_cache_) {
    if (auto ok = kernel_cache_->build(*op_graph); !ok) {
      return ok;
    }
  }
  auto chosen =
      detail::choose_plan({*op_graph, handle.native(), modes, kernel_cache_.get(), cache_first_});
  if (!chosen) {
    return std::unexpected(chosen.error());
  }
  std::vector<std::pair<std::int64_t, std::string>> io;
  for (const auto& t : tensors_) {
    if (!t->is_virtual()) {
      io.emplace_back(*t->uid(), t->describe());
    }
  }
  std::ranges::sort(io);
  auto built = std::make_unique<detail::BuiltGraph>(detail::BuiltGraph{std::move(*lowered),
                                                                       std::move(*op_graph),
                                                                       std::move(chosen->plan),
                                                                       std::move(chosen->info),
                                                                       {},
                                                                       {}});
  for (auto& [uid, name] : io) {
    built->io_uids.push_back(uid);
    built->io_names.push_back(std::move(name));
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
  if (!built_) {
    return make_error(ErrorCode::NotBuilt, "execute: the graph is not built; call build() first");
  }
  if (handle.empty()) {
    return make_error(ErrorCode::InvalidHandle, "execute: the Handle is empty");
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
  if (workspace == nullptr && built_->info.workspace_size > 0) {
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
  if (ok) ok = pack->finalize();
  if (ok) ok = backend::execute(handle.native(), built_->plan, *pack);
  if (!ok) {
    return std::unexpected(detail::cudnn_error(ok.error(), "execute"));
  }
  return {};
}

}  // namespace dnngraph
