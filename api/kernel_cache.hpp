// dnngraph::KernelCache: compiled kernels of dynamic-shape graphs, shared by graphs of one
// topology (and by threads). Every public method takes the cache's std::mutex. build() is
// idempotent: the first caller creates and finalizes the one backend descriptor, later callers
// return at once. revision()/size() say exactly when and how the cache's contents changed.
#pragma once

#include "api/error.hpp"
#include "api/plan.hpp"
#include "backend/engine_config.hpp"
#include "backend/execution_plan.hpp"
#include "backend/kernel_cache.hpp"
#include "backend/operation_graph.hpp"

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph {

namespace backend {
class VariantPack;  // backend/variant_pack.hpp, which only the library's sources include
}  // namespace backend

class KernelCache {
 public:
  // A from_json() document larger than this is rejected before it is parsed.
  static constexpr std::size_t max_json_bytes = std::size_t{256} << 20;

  KernelCache() = default;
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;
  KernelCache(KernelCache&&) = delete;
  KernelCache& operator=(KernelCache&&) = delete;
  ~KernelCache() = default;

  // Creates the descriptor (unless from_json did), binds it to the operation graph's topology
  // and finalizes it; a loaded cache was finalized by from_json. Later calls return success at
  // once. The cache counts as built only when every step succeeded: after an error it is as it
  // was and the next call tries again.
  [[nodiscard]] Result<void> build(const backend::OperationGraph& graph);
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

  // For Graph::build: whether cuDNN already holds the kernel of this engine config
  // (CUDNN_ATTR_KERNEL_CACHE_IS_ENGINECFG_KERNEL_CACHED). Error before build.
  [[nodiscard]] Result<bool> holds(const backend::EngineConfig& config) const;
  // For plan choice: attaches a plan (handle and `config` set) to this cache and finalizes it;
  // returns whether the cache held the config's kernel before (a hit: nothing compiled).
  // Below cuDNN 9.27 the lookup, the finalize and a second lookup run under the cache's mutex:
  // cuDNN 9.19 corrupted the heap when one thread's lookup met another thread's plan finalizing
  // into the same cache (H200: 4 threads died within seconds; without lookups the same soak ran
  // clean), and the lookups before and after are how insertions are counted there. From 9.27
  // plans finalize outside the lock (measured clean), so compilations of several threads overlap.
  [[nodiscard]] backend::Expected<bool> finalize_plan(backend::ExecutionPlan& plan,
                                                      const backend::EngineConfig& config);
  // For Graph::execute: cudnnBackendExecute of a plan attached to this cache. Below cuDNN 9.27
  // under the cache's mutex (the host-side call only, not the kernel's run): cuDNN 9.19 corrupted
  // the heap when one thread executed a plan of the cache while another looked up or finalized
  // into it (H200 soak, 4 threads: dead within seconds; with executes under the lock 11,551
  // builds and 231,020 checked executes in 20 s, clean). From 9.27 without the lock.
  [[nodiscard]] backend::Expected<void> execute_plan(
      cudnnHandle_t handle, const backend::ExecutionPlan& plan,
      const backend::VariantPack& variant_pack) const;

  // For Graph::build: the engine configs whose plans were built with this cache, most recent
  // first. A new graph of the same topology tries them before asking heuristics.
  [[nodiscard]] std::vector<EngineChoice> known_configs() const;
  void remember(const EngineChoice& choice);

  // Diagnostics: how many backend descriptors this cache created (1 after any number of
  // concurrent builds; from_json counts as the creation).
  [[nodiscard]] std::int64_t descriptors_created() const;

  // "native" (cuDNN >= 9.27 counts) or "library" (dnngraph counts the entries cuDNN inserts,
  // seen as configs that were not cached before a plan finalized and are after it).
  [[nodiscard]] static std::string_view introspection_path() noexcept;

 private:
  [[nodiscard]] Result<void> require_built_locked(std::string_view what) const;
  // The descriptor once built (under the lock); the error of require_built_locked otherwise.
  [[nodiscard]] Result<const backend::KernelCache*> built_locked(std::string_view what) const;
  // IS_ENGINECFG_KERNEL_CACHED of config on the descriptor; callers hold mutex_.
  [[nodiscard]] static backend::Expected<bool> lookup(const backend::KernelCache& cache,
                                                      const backend::EngineConfig& config);

  mutable std::mutex mutex_;
  std::optional<backend::KernelCache> descriptor_;  // guarded by mutex_; never replaced once set
  bool built_ = false;                              // guarded by mutex_
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
