// TensorAttributes helpers.
#include "api/tensor_attributes.hpp"

#include <limits>

namespace dnngraph {

std::string TensorAttributes::describe() const {
  std::string out = "'" + name_ + "'";
  out += uid_ ? " (uid " + std::to_string(*uid_) + ")" : std::string(" (no uid yet)");
  return out;
}

std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i > 1; --i) {
    strides[i - 2] = strides[i - 1] * dims[i - 1];
  }
  return strides;
}

std::vector<std::int64_t> channels_last_strides(const std::vector<std::int64_t>& dims) {
  if (dims.size() < 3) {
    return packed_strides(dims);
  }
  std::vector<std::int64_t> strides(dims.size(), 1);
  std::int64_t step = dims[1];
  for (std::size_t i = dims.size(); i-- > 2;) {
    strides[i] = step;
    step *= dims[i];
  }
  strides[0] = step;
  return strides;
}

std::optional<std::int64_t> element_count(const std::vector<std::int64_t>& dims) {
  std::int64_t count = 1;
  for (const std::int64_t d : dims) {
    if (d <= 0 || count > std::numeric_limits<std::int64_t>::max() / d) {
      return std::nullopt;
    }
    count *= d;
  }
  return count;
}

std::string to_string(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  }
  return out + "]";
}

}  // namespace dnngraph
