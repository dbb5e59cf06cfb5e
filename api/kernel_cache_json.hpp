// The kernel cache's JSON document (internal to api/): the complete check a document passes
// before cuDNN sees it, and the entry list revision()/size() are computed from.
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
// of {"key": {...}, "value": ...} entries. Errors name what is wrong and where. For documents
// cuDNN wrote itself (to_json, refresh); a document from outside goes through
// check_cache_document.
[[nodiscard]] Result<CacheEntries> parse_cache_entries(std::string_view json);

// Checks a document from outside against the schema of what cuDNN 9.19 reads, completely:
// JSON syntax, no duplicate object members (cuDNN keeps the first, Boost.JSON the last), finite
// numbers, then every member's type, enum strings, integer ranges, array lengths, tensor
// references and at most one entry per key (see kernel_cache_schema.cpp). Each refusal is
// InvalidJson naming the JSON path (e.g. `kernel_cache[0].key.type`), what was expected and
// what was given. On success, the text to give cuDNN: the checked document serialized again,
// never the caller's text.
[[nodiscard]] Result<std::string> check_cache_document(std::string_view json);

}  // namespace dnngraph::detail
