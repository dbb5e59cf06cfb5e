// The kernel cache's JSON document (internal to api/): the complete check a document from
// outside passes before cuDNN sees it.
#pragma once

#include "api/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace dnngraph::detail {

// A document that passed every check: the text to give cuDNN (the checked document serialized
// again, never the caller's text), its number of entries and whether its operation graph has a
// norm node (forward or backward: known issue kernel-cache-loaded-norm-crash).
struct CheckedCacheDocument {
  std::string text;
  std::int64_t entries = 0;
  bool norm = false;
};

// The checked document with an empty kernel_cache array: the topology alone.
[[nodiscard]] CheckedCacheDocument without_entries(const CheckedCacheDocument& document);

// Checks a document from outside against the schema of what cuDNN 9.19 reads, completely:
// JSON syntax, no duplicate object members (cuDNN keeps the first, Boost.JSON the last), finite
// numbers, then every member's type, enum strings, integer ranges, array lengths, tensor
// references and at most one entry per key (see kernel_cache_schema.cpp). Each refusal is
// InvalidJson naming the JSON path (e.g. `kernel_cache[0].key.type`), what was expected and
// what was given.
[[nodiscard]] Result<CheckedCacheDocument> check_cache_document(std::string_view json);

// What a save writes when the store's file for the same key was saved by another process
// meanwhile: `ours` with the entries of `stored` whose keys it lacks appended (added counts
// them). `ours` alone (added 0) when `stored` fails check_cache_document, is another topology or
// version (cudnnVersion, schemaVersion or operationGraph differ), or the union would be larger
// than `limit` bytes. Errors only when `ours` fails the check.
struct MergedCacheDocument {
  std::string text;
  std::int64_t added = 0;
};
[[nodiscard]] Result<MergedCacheDocument> merge_cache_documents(std::string_view ours,
                                                                std::string_view stored,
                                                                std::size_t limit);

}  // namespace dnngraph::detail
