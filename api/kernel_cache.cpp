// dnngraph::KernelCache and detail::KernelCacheAccess. Every public method and every access
// call locks mutex_; no cuDNN call on the descriptor happens outside it, except the plan
// finalize and execute that finalize_plan and execute_plan leave unlocked from cuDNN 9.27.
#include "api/kernel_cache.hpp"

#include "backend/features.hpp"
#include "backend/kernel_cache.hpp"
#include "backend/version.hpp"
#include "detail/cache/kernel_cache_access.hpp"
#include "detail/cache/kernel_cache_json.hpp"
#include "detail/common/in_order.hpp"
#include "detail/common/logging.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/cudnn/known_issues.hpp"

#include <algorithm>

namespace dnngraph {

namespace {

// cuDNN counts revision and entries itself from 9.27 (backend::Feature::KernelCacheCounters);
// both the headers compiled against and the library loaded must have them.
bool native_introspection() noexcept {
  return backend::available(backend::Feature::KernelCacheCounters);
}

// A new descriptor bound to the operation graph's topology and finalized.
Result<backend::KernelCache> made_for(const backend::OperationGraph& graph) {
  // Known issue kernel-cache-unfinalized-graph: cuDNN 9.19 finalizes a cache against an operation
  // graph that was never finalized (an empty topology), and aborts the process
  // (std::length_error) when given another descriptor type.
  if (graph.native() == nullptr || graph.type() != CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR ||
      !graph.is_finalized()) {
    return make_error(ErrorCode::InvalidState,
                      "kernel cache: build needs a finalized operation graph descriptor");
  }
  auto created = backend::KernelCache::create();
  if (!created) {
    return std::unexpected(detail::cudnn_error(created.error(), "kernel cache: create"));
  }
  auto ok = detail::in_order([&] { return created->set_operation_graph(graph); },
                             [&] { return created->finalize(); });
  if (!ok) {
    return std::unexpected(detail::cudnn_error(ok.error(), "kernel cache: build"));
  }
  return std::move(*created);
}

// A new descriptor cuDNN parsed a checked document into and finalized: cuDNN 9.19 does this
// without a GPU and without an operation graph, so a document it refuses fails at from_json
// instead of leaving a loaded cache whose every build fails.
Result<backend::KernelCache> loaded_from(std::string_view checked_text) {
  auto created = backend::KernelCache::create();
  if (!created) {
    return std::unexpected(detail::cudnn_error(created.error(), "kernel cache: from_json"));
  }
  auto ok = detail::in_order([&] { return created->set_json(checked_text); },
                             [&] { return created->finalize(); });
  if (!ok) {
    return make_error(ErrorCode::InvalidJson,
                      "kernel cache JSON: cuDNN refused the document (it passed dnngraph's "
                      "checks): " +
                          ok.error().to_string());
  }
  return std::move(*created);
}

// IS_ENGINECFG_KERNEL_CACHED of config on the descriptor; callers hold the cache's mutex.
backend::Expected<bool> lookup(const backend::KernelCache& cache,
                               const backend::EngineConfig& config) {
  return cache.is_kernel_cached(config);
}

}  // namespace

KernelCache::KernelCache() = default;
KernelCache::~KernelCache() = default;

std::string_view KernelCache::introspection_path() noexcept {
  // Before 9.27 dnngraph counts the insertions itself (finalize_plan). The JSON cannot serve:
  // cuDNN 9.19 serializes a cache once, so reading it after each build froze it.
  return native_introspection() ? "native" : "library";
}

bool KernelCache::is_built() const {
  std::scoped_lock lock(mutex_);
  return built_;
}

Result<void> KernelCache::require_built_locked(std::string_view what) const {
  if (!built_) {
    return make_error(ErrorCode::InvalidState,
                      "kernel cache: " + std::string(what) +
                          " before the cache is built (it is built by the first "
                          "Graph::build that uses it)");
  }
  return {};
}

Result<const backend::KernelCache*> KernelCache::built_locked(std::string_view what) const {
  if (auto ok = require_built_locked(what); !ok) {
    return std::unexpected(ok.error());
  }
  if (!descriptor_) {  // built_ implies a descriptor; kept explicit for the reader and tidy
    return make_error(ErrorCode::InvalidState, "kernel cache: built without a descriptor");
  }
  return descriptor_.get();
}

Result<std::int64_t> KernelCache::revision() const {
  std::scoped_lock lock(mutex_);
  auto d = built_locked("revision()");
  if (!d) {
    return std::unexpected(d.error());
  }
  if (native_introspection()) {
    auto native = (*d)->revision();
    if (!native) {
      return std::unexpected(detail::cudnn_error(native.error(), "kernel cache: revision"));
    }
    return *native - native_base_;
  }
  return revision_;
}

Result<std::int64_t> KernelCache::size() const {
  std::scoped_lock lock(mutex_);
  auto d = built_locked("size()");
  if (!d) {
    return std::unexpected(d.error());
  }
  if (native_introspection()) {
    return detail::lift((*d)->entry_count(), "kernel cache: size");
  }
  return size_;
}

Result<std::string> KernelCache::to_json() const {
  std::scoped_lock lock(mutex_);
  auto d = built_locked("to_json()");
  if (!d) {
    return std::unexpected(d.error());
  }
  // Known issue kernel-cache-serialized-once. revision_ counts only on the library path; in its
  // range that is the path taken (the issue was measured fixed where the native counters start).
  const bool serialized_once = detail::workaround_needed(detail::Defect::KernelCacheSerializedOnce);
  if (serialized_once && serialized_at_ && *serialized_at_ != revision_) {
    const detail::KnownIssue& issue =
        detail::known_issue(detail::Defect::KernelCacheSerializedOnce);
    return make_error(
        ErrorCode::VersionTooOld,
        "kernel cache: to_json: cuDNN " + backend::version_string(backend::loaded_version()) +
            " serializes a kernel cache once (every later read returns the first document) and "
            "this cache gained " +
            std::to_string(revision_ - *serialized_at_) +
            " entries since its first to_json(); a document of its contents now needs cuDNN >= " +
            backend::version_string(issue.first_fixed) + " (known issue " + std::string(issue.id) +
            ": measured on " + backend::version_string(issue.first_measured) +
            ", measured fixed in " + backend::version_string(issue.first_fixed) + "). Below " +
            backend::version_string(issue.first_fixed) +
            " call to_json() once, when the cache is complete");
  }
  auto json = (*d)->json();
  if (!json) {
    return std::unexpected(detail::cudnn_error(json.error(), "kernel cache: to_json"));
  }
  if (!serialized_at_) {
    serialized_at_ = revision_;
  }
  return std::move(*json);
}

Result<void> KernelCache::from_json(std::string_view json) {
  std::scoped_lock lock(mutex_);
  if (descriptor_) {
    return make_error(ErrorCode::InvalidState,
                      built_ ? "kernel cache: from_json on a cache that is already built"
                             : "kernel cache: from_json on a cache that is already loaded");
  }
  if (json.size() > max_json_bytes) {
    return make_error(ErrorCode::InvalidJson,
                      "kernel cache: from_json document of " + std::to_string(json.size()) +
                          " bytes is larger than the limit of " + std::to_string(max_json_bytes));
  }
  // cuDNN crashes on some shapes it parses (issue 16): it sees only a document that passed the
  // whole schema, and only as we serialized it again, never the caller's text.
  auto checked = detail::check_cache_document(json);
  if (!checked) {
    return std::unexpected(checked.error());
  }
  if (checked->norm && checked->entries > 0 &&
      detail::workaround_needed(detail::Defect::KernelCacheLoadedNormCrash)) {
    detail::log_info([&] {
      return "kernel cache: " + std::to_string(checked->entries) +
             " entries of a norm graph's document not loaded on this cuDNN (known issue " +
             std::string(detail::known_issue(detail::Defect::KernelCacheLoadedNormCrash).id) +
             "): the topology alone, builds compile anew";
    });
    *checked = detail::without_entries(*checked);
  }
  auto loaded = loaded_from(checked->text);
  if (!loaded) {
    return std::unexpected(loaded.error());
  }
  descriptor_ = std::make_unique<backend::KernelCache>(std::move(*loaded));
  ++descriptors_created_;
  revision_ = 0;
  size_ = checked->entries;
  detail::log_info([&] {
    return "kernel cache: loaded a document of " + std::to_string(json.size()) + " bytes, " +
           std::to_string(checked->entries) + " entries";
  });
  return {};
}

std::int64_t KernelCache::descriptors_created() const {
  std::scoped_lock lock(mutex_);
  return descriptors_created_;
}

namespace detail {

Result<void> KernelCacheAccess::build(KernelCache& cache, const backend::OperationGraph& graph) {
  std::scoped_lock lock(cache.mutex_);
  if (cache.built_) {
    return {};
  }
  // Everything that can fail happens on locals; the members change together at the end, so a
  // failed build leaves the cache as it was and the next caller tries again.
  std::unique_ptr<backend::KernelCache> created;
  if (!cache.descriptor_) {
    auto made = made_for(graph);
    if (!made) {
      return std::unexpected(made.error());
    }
    created = std::make_unique<backend::KernelCache>(std::move(*made));
  }
  // A loaded cache was finalized by from_json and knows its topology from the document.
  std::int64_t native_base = 0;
  if (native_introspection()) {
    const backend::KernelCache& d = created ? *created : *cache.descriptor_;
    auto base = d.revision();
    if (!base) {
      return std::unexpected(cudnn_error(base.error(), "kernel cache: revision"));
    }
    native_base = *base;
  }
  // Nothing above failed: the members change together. The entries are not read here (cuDNN
  // 9.19 serializes a cache once, so a read now would freeze its document); a loaded cache
  // starts with the loaded entries (size_ set by from_json), not changes of this process.
  if (created) {
    cache.descriptor_ = std::move(created);
    ++cache.descriptors_created_;
  }
  cache.native_base_ = native_base;
  cache.built_ = true;
  return {};
}

std::int64_t KernelCacheAccess::counted_revision(const KernelCache& cache,
                                                 const backend::KernelCache& descriptor) {
  if (native_introspection()) {
    auto native = descriptor.revision();
    return native ? *native - cache.native_base_ : -1;
  }
  return cache.revision_;
}

Result<backend::Expected<bool>> KernelCacheAccess::finalize_plan(
    KernelCache& cache, backend::ExecutionPlan& plan, const backend::EngineConfig& config,
    bool only_if_held) {
  std::unique_lock lock(cache.mutex_);
  auto d = cache.built_locked(only_if_held ? "look up a config in it" : "finalize a plan into it");
  if (!d) {
    return std::unexpected(d.error());
  }
  // The descriptor is never replaced once set, so the reference stays valid after unlocking.
  const backend::KernelCache& descriptor = **d;
  // Read only when logging: on the native path a revision is a cuDNN call.
  const bool logging = log_enabled(LogLevel::Info);
  const std::int64_t revision_before = logging ? counted_revision(cache, descriptor) : 0;
  auto before = lookup(descriptor, config);
  if (!before) {
    return std::unexpected(cudnn_error(before.error(), "kernel cache: lookup"));
  }
  if (only_if_held && !*before) {
    return backend::Expected<bool>(false);  // a miss: the plan stays unfinalized
  }
  // The library path counts an insertion from the lookups before and after the finalize, which
  // must see no other thread's finalize in between; known issue kernel-cache-lookup-race needs
  // the finalize under the lock in its range as well.
  const bool native = native_introspection();
  if (native && !workaround_needed(Defect::KernelCacheLookupRace)) {
    lock.unlock();
  }
  // Attaching and finalizing are the plan's: a failure there is this config's, as without a cache.
  auto ok =
      in_order([&] { return plan.set_kernel_cache(descriptor); }, [&] { return plan.finalize(); });
  if (!ok) {
    return backend::Expected<bool>(std::unexpected(std::move(ok.error())));
  }
  if (!native && !*before) {
    // Not cached before, cached now: this plan compiled and inserted the config's kernel.
    auto after = lookup(descriptor, config);
    if (!after) {
      return std::unexpected(
          cudnn_error(after.error(), "kernel cache: lookup after a plan finalized (to count it)"));
    }
    if (*after) {
      ++cache.revision_;
      ++cache.size_;
    }
  }
  if (logging) {
    if (!lock.owns_lock()) {
      lock.lock();
    }
    const std::int64_t revision_after = counted_revision(cache, descriptor);
    // A hit is the common case: debug; an insertion (a compile) is info.
    log_at(*before ? LogLevel::Debug : LogLevel::Info, [&] {
      return std::string("kernel cache: ") +
             (*before ? "hit (the config's kernel was cached)" : "miss, the plan compiled") +
             "; revision " + std::to_string(revision_before) + " -> " +
             std::to_string(revision_after);
    });
  }
  return backend::Expected<bool>(*before);
}

backend::Expected<void> KernelCacheAccess::execute_plan(const KernelCache& cache,
                                                        cudnnHandle_t handle,
                                                        const backend::ExecutionPlan& plan,
                                                        const backend::VariantPack& variant_pack) {
  // Known issue kernel-cache-lookup-race: in its range an execute must not meet a lookup.
  std::unique_lock lock(cache.mutex_, std::defer_lock);
  if (workaround_needed(Defect::KernelCacheLookupRace)) {
    lock.lock();
  }
  return backend::execute(handle, plan, variant_pack);
}

std::vector<EngineChoice> KernelCacheAccess::known_configs(const KernelCache& cache) {
  std::scoped_lock lock(cache.mutex_);
  return cache.known_;
}

void KernelCacheAccess::remember(KernelCache& cache, const EngineChoice& choice) {
  // A handful covers the configs one topology uses; older ones fall off the end.
  constexpr std::size_t max_known = 8;
  std::scoped_lock lock(cache.mutex_);
  std::erase(cache.known_, choice);
  cache.known_.insert(cache.known_.begin(), choice);
  if (cache.known_.size() > max_known) {
    cache.known_.resize(max_known);
  }
}

}  // namespace detail
}  // namespace dnngraph
