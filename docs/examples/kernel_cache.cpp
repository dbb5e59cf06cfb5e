// docs/kernel-cache.md's example: one KernelCache shared by dynamic-shape graphs of one topology,
// introspected with revision()/size(), saved with to_json() and loaded into a fresh cache.
#ifdef DNNGRAPH_IMPORT_MODULE
import dnngraph;
#else
#include <dnngraph/dnngraph.hpp>  // the same API without the C++ module (g++ 13)
#endif

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace {

dnngraph::Graph matmul_relu(std::int64_t m, std::int64_t n, std::int64_t k,
                            std::shared_ptr<dnngraph::KernelCache> cache) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half)
      .set_compute_data_type(DataType::Float)
      .set_dynamic_shape_enabled(true)  // the cache applies only to dynamic-shape graphs
      .set_kernel_cache(std::move(cache));
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, m, k}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, k, n}));
  auto y = g.pointwise(g.matmul(a, b), PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  y->set_output(true).set_uid(3);
  return g;
}

}  // namespace

int main() {
  using namespace dnngraph;
  auto kc = std::make_shared<KernelCache>();
  // Before the first build there is nothing to report: these are errors, not zeros.
  Result<std::int64_t> early = kc->revision();
  std::printf("revision before build: %s\n", early ? "a value?!" : early.error().message.c_str());
  if (early) {
    return 1;
  }

  auto handle = Handle::create();
  if (!handle) {
    std::printf("building needs a CUDA device; none here\n");
    return 0;
  }
  for (auto [m, n, k] :
       {std::array<std::int64_t, 3>{1024, 1024, 1024}, {512, 2048, 1024}, {4096, 256, 1024}}) {
    Graph g = matmul_relu(m, n, k, kc);
    if (auto built = g.build(*handle, {HeuristicMode::A}); !built) {
      std::printf("build failed: %s\n", built.error().message.c_str());
      return 1;
    }
    std::printf("%lld x %lld x %lld: %s; revision %lld, size %lld\n", static_cast<long long>(m),
                static_cast<long long>(n), static_cast<long long>(k),
                g.plan_info()->describe().c_str(), static_cast<long long>(*kc->revision()),
                static_cast<long long>(*kc->size()));
  }

  // Persist, then load into a fresh cache before sharing it.
  Result<std::string> json = kc->to_json();
  auto restored = std::make_shared<KernelCache>();
  if (!json || !restored->from_json(*json)) {
    std::printf("to_json/from_json failed\n");
    return 1;
  }
  Graph g = matmul_relu(2048, 2048, 1024, restored);
  if (auto built = g.build(*handle, {HeuristicMode::A}); !built) {
    std::printf("build on the restored cache failed: %s\n", built.error().message.c_str());
    return 1;
  }
  std::printf("restored cache (%zu bytes of JSON): %s; revision %lld\n", json->size(),
              g.plan_info()->describe().c_str(), static_cast<long long>(*restored->revision()));
  return 0;
}
