// Graph-wide fusion rules (internal to api/): what cuDNN's engines take of a whole graph, as
// opposed to what one node checks of its own operands. Each rule names the cuDNN version and the
// machine where the defect it avoids was measured (see docs/known-issues.md).
#pragma once

#include "api/error.hpp"
#include "api/tensor_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace dnngraph::detail {

// A graph of pointwise (and reduction) nodes alone runs on cuDNN's generic fusion engine, which
// returned success and wrong values on the H200 (cuDNN 9.19, tests/gpu/pointwise_test.cpp) for
// pointwise outputs of rank 2, and at rank 3 for an operand broadcast along two dims ([1, 1, n]
// against [2, 3, n]). Refuses those shapes with an Error naming the node, the tensor and the
// dims; graphs with a matmul, convolution or normalization follow their epilogue rules and are
// not checked here. dims_of gives a tensor's dims (its own, or execute-time overrides); context
// prefixes the message.
[[nodiscard]] Result<void> check_pointwise_only_graph(
    const std::vector<std::unique_ptr<Node>>& nodes,
    const std::function<const std::vector<std::int64_t>&(const TensorAttributes&)>& dims_of,
    std::string_view context);

}  // namespace dnngraph::detail
