// TensorAttributes: what the user says about a tensor (uid, name, dims, strides, type, virtual).
// Plain data with chainable setters; the Graph checks it in validate()/build().
#pragma once

#include "api/error.hpp"
#include "api/layout.hpp"
#include "api/types.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dnngraph {

namespace detail {
struct GraphBuilder;
}  // namespace detail

class Graph;

// Shares ownership with itself (enable_shared_from_this) so that a binding handing the same
// tensor back as a std::shared_ptr (nanobind does, through weak_from_this) keeps one control
// block: weak references such as ragged offsets then stay valid.
class TensorAttributes : public std::enable_shared_from_this<TensorAttributes> {
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
    int_value_.reset();
    ++revision_;
    return *this;
  }
  // An Int64 scalar passed by value, as set_value (e.g. bn_finalize's accumulation count).
  // Graph::int64_scalar(value) makes one.
  TensorAttributes& set_int_value(std::int64_t value) {
    int_value_ = value;
    value_.reset();
    ++revision_;
    return *this;
  }

  // A packed variable-length (ragged, "THD") tensor: dims [b, h, s_max, d] with strides of its
  // token-major memory ([., d, h * d, 1]), where batch i starts at element offsets[i] (Int32 or
  // Int64 [b + 1, 1, 1, 1], a graph input in device memory: the exclusive prefix sum of the
  // batch's lengths times h * d; the last entry is the total). Attention nodes only, with their
  // padding mask (seq_len_q / seq_len_kv say each batch's length). Held weakly (the graph owns
  // its tensors, and a tensor made its own offsets must not keep itself alive); offsets that no
  // longer exist are an error at validate(), never a tensor silently read as packed.
  TensorAttributes& set_ragged_offset(const std::shared_ptr<TensorAttributes>& offsets) {
    ragged_offset_ = offsets;
    is_ragged_ = offsets != nullptr;
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
  [[nodiscard]] std::optional<std::int64_t> int_value() const noexcept { return int_value_; }
  [[nodiscard]] bool is_pass_by_value() const noexcept {
    return value_.has_value() || int_value_.has_value();
  }
  // The offsets, or null (not ragged, or the offsets were destroyed: see is_ragged()).
  [[nodiscard]] std::shared_ptr<TensorAttributes> ragged_offset() const noexcept {
    return ragged_offset_.lock();
  }
  [[nodiscard]] bool is_ragged() const noexcept { return is_ragged_; }

  // "'A' (uid 1)" or "'A' (no uid yet)", for error messages. An unnamed tensor is described by
  // where its graph uses it: "input A of node #3 (matmul 'matmul_3') (no uid yet)".
  [[nodiscard]] std::string describe() const;

 private:
  // The Graph fills in what validation infers (dims, strides, type, uid) and takes it back
  // before the next validation or after a failed one: see Graph::validate.
  friend class Graph;
  friend struct detail::GraphBuilder;  // labels the tensors a node builder adds or reads

  std::string name_;
  std::optional<std::int64_t> uid_;
  std::vector<std::int64_t> dims_;
  std::vector<std::int64_t> strides_;
  std::optional<DataType> data_type_;
  bool is_virtual_ = false;
  std::optional<float> value_;
  std::optional<std::int64_t> int_value_;
  std::weak_ptr<TensorAttributes> ragged_offset_;
  bool is_ragged_ = false;
  // Set by the Graph, not the user: where the graph uses this tensor, for describe() when the
  // tensor has no name. from_node: a node already gave it (the first node to use it wins).
  std::string label_;
  bool label_from_node_ = false;
  // Counts the changes made through the setters, so the Graph can tell that a tensor was
  // changed after validate() (its checks then no longer hold).
  std::uint64_t revision_ = 0;
};

}  // namespace dnngraph
