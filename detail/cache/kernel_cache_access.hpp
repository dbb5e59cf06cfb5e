// detail::KernelCacheAccess (internal to the library, not installed): what Graph::build and
// execute do with a KernelCache beyond its public face. Each call takes the cache's mutex, like
// the cache's own methods; the bodies live next to them in api/kernel_cache.cpp.
#pragma once

#include "api/error.hpp"
#include "api/kernel_cache.hpp"
#include "api/plan.hpp"
#include "backend/engine_config.hpp"
#include "backend/execution_plan.hpp"  // and backend::VariantPack declared
#include "backend/operation_graph.hpp"
#include "backend/status.hpp"

#include <cudnn.h>

#include <vector>

namespace dnngraph::detail {

struct KernelCacheAccess {
  // Creates the descriptor (unless from_json did), binds it to the operation graph's topology
  // and finalizes it; a loaded cache was finalized by from_json. Later calls return success at
  // once. The cache counts as built only when every step succeeded: after an error it is as it
  // was and the next call tries again.
  [[nodiscard]] static Result<void> build(KernelCache& cache, const backend::OperationGraph& graph);

  // Attaches a plan (handle and `config` set) to the cache and finalizes it. The outer error is
  // the cache's: not built, or the lookup before or after (the one that counts an insertion)
  // failed; it is not about this config, and plan choice stops on it. The inner result is the
  // plan's: whether the cache held the config's kernel before (a hit: nothing compiled), or why
  // attaching or finalizing this config's plan failed.
  // Below cuDNN 9.27 the lookup, the finalize and a second lookup run under the cache's mutex:
  // cuDNN 9.19 corrupted the heap when one thread's lookup met another thread's plan finalizing
  // into the same cache (H200: 4 threads died within seconds; without lookups the same soak ran
  // clean), and the lookups before and after are how insertions are counted there. From 9.27
  // plans finalize outside the lock (measured clean), so compilations of several threads overlap.
  // With only_if_held, a miss finalizes nothing and answers false (the plan is left as given):
  // the cache-first search asks and finalizes a held config with one lookup, under one lock.
  [[nodiscard]] static Result<backend::Expected<bool>> finalize_plan(
      KernelCache& cache, backend::ExecutionPlan& plan, const backend::EngineConfig& config,
      bool only_if_held = false);

  // cudnnBackendExecute of a plan attached to the cache. Below cuDNN 9.27 under the cache's
  // mutex (the host-side call only, not the kernel's run): cuDNN 9.19 corrupted the heap when one
  // thread executed a plan of the cache while another looked up or finalized into it (H200 soak,
  // 4 threads: dead within seconds; with executes under the lock 11,551 builds and 231,020
  // checked executes in 20 s, clean). From 9.27 without the lock.
  [[nodiscard]] static backend::Expected<void> execute_plan(
      const KernelCache& cache, cudnnHandle_t handle, const backend::ExecutionPlan& plan,
      const backend::VariantPack& variant_pack);

  // The engine configs whose plans were built with the cache, most recent first. A new graph of
  // the same topology tries them before asking heuristics.
  [[nodiscard]] static std::vector<EngineChoice> known_configs(const KernelCache& cache);

  // revision() for the log, with the cache's mutex held by the caller; -1 if cuDNN cannot say.
  [[nodiscard]] static std::int64_t counted_revision(const KernelCache& cache,
                                                     const backend::KernelCache& descriptor);
  static void remember(KernelCache& cache, const EngineChoice& choice);
};

}  // namespace dnngraph::detail
