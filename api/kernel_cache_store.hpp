// dnngraph::KernelCacheStore: kernel caches kept in a folder across processes, one file per
// topology, cuDNN version and GPU architecture. A file is cuDNN's document exactly as
// KernelCache::to_json() wrote it (from_json reads it back), replaced only atomically (temporary
// file, fsync, rename) under an advisory lock on the folder, so readers and a crash at any
// moment see the last complete file. A damaged file is set aside (renamed *.damaged) and
// reported; it never stops a build. Anything under a key's name that can be no document (a
// symbolic link, a FIFO, a device, a folder, a file larger than from_json takes) counts as
// damaged, and is never followed or read.
#pragma once

#include "api/error.hpp"
#include "api/kernel_cache.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph {

// What a stored cache is for. Names go into a file name: letters, digits, '.', '_' and '-'
// only, not starting with '.', no "--", at most 128 characters, and the whole file name at most
// 229 (a file name's 255 less the store's temporary suffix).
struct KernelCacheKey {
  std::string topology;            // the graph's topology: Graph::topology_key(), or a name
  std::string gpu_architecture;    // e.g. "sm_90" (cudaDeviceProp major/minor)
  std::int64_t cudnn_version = 0;  // 0: the cuDNN loaded in this process
};

struct StoredKernelCache {
  std::shared_ptr<KernelCache> cache;  // loaded from the file, or new and empty
  std::filesystem::path path;          // the file it is saved to
  bool loaded = false;                 // true: from the file
  // Non-empty when a file was there but could not serve: what was wrong, and where the file
  // went (set aside as <file>.damaged when it was damaged). The cache is new and empty then.
  std::string warning;
};

// One file of a store's folder, as list() sees it.
struct StoredFile {
  std::filesystem::path path;
  KernelCacheKey key;
  std::uintmax_t bytes = 0;
};

class KernelCacheStore {
 public:
  static constexpr std::string_view file_suffix = ".json";
  static constexpr std::string_view damaged_suffix = ".damaged";

  // Creates nothing yet: the folder is made by the first load or save that needs it.
  explicit KernelCacheStore(std::filesystem::path folder,
                            std::chrono::milliseconds lock_patience = std::chrono::seconds(10));
  KernelCacheStore(const KernelCacheStore&) = delete;
  KernelCacheStore& operator=(const KernelCacheStore&) = delete;
  KernelCacheStore(KernelCacheStore&&) = delete;
  KernelCacheStore& operator=(KernelCacheStore&&) = delete;
  ~KernelCacheStore();

  [[nodiscard]] const std::filesystem::path& folder() const noexcept { return folder_; }
  // The folder a store keeps by default: $DNNGRAPH_CACHE_DIR, else $XDG_CACHE_HOME/dnngraph,
  // else $HOME/.cache/dnngraph (empty variables count as unset). InvalidState naming the three
  // variables when none is set.
  [[nodiscard]] static Result<std::filesystem::path> default_folder();

  // "<topology>--cudnn-<9.27.0>--<arch>.json"; InvalidAttribute for a name that cannot be part
  // of a file name.
  [[nodiscard]] static Result<std::string> file_name(const KernelCacheKey& key);
  // The key a file name stands for: the key whose file_name() it is, and nullopt for any other
  // name (key_of and file_name are inverse to each other).
  [[nodiscard]] static std::optional<KernelCacheKey> key_of(std::string_view file_name);

  // The stored cache for `key`, loaded into a new KernelCache (not built: the first Graph::build
  // that uses it builds it), or a new empty one when there is no file or it cannot serve (see
  // StoredKernelCache::warning). The store remembers the cache for save_if_changed. Errors only
  // for a key that cannot name a file or a folder that cannot be made.
  [[nodiscard]] Result<StoredKernelCache> load_or_create(const KernelCacheKey& key);

  // Writes the cache's document when its revision() moved since this store loaded or last saved
  // it (a new cache: at its first save once built). true when it wrote. A cache no build has used
  // yet has nothing to save (false). InvalidState for a cache this store did not hand out. The
  // KernelCache's own errors pass through (below cuDNN 9.27 to_json() answers once: save once,
  // when the cache is complete; see docs/kernel-cache.md). A document from_json would refuse
  // (checked as write() checks) is InvalidJson: nothing is written, the file stays as it was.
  // When another process (or store) saved the key meanwhile, the entries of its file that this
  // cache lacks are kept in what is written, so a save never drops one another save wrote; a
  // file of another topology or cuDNN version under the key, or one that can be no document, is
  // replaced.
  [[nodiscard]] Result<bool> save_if_changed(const KernelCache& cache);

  // Checks `json` as from_json would (the schema, not cuDNN's parse) and replaces the key's file
  // with it, atomically and under the lock.
  [[nodiscard]] Result<void> write(const KernelCacheKey& key, std::string_view json);

  // The store's files in the folder (not the damaged ones, temporaries or the lock), by name.
  [[nodiscard]] Result<std::vector<StoredFile>> list() const;

 private:
  struct Handed {
    std::weak_ptr<KernelCache> cache;
    const KernelCache* address = nullptr;
    KernelCacheKey key;
    std::optional<std::int64_t> saved_revision;  // revision() at load (0) or at the last save
  };

  [[nodiscard]] Result<void> make_folder() const;
  // Makes the folder, takes the folder lock and replaces the file `name` with `text`.
  [[nodiscard]] Result<void> replace_locked(const std::string& name, std::string_view text) const;
  // Renames a damaged file aside under the lock, unless another writer replaced it meanwhile.
  [[nodiscard]] std::string set_aside(const std::filesystem::path& path, std::string_view seen,
                                      const Error& why) const;

  std::filesystem::path folder_;
  std::chrono::milliseconds lock_patience_;
  std::mutex mutex_;
  std::vector<Handed> handed_;  // guarded by mutex_
};

}  // namespace dnngraph
