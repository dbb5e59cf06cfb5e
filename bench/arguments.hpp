// Command-line numbers for the bench programs: the whole text one integer in a range, or nothing.
// Needs no dnngraph header.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace dnngraph_bench {

// The integer `text` is, when it is one from lo to hi and nothing else; nullopt otherwise.
inline std::optional<std::int64_t> whole_number(std::string_view text, std::int64_t lo,
                                                std::int64_t hi) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool whole = error == std::errc() && end == text.data() + text.size();
  return whole && value >= lo && value <= hi ? std::optional(value) : std::nullopt;
}

}  // namespace dnngraph_bench
