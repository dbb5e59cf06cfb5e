// dnngraph::Graph, the validating part: validate() checks every tensor and node, infers node
// outputs and assigns uids, and changes nothing when it fails; lower() makes the backend
// descriptors of a validated graph.
#include "api/graph.hpp"

#include "backend/attribute_log.hpp"
#include "detail/common/checked.hpp"
#include "detail/graph/built_graph.hpp"
#include "detail/graph/fusion_rules.hpp"
#include "detail/graph/graph_builder.hpp"
#include "detail/graph/graph_key.hpp"
#include "detail/graph/pipeline.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace dnngraph {

using Builder = detail::GraphBuilder;

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

Result<std::vector<std::shared_ptr<const TensorAttributes>>> Graph::io_tensors() const {
  if (auto ok = check_validated("io_tensors"); !ok) {
    return std::unexpected(ok.error());
  }
  std::vector<std::shared_ptr<const TensorAttributes>> io;
  for (const auto& t : tensors_) {
    if (!t->is_virtual() && !t->is_pass_by_value()) {
      io.push_back(t);
    }
  }
  return io;
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

// A by-value tensor is one value in host memory: Float (set_value) or Int64 (set_int_value).
Result<void> check_by_value(const TensorAttributes& t) {
  const DataType by_value_type = t.int_value() ? DataType::Int64 : DataType::Float;
  if (const auto type = t.data_type(); type && *type != by_value_type) {
    return make_error(ErrorCode::UnsupportedDataType,
                      "tensor " + t.describe() + " is passed by value (" +
                          (t.int_value() ? "set_int_value" : "set_value") + ") with data type " +
                          std::string(to_string(*type)) + "; it is " +
                          std::string(to_string(by_value_type)));
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
    for (const auto& internal : node->internals()) {
      produced.insert(internal.get());
      consumed.insert(internal.get());
    }
  }
  // The offsets of a ragged tensor are read with it.
  for (const auto& t : tensors_) {
    if (const auto offsets = t->ragged_offset()) {
      consumed.insert(offsets.get());
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

namespace {

using Tensors = std::vector<std::shared_ptr<TensorAttributes>>;
using Produced = std::unordered_set<const TensorAttributes*>;

// Every graph input: not virtual, a by-value one Float of one element, a legal layout, a data
// type of its own or the graph's io type. Node outputs may not carry values.
Result<void> check_graph_inputs(const Tensors& tensors, const Produced& produced,
                                std::optional<DataType> io_type) {
  for (const auto& t : tensors) {
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
    if (!t->data_type() && !io_type && !t->is_pass_by_value()) {
      return make_error(
          ErrorCode::UnsupportedDataType,
          "tensor " + t->describe() + " has no data type and the graph has no io data type");
    }
  }
  return {};
}

// Gives graph inputs what they lack (data type, packed strides), checking the layout again
// with the data type: the extent in bytes must fit too.
Result<void> settle_graph_inputs(const Tensors& tensors, const Produced& produced,
                                 std::optional<DataType> io_type) {
  for (const auto& t : tensors) {
    if (produced.contains(t.get())) {
      continue;
    }
    if (!t->data_type() && t->is_pass_by_value()) {
      t->set_data_type(t->int_value() ? DataType::Int64 : DataType::Float);
    } else if (!t->data_type() && io_type) {  // check_graph_inputs refused the other case
      t->set_data_type(*io_type);
    }
    if (t->stride().empty() && !t->dim().empty()) {
      t->set_stride(packed_strides(t->dim()));
    }
    if (!t->dim().empty()) {
      if (auto ok = check_layout(*t); !ok) {
        return ok;
      }
    }
  }
  return {};
}

// Each node in creation (= topological) order checks itself and settles its outputs; then the
// graph-wide fusion rules.
Result<void> infer_nodes(const std::vector<std::unique_ptr<detail::Node>>& nodes,
                         const detail::GraphContext& context) {
  for (const auto& node : nodes) {
    if (auto ok = node->infer(context); !ok) {
      return ok;
    }
    for (const auto& list : {&node->outputs(), &node->internals()}) {
      for (const auto& out : *list) {
        if (auto ok = check_layout(*out); !ok) {
          return ok;
        }
      }
    }
  }
  return detail::check_pointwise_only_graph(
      nodes, [](const TensorAttributes& t) -> const auto& { return t.dim(); }, "");
}

// Packed variable-length tensors (TensorAttributes::set_ragged_offset): the ragged tensor has
// memory and rank 4; its offsets are a graph input of this graph in device memory, Int32 or
// Int64, [b + 1, 1, 1, 1]; only attention nodes read or make a ragged tensor (each of them
// checks its padding mask).
Result<void> check_ragged(const Tensors& tensors, const Produced& produced,
                          const std::vector<std::unique_ptr<detail::Node>>& nodes) {
  std::unordered_set<const TensorAttributes*> ours;
  for (const auto& t : tensors) {
    ours.insert(t.get());
  }
  for (const auto& t : tensors) {
    if (!t->is_ragged()) {
      continue;
    }
    const auto offsets = t->ragged_offset();
    if (!offsets) {
      return make_error(ErrorCode::ForeignTensor,
                        "tensor " + t->describe() +
                            ": its ragged offsets tensor no longer exists; make the offsets with "
                            "this graph's tensor()");
    }
    const std::string what =
        "tensor " + t->describe() + ": its ragged offsets " + offsets->describe();
    if (!ours.contains(offsets.get())) {
      return make_error(ErrorCode::ForeignTensor,
                        what + " are not a tensor of this graph; make them with its tensor()");
    }
    if (t->is_virtual() || t->dim().size() != 4) {
      return make_error(ErrorCode::InvalidAttribute,
                        "tensor " + t->describe() + " is ragged, but " +
                            (t->is_virtual() ? "virtual: only tensors in memory are ragged"
                                             : "has dims " + to_string(t->dim()) +
                                                   ": a ragged tensor is [b, h, s, d]"));
    }
    if (offsets->is_virtual() || offsets->is_pass_by_value() || produced.contains(offsets.get()) ||
        offsets->is_ragged()) {
      return make_error(ErrorCode::InvalidAttribute,
                        what +
                            " must be a graph input in device memory (not virtual, not by "
                            "value, made by no node, not ragged itself)");
    }
    if (const auto type = offsets->data_type();
        type != DataType::Int32 && type != DataType::Int64) {
      return make_error(ErrorCode::UnsupportedDataType,
                        what + " have data type " +
                            std::string(type ? to_string(*type) : "(none)") +
                            "; offsets are Int32 or Int64 (elements, not bytes)");
    }
    // The offsets have one row more than the batch: a batch of INT64_MAX has no such row.
    const auto rows = detail::checked_add(t->dim()[0], 1);
    if (!rows) {
      return make_error(ErrorCode::ShapeMismatch,
                        "tensor " + t->describe() + " is ragged with a batch (dim 0) of " +
                            std::to_string(t->dim()[0]) + "; its offsets " + offsets->describe() +
                            " would need one row more, which int64 cannot count");
    }
    const std::vector<std::int64_t> expected{*rows, 1, 1, 1};
    if (offsets->dim() != expected) {
      return make_error(ErrorCode::ShapeMismatch,
                        what + " have dims " + to_string(offsets->dim()) + ", expected " +
                            to_string(expected) +
                            " (where each of the b batches starts, then the end)");
    }
  }
  for (const auto& node : nodes) {
    if (node->kind() == detail::NodeKind::Sdpa || node->kind() == detail::NodeKind::SdpaBackward) {
      continue;
    }
    for (const auto& list : {&node->inputs(), &node->outputs()}) {
      for (const auto& t : *list) {
        if (t->is_ragged()) {
          return make_error(ErrorCode::InvalidAttribute,
                            node->describe() + ": tensor " + t->describe() +
                                " is ragged; only attention nodes (sdpa, sdpa_backward) take "
                                "packed variable-length tensors");
        }
      }
    }
  }
  return {};
}

// A by-value tensor no node reads (build() refuses it) still gets dims [1].
Result<void> settle_unread_scalars(const Tensors& tensors) {
  for (const auto& t : tensors) {
    if (t->is_pass_by_value() && t->dim().empty()) {
      t->set_dim({1});
      if (t->stride().empty()) {
        t->set_stride({1});
      } else if (auto ok = check_layout(*t); !ok) {  // the user's strides stay as they are
        return ok;
      }
    }
  }
  return {};
}

// User-given uids must be unique; the rest get fresh ones above the largest. Room is checked
// before any uid is assigned, so ++largest cannot overflow and a failure leaves every uid as
// it was.
Result<void> assign_uids(const Tensors& tensors) {
  std::unordered_map<std::int64_t, const TensorAttributes*> by_uid;
  std::int64_t largest = 0;
  for (const auto& t : tensors) {
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
  const auto has_no_uid = [](const auto& t) { return !t->uid(); };
  const auto missing = std::ranges::count_if(tensors, has_no_uid);
  const std::int64_t room = std::numeric_limits<std::int64_t>::max() - largest;
  if (missing > room) {
    return make_error(ErrorCode::InvalidAttribute,
                      "tensor " + (*std::ranges::find_if(tensors, has_no_uid))->describe() +
                          " needs a uid, but tensor " + by_uid.at(largest)->describe() +
                          " has the largest uid, which leaves " + std::to_string(room) +
                          " above it for " + std::to_string(missing) +
                          " tensor(s) without one; set their uids or use smaller ones");
  }
  for (const auto& t : tensors) {
    if (!t->uid()) {
      t->set_uid(++largest);
    }
  }
  return {};
}

}  // namespace

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
  Produced produced;
  for (const auto& node : nodes_) {
    for (const auto& list : {&node->outputs(), &node->internals()}) {
      for (const auto& out : *list) {
        produced.insert(out.get());
      }
    }
  }
  // Graph inputs first: nodes read their dims and types.
  if (auto ok = check_graph_inputs(tensors_, produced, io_type_); !ok) {
    return ok;
  }
  if (auto ok = settle_graph_inputs(tensors_, produced, io_type_); !ok) {
    return ok;
  }
  if (auto ok = infer_nodes(nodes_, {io_type_, intermediate_type_, compute_type_}); !ok) {
    return ok;
  }
  if (auto ok = check_ragged(tensors_, produced, nodes_); !ok) {
    return ok;
  }
  if (auto ok = settle_unread_scalars(tensors_); !ok) {
    return ok;
  }
  return assign_uids(tensors_);
}

Result<LoweringSummary> Graph::lower() {
  if (auto ok = validate(); !ok) {
    return std::unexpected(ok.error());
  }
  auto lowered = detail::lower_graph(Builder::view(*this));
  if (!lowered) {
    return std::unexpected(lowered.error());
  }
  LoweringSummary summary;
  summary.tensor_count = lowered->tensors.size();
  summary.operation_count = lowered->operations.size();
  summary.all_finalized = lowered->tensors.all_finalized();
  for (const auto& op : lowered->operations) {
    summary.all_finalized = summary.all_finalized && op.operation.is_finalized();
    summary.backend_operations.emplace_back(backend::descriptor_type_name(op.operation.type()));
  }
  for (const auto& node : nodes_) {
    summary.operations.push_back(node->describe());
  }
  return summary;
}

Result<std::string> Graph::key_of_lowering(bool with_shapes) {
  if (auto ok = validate(); !ok) {
    return std::unexpected(ok.error());
  }
  return key_of_validated(with_shapes);
}

Result<std::string> Graph::key_of_validated(bool with_shapes) const {
  const backend::AttributeLog log;  // records the lowering below, on this thread
  auto lowered = detail::lower_graph(Builder::view(*this));
  if (!lowered) {
    return std::unexpected(lowered.error());
  }
  return detail::graph_key(log, {dynamic_shape_, override_shape_}, with_shapes);
}

Result<std::string> Graph::key() { return key_of_lowering(true); }

Result<std::string> Graph::topology_key() { return key_of_lowering(false); }

detail::GraphView detail::GraphBuilder::view(const Graph& g) {
  return {g.tensors_, g.nodes_, {g.io_type_, g.intermediate_type_, g.compute_type_}};
}

}  // namespace dnngraph
