// Checks of execute-time shape overrides.
#include "detail/graph/override_shapes.hpp"

#include "detail/common/checked.hpp"
#include "detail/common/in_order.hpp"
#include "detail/graph/fusion_rules.hpp"

#include <algorithm>
#include <string>

namespace dnngraph::detail {

namespace {

std::string at(std::size_t index, const TensorAttributes& t) {
  return "override " + std::to_string(index) + " (tensor " + t.describe() + ")";
}

// The override's dims and strides have the tensor's rank.
Result<void> check_rank(std::size_t index, const TensorAttributes& t,
                        const std::vector<std::int64_t>& dims,
                        const std::vector<std::int64_t>& strides) {
  const std::size_t rank = t.dim().size();
  if (dims.size() != rank) {
    return make_error(ErrorCode::ShapeMismatch, at(index, t) + ": shape " + to_string(dims) +
                                                    " has rank " + std::to_string(dims.size()) +
                                                    ", the tensor has rank " +
                                                    std::to_string(rank));
  }
  if (strides.size() != rank) {
    return make_error(ErrorCode::ShapeMismatch, at(index, t) + ": strides " + to_string(strides) +
                                                    " have rank " + std::to_string(strides.size()) +
                                                    ", the tensor has rank " +
                                                    std::to_string(rank));
  }
  return {};
}

// The plan was built for the build strides' layout (row-major, channels-last, ...): the
// override may change sizes, not the order of the dims in memory.
Result<void> check_dim_order(std::size_t index, const TensorAttributes& t,
                             const std::vector<std::int64_t>& dims,
                             const std::vector<std::int64_t>& strides) {
  const auto order = stride_order(dims, strides);
  const auto build_order = stride_order(t.dim(), t.stride());
  const auto common = [&](const std::vector<std::size_t>& o) {
    std::vector<std::size_t> kept;
    for (std::size_t d : o) {
      if (dims[d] != 1 && t.dim()[d] != 1) {
        kept.push_back(d);
      }
    }
    return kept;
  };
  if (common(order) != common(build_order)) {
    return make_error(ErrorCode::InvalidAttribute,
                      at(index, t) + ": strides " + to_string(strides) +
                          " order the dims differently from the build strides " +
                          to_string(t.stride()) + "; an override may change sizes, not layout");
  }
  return {};
}

// The plan was built for this tensor's alignment: cuDNN's vectorized kernels assume every
// row that started on a 16-byte boundary still does. An override that breaks that (a row of
// 33 fp16 values, say) could run and return wrong numbers, so it is refused. The byte sizes
// fit in int64: check_layout checked the override's, validate() the build strides'.
Result<void> check_alignment(std::size_t index, const TensorAttributes& t,
                             const std::vector<std::int64_t>& dims,
                             const std::vector<std::int64_t>& strides, std::int64_t element) {
  constexpr std::int64_t alignment = 16;
  for (std::size_t i = 0; i < t.dim().size(); ++i) {
    const auto build_bytes = checked_mul(t.stride()[i], element);
    const auto bytes = checked_mul(strides[i], element);
    if (!build_bytes || !bytes) {
      return make_error(
          ErrorCode::InvalidAttribute,
          at(index, t) + ": stride " + std::to_string(i) + " in bytes does not fit in int64");
    }
    const bool was_aligned = *build_bytes % alignment == 0;
    if (was_aligned && dims[i] > 1 && *bytes % alignment != 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        at(index, t) + ": stride " + std::to_string(i) + " is " +
                            std::to_string(strides[i]) + " (" + std::to_string(*bytes) +
                            " bytes), but the plan was built with it a multiple of " +
                            std::to_string(alignment) + " bytes (build stride " +
                            std::to_string(t.stride()[i]) + "); pad the rows");
    }
  }
  return {};
}

// The same rule as the build shapes (validate() used it on the tensor's own dims and strides).
Result<void> check_layout_rule(std::size_t index, const TensorAttributes& t,
                               const std::vector<std::int64_t>& dims,
                               const std::vector<std::int64_t>& strides, std::int64_t element) {
  if (auto ok = detail::check_layout(dims, strides, element); !ok) {
    return make_error(ok.error().code, at(index, t) + ": " + ok.error().message);
  }
  return {};
}

// An override's dims and strides for t: its rank, the layout rule, the build's order of the dims
// in memory, the build's alignment.
Result<void> check_layout(std::size_t index, const TensorAttributes& t,
                          const std::vector<std::int64_t>& dims,
                          const std::vector<std::int64_t>& strides) {
  const auto type = t.data_type();
  const std::int64_t element = type ? size_of(*type) : 1;
  return in_order([&] { return check_rank(index, t, dims, strides); },
                  [&] { return check_layout_rule(index, t, dims, strides, element); },
                  [&] { return check_dim_order(index, t, dims, strides); },
                  [&] { return check_alignment(index, t, dims, strides, element); });
}

// The three lists have one entry per override.
Result<void> check_lengths(const Overrides& overrides) {
  const std::size_t n = overrides.uids.size();
  if (overrides.shapes.size() != n || overrides.strides.size() != n) {
    return make_error(ErrorCode::InvalidAttribute,
                      "overrides: the lists differ in length: " + std::to_string(n) + " uids, " +
                          std::to_string(overrides.shapes.size()) + " shapes, " +
                          std::to_string(overrides.strides.size()) + " strides");
  }
  return {};
}

// What the listed overrides give: each listed tensor's layout, and each listed uid's index in
// the lists.
struct Listed {
  OverriddenTensors layout;
  std::unordered_map<std::int64_t, std::size_t> seen;
};

// The tensor override `index` names: one of the graph's, with device memory and more than one
// value, listed once.
Result<const TensorAttributes*> listed_tensor(
    std::size_t index, std::int64_t uid,
    const std::unordered_map<std::int64_t, const TensorAttributes*>& by_uid,
    std::unordered_map<std::int64_t, std::size_t>& seen) {
  auto it = by_uid.find(uid);
  if (it == by_uid.end()) {
    return make_error(ErrorCode::MissingTensor, "override " + std::to_string(index) + ": uid " +
                                                    std::to_string(uid) +
                                                    " is no tensor of this graph");
  }
  const TensorAttributes& t = *it->second;
  if (t.is_virtual()) {
    return make_error(ErrorCode::InvalidAttribute,
                      at(index, t) +
                          ": the tensor is virtual; only tensors with device memory "
                          "(inputs and outputs) take overrides");
  }
  if (t.is_pass_by_value()) {
    return make_error(ErrorCode::InvalidAttribute,
                      at(index, t) +
                          ": the tensor is passed by value (one value); it takes no "
                          "override");
  }
  if (auto [prev, fresh] = seen.emplace(uid, index); !fresh) {
    return make_error(ErrorCode::InvalidAttribute, at(index, t) + ": uid " + std::to_string(uid) +
                                                       " is listed twice (overrides " +
                                                       std::to_string(prev->second) + " and " +
                                                       std::to_string(index) + ")");
  }
  return &t;
}

// Each override in turn: its tensor, then its layout against the tensor's.
Result<Listed> check_listed(const Overrides& overrides,
                            const std::vector<std::shared_ptr<TensorAttributes>>& tensors) {
  std::unordered_map<std::int64_t, const TensorAttributes*> by_uid;
  for (const auto& t : tensors) {
    if (const auto uid = t->uid()) {
      by_uid.emplace(*uid, t.get());
    }
  }
  Listed listed;
  listed.layout.reserve(tensors.size());
  for (std::size_t i = 0; i < overrides.uids.size(); ++i) {
    auto t = listed_tensor(i, overrides.uids[i], by_uid, listed.seen);
    if (!t) {
      return std::unexpected(t.error());
    }
    if (auto ok = check_layout(i, **t, overrides.shapes[i], overrides.strides[i]); !ok) {
      return std::unexpected(ok.error());
    }
    listed.layout[*t] = {overrides.shapes[i], overrides.strides[i]};
  }
  return listed;
}

// Ragged offsets hold one start per batch, plus the end: no node sees them as an input, and
// an override of a ragged tensor may not change its batch, so they keep their build dims.
Result<void> check_ragged_offsets(const std::vector<std::shared_ptr<TensorAttributes>>& tensors,
                                  const OverriddenTensors& layout) {
  for (const auto& t : tensors) {
    const auto offsets = t->ragged_offset();
    if (!offsets) {
      continue;
    }
    if (auto it = layout.find(offsets.get());
        it != layout.end() && it->second.dims != offsets->dim()) {
      return make_error(ErrorCode::ShapeMismatch,
                        "overrides: " + offsets->describe() + " (the ragged offsets of " +
                            t->describe() + ") is overridden to " + to_string(it->second.dims) +
                            ", built " + to_string(offsets->dim()) +
                            "; ragged offsets keep their build dims");
    }
  }
  return {};
}

// Tensors not listed keep their build layout; node outputs follow the inference.
const OverriddenLayout& layout_of(OverriddenTensors& layout, const TensorAttributes& t) {
  auto [it, inserted] = layout.try_emplace(&t);
  if (inserted) {
    it->second = {t.dim(), t.stride()};
  }
  return it->second;
}

// One tensor a node makes under the overrides: its inferred dims must fit (each input fits,
// but what a node makes of them may not: M of A times N of B, whose strides would overflow); a
// virtual one takes them, a tensor with memory must have them (overridden or at build).
Result<void> settle_override_output(const Node& node, const TensorAttributes& out,
                                    const std::vector<std::int64_t>& inferred, Listed& listed) {
  const auto out_type = out.data_type();
  if (auto ok = detail::check_layout(inferred, {}, out_type ? size_of(*out_type) : 1); !ok) {
    return make_error(ok.error().code, "overrides: " + node.describe() + " makes output " +
                                           out.describe() + " " + to_string(inferred) + ": " +
                                           ok.error().message);
  }
  if (out.is_virtual()) {
    listed.layout[&out] = {inferred, out.stride().size() == inferred.size()
                                         ? strides_like(inferred, out)
                                         : packed_strides(inferred)};
    return {};
  }
  const OverriddenLayout& given = layout_of(listed.layout, out);
  if (given.dims != inferred) {
    const auto uid = out.uid();
    const bool was_listed = uid && listed.seen.contains(*uid);
    return make_error(ErrorCode::ShapeMismatch,
                      "overrides: " + node.describe() + " makes output " + out.describe() + " " +
                          to_string(inferred) + ", but " +
                          (was_listed ? "its override is " + to_string(given.dims)
                                      : "it keeps its build dims " + to_string(given.dims) +
                                            " (it is not overridden; override it too)"));
  }
  return {};
}

// A node's outputs and internal tensors under the overrides, inferred from its inputs' layouts.
Result<void> settle_node_outputs(const Node& node, Listed& listed) {
  std::vector<ShapedTensor> shaped;
  for (const auto& input : node.inputs()) {
    const OverriddenLayout& given = layout_of(listed.layout, *input);
    shaped.push_back({input.get(), &given.dims, &given.strides});
  }
  auto inferred = node.all_output_dims(shaped);
  if (!inferred) {
    return make_error(inferred.error().code, "overrides: " + inferred.error().message);
  }
  std::vector<const TensorAttributes*> made;
  for (const auto& t : node.outputs()) {
    made.push_back(t.get());
  }
  for (const auto& t : node.internals()) {
    made.push_back(t.get());
  }
  if (inferred->size() != made.size()) {
    return make_error(ErrorCode::InvalidState, "overrides: " + node.describe() + " inferred " +
                                                   std::to_string(inferred->size()) +
                                                   " shapes for " + std::to_string(made.size()) +
                                                   " outputs and internal tensors");
  }
  for (std::size_t i = 0; i < made.size(); ++i) {
    if (auto ok = settle_override_output(node, *made[i], (*inferred)[i], listed); !ok) {
      return ok;
    }
  }
  return {};
}

// Every node in graph order, each reading the layouts its producers settled.
Result<void> settle_nodes(const std::vector<std::unique_ptr<Node>>& nodes, Listed& listed) {
  for (const auto& node : nodes) {
    if (auto ok = settle_node_outputs(*node, listed); !ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace

Result<OverriddenTensors> check_overrides(
    const Overrides& overrides, const std::vector<std::shared_ptr<TensorAttributes>>& tensors,
    const std::vector<std::unique_ptr<Node>>& nodes) {
  if (auto ok = check_lengths(overrides); !ok) {
    return std::unexpected(ok.error());
  }
  auto listed = check_listed(overrides, tensors);
  if (!listed) {
    return std::unexpected(listed.error());
  }
  const auto dims_of = [&](const TensorAttributes& t) -> const std::vector<std::int64_t>& {
    return layout_of(listed->layout, t).dims;
  };
  auto ok = in_order([&] { return check_ragged_offsets(tensors, listed->layout); },
                     [&] { return settle_nodes(nodes, *listed); },
                     [&] { return check_pointwise_only_graph(nodes, dims_of, "overrides: "); });
  if (!ok) {
    return std::unexpected(ok.error());
  }
  return std::move(listed->layout);
}

}  // namespace dnngraph::detail
