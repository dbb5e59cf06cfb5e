// Slice node: Y = X[start:limit:stride] in each dim, cuDNN's slice operation (cuDNN >= 9.22,
// backend::Feature::SliceOperation; below it the build is refused: see slice.cpp for why
// cudnn-frontend's older path, a view of X at an offset pointer, is not taken).
#pragma once

#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <string>

namespace dnngraph::detail {

class SliceNode final : public Node {
 public:
  SliceNode(SliceAttributes attributes, TensorPtr x, TensorPtr y)
      : Node(attributes.name(), {std::move(x)}, {std::move(y)}),
        attributes_(std::move(attributes)) {}

  [[nodiscard]] NodeKind kind() const noexcept override { return NodeKind::Slice; }
  // Checks one {start, limit} pair and one positive stride per dim of X, each slice within X and
  // not empty, then settles Y: ceil((limit - start) / stride) per dim, packed in X's memory
  // order, X's data type. output_dims() keeps the default refusal: the slice is fixed at build.
  [[nodiscard]] Result<void> infer(const GraphContext& context) override;
  // VersionTooOld below cuDNN 9.22, naming the graph input that holds the same elements.
  [[nodiscard]] Result<LoweredOperation> lower(const TensorTable& tensors,
                                               const GraphContext& context) const override;

 private:
  // The {start, limit} pair and stride of each dim, checked against X.
  [[nodiscard]] Result<void> check_ranges() const;
  // The stride of dim d (1 where the user set none).
  [[nodiscard]] std::int64_t step(std::size_t d) const;
  // Below cuDNN 9.22: how a user gets the same elements without the operation, where X is in
  // memory ("" where it is virtual).
  [[nodiscard]] std::string view_hint() const;

  SliceAttributes attributes_;
};

}  // namespace dnngraph::detail
