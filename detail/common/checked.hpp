// Checked int64 arithmetic for sizes (dims, strides, element counts, byte extents): a result
// that does not fit is nullopt, never a wrapped value. Signed overflow is undefined behaviour,
// and a wrapped product once let an overlapping layout pass as a legal one.
#pragma once

#include <cstdint>
#include <optional>

namespace dnngraph::detail {

[[nodiscard]] constexpr std::optional<std::int64_t> checked_mul(std::int64_t a,
                                                                std::int64_t b) noexcept {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    return std::nullopt;
  }
  return product;
}

[[nodiscard]] constexpr std::optional<std::int64_t> checked_add(std::int64_t a,
                                                                std::int64_t b) noexcept {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return std::nullopt;
  }
  return sum;
}

// a * b + c, or nullopt where any step overflows.
[[nodiscard]] constexpr std::optional<std::int64_t> checked_mul_add(std::int64_t a, std::int64_t b,
                                                                    std::int64_t c) noexcept {
  const auto product = checked_mul(a, b);
  return product ? checked_add(*product, c) : std::nullopt;
}

}  // namespace dnngraph::detail
