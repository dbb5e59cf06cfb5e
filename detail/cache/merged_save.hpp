// The kernel-cache store's save of one key's file (internal to api/ and the store's stress
// program): under the folder lock, ours merged with what another process saved meanwhile,
// replaced atomically.
#pragma once

#include "api/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace dnngraph::detail {

// Takes the FolderLock (failing with IoFailure after `patience`), removes the temporaries of
// writers killed mid-save, merges `json` with the entries of <folder>/<name> it lacks
// (merge_cache_documents; a stored file that can be no document, by read_file's rules or
// larger than `limit`, is replaced as a damaged one is), and replaces the file (replace_file).
// The count of entries kept from the stored file.
[[nodiscard]] Result<std::int64_t> replace_merged(const std::filesystem::path& folder,
                                                  std::chrono::milliseconds patience,
                                                  const std::string& name, std::string_view json,
                                                  std::size_t limit);

}  // namespace dnngraph::detail
