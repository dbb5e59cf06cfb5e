// The three steps every build, execute and workspace path shares (internal to api/): lowering a
// graph to finalized backend tensors and operations, the operation graph over them, and the
// variant pack of one run. One helper each, so the paths cannot drift apart.
#pragma once

#include "api/error.hpp"
#include "api/tensor_attributes.hpp"
#include "backend/operation_graph.hpp"
#include "backend/variant_pack.hpp"
#include "detail/graph/override_shapes.hpp"
#include "detail/nodes/lowering.hpp"
#include "detail/nodes/node.hpp"

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

// What a built plan reads of the Graph it came from, passed at each call: a Graph may move, so
// nothing keeps a pointer to it.
struct GraphView {
  const std::vector<std::shared_ptr<TensorAttributes>>& tensors;
  const std::vector<std::unique_ptr<Node>>& nodes;
  GraphContext context;
};

struct Lowered {
  TensorTable tensors;
  std::vector<LoweredOperation> operations;
};

// Every tensor and node of the graph as finalized backend descriptors; with `layout`, the
// overridden tensors take its dims and strides (the shapes of one set of overrides).
[[nodiscard]] Result<Lowered> lower_graph(const GraphView& graph,
                                          const OverriddenTensors* layout = nullptr);

struct OperationGraphFlags {
  bool dynamic_shape = false;
  bool override_shape = false;  // the operation graph's own override flag (cuDNN >= 9.21)
};

// The finalized operation graph of lowered's operations, on `handle` unless it is null; `call`
// prefixes errors.
[[nodiscard]] Result<backend::OperationGraph> make_operation_graph(cudnnHandle_t handle,
                                                                   const Lowered& lowered,
                                                                   OperationGraphFlags flags,
                                                                   std::string_view call);

// The override lists in the type cuDNN reads (see backend/variant_pack.hpp): a copy of one
// checked set, which lives as long as every variant pack made with it.
struct OverrideLists {
  std::vector<std::int64_t> uids;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::vector<std::int64_t>> strides;

  explicit OverrideLists(const Overrides& o)
      : uids(o.uids.begin(), o.uids.end()),
        shapes(o.shapes.begin(), o.shapes.end()),
        strides(o.strides.begin(), o.strides.end()) {}

  // Whether o holds the same lists (elementwise).
  [[nodiscard]] bool equals(const Overrides& o) const;
};

// A finalized variant pack: one pointer per uid (same order), the workspace, and the override
// lists when not null (they must outlive the pack's use: cuDNN reads them at execute).
[[nodiscard]] Result<backend::VariantPack> make_variant_pack(std::span<const std::int64_t> uids,
                                                             std::span<void* const> pointers,
                                                             void* workspace,
                                                             const OverrideLists* overrides,
                                                             std::string_view call);

}  // namespace dnngraph::detail
