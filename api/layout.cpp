// Layouts: strides, element counts and the one rule for legal layouts.
#include "api/layout.hpp"

#include "api/tensor_attributes.hpp"
#include "detail/common/checked.hpp"

#include <cudnn_graph.h>

#include <algorithm>
#include <limits>

namespace dnngraph {

static_assert(max_rank == CUDNN_DIM_MAX, "max_rank follows the cuDNN headers built against");

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
  std::optional<std::int64_t> count = 1;
  for (const std::int64_t d : dims) {
    if (d <= 0) {
      return std::nullopt;
    }
    count = detail::checked_mul(*count, d);
    if (!count) {
      return std::nullopt;
    }
  }
  return count;
}

namespace {

std::string list(std::span<const std::int64_t> values) {
  return to_string(std::vector<std::int64_t>(values.begin(), values.end()));
}

}  // namespace

namespace detail {

std::vector<std::size_t> stride_order(std::span<const std::int64_t> dims,
                                      std::span<const std::int64_t> strides) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 1) {
      order.push_back(i);
    }
  }
  // std::stable_sort trips a libstdc++ 12 deprecation; the index breaks ties instead.
  std::ranges::sort(order, [&](std::size_t a, std::size_t b) {
    return strides[a] != strides[b] ? strides[a] > strides[b] : a < b;
  });
  return order;
}

Result<void> check_layout(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                          std::int64_t element_size) {
  if (dims.empty() || dims.size() > max_rank) {
    return make_error(ErrorCode::InvalidAttribute,
                      "dims " + list(dims) + " have rank " + std::to_string(dims.size()) +
                          "; a tensor has 1 to " + std::to_string(max_rank) +
                          " dims (cuDNN's CUDNN_DIM_MAX)");
  }
  std::optional<std::int64_t> count = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        "dim " + std::to_string(i) + " is " + std::to_string(dims[i]) +
                            "; dims must be positive (dims " + list(dims) + ")");
    }
    count = count ? checked_mul(*count, dims[i]) : std::nullopt;
  }
  const std::int64_t size = std::max<std::int64_t>(element_size, 1);
  if (!count || !checked_mul(*count, size)) {
    return make_error(ErrorCode::InvalidAttribute,
                      "dims " + list(dims) + " have an element count (" + std::to_string(size) +
                          " byte(s) each) that does not fit in int64");
  }
  if (strides.empty()) {
    return {};
  }
  if (strides.size() != dims.size()) {
    return make_error(ErrorCode::InvalidAttribute,
                      std::to_string(dims.size()) + " dims " + list(dims) + " but " +
                          std::to_string(strides.size()) + " strides " + list(strides) +
                          "; give one stride per dim");
  }
  // The offset of the last element, in elements: sum of (dim - 1) * stride.
  std::optional<std::int64_t> last = 0;
  for (std::size_t i = 0; i < strides.size(); ++i) {
    if (strides[i] <= 0) {
      return make_error(ErrorCode::InvalidAttribute,
                        "stride " + std::to_string(i) + " is " + std::to_string(strides[i]) +
                            "; strides must be positive (strides " + list(strides) + ")");
    }
    if (!checked_mul(strides[i], size)) {
      return make_error(ErrorCode::InvalidAttribute,
                        "stride " + std::to_string(i) + " is " + std::to_string(strides[i]) +
                            ", which in bytes (" + std::to_string(size) +
                            " byte(s) each) does not fit in int64");
    }
    last = last ? checked_mul_add(dims[i] - 1, strides[i], *last) : std::nullopt;
  }
  const auto extent = last ? checked_add(*last, 1) : std::nullopt;
  if (!extent || !checked_mul(*extent, size)) {
    return make_error(ErrorCode::InvalidAttribute, "dims " + list(dims) + " with strides " +
                                                       list(strides) +
                                                       " span more bytes than int64 can count");
  }
  const std::vector<std::size_t> order = stride_order(dims, strides);
  for (std::size_t i = 1; i < order.size(); ++i) {
    const std::size_t outer = order[i - 1];
    const std::size_t inner = order[i];
    // A covered span beyond int64 is beyond every stride too: that is an overlap as well.
    const auto covered = checked_mul(strides[inner], dims[inner]);
    if (!covered || strides[outer] < *covered) {
      return make_error(ErrorCode::InvalidAttribute,
                        "strides " + list(strides) + " overlap: dim " + std::to_string(outer) +
                            " has stride " + std::to_string(strides[outer]) + ", less than dim " +
                            std::to_string(inner) + "'s " + std::to_string(dims[inner]) + " x " +
                            std::to_string(strides[inner]) + " (dims " + list(dims) + ")");
    }
  }
  return {};
}

}  // namespace detail

std::string to_string(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  }
  return out + "]";
}

namespace detail {

std::vector<std::int64_t> strides_like(const std::vector<std::int64_t>& dims,
                                       const TensorAttributes& like) {
  std::vector<std::size_t> order(dims.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  const auto& s = like.stride();
  std::ranges::sort(order, [&](std::size_t a, std::size_t b) {
    return s[a] != s[b] ? s[a] < s[b] : a > b;  // innermost first
  });
  std::vector<std::int64_t> strides(dims.size(), 1);
  std::int64_t next = 1;
  for (std::size_t d : order) {
    strides[d] = next;
    next *= dims[d];
  }
  return strides;
}

bool is_channels_last(const TensorAttributes& t) {
  const auto& dims = t.dim();
  const auto& strides = t.stride();
  if (dims.size() < 3 || strides.size() != dims.size()) {
    return false;
  }
  // Exactly the packed channels-last strides: decides the ties where C = 1 or every spatial dim
  // is 1 (then both layouts put the same bytes in the same places and the user's strides say
  // which one was meant).
  if (element_count(dims) && strides == channels_last_strides(dims)) {
    return true;
  }
  // Otherwise (padded rows, slices): C moves faster than every spatial dim that moves at all.
  bool any_spatial = false;
  for (std::size_t i = 2; i < dims.size(); ++i) {
    if (dims[i] > 1) {
      any_spatial = true;
      if (strides[1] >= strides[i]) {
        return false;
      }
    }
  }
  return any_spatial;
}

}  // namespace detail

}  // namespace dnngraph
