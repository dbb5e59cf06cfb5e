// The store's merged save: the lock, the orphan sweep, the merge and the atomic replace in one
// order, so every writer of a key's file goes through the same steps.
#include "detail/cache/merged_save.hpp"

#include "detail/cache/kernel_cache_json.hpp"
#include "detail/cache/store_files.hpp"

#include <system_error>
#include <utility>

namespace dnngraph::detail {

Result<std::int64_t> replace_merged(const std::filesystem::path& folder,
                                    std::chrono::milliseconds patience, const std::string& name,
                                    std::string_view json, std::size_t limit) {
  auto folder_lock = FolderLock::acquire(folder, patience);
  if (!folder_lock) {
    return std::unexpected(folder_lock.error());
  }
  remove_orphan_temporaries(folder);
  const std::filesystem::path path = folder / name;
  std::error_code ec;
  MergedCacheDocument merged{std::string(json), 0};
  if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    // What cannot be a document (read_file refuses it) is replaced, as a damaged file is.
    if (auto stored = read_file(path, limit); stored) {
      auto both = merge_cache_documents(json, *stored, limit);
      if (!both) {
        return std::unexpected(both.error());
      }
      merged = std::move(*both);
    }
  }
  if (auto replaced = replace_file(path, merged.text); !replaced) {
    return std::unexpected(replaced.error());
  }
  return merged.added;
}

}  // namespace dnngraph::detail
