// dnngraph::KernelCache: compiled kernels of dynamic-shape graphs, shared by graphs of one
// topology (and by threads). Every method takes the cache's std::mutex, and so does every call
// of detail::KernelCacheAccess (detail/cache/kernel_cache_access.hpp, internal), through which
// Graph::build and execute bind the cache to a graph, finalize plans into it and run them. Its
// build is idempotent: the first caller creates and finalizes the one backend descriptor, later
// callers return at once. revision()/size() say exactly when and how the cache's contents
// changed.
#pragma once

#include "api/error.hpp"
#include "api/plan.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph {

namespace backend {
class KernelCache;  // backend/kernel_cache.hpp: the descriptor, which only the library includes
}  // namespace backend

namespace detail {
struct KernelCacheAccess;  // detail/cache/kernel_cache_access.hpp
}  // namespace detail

class KernelCache {
 public:
  // A from_json() document larger than this is rejected before it is parsed.
  static constexpr std::size_t max_json_bytes = std::size_t{256} << 20;

  KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;
  KernelCache(KernelCache&&) = delete;
  KernelCache& operator=(KernelCache&&) = delete;
  ~KernelCache();

  // True once the first Graph::build that uses the cache bound it to its topology (from_json
  // alone does not build it).
  [[nodiscard]] bool is_built() const;

  // One more for each entry inserted, replaced or removed (evictions are removals); lookups
  // never count. Local to this process; 0 after build, restarts at from_json. Error before build.
  [[nodiscard]] Result<std::int64_t> revision() const;
  // Number of entries the cache holds. Error before build.
  [[nodiscard]] Result<std::int64_t> size() const;

  // The cache as cuDNN serializes it (CUDNN_ATTR_KERNEL_CACHE_JSON_REPRESENTATION).
  [[nodiscard]] Result<std::string> to_json() const;
  // Loads a document from to_json() into a cache that has not been built or loaded yet. The
  // document is checked completely first (size, JSON syntax, duplicate members, the schema of
  // what cuDNN reads, one entry per key); cuDNN then parses the checked document, as dnngraph
  // serialized it again, into a descriptor of its own and finalizes it. Every refusal is
  // InvalidJson naming the JSON path; on any error the cache is left exactly as it was. Call it
  // before the cache is shared.
  [[nodiscard]] Result<void> from_json(std::string_view json);

  // Diagnostics: how many backend descriptors this cache created (1 after any number of
  // concurrent builds; from_json counts as the creation).
  [[nodiscard]] std::int64_t descriptors_created() const;

  // "native" (cuDNN >= 9.27 counts) or "library" (dnngraph counts the entries cuDNN inserts,
  // seen as configs that were not cached before a plan finalized and are after it).
  [[nodiscard]] static std::string_view introspection_path() noexcept;

 private:
  friend struct detail::KernelCacheAccess;  // the plumbing of Graph::build and execute

  [[nodiscard]] Result<void> require_built_locked(std::string_view what) const;
  // The descriptor once built (under the lock); the error of require_built_locked otherwise.
  [[nodiscard]] Result<const backend::KernelCache*> built_locked(std::string_view what) const;

  mutable std::mutex mutex_;
  // guarded by mutex_; null until build or from_json, never replaced once set (a plan
  // finalizing outside the lock from 9.27 keeps a reference to it)
  std::unique_ptr<backend::KernelCache> descriptor_;
  bool built_ = false;  // guarded by mutex_
  // Library path (cuDNN < 9.27): insertions counted since build or load, and the entries held.
  std::int64_t revision_ = 0;  // guarded by mutex_
  std::int64_t size_ = 0;      // guarded by mutex_
  // cuDNN 9.19 serializes a cache once: its first JSON read is what every later read returns
  // (measured on the H200: a second kernel config compiled into the cache after the first read
  // did not appear; read only at the end, both did). revision_ at that first read; to_json()
  // refuses once the contents moved on, rather than return a stale document.
  mutable std::optional<std::int64_t> serialized_at_;  // guarded by mutex_
  std::vector<EngineChoice> known_;                    // guarded by mutex_: most recent first
  std::int64_t descriptors_created_ = 0;               // guarded by mutex_
  // Native path: cuDNN's revision right after build. cuDNN 9.27 counts the entries a loaded
  // document brings as changes (measured: 1 after from_json + build); ours restarts at 0.
  // Unconditional, so the class has one layout whatever cuDNN headers a consumer compiles with.
  [[maybe_unused]] std::int64_t native_base_ = 0;  // guarded by mutex_
};

}  // namespace dnngraph
