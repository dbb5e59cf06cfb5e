// Graph-wide fusion rules.
#include "detail/graph/fusion_rules.hpp"

namespace dnngraph::detail {

Result<void> check_pointwise_only_graph(
    const std::vector<std::unique_ptr<Node>>& nodes,
    const std::function<const std::vector<std::int64_t>&(const TensorAttributes&)>& dims_of,
    std::string_view context) {
  for (const auto& node : nodes) {
    if (node->kind() != NodeKind::Pointwise && node->kind() != NodeKind::Reduction) {
      return {};  // a fusion behind a matmul, convolution or normalization: its epilogue rules
    }
  }
  for (const auto& node : nodes) {
    if (node->kind() != NodeKind::Pointwise) {
      continue;
    }
    const TensorAttributes& y = *node->outputs()[0];
    const std::vector<std::int64_t>& y_dims = dims_of(y);
    if (y_dims.size() < 3) {
      return make_error(ErrorCode::ShapeMismatch,
                        std::string(context) + node->describe() + ": output " + y.describe() +
                            " has dims " + to_string(y_dims) + " (rank " +
                            std::to_string(y_dims.size()) +
                            "); in a graph of pointwise nodes alone cuDNN takes rank 3 to 5 "
                            "(rank 2 left most of Y unwritten, measured with cuDNN 9.19 on an "
                            "H200): add a leading dim of 1");
    }
    if (y_dims.size() != 3) {
      continue;
    }
    for (const auto& input : node->inputs()) {
      if (input->is_pass_by_value()) {
        continue;  // a host scalar, broadcast right at any rank (measured)
      }
      const std::vector<std::int64_t>& dims = dims_of(*input);
      int broadcast = 0;
      for (std::size_t i = 0; i < y_dims.size(); ++i) {
        broadcast += dims[i] != y_dims[i] ? 1 : 0;
      }
      if (broadcast > 1) {
        return make_error(
            ErrorCode::ShapeMismatch,
            std::string(context) + node->describe() + ": " + input->describe() + " has dims " +
                to_string(dims) + " and broadcasts to " + to_string(y_dims) + " along " +
                std::to_string(broadcast) +
                " dims; in a graph of pointwise nodes alone cuDNN computes that wrong at rank 3 "
                "(measured with cuDNN 9.19 on an H200: wrong values from the second batch on). "
                "Broadcast along one dim, give the operand the full dims, or use rank 4 "
                "(channels-last, where cuDNN broadcasts [1, C, 1, 1] right)");
      }
    }
  }
  return {};
}

}  // namespace dnngraph::detail
