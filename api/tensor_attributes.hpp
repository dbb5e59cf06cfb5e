// TensorAttributes: what the user says about a tensor (uid, name, dims, strides, type, virtual).
// Plain data with chainable setters; the Graph checks it in validate()/build().
#pragma once

#include "api/error.hpp"
#include "api/types.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dnngraph {

class Graph;

class TensorAttributes {
 public:
  TensorAttributes& set_name(std::string name) {
    name_ = std::move(name);
    ++revision_;
    return *this;
  }
  TensorAttributes& set_uid(std::int64_t uid) {
    uid_ = uid;
    ++revision_;
    return *this;
  }
  TensorAttributes& set_dim(std::vector<std::int64_t> dims) {
    dims_ = std::move(dims);
    ++revision_;
    return *this;
  }
  TensorAttributes& set_stride(std::vector<std::int64_t> strides) {
    strides_ = std::move(strides);
    ++revision_;
    return *this;
  }
  TensorAttributes& set_data_type(DataType type) {
    data_type_ = type;
    ++revision_;
    return *this;
  }
  // A virtual tensor lives only inside the fused kernel: it has no device memory.
  TensorAttributes& set_is_virtual(bool is_virtual) {
    is_virtual_ = is_virtual;
    ++revision_;
    return *this;
  }
  // An output is a non-virtual node result the user reads back.
  TensorAttributes& set_output(bool is_output) { return set_is_virtual(!is_output); }
  // A scalar passed by value (CUDNN_ATTR_TENSOR_IS_BY_VALUE): a Float graph input that cuDNN
  // reads from host memory the built graph keeps. It has no device buffer and stays out of the
  // variant pack; its dims, unless set, are 1s of the rank of the first node that reads it. The
  // value is taken at build(): change it, build again. Graph::tensor(float) makes one.
  TensorAttributes& set_value(float value) {
    value_ = value;
    ++revision_;
    return *this;
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::optional<std::int64_t> uid() const noexcept { return uid_; }
  [[nodiscard]] const std::vector<std::int64_t>& dim() const noexcept { return dims_; }
  [[nodiscard]] const std::vector<std::int64_t>& stride() const noexcept { return strides_; }
  [[nodiscard]] std::optional<DataType> data_type() const noexcept { return data_type_; }
  [[nodiscard]] bool is_virtual() const noexcept { return is_virtual_; }
  [[nodiscard]] std::optional<float> value() const noexcept { return value_; }
  [[nodiscard]] bool is_pass_by_value() const noexcept { return value_.has_value(); }

  // "'A' (uid 1)" or "'A' (no uid yet)", for error messages. An unnamed tensor is described by
  // where its graph uses it: "input A of node #3 (matmul 'matmul_3') (no uid yet)".
  [[nodiscard]] std::string describe() const;

 private:
  // The Graph fills in what validation infers (dims, strides, type, uid) and takes it back
  // before the next validation or after a failed one: see Graph::validate.
  friend class Graph;

  std::string name_;
  std::optional<std::int64_t> uid_;
  std::vector<std::int64_t> dims_;
  std::vector<std::int64_t> strides_;
  std::optional<DataType> data_type_;
  bool is_virtual_ = false;
  std::optional<float> value_;
  // Set by the Graph, not the user: where the graph uses this tensor, for describe() when the
  // tensor has no name. from_node: a node already gave it (the first node to use it wins).
  std::string label_;
  bool label_from_node_ = false;
  // Counts the changes made through the setters, so the Graph can tell that a tensor was
  // changed after validate() (its checks then no longer hold).
  std::uint64_t revision_ = 0;
};

// Packed row-major strides for dims: the last dimension is contiguous. Needs dims whose
// element_count() fits in int64.
[[nodiscard]] std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims);

// Packed channels-last strides for dims [N, C, spatial...] (NHWC, NDHWC): C is contiguous, then
// the spatial dims from last to first, then N. Fewer than 3 dims: packed_strides(dims). Needs
// dims whose element_count() fits in int64.
[[nodiscard]] std::vector<std::int64_t> channels_last_strides(
    const std::vector<std::int64_t>& dims);

// The product of dims, or nullopt where a dim is not positive or the product does not fit in
// int64.
[[nodiscard]] std::optional<std::int64_t> element_count(const std::vector<std::int64_t>& dims);

// The most dims a tensor may have: cuDNN's CUDNN_DIM_MAX (8 in cuDNN 9.19's cudnn_graph.h).
inline constexpr std::size_t max_rank = 8;

namespace detail {

// The one rule for what dims and strides may describe, for the shapes validate() checks and
// for execute-time overrides alike: rank 1 to max_rank; positive dims whose element count fits
// in int64; and, with strides, one positive stride per dim, each stride and the extent (the
// span from the first element to one past the last) in bytes within int64, and strides that
// nest (ordered by stride, each dim's stride covers all of the dims inside it), so no two
// elements share memory. Empty strides: the dims alone are checked (their packed strides are
// then legal). The message has no subject: callers put the tensor or the override in front.
// The dims whose extent is not 1, ordered from outermost to innermost by stride (ties in index
// order): the memory order check_layout judges nesting in, and overrides must keep.
[[nodiscard]] std::vector<std::size_t> stride_order(std::span<const std::int64_t> dims,
                                                    std::span<const std::int64_t> strides);

[[nodiscard]] Result<void> check_layout(std::span<const std::int64_t> dims,
                                        std::span<const std::int64_t> strides,
                                        std::int64_t element_size);

}  // namespace detail

// "[2, 3, 4]" for error messages.
[[nodiscard]] std::string to_string(const std::vector<std::int64_t>& values);

}  // namespace dnngraph
