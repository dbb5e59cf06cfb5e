// KernelCache on the GPU: what revision() and size() report as dynamic fp16 matmul graphs of
// one topology are built for several shapes, and that size() is what to_json() holds; persistence
// through to_json/from_json; many threads sharing one cache nobody built beforehand; and one
// built graph (static, or dynamic on a cache) executed by many threads at once, each with its own
// handle. Every built graph is executed and its numbers compared with the CPU reference.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include "support/device_buffer.hpp"
#include "support/host_types.hpp"
#include "support/reference.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "support/dnngraph.hpp"

namespace {

using dnngraph::test::DeviceBuffer;
using dnngraph::test::MatmulShape;

MatmulShape shape(std::int64_t b, std::int64_t m, std::int64_t n, std::int64_t k) {
  return MatmulShape{{b, m, k}, {b, k, n}};
}

// Y = ReLU(A x B + bias), fp16 io, fp32 compute, dynamic shapes, with the given cache.
dnngraph::Graph make_graph(const MatmulShape& s, const std::shared_ptr<dnngraph::KernelCache>& kc,
                           bool cache_first = true) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half)
      .set_compute_data_type(DataType::Float)
      .set_dynamic_shape_enabled(true)
      .set_kernel_cache(kc)
      .set_cache_first_plan_choice(cache_first);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim(s.a_dims));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim(s.b_dims));
  auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim(s.bias_dims()));
  auto c = g.matmul(a, b);
  auto d = g.pointwise(c, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  auto y = g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  y->set_output(true).set_uid(3);
  return g;
}

std::vector<float> random_half_values(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> v(count);
  for (float& x : v) {
    x = dnngraph::test::round_to_half(dist(rng));
  }
  return v;
}

std::vector<std::uint16_t> to_half(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out[i] = dnngraph::test::float_to_half(v[i]);
  }
  return out;
}

// Executes a built graph on random data and compares with the CPU reference. Returns "" when
// the numbers are right, else what went wrong.
std::string check_numbers(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                          const MatmulShape& s, std::uint32_t seed) {
  using dnngraph::test::element_count;
  const auto a = random_half_values(element_count(s.a_dims), seed);
  const auto b = random_half_values(element_count(s.b_dims), seed + 1);
  const auto bias = random_half_values(static_cast<std::size_t>(s.n()), seed + 2);
  const std::size_t y_count = element_count(s.c_dims());
  auto a_dev = DeviceBuffer::copy_of(to_half(a));
  auto b_dev = DeviceBuffer::copy_of(to_half(b));
  auto bias_dev = DeviceBuffer::copy_of(to_half(bias));
  auto y_dev = DeviceBuffer::allocate(y_count * 2);
  auto ws_dev =
      DeviceBuffer::allocate(static_cast<std::size_t>(g.get_workspace_size().value_or(0)));
  if (!a_dev || !b_dev || !bias_dev || !y_dev || !ws_dev) {
    return "device allocation failed";
  }
  if (!y_dev->fill_bytes(0xFF)) {  // NaN everywhere: an element never written fails
    return "fill failed";
  }
  const std::unordered_map<std::int64_t, void*> pack{
      {1, a_dev->get()}, {2, b_dev->get()}, {4, bias_dev->get()}, {3, y_dev->get()}};
  if (auto ran = g.execute(handle, pack, ws_dev->get()); !ran) {
    return "execute: " + ran.error().message;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    return "cudaDeviceSynchronize failed";
  }
  std::vector<std::uint16_t> y_half(y_count);
  if (!y_dev->download(std::span<std::uint16_t>(y_half))) {
    return "download failed";
  }
  std::vector<float> y(y_count);
  for (std::size_t i = 0; i < y_count; ++i) {
    y[i] = dnngraph::test::half_to_float(y_half[i]);
  }
  const auto expected =
      dnngraph::test::reference_matmul(s, a, b, bias, dnngraph::test::Epilogue::Relu);
  // fp16 output of sums of up to K products of values in [-1, 1]: 2^-11 relative rounding of
  // the output plus fp32 accumulation-order differences.
  const auto result = dnngraph::test::compare(y, expected, {1e-2, 2e-3});
  return result.passed() ? "" : result.describe();
}

// Number of entries in a to_json() document, and the document's entries by serialized key.
std::map<std::string, std::string> entries_of(const std::string& json) {
  std::map<std::string, std::string> out;
  auto doc = boost::json::parse(json);
  for (const auto& e : doc.as_object().at("kernel_cache").as_array()) {
    out[boost::json::serialize(e.as_object().at("key"))] =
        boost::json::serialize(e.as_object().at("value"));
  }
  return out;
}

struct Built {
  double ms;
  dnngraph::PlanInfo info;
};

Built build(dnngraph::Graph& g, const dnngraph::Handle& handle,
            const std::vector<dnngraph::HeuristicMode>& modes = {
                dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback}) {
  const auto start = std::chrono::steady_clock::now();
  auto built = g.build(handle, modes);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
  return {ms, *g.plan_info()};
}

struct HandleFixture {
  HandleFixture() {
    auto h = dnngraph::Handle::create();
    BOOST_TEST_REQUIRE(h.has_value(), (h ? "" : h.error().message));
    handle = std::move(*h);
  }
  dnngraph::Handle handle;
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(kernel_cache_on_gpu, HandleFixture)

// The shapes of issue 9's sequence: two aligned shapes of one kernel config, a long-K shape, a
// small batched one and an unaligned one (heuristics may need other configs for the last three).
const std::vector<MatmulShape> sequence{shape(1, 1024, 1024, 1024), shape(2, 512, 768, 1024),
                                        shape(1, 4096, 256, 2048), shape(5, 128, 128, 128),
                                        shape(3, 1000, 777, 512)};

std::int64_t entries_in(const std::string& json) {
  return static_cast<std::int64_t>(entries_of(json).size());
}

BOOST_AUTO_TEST_CASE(revision_and_size_follow_what_the_cache_holds_across_shapes) {
  auto kc = std::make_shared<dnngraph::KernelCache>();
  BOOST_TEST(!kc->revision().has_value());
  BOOST_TEST(!kc->size().has_value());
  const bool native = dnngraph::KernelCache::introspection_path() == "native";
  std::int64_t revision_before = 0;
  for (std::size_t i = 0; i < sequence.size(); ++i) {
    const auto& s = sequence[i];
    auto g = make_graph(s, kc);
    const Built b = build(g, handle, {dnngraph::HeuristicMode::A});
    BOOST_TEST_MESSAGE("shape " << s.c_dims()[0] << "x" << s.m() << "x" << s.n() << "x" << s.k()
                                << ": " << b.ms << " ms, " << b.info.describe() << "; revision "
                                << *kc->revision() << ", size " << *kc->size() << " ("
                                << dnngraph::KernelCache::introspection_path() << " path)");
    if (i == 0) {
      // The first build of the topology compiles and inserts.
      BOOST_TEST(!b.info.kernel_cache_hit);
      BOOST_TEST(*kc->revision() >= 1);
      BOOST_TEST(*kc->size() >= 1);
    }
    if (b.info.kernel_cache_hit) {
      BOOST_TEST(*kc->revision() == revision_before);  // a lookup changes nothing
    } else {
      BOOST_TEST(*kc->revision() > revision_before);  // it compiled: an insertion at least
    }
    if (!native) {
      BOOST_TEST(*kc->revision() == *kc->size());  // dnngraph counts insertions
    }
    revision_before = *kc->revision();
    BOOST_TEST(check_numbers(g, handle, s, static_cast<std::uint32_t>(i)) == "");
  }
}

// size() is the number of entries cuDNN serializes, after every build. A cache's JSON is read
// once per cache here (cuDNN 9.19 serializes a cache once), so step i builds the first i shapes
// into a fresh cache and then reads it.
BOOST_AUTO_TEST_CASE(size_equals_the_serialized_entries_after_every_build) {
  for (std::size_t steps = 1; steps <= sequence.size(); ++steps) {
    auto kc = std::make_shared<dnngraph::KernelCache>();
    for (std::size_t i = 0; i < steps; ++i) {
      auto g = make_graph(sequence[i], kc);
      (void)build(g, handle, {dnngraph::HeuristicMode::A});
    }
    auto json = kc->to_json();
    BOOST_TEST_REQUIRE(json.has_value(), (json ? "" : json.error().message));
    BOOST_TEST_MESSAGE("after " << steps << " shape(s): size " << *kc->size() << ", revision "
                                << *kc->revision() << ", to_json " << json->size() << " bytes with "
                                << entries_in(*json) << " entries");
    BOOST_TEST(*kc->size() == entries_in(*json));
    BOOST_TEST(*kc->size() >= 1);
  }
}

// Below 9.27 cuDNN serializes a cache once: a to_json() after the cache changed would return the
// old document, so it must be an Error instead; a cache that did not change serializes the same.
BOOST_AUTO_TEST_CASE(to_json_never_returns_a_stale_document) {
  auto kc = std::make_shared<dnngraph::KernelCache>();
  auto g1 = make_graph(sequence[0], kc);
  (void)build(g1, handle, {dnngraph::HeuristicMode::A});
  const std::string first = *kc->to_json();
  BOOST_TEST(entries_in(first) == *kc->size());
  BOOST_TEST(*kc->to_json() == first);  // unchanged cache, same document
  // Heuristics A without cache first picked another kernel config for this shape on the H200
  // (KERNEL_CFG 13 against 22), which compiles and inserts.
  const auto revision_before = *kc->revision();
  auto g2 = make_graph(shape(1, 4096, 4096, 1024), kc, /*cache_first=*/false);
  const Built b2 = build(g2, handle, {dnngraph::HeuristicMode::A});
  const bool changed = *kc->revision() != revision_before;
  BOOST_TEST_MESSAGE("second config: " << b2.info.describe() << "; revision " << *kc->revision()
                                       << ", size " << *kc->size());
  auto again = kc->to_json();
  // From cuDNN 9.27 every read is fresh, also when dnngraph was compiled against older headers
  // and counts on the library path (Python tests on the H200, 9.19 headers and 9.27 loaded).
  if (dnngraph::cudnn_runtime_version() >= 92700) {
    BOOST_TEST_REQUIRE(again.has_value());
    BOOST_TEST(entries_in(*again) == *kc->size());
  } else if (changed) {
    BOOST_TEST_REQUIRE(!again.has_value());
    BOOST_TEST((again.error().code == dnngraph::ErrorCode::VersionTooOld));
    BOOST_TEST(again.error().message.find("9.27") != std::string::npos);
    BOOST_TEST_MESSAGE("refused, as it must be: " << again.error().message);
  } else {
    BOOST_TEST_REQUIRE(again.has_value());
    BOOST_TEST(*again == first);
  }
  BOOST_TEST(check_numbers(g2, handle, shape(1, 4096, 4096, 1024), 7) == "");
}

BOOST_AUTO_TEST_CASE(a_cache_loaded_from_json_restarts_its_revision_and_serves_the_topology) {
  auto kc = std::make_shared<dnngraph::KernelCache>();
  const auto s1 = shape(1, 1024, 1024, 1024);
  auto g1 = make_graph(s1, kc);
  build(g1, handle);
  const std::string json = *kc->to_json();
  BOOST_TEST_MESSAGE("to_json: " << json.size() << " bytes; start: " << json.substr(0, 300));

  auto kc2 = std::make_shared<dnngraph::KernelCache>();
  auto loaded = kc2->from_json(json);
  BOOST_TEST_REQUIRE(loaded.has_value(), (loaded ? "" : loaded.error().message));
  const auto s2 = shape(1, 2048, 512, 1024);
  auto g2 = make_graph(s2, kc2);
  const Built b2 = build(g2, handle);
  BOOST_TEST_MESSAGE("loaded cache, new shape: " << b2.ms << " ms, " << b2.info.describe()
                                                 << "; revision " << *kc2->revision() << ", size "
                                                 << *kc2->size());
  const auto loaded_entries = static_cast<std::int64_t>(entries_of(json).size());
  BOOST_TEST(loaded_entries >= 1);  // the compiled kernel travels in the document
  if (b2.info.kernel_cache_hit) {
    BOOST_TEST(*kc2->revision() == 0);  // a lookup: the count restarted at the load
    BOOST_TEST(*kc2->size() == loaded_entries);
  } else {
    BOOST_TEST(*kc2->revision() >= 1);  // it compiled: this process's insertion(s) only
    BOOST_TEST(*kc2->size() >= loaded_entries + 1);
  }
  // Measured on the H200: cuDNN 9.27 serves the loaded entry; cuDNN 9.19 compiles again and
  // inserts a second entry (cudnn-frontend 1.32 on 9.19 gains nothing from a loaded cache either).
  if (dnngraph::cudnn_runtime_version() >= 92700) {
    BOOST_TEST(b2.info.kernel_cache_hit);
  }
  BOOST_TEST(check_numbers(g2, handle, s2, 5) == "");
}

BOOST_AUTO_TEST_CASE(eight_threads_share_one_unbuilt_cache_without_a_failed_build) {
  auto kc = std::make_shared<dnngraph::KernelCache>();
  constexpr int builders = 8;
  constexpr int graphs_per_thread = 8;
  const std::vector<MatmulShape> shapes = {shape(1, 1024, 1024, 1024), shape(1, 512, 512, 1024),
                                           shape(2, 1024, 512, 512),   shape(1, 256, 2048, 1024),
                                           shape(4, 512, 256, 256),    shape(1, 768, 1536, 1024),
                                           shape(8, 128, 256, 512),    shape(1, 2048, 1024, 512)};
  std::atomic<int> failed_builds{0};
  std::atomic<int> wrong_numbers{0};
  std::atomic<int> built_graphs{0};
  std::atomic<bool> done{false};
  std::atomic<int> reader_calls{0};
  std::atomic<int> reader_values{0};  // rounds where all three gave values (after a build)
  std::mutex messages_mutex;
  std::vector<std::string> messages;
  auto note = [&](std::string m) {
    std::scoped_lock lock(messages_mutex);
    messages.push_back(std::move(m));
  };

  std::vector<std::thread> readers;
  readers.reserve(2);
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        // Before the first build these are errors; after it, values. Neither may crash or race.
        const bool answered =
            kc->revision().has_value() && kc->size().has_value() && kc->to_json().has_value();
        ++reader_calls;
        reader_values += answered ? 1 : 0;
      }
    });
  }
  std::vector<std::thread> pool;
  pool.reserve(builders);
  for (int t = 0; t < builders; ++t) {
    pool.emplace_back([&, t] {
      auto h = dnngraph::Handle::create();
      if (!h) {
        ++failed_builds;
        note("thread " + std::to_string(t) + ": handle: " + h.error().message);
        return;
      }
      for (int i = 0; i < graphs_per_thread; ++i) {
        const MatmulShape& s = shapes[static_cast<std::size_t>((t + i) % shapes.size())];
        auto g = make_graph(s, kc);
        auto built = g.build(*h, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback});
        if (!built) {
          ++failed_builds;
          note("thread " + std::to_string(t) + " graph " + std::to_string(i) + ": " +
               built.error().message);
          continue;
        }
        ++built_graphs;
        if (auto wrong = check_numbers(g, *h, s, static_cast<std::uint32_t>(100 * t + i));
            !wrong.empty()) {
          ++wrong_numbers;
          note("thread " + std::to_string(t) + " graph " + std::to_string(i) + ": " + wrong);
        }
      }
    });
  }
  for (auto& t : pool) {
    t.join();
  }
  done = true;
  for (auto& t : readers) {
    t.join();
  }
  for (const auto& m : messages) {
    BOOST_TEST_MESSAGE(m);
  }
  BOOST_TEST_MESSAGE(built_graphs.load()
                     << " graphs built on " << builders << " threads, " << failed_builds.load()
                     << " failed, " << wrong_numbers.load() << " with wrong numbers; "
                     << reader_calls.load() << " reader rounds (" << reader_values.load()
                     << " answered all three with values); revision " << kc->revision().value_or(-1)
                     << ", size " << kc->size().value_or(-1) << ", descriptors created "
                     << kc->descriptors_created());
  BOOST_TEST(failed_builds.load() == 0);
  BOOST_TEST(wrong_numbers.load() == 0);
  BOOST_TEST(built_graphs.load() == builders * graphs_per_thread);
  BOOST_TEST(kc->descriptors_created() == 1);
}

// What docs/performance.md promises of execute() (each concurrent call its own variant pack) and
// what a server keeping its built graphs relies on (on cuDNN 9.28.1 every static build keeps
// memory: known-issues.md): one graph built once, on the fixture's handle, then executed by
// eight threads at once, each with a Handle of its own and its own data, 16 times each. Both
// forms: static (the plan alone) and dynamic on a kernel cache (its plan's execute goes through
// the cache). Every execute's numbers against the CPU.
BOOST_AUTO_TEST_CASE(one_built_graph_runs_right_from_eight_threads_each_with_its_own_handle) {
  constexpr int threads = 8;
  constexpr int executes_per_thread = 16;
  const MatmulShape s = shape(2, 256, 192, 320);
  for (const bool dynamic : {false, true}) {
    const std::string form = dynamic ? "dynamic, on a kernel cache" : "static";
    auto g = make_graph(s, std::make_shared<dnngraph::KernelCache>());
    if (!dynamic) g.set_dynamic_shape_enabled(false).set_kernel_cache(nullptr);
    const auto built =
        g.build(handle, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback});
    BOOST_TEST_REQUIRE(built.has_value(), form << ": " << (built ? "" : built.error().message));
    std::atomic<int> executed{0};
    std::atomic<int> failed{0};
    std::mutex messages_mutex;
    std::vector<std::string> messages;
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        auto own = dnngraph::Handle::create();
        for (int e = 0; e < executes_per_thread; ++e) {
          const std::string wrong =
              own ? check_numbers(g, *own, s, static_cast<std::uint32_t>(1000 * t + 10 * e))
                  : "handle: " + own.error().message;
          if (wrong.empty()) {
            ++executed;
            continue;
          }
          ++failed;
          const std::scoped_lock lock(messages_mutex);
          std::string& message = messages.emplace_back(form);
          message.append(", thread ").append(std::to_string(t));
          message.append(", execute ").append(std::to_string(e)).append(": ").append(wrong);
          if (!own) return;
        }
      });
    }
    for (auto& t : pool) t.join();
    for (const auto& m : messages) BOOST_TEST_MESSAGE(m);
    BOOST_TEST_MESSAGE(form << ": " << executed.load() << " executes right on " << threads
                            << " threads, " << failed.load() << " failed or wrong");
    BOOST_TEST(failed.load() == 0, form);
    BOOST_TEST(executed.load() == threads * executes_per_thread, form);
  }
}

BOOST_AUTO_TEST_SUITE_END()
