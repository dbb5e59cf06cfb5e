// Lowering support (internal to api/): the graph context nodes read,
// and the table of finalized backend tensors that node lowering wires operations to.
#pragma once

#include "api/error.hpp"
#include "api/tensor_attributes.hpp"
#include "api/types.hpp"
#include "backend/descriptor.hpp"
#include "backend/operation.hpp"
#include "backend/tensor.hpp"
#include "detail/cudnn/enums.hpp"

#include <cudnn.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace dnngraph::detail {

// The graph-wide defaults a node falls back to.
struct GraphContext {
  std::optional<DataType> io;
  std::optional<DataType> intermediate;
  std::optional<DataType> compute;
};

// An operation descriptor and the attribute descriptors (matmul, pointwise, ...) it was made
// from, kept alive together.
struct LoweredOperation {
  backend::Operation operation;
  std::vector<backend::Descriptor> parts;
};

// A finalized backend tensor of t kept outside any table: a second view of a uid the table
// holds (sdpa's K^T: K's uid with its last two dims and strides swapped).
// ragged_offset: the finalized offsets tensor of a ragged t (its table entry), else null.
[[nodiscard]] Result<backend::Tensor> lower_tensor(const TensorAttributes& t,
                                                   const backend::Tensor* ragged_offset);

// Finalized backend tensors by uid.
class TensorTable {
 public:
  // Creates and finalizes the backend tensor of t (which has a uid, dims, strides, data type);
  // a ragged t's offsets tensor first, where the table lacks it.
  [[nodiscard]] Result<void> add(const TensorAttributes& t);
  // nullptr if the uid is not in the table.
  [[nodiscard]] const backend::Tensor* find(std::int64_t uid) const;
  [[nodiscard]] std::size_t size() const noexcept { return tensors_.size(); }
  [[nodiscard]] bool all_finalized() const noexcept;

 private:
  std::unordered_map<std::int64_t, backend::Tensor> tensors_;
};

}  // namespace dnngraph::detail
