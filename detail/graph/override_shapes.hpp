// Execute-time shape overrides (internal to api/): the checks every override list passes before
// cuDNN sees it, and the shapes every tensor of the graph then has.
#pragma once

#include "api/error.hpp"
#include "api/tensor_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace dnngraph::detail {

// The override lists of one execute / get_workspace_size call, as the user passed them.
struct Overrides {
  std::span<const std::int64_t> uids;
  std::span<const std::vector<std::int64_t>> shapes;
  std::span<const std::vector<std::int64_t>> strides;

  // No overrides at all. Shapes or strides given without uids are overrides too (lists of
  // different lengths, refused), never a call at the build shapes.
  [[nodiscard]] bool empty() const noexcept {
    return uids.empty() && shapes.empty() && strides.empty();
  }
};

// Dims and strides of every tensor under one set of overrides.
struct OverriddenLayout {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
};
using OverriddenTensors = std::unordered_map<const TensorAttributes*, OverriddenLayout>;

// Checks the lists (equal lengths; each uid a non-virtual tensor of the graph, listed once; the
// tensor's rank; positive dims and strides; strides that order the dims as the build strides do
// and do not overlap), then infers every node's output from the overridden inputs: an output
// that is not overridden must keep its build dims, an overridden one must match the inference.
// Each violation is its own Error naming the index, the uid and the values.
[[nodiscard]] Result<OverriddenTensors> check_overrides(
    const Overrides& overrides, const std::vector<std::shared_ptr<TensorAttributes>>& tensors,
    const std::vector<std::unique_ptr<Node>>& nodes);

}  // namespace dnngraph::detail
