// Dynamic-shape convolution on the GPU: conv_fprop + bias + ReLU (fp16, NHWC, 3x3, C = K = 64)
// over several N, H, W sharing one KernelCache; the cache saved and loaded; and the same graph
// built once on a cache shape and run with override shapes on N, H, W. Every result is compared
// with the CPU reference.
#include <boost/json.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/conv_reference.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::test::DeviceBuffer;
using Dims = std::vector<std::int64_t>;
constexpr std::int64_t channels = 64;

struct Spatial {
  std::int64_t n, h, w;
};

Dims x_dims(const Spatial& s) { return {s.n, channels, s.h, s.w}; }
Dims y_dims(const Spatial& s) { return {s.n, channels, s.h, s.w}; }  // 3x3, padding 1, stride 1
const Dims w_dims{channels, channels, 3, 3};
const Dims bias_dims{1, channels, 1, 1};

struct ConvGraph {
  dnngraph::Graph g;
  std::shared_ptr<dnngraph::TensorAttributes> y;
};

// NHWC everywhere: strides say so; the pointwise outputs follow the conv's layout.
ConvGraph make_graph(const Spatial& s, const std::shared_ptr<dnngraph::KernelCache>& kc,
                     bool overrides) {
  using namespace dnngraph;
  ConvGraph c;
  c.g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  if (kc) {
    c.g.set_dynamic_shape_enabled(true).set_kernel_cache(kc);
  }
  c.g.set_override_shape_enabled(overrides);
  auto x = c.g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(x_dims(s)).set_stride(
      channels_last_strides(x_dims(s))));
  auto w = c.g.tensor(TensorAttributes().set_name("W").set_uid(2).set_dim(w_dims).set_stride(
      channels_last_strides(w_dims)));
  auto bias =
      c.g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim(bias_dims).set_stride(
          channels_last_strides(bias_dims)));
  auto conv = c.g.conv_fprop(x, w, ConvFpropAttributes().set_padding({1, 1}));
  auto d = c.g.pointwise(conv, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  c.y = c.g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  c.y->set_output(true).set_uid(3).set_name("Y");
  return c;
}

struct Overrides {
  std::vector<std::int64_t> uids{1, 3};
  std::vector<Dims> shapes;
  std::vector<Dims> strides;
  explicit Overrides(const Spatial& s)
      : shapes{x_dims(s), y_dims(s)},
        strides{dnngraph::channels_last_strides(x_dims(s)),
                dnngraph::channels_last_strides(y_dims(s))} {}
};

// Runs g on shape s (with overrides when given); "" when the numbers are right.
std::string run_and_check(const dnngraph::Graph& g, const dnngraph::Handle& handle,
                          const Spatial& s, const Overrides* overrides, std::uint32_t seed) {
  using dnngraph::DataType;
  std::mt19937 rng(seed);
  const Dims xs = dnngraph::channels_last_strides(x_dims(s));
  const Dims ws = dnngraph::channels_last_strides(w_dims);
  const Dims ys = dnngraph::channels_last_strides(y_dims(s));
  const auto x = dnngraph::test::random_tensor(DataType::Half,
                                               dnngraph::test::storage_size(x_dims(s), xs), rng);
  const auto w =
      dnngraph::test::random_tensor(DataType::Half, dnngraph::test::storage_size(w_dims, ws), rng);
  const auto bias = dnngraph::test::random_tensor(DataType::Half, channels, rng);
  const std::size_t y_count = dnngraph::test::storage_size(y_dims(s), ys);
  std::int64_t workspace = g.get_workspace_size().value_or(0);
  if (overrides != nullptr) {
    auto queried =
        g.get_workspace_size(handle, overrides->uids, overrides->shapes, overrides->strides);
    if (!queried) {
      return "get_workspace_size: " + queried.error().message;
    }
    workspace = *queried;
  }
  auto x_dev = DeviceBuffer::copy_of(std::span<const std::byte>(x.bytes));
  auto w_dev = DeviceBuffer::copy_of(std::span<const std::byte>(w.bytes));
  auto b_dev = DeviceBuffer::copy_of(std::span<const std::byte>(bias.bytes));
  auto y_dev = DeviceBuffer::allocate(y_count * 2);
  auto ws_dev = DeviceBuffer::allocate(static_cast<std::size_t>(workspace));
  if (!x_dev || !w_dev || !b_dev || !y_dev || !ws_dev || !y_dev->fill_bytes(0xFF)) {
    return "device allocation failed";
  }
  const std::unordered_map<std::int64_t, void*> pack{
      {1, x_dev->get()}, {2, w_dev->get()}, {4, b_dev->get()}, {3, y_dev->get()}};
  auto ran = overrides == nullptr ? g.execute(handle, pack, ws_dev->get())
                                  : g.execute(handle, pack, ws_dev->get(), overrides->uids,
                                              overrides->shapes, overrides->strides);
  if (!ran) {
    return "execute: " + ran.error().message;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    return "cudaDeviceSynchronize failed";
  }
  std::vector<std::byte> y_bytes(y_count * 2);
  if (!y_dev->download(std::span<std::byte>(y_bytes))) {
    return "download failed";
  }
  const auto got = dnngraph::test::decode(DataType::Half, y_bytes);
  const dnngraph::test::ConvProblem p{x_dims(s), w_dims, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false};
  const auto expected =
      dnngraph::test::reference_conv_fprop(p, x.values, xs, w.values, ws, ys, bias.values, true);
  // 576 products of values in [-1, 1] accumulated in fp32, one fp16 rounding of the output.
  const auto result = dnngraph::test::compare(got, expected, {1e-2, 1e-2});
  BOOST_TEST_MESSAGE("  [N " << s.n << ", H " << s.h << ", W " << s.w
                             << "]: " << result.describe());
  return result.passed() ? "" : result.describe();
}

std::size_t entries_in(const std::string& json) {
  return boost::json::parse(json).as_object().at("kernel_cache").as_array().size();
}

struct HandleFixture {
  HandleFixture() {
    auto h = dnngraph::Handle::create();
    BOOST_TEST_REQUIRE(h.has_value(), (h ? "" : h.error().message));
    handle = std::move(*h);
  }
  dnngraph::Handle handle;
};

const std::vector<Spatial> shapes = {
    {1, 56, 56}, {2, 28, 28}, {4, 14, 14}, {1, 112, 112}, {8, 7, 7}};

}  // namespace

BOOST_TEST_DONT_PRINT_LOG_VALUE(dnngraph::HeuristicMode)

BOOST_FIXTURE_TEST_SUITE(dynamic_convolution, HandleFixture)

BOOST_AUTO_TEST_CASE(conv_relu_shapes_share_one_kernel_cache) {
  auto kc = std::make_shared<dnngraph::KernelCache>();
  int hits = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto c = make_graph(shapes[i], kc, false);
    const auto start = std::chrono::steady_clock::now();
    auto built = c.g.build(handle, {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::Fallback});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
    const auto info = *c.g.plan_info();
    hits += info.kernel_cache_hit ? 1 : 0;
    BOOST_TEST_MESSAGE("conv shape " << i << ": " << ms << " ms, " << info.describe()
                                     << "; revision " << *kc->revision() << ", size "
                                     << *kc->size());
    // Cache hits change nothing, so even on cuDNN 9.19 (which serializes a cache once) every
    // read is current; a refused read would mean the cache changed, and fails here.
    auto json = kc->to_json();
    BOOST_TEST_REQUIRE(json.has_value(), (json ? "" : json.error().message));
    BOOST_TEST(*kc->size() == static_cast<std::int64_t>(entries_in(*json)));
    BOOST_TEST(run_and_check(c.g, handle, shapes[i], nullptr, static_cast<std::uint32_t>(i)) == "");
  }
  // Cache first: every shape after the first reuses the first one's kernel.
  BOOST_TEST(hits == static_cast<int>(shapes.size()) - 1);
  if (dnngraph::KernelCache::introspection_path() == "native") {
    BOOST_TEST(*kc->revision() >= 1);
  }

  auto saved = kc->to_json();
  BOOST_TEST_REQUIRE(saved.has_value(), (saved ? "" : saved.error().message));
  const std::string& json = *saved;
  auto kc2 = std::make_shared<dnngraph::KernelCache>();
  BOOST_TEST_REQUIRE(kc2->from_json(json).has_value());
  auto c = make_graph({3, 40, 40}, kc2, false);
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST_REQUIRE(c.g.build(handle, {dnngraph::HeuristicMode::A}).has_value());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("loaded cache (" << json.size() << " bytes, " << entries_in(json)
                                      << " entries), new shape: " << ms << " ms, "
                                      << c.g.plan_info()->describe() << "; revision "
                                      << *kc2->revision());
  BOOST_TEST(entries_in(json) >= 1);
  // A hit changes nothing; cuDNN 9.19 does not serve a loaded entry (measured on the H200, as
  // for matmul in kernel_cache_test) and compiles again: one insertion of this process.
  BOOST_TEST(*kc2->revision() == (c.g.plan_info()->kernel_cache_hit ? 0 : 1));
  if (dnngraph::cudnn_runtime_version() >= 92700) {
    BOOST_TEST(c.g.plan_info()->kernel_cache_hit);
  }
  BOOST_TEST(run_and_check(c.g, handle, {3, 40, 40}, nullptr, 99) == "");
}

// Each heuristics mode on its own: every mode that builds must run every shape exactly.
BOOST_DATA_TEST_CASE_F(HandleFixture, conv_relu_built_once_runs_override_shapes_on_n_h_w,
                       boost::unit_test::data::make({dnngraph::HeuristicMode::A,
                                                     dnngraph::HeuristicMode::B,
                                                     dnngraph::HeuristicMode::Fallback}),
                       mode) {
  auto c = make_graph({1, 56, 56}, nullptr, true);
  auto built = c.g.build(handle, {mode});
  const bool native = dnngraph::cudnn_offers(dnngraph::CudnnCapability::OverrideShapeFlag);
  if (!native) {
    // Below 9.21 the only path is a dynamic-shape graph, which returned success and wrong
    // numbers for this graph on cuDNN 9.19: the build must refuse and say what is needed.
    BOOST_TEST_REQUIRE(!built.has_value());
    BOOST_TEST((built.error().code == dnngraph::ErrorCode::VersionTooOld));
    BOOST_TEST(built.error().message.find("cuDNN >= 9.21") != std::string::npos);
    BOOST_TEST(built.error().message.find("conv_fprop") != std::string::npos);
    BOOST_TEST_MESSAGE("heuristics " << dnngraph::to_string(mode)
                                     << ": refused as it must be: " << built.error().message);
    return;
  }
  if (!built) {
    // cuDNN 9.27 (H200) offers no engine for this graph with the override flag: an Error at
    // build that says so is the right answer; anything else is not.
    BOOST_TEST((built.error().code == dnngraph::ErrorCode::NoEngine));
    BOOST_TEST(built.error().message.find("override-shape flag") != std::string::npos);
    BOOST_TEST_MESSAGE("refused at build: " << built.error().message);
    return;
  }
  BOOST_TEST_MESSAGE("heuristics "
                     << dnngraph::to_string(mode)
                     << ", conv cache shape [1, 64, 56, 56]: " << c.g.plan_info()->describe()
                     << "; overrides via " << c.g.plan_info()->override_path);
  for (const Spatial& s : {Spatial{2, 28, 28}, Spatial{1, 112, 112}, Spatial{4, 14, 14},
                           Spatial{3, 40, 40}, Spatial{1, 56, 56}}) {
    const Overrides o(s);
    BOOST_TEST_CONTEXT("N " << s.n << ", H " << s.h << ", W " << s.w) {
      BOOST_TEST(run_and_check(c.g, handle, s, &o, static_cast<std::uint32_t>(s.h)) == "");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
