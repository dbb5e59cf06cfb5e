// The file operations of the kernel-cache store (internal to api/): a folder-wide advisory lock,
// an atomic replace of a file, a whole-file read. POSIX (flock, fsync, rename); errors are
// IoFailure naming the path and the system's reason.
#pragma once

#include "api/error.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace dnngraph::detail {

// flock(LOCK_EX) on <folder>/.dnngraph-cache.lock, held for the object's life. Advisory: it
// orders the store's own writers, in this and other processes; readers need none (a file is
// only ever replaced by rename, never written in place). The lock file is opened only as a
// regular file, never through a symbolic link (IoFailure naming it).
class FolderLock {
 public:
  // Tries until `patience` has passed, then fails: a stopped process holding the lock delays a
  // save, never blocks a build for good.
  [[nodiscard]] static Result<FolderLock> acquire(const std::filesystem::path& folder,
                                                  std::chrono::milliseconds patience);
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  ~FolderLock();

 private:
  explicit FolderLock(int fd) noexcept : fd_(fd) {}
  int fd_ = -1;
};

// Replaces `path` with `text` so that a reader, or a crash at any moment, sees either the old
// file or the whole new one: a temporary file next to it (<name>.tmp.<pid>.<n>), written,
// fsync'ed, renamed over `path`, then the folder fsync'ed. The caller holds the FolderLock.
[[nodiscard]] Result<void> replace_file(const std::filesystem::path& path, std::string_view text);

// Removes the temporaries (<file>.json.tmp.<pid>.<n>) of writers killed mid-save. A writer
// makes its temporary under the FolderLock and renames or removes it before letting go, so with
// the lock held (the caller's) every temporary in the folder is a dead writer's. Best effort:
// what cannot be listed or removed stays for the next writer (or `dnngraph-cache prune`).
void remove_orphan_temporaries(const std::filesystem::path& folder);

// What a load does: remove_orphan_temporaries when the folder holds a temporary and the
// FolderLock is free now (one try, never a wait: a reader does not wait for writers), so the
// temporaries of killed writers also go at the next open. Best effort, as above.
void remove_orphan_temporaries_if_unlocked(const std::filesystem::path& folder);

// The whole file. InvalidJson, with nothing read, when what is at `path` can be no document: a
// symbolic link (never followed), a FIFO, a device or a folder, or a file larger than `limit`;
// IoFailure when it cannot be opened or read.
[[nodiscard]] Result<std::string> read_file(const std::filesystem::path& path, std::size_t limit);

// The name of the lock file the store keeps in its folder.
inline constexpr std::string_view lock_file_name = ".dnngraph-cache.lock";

}  // namespace dnngraph::detail
