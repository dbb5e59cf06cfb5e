#include "detail/graph/graph_key.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <span>
#include <vector>

namespace dnngraph::detail {

namespace {

// Two FNV-1a 64-bit digests side by side (the standard offset basis, and one of its own), fed
// the same bytes.
class Digest {
 public:
  void bytes(std::span<const std::byte> data) {
    for (const std::byte b : data) {
      for (std::uint64_t& h : state_) {
        h = (h ^ static_cast<std::uint64_t>(b)) * prime;
      }
    }
  }
  void number(std::int64_t value) {
    bytes(std::as_bytes(std::span<const std::int64_t>(&value, 1)));
  }
  [[nodiscard]] std::string hex() const {
    std::array<char, 33> text{};
    std::snprintf(text.data(), text.size(), "%016llx%016llx",
                  static_cast<unsigned long long>(state_[0]),
                  static_cast<unsigned long long>(state_[1]));
    return {text.data(), 32};
  }

 private:
  static constexpr std::uint64_t prime = 0x100000001b3ULL;
  std::array<std::uint64_t, 2> state_{0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
};

// The order of the strides: dimension indices from the largest stride down, ties by index.
std::vector<std::int64_t> stride_order(std::span<const std::byte> values) {
  std::vector<std::int64_t> strides(values.size() / sizeof(std::int64_t));
  std::memcpy(strides.data(), values.data(), strides.size() * sizeof(std::int64_t));
  std::vector<std::int64_t> order(strides.size());
  std::iota(order.begin(), order.end(), 0);
  std::ranges::sort(order, [&](std::int64_t a, std::int64_t b) {
    const std::int64_t sa = strides[static_cast<std::size_t>(a)];
    const std::int64_t sb = strides[static_cast<std::size_t>(b)];
    return sa != sb ? sa > sb : a < b;
  });
  return order;
}

}  // namespace

std::string graph_key(const backend::AttributeLog& log, const KeySettings& settings,
                      bool with_shapes) {
  Digest digest;
  digest.number(settings.dynamic_shape ? 1 : 0);
  digest.number(settings.override_shape ? 1 : 0);
  for (const auto& entry : log.entries()) {
    digest.number(entry.descriptor);
    digest.number(entry.descriptor_type);
    digest.number(entry.attribute);
    digest.number(entry.type);
    digest.number(entry.count);
    if (!with_shapes && entry.attribute == CUDNN_ATTR_TENSOR_DIMENSIONS) {
      continue;  // the rank is in the count
    }
    if (!with_shapes && entry.attribute == CUDNN_ATTR_TENSOR_STRIDES &&
        entry.type == CUDNN_TYPE_INT64) {
      for (const std::int64_t index : stride_order(entry.values)) {
        digest.number(index);
      }
      continue;
    }
    digest.number(static_cast<std::int64_t>(entry.values.size()));
    digest.bytes(entry.values);
  }
  return digest.hex();
}

}  // namespace dnngraph::detail
