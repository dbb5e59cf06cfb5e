// detail::Node shared helpers.
#include "detail/nodes/node.hpp"

#include "api/layout.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <gsl/util>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

namespace dnngraph::detail {

namespace {

// A bound as people write it: "1", "0.5", not std::to_string's "1.000000".
std::string shortest(float value) {
  std::array<char, 32> text{};
  const int n = std::snprintf(text.data(), text.size(), "%g", static_cast<double>(value));
  return n > 0 ? std::string(text.data(), gsl::narrow_cast<std::size_t>(n)) : std::to_string(value);
}

}  // namespace

std::string data_type_name(const TensorAttributes& t) {
  const auto type = t.data_type();
  return type ? std::string(to_string(*type)) : std::string("none");
}

std::string Node::describe() const { return std::string(name_of(kind())) + " '" + name_ + "'"; }

Result<std::vector<std::int64_t>> Node::output_dims(
    std::span<const ShapedTensor> /*inputs*/) const {
  return make_error(ErrorCode::InvalidAttribute,
                    describe() + ": this node kind cannot check execute-time shape overrides");
}

Result<std::vector<std::vector<std::int64_t>>> Node::all_output_dims(
    std::span<const ShapedTensor> inputs) const {
  auto dims = output_dims(inputs);
  if (!dims) {
    return std::unexpected(dims.error());
  }
  if (outputs_.size() != 1 || !internals_.empty()) {
    return make_error(
        ErrorCode::InvalidAttribute,
        describe() + ": this node kind cannot check execute-time shape overrides of " +
            std::to_string(outputs_.size() + internals_.size()) + " outputs and internal tensors");
  }
  std::vector<std::vector<std::int64_t>> all;
  all.push_back(std::move(*dims));
  return all;
}

Result<std::vector<LoweredOperation>> Node::lower_all(const TensorTable& tensors,
                                                      const GraphContext& context) const {
  auto op = lower(tensors, context);
  if (!op) {
    return std::unexpected(op.error());
  }
  std::vector<LoweredOperation> ops;
  ops.push_back(std::move(*op));
  return ops;
}

Result<void> Node::check_scalar_input(const char* role, const TensorAttributes& t, std::size_t rank,
                                      float max) const {
  if (element_count(t.dim()) != 1 || t.dim().size() != rank) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": " + role + " " + t.describe() + " has dims " +
                          to_string(t.dim()) + "; it holds one value: " + std::to_string(rank) +
                          " dims of 1 (or make it with Graph::tensor(a float))");
  }
  if (t.data_type() != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType, describe() + ": " + role + " " +
                                                          t.describe() + " has data type " +
                                                          data_type_name(t) + "; it takes Float");
  }
  // epsilon is added to a variance before its inverse square root: a negative, NaN or infinite
  // one gives NaN or 0 for every output; a momentum outside [0, 1] makes the running statistics
  // diverge. A device-memory value is the caller's to check.
  if (const auto value = t.value();
      value && !(std::isfinite(*value) && *value >= 0.0F && *value <= max)) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": " + role + " " + t.describe() + " has value " +
                          std::to_string(*value) + "; it must be finite, not negative" +
                          (max < 1e30F ? " and at most " + shortest(max) : std::string()));
  }
  return {};
}

Result<void> Node::check_image_input(const char* role, const TensorAttributes& t) const {
  const std::size_t rank = t.dim().size();
  if (rank < 4 || rank > 5) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": " + role + " " + t.describe() +
                                                    " has dims " + to_string(t.dim()) + " (rank " +
                                                    std::to_string(rank) +
                                                    "); it takes rank 4 to 5 ([N, C, (D,) H, W])");
  }
  const auto type = t.data_type();
  if (type != DataType::Half && type != DataType::BFloat16 && type != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": " + role + " " + t.describe() + " has data type " +
                          data_type_name(t) + "; it takes Half, BFloat16 or Float");
  }
  return {};
}

Result<void> Node::check_channel_input(const char* role, const TensorAttributes& t,
                                       const std::vector<std::int64_t>& dims,
                                       std::string_view whose) const {
  if (t.dim() != dims) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": " + role + " " + t.describe() +
                                                    " has dims " + to_string(t.dim()) +
                                                    ", expected " + to_string(dims) + " (" +
                                                    std::string(whose) + ")");
  }
  if (t.data_type() != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType, describe() + ": " + role + " " +
                                                          t.describe() + " has data type " +
                                                          data_type_name(t) + "; it takes Float");
  }
  return {};
}

Result<void> Node::settle_statistic_output(const char* role, TensorAttributes& t,
                                           const std::vector<std::int64_t>& dims,
                                           const TensorAttributes& like,
                                           const GraphContext& context) const {
  if (!t.data_type()) {
    t.set_data_type(DataType::Float);
  }
  if (t.stride().empty() && t.dim().empty()) {
    t.set_stride(strides_like(dims, like));
  }
  if (auto ok = settle_output(t, dims, context); !ok) {
    return ok;
  }
  if (t.data_type() != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": " + role + " " + t.describe() + " has data type " +
                          data_type_name(t) + "; statistics are Float");
  }
  return {};
}

Result<void> Node::settle_output(TensorAttributes& out,
                                 const std::vector<std::int64_t>& inferred_dims,
                                 const GraphContext& context) const {
  if (out.dim().empty()) {
    out.set_dim(inferred_dims);
  } else if (out.dim() != inferred_dims) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": output " + out.describe() +
                                                    " was given dims " + to_string(out.dim()) +
                                                    ", but the inputs give " +
                                                    to_string(inferred_dims));
  }
  // Inputs fit, but M of A times N of B may not; packed_strides would overflow.
  if (!element_count(out.dim())) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": output " + out.describe() + " has dims " +
                          to_string(out.dim()) + ", whose element count does not fit in int64");
  }
  if (out.stride().empty()) {
    out.set_stride(packed_strides(out.dim()));
  } else if (out.stride().size() != out.dim().size()) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": output " + out.describe() +
                                                       " has " + std::to_string(out.dim().size()) +
                                                       " dims but " +
                                                       std::to_string(out.stride().size()) +
                                                       " strides " + to_string(out.stride()));
  }
  if (!out.data_type()) {
    if (out.is_virtual()) {
      out.set_data_type(context.intermediate.value_or(DataType::Float));
    } else if (context.io) {
      out.set_data_type(*context.io);
    } else {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": output " + out.describe() +
                            " has no data type and the graph has no io data type");
    }
  }
  return {};
}

Result<void> Node::settle_scalar_inputs(std::size_t rank) const {
  for (const TensorPtr& t : inputs_) {
    if (!t->is_pass_by_value() || !t->dim().empty() || rank == 0) {
      continue;
    }
    if (!t->stride().empty() && t->stride().size() != rank) {
      return make_error(ErrorCode::InvalidAttribute,
                        describe() + ": by-value input " + t->describe() + " has strides " +
                            to_string(t->stride()) + " (rank " +
                            std::to_string(t->stride().size()) + ") but no dims; it takes rank " +
                            std::to_string(rank) + " from this node: set " + std::to_string(rank) +
                            " strides, or none");
    }
    t->set_dim(std::vector<std::int64_t>(rank, 1));
    if (t->stride().empty()) {
      t->set_stride(std::vector<std::int64_t>(rank, 1));
    }
  }
  return {};
}

Result<void> Node::unknown_value(std::string_view attribute, std::string_view type,
                                 long long value) const {
  return make_error(ErrorCode::InvalidAttribute, describe() + ": attribute " +
                                                     std::string(attribute) + " has value " +
                                                     std::to_string(value) + ", which is no " +
                                                     std::string(type) + " enumerator");
}

Result<void> Node::check_no_compute(std::optional<DataType> own) const {
  if (!own) {
    return {};
  }
  return make_error(ErrorCode::InvalidAttribute,
                    describe() + ": compute data type " + std::string(to_string(*own)) +
                        " is set, but a " + std::string(name_of(kind())) +
                        " computes nothing; leave it unset");
}

Result<void> Node::check_not_by_value(const std::string& role, const TensorAttributes& t) const {
  if (!t.is_pass_by_value()) {
    return {};
  }
  return make_error(ErrorCode::InvalidAttribute,
                    describe() + ": " + role + " " + t.describe() +
                        " is passed by value (a host scalar); a " + std::string(name_of(kind())) +
                        " reads a tensor in device memory or a node output");
}

Result<void> Node::settle_copied_type(const std::string& role, const TensorAttributes& from,
                                      TensorAttributes& y, bool may_convert,
                                      std::string_view why) const {
  const auto type = from.data_type();
  if (!type) {  // validate() types every graph input and earlier node output first
    return make_error(ErrorCode::InvalidState,
                      describe() + ": " + role + " " + from.describe() + " has no data type");
  }
  if (!y.data_type()) {
    y.set_data_type(*type);
    return {};
  }
  if (y.data_type() != type && !may_convert) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": Y " + y.describe() + " has data type " + data_type_name(y) +
                          ", but " + role + " " + from.describe() + " has " + data_type_name(from) +
                          "; " + std::string(why));
  }
  return {};
}

Result<void> Node::check_known_compute(std::optional<DataType> own) const {
  return check_known("compute data type", "DataType", own);
}

Result<void> Node::check_float_compute(std::optional<DataType> own, const GraphContext& context,
                                       const char* why) const {
  if (auto ok = check_known_compute(own); !ok) {
    return ok;
  }
  const DataType compute = own.value_or(context.compute.value_or(DataType::Float));
  if (compute != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType, describe() + ": compute data type " +
                                                          std::string(to_string(compute)) +
                                                          " is not supported; " + why);
  }
  return {};
}

Error Node::lowering_failed(const backend::Status& status) const {
  return cudnn_error(status, "lower " + describe());
}

Result<const backend::Tensor*> Node::lowered(const TensorTable& tensors,
                                             const TensorAttributes& t) const {
  const auto uid = t.uid();
  const backend::Tensor* found = uid ? tensors.find(*uid) : nullptr;
  if (found == nullptr) {
    return make_error(ErrorCode::InvalidState,
                      describe() + ": tensor " + t.describe() + " was not lowered");
  }
  return found;
}

}  // namespace dnngraph::detail
