// Soak: N threads, each with its own Handle, build and execute dynamic bf16 matmul + bias + ReLU
// graphs of random shapes against one shared KernelCache (or one per thread) for S seconds.
// Every graph's output is checked on sampled elements against a CPU reference; RSS, GPU memory
// and the cache's revision/size are sampled every 10 s. Exit 0 only with no failed build or
// execute, no wrong result and no fault.
//   bench_kernel_cache_soak THREADS SECONDS [shared|percache] [EXECUTES_PER_GRAPH]
import dnngraph;

#include <cuda_runtime_api.h>
#include <boost/json.hpp>

#include "bf16_matmul.hpp"
#include "matmul_graph.hpp"
#include "soak_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using dnngraph_bench::from_bf16;
using dnngraph_bench::to_bf16;
using Shape = dnngraph_bench::MatmulShape;
using Device = dnngraph_bench::DeviceBuffer;
using dnngraph_bench::gpu_used_mib;
using dnngraph_bench::rss_kib;
using dnngraph_bench::say;

struct Counts {
  std::atomic<std::int64_t> builds{0}, hits{0}, executes{0}, checked{0};
  std::atomic<std::int64_t> build_failures{0}, execute_failures{0}, wrong{0};
};

void worker(int id, double seconds, const std::shared_ptr<dnngraph::KernelCache>& shared,
            int executes, Counts& counts) {
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    say("thread %d: no handle: %s\n", id, handle.error().message.c_str());
    counts.build_failures++;
    return;
  }
  auto cache = shared ? shared : std::make_shared<dnngraph::KernelCache>();
  std::mt19937_64 rng(1234 + id);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    const Shape s{pick(1, 4), 64 * pick(1, 16), 64 * pick(1, 16), 64 * pick(1, 16)};
    auto g = dnngraph_bench::matmul_graph(s, true, dnngraph::PointwiseMode::ReluFwd, cache);
    auto built = g.build(*handle, {dnngraph::HeuristicMode::A});
    counts.builds++;
    if (!built) {
      if (counts.build_failures++ < 5) {
        say("thread %d: build [%lld %lld %lld %lld]: %s\n", id, (long long)s.b, (long long)s.m,
            (long long)s.n, (long long)s.k, built.error().message.c_str());
      }
      continue;
    }
    if (g.plan_info()->kernel_cache_hit) counts.hits++;
    std::vector<std::uint16_t> a(s.b * s.m * s.k), b(s.b * s.k * s.n), bias(s.n),
        y(s.b * s.m * s.n);
    for (auto& v : a) v = to_bf16(static_cast<float>(pick(-8, 8)) / 8.0F);
    for (auto& v : b) v = to_bf16(static_cast<float>(pick(-8, 8)) / 8.0F);
    for (auto& v : bias) v = to_bf16(static_cast<float>(pick(-16, 16)) / 8.0F);
    const std::int64_t ws = g.get_workspace_size().value_or(0);
    Device da(a.size() * 2), db(b.size() * 2), dbias(bias.size() * 2), dy(y.size() * 2),
        dws(static_cast<std::size_t>(std::max<std::int64_t>(ws, 1)));
    if (!da.p || !db.p || !dbias.p || !dy.p || !dws.p) {
      say("thread %d: cudaMalloc failed\n", id);
      counts.execute_failures++;
      continue;
    }
    cudaMemcpy(da.p, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db.p, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(dbias.p, bias.data(), bias.size() * 2, cudaMemcpyHostToDevice);
    cudaMemset(dy.p, 0xFF, y.size() * 2);  // NaN: an element never written fails the check
    const std::unordered_map<std::int64_t, void*> pack{
        {1, da.p}, {2, db.p}, {4, dbias.p}, {3, dy.p}};
    bool ran = true;
    for (int e = 0; e < executes && ran; ++e) {
      auto r = g.execute(*handle, pack, dws.p);
      counts.executes++;
      if (!r) {
        ran = false;
        if (counts.execute_failures++ < 5)
          say("thread %d: execute: %s\n", id, r.error().message.c_str());
      }
    }
    if (!ran) continue;
    if (cudaMemcpy(y.data(), dy.p, y.size() * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
      counts.execute_failures++;
      continue;
    }
    // 32 sampled outputs against a float reference (exact products; bf16 output rounding).
    for (int sample = 0; sample < 32; ++sample) {
      const std::int64_t bi = pick(0, s.b - 1), i = pick(0, s.m - 1), j = pick(0, s.n - 1);
      const double ref = dnngraph_bench::matmul_reference(s, a, b, bias, true, bi, i, j);
      const double got = from_bf16(y[(bi * s.m + i) * s.n + j]);
      counts.checked++;
      if (!dnngraph_bench::close_to_reference(got, ref)) {
        if (counts.wrong++ < 5) {
          say("thread %d: WRONG [%lld %lld %lld %lld] y[%lld,%lld,%lld] = %g, reference %g\n", id,
              (long long)s.b, (long long)s.m, (long long)s.n, (long long)s.k, (long long)bi,
              (long long)i, (long long)j, got, ref);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 120.0;
  const bool shared = argc <= 3 || std::string_view(argv[3]) != "percache";
  const int executes = argc > 4 ? std::atoi(argv[4]) : 20;
  if (auto probe = dnngraph::Handle::create(); !probe) {
    std::printf("needs a CUDA device: %s\n", probe.error().message.c_str());
    return 77;
  }
  std::printf(
      "soak: cuDNN %s, %d threads, %.0f s, %s cache, %d executes per graph, %s revision/size\n",
      dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str(), threads, seconds,
      shared ? "one shared" : "one per-thread", executes,
      std::string(dnngraph::KernelCache::introspection_path()).c_str());
  auto cache = shared ? std::make_shared<dnngraph::KernelCache>() : nullptr;
  Counts counts;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back(worker, t, seconds, cache, executes, std::ref(counts));
  }
  std::atomic<bool> done{false};
  std::int64_t rss_first = -1, gpu_first = -1, rss_last = 0, gpu_last = 0;
  std::thread sampler([&] {
    int tick = 0;
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (++tick % 50 != 0) continue;
      rss_last = rss_kib();
      gpu_last = gpu_used_mib();
      if (rss_first < 0) {
        rss_first = rss_last;  // after 10 s of warm-up: growth is measured from here
        gpu_first = gpu_last;
      }
      long long rev = -1, size = -1;
      if (cache) {
        rev = cache->revision().value_or(-1);
        size = cache->size().value_or(-1);
      }
      say("  t=%3d s builds %lld (hits %lld) executes %lld checked %lld | RSS %lld MiB GPU %lld "
          "MiB | "
          "cache revision %lld size %lld\n",
          tick / 5, (long long)counts.builds.load(), (long long)counts.hits.load(),
          (long long)counts.executes.load(), (long long)counts.checked.load(),
          (long long)(rss_last >> 10), (long long)gpu_last, rev, size);
    }
  });
  for (auto& t : pool) t.join();
  done = true;
  sampler.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "RESULT threads=%d seconds=%.1f cache=%s builds=%lld hits=%lld executes=%lld checked=%lld "
      "build_failures=%lld execute_failures=%lld wrong=%lld rss_mib=%lld->%lld "
      "gpu_mib=%lld->%lld\n",
      threads, elapsed, shared ? "shared" : "percache", (long long)counts.builds.load(),
      (long long)counts.hits.load(), (long long)counts.executes.load(),
      (long long)counts.checked.load(), (long long)counts.build_failures.load(),
      (long long)counts.execute_failures.load(), (long long)counts.wrong.load(),
      (long long)(rss_first >> 10), (long long)(rss_last >> 10), (long long)gpu_first,
      (long long)gpu_last);
  // The cache's JSON, read once at the end (cuDNN 9.19 serializes a cache once): its entries
  // must be what size() says.
  bool size_matches = true;
  if (cache) {
    auto json = cache->to_json();
    std::size_t entries = 0;
    if (json) {
      boost::system::error_code ec;
      auto doc = boost::json::parse(*json, ec);
      if (!ec && doc.is_object() && doc.as_object().contains("kernel_cache")) {
        entries = doc.as_object().at("kernel_cache").as_array().size();
      }
    }
    const long long size = cache->size().value_or(-1);
    size_matches = json && static_cast<long long>(entries) == size;
    std::printf(
        "cache at the end: revision %lld, size %lld, to_json %s with %zu entries: %s\n",
        static_cast<long long>(cache->revision().value_or(-1)), size,
        json ? (std::to_string(json->size()) + " bytes").c_str() : json.error().message.c_str(),
        entries, size_matches ? "size matches" : "SIZE DIFFERS");
  }
  const bool clean = counts.build_failures == 0 && counts.execute_failures == 0 &&
                     counts.wrong == 0 && size_matches;
  return clean ? 0 : 1;
}
