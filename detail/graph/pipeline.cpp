// Lowering, operation graph and variant pack: the steps every path shares.
#include "detail/graph/pipeline.hpp"

#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <algorithm>
#include <unordered_set>

namespace dnngraph::detail {

Result<Lowered> lower_graph(const GraphView& graph, const OverriddenTensors* layout) {
  Lowered lowered;
  std::unordered_set<const TensorAttributes*> in_workspace;
  for (const auto& node : graph.nodes) {
    for (const TensorAttributes* t : node->workspace_tensors()) {
      in_workspace.insert(t);
    }
  }
  for (const auto& t : graph.tensors) {
    auto it = layout != nullptr ? layout->find(t.get()) : OverriddenTensors::const_iterator{};
    const bool shaped_again = layout != nullptr && it != layout->end();
    if (!shaped_again && !in_workspace.contains(t.get())) {
      if (auto ok = lowered.tensors.add(*t); !ok) {
        return std::unexpected(ok.error());
      }
      continue;
    }
    TensorAttributes shaped = *t;
    if (shaped_again) {
      shaped.set_dim(it->second.dims).set_stride(it->second.strides);
    }
    if (in_workspace.contains(t.get())) {
      shaped.set_is_virtual(false);  // virtual to the user, memory in the workspace to cuDNN
    }
    if (auto ok = lowered.tensors.add(shaped); !ok) {
      return std::unexpected(ok.error());
    }
  }
  for (const auto& node : graph.nodes) {
    auto ops = node->lower_all(lowered.tensors, graph.context);
    if (!ops) {
      return std::unexpected(ops.error());
    }
    for (auto& op : *ops) {
      lowered.operations.push_back(std::move(op));
    }
  }
  return lowered;
}

Result<backend::OperationGraph> make_operation_graph(cudnnHandle_t handle, const Lowered& lowered,
                                                     OperationGraphFlags flags,
                                                     std::string_view call) {
  // The message is made on failure only, like the variant pack's below.
  const auto fail = [call](const backend::Status& status) {
    return std::unexpected(cudnn_error(status, std::string(call) + ": operation graph"));
  };
  auto op_graph = backend::OperationGraph::create();
  if (!op_graph) {
    return fail(op_graph.error());
  }
  std::vector<const backend::Operation*> ops;
  ops.reserve(lowered.operations.size());
  for (const auto& op : lowered.operations) {
    ops.push_back(&op.operation);
  }
  // Without a handle (a build's GPU-free phases, detail::bind_topology) none is set: cuDNN 9.19
  // refuses a null one and finalizes the graph without.
  // backend::Feature::OverrideShapeFlag: the caller asks for it only where available().
  auto ok = in_order(
      when(handle != nullptr, [&] { return op_graph->set_handle(handle); }),
      [&] { return op_graph->set_ops(ops); },
      when(flags.dynamic_shape, [&] { return op_graph->set_dynamic_shape_enabled(true); }),
      when(flags.override_shape, [&] { return op_graph->set_override_shape_enabled(true); }),
      [&] { return op_graph->finalize(); });
  if (!ok) {
    return fail(ok.error());
  }
  return std::move(*op_graph);
}

bool OverrideLists::equals(const Overrides& o) const {
  return std::ranges::equal(uids, o.uids) && std::ranges::equal(shapes, o.shapes) &&
         std::ranges::equal(strides, o.strides);
}

Result<backend::VariantPack> make_variant_pack(std::span<const std::int64_t> uids,
                                               std::span<void* const> pointers, void* workspace,
                                               const OverrideLists* overrides,
                                               std::string_view call) {
  // The message is made on failure only: execute() passes here on every run.
  const auto fail = [call](const backend::Status& status) {
    return std::unexpected(cudnn_error(status, std::string(call) + ": variant pack"));
  };
  auto pack = backend::VariantPack::create();
  if (!pack) {
    return fail(pack.error());
  }
  // backend::Feature::VariantPackOverrides: Graph::build refuses overrides where it is missing.
  auto ok = in_order(
      [&] { return pack->set_unique_ids(uids); }, [&] { return pack->set_data_pointers(pointers); },
      [&] { return pack->set_workspace(workspace); },
      when(overrides != nullptr,
           [&] {
             return in_order([&] { return pack->set_override_unique_ids(overrides->uids); },
                             [&] { return pack->set_override_shapes(overrides->shapes); },
                             [&] { return pack->set_override_strides(overrides->strides); });
           }),
      [&] { return pack->finalize(); });
  if (!ok) {
    return fail(ok.error());
  }
  return std::move(*pack);
}

}  // namespace dnngraph::detail
