// The kernel cache's JSON document (internal to api/): structural checks before cuDNN sees a
// document, and the entry list revision()/size() are computed from.
#pragma once

#include "api/error.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace dnngraph::detail {

// Entry key (the serialized "key" object) -> fingerprint of the entry's "value".
using CacheEntries = std::map<std::string, std::size_t>;

// Parses a kernel cache document as cuDNN 9 writes it: an object with "kernel_cache", an array
// of {"key": {...}, "value": ...} entries. Errors name what is wrong and where.
[[nodiscard]] Result<CacheEntries> parse_cache_entries(std::string_view json);

}  // namespace dnngraph::detail
