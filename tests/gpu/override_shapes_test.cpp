// Override shapes on the GPU: a matmul, alone and with fused epilogues (bias + ReLU, ReLU,
// bias + GELU), built once on the cache shape b=1, M=N=K=1024 under heuristics A, B and Fallback
// and run with the real shapes of each call. Every run queries its workspace, allocates exactly
// that, is compared with the CPU reference, and must leave a canary after the output untouched.
// Where the loaded cuDNN cannot run a topology with overrides, build() must refuse it.
#include <boost/test/unit_test.hpp>

#include "support/device_buffer.hpp"
#include "support/host_types.hpp"
#include "support/reference.hpp"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

namespace {

using dnngraph::test::DeviceBuffer;
using Dims = std::vector<std::int64_t>;

struct Case {
  std::int64_t b, m, n, k;
};

// Smaller, larger, other batches, M and N not multiples of 128, K changed both ways.
const std::vector<Case> shapes = {
    {1, 512, 512, 512},    {1, 2048, 1536, 1024}, {4, 256, 256, 1024},
    {1, 1000, 776, 1024},  {2, 127, 200, 64},     {1, 1024, 1024, 512},
    {1, 1024, 1024, 2048}, {3, 333, 264, 136},    {1, 8, 8, 8}};

struct Io {
  dnngraph::DataType type;
  const char* name;
  float (*round)(float);
  std::uint16_t (*encode)(float);
  float (*decode)(std::uint16_t);
  dnngraph::test::Tolerance tolerance;  // output rounding: 2^-11 (fp16) or 2^-8 (bf16) relative
};

const Io half{dnngraph::DataType::Half,      "fp16",
              dnngraph::test::round_to_half, dnngraph::test::float_to_half,
              dnngraph::test::half_to_float, {2e-2, 1e-2}};
const Io bf16{dnngraph::DataType::BFloat16,      "bf16",
              dnngraph::test::round_to_bfloat16, dnngraph::test::float_to_bfloat16,
              dnngraph::test::bfloat16_to_float, {8e-2, 2e-2}};

// What follows the matmul: nothing, or a pointwise epilogue (bias [1, 1, N] is uid 4).
struct Topology {
  const char* name;
  bool bias;
  dnngraph::test::Epilogue epilogue;
  [[nodiscard]] bool fused() const { return bias || epilogue != dnngraph::test::Epilogue::None; }
};

const Topology plain{"matmul", false, dnngraph::test::Epilogue::None};
const Topology bias_relu{"matmul + bias + ReLU", true, dnngraph::test::Epilogue::Relu};
const Topology relu{"matmul + ReLU", false, dnngraph::test::Epilogue::Relu};
const Topology bias_gelu{"matmul + bias + GELU", true, dnngraph::test::Epilogue::Gelu};

dnngraph::Graph cache_shape_graph(const Io& io, bool overrides, const Topology& topology = plain) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(io.type).set_compute_data_type(DataType::Float);
  g.set_override_shape_enabled(overrides);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, 1024, 1024}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1024, 1024}));
  auto y = g.matmul(a, b);
  if (topology.bias) {
    auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, 1024}));
    y = g.pointwise(y, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  }
  if (topology.epilogue == dnngraph::test::Epilogue::Relu) {
    y = g.pointwise(y, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  } else if (topology.epilogue == dnngraph::test::Epilogue::Gelu) {
    y = g.pointwise(y, PointwiseAttributes().set_mode(PointwiseMode::GeluFwd));
  }
  y->set_output(true).set_uid(3).set_name("C");
  return g;
}

std::vector<float> random_values(std::size_t count, std::uint32_t seed, const Io& io) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> v(count);
  for (float& x : v) {
    x = io.round(dist(rng));
  }
  return v;
}

std::vector<std::uint16_t> encode(const std::vector<float>& v, const Io& io) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out[i] = io.encode(v[i]);
  }
  return out;
}

// Runs one override shape on g; "" when right, else what went wrong.
std::string run_case(const dnngraph::Graph& g, const dnngraph::Handle& handle, const Io& io,
                     const Case& c, const Topology& topology = plain) {
  const Dims a_dims{c.b, c.m, c.k}, b_dims{c.b, c.k, c.n}, c_dims{c.b, c.m, c.n};
  const Dims bias_dims{1, 1, c.n};
  std::vector<std::int64_t> uids{1, 2, 3};
  std::vector<Dims> dims{a_dims, b_dims, c_dims};
  std::vector<Dims> strides{dnngraph::packed_strides(a_dims), dnngraph::packed_strides(b_dims),
                            dnngraph::packed_strides(c_dims)};
  if (topology.bias) {
    uids.push_back(4);
    dims.push_back(bias_dims);
    strides.push_back(dnngraph::packed_strides(bias_dims));
  }
  auto ws = g.get_workspace_size(handle, uids, dims, strides);
  if (!ws) {
    return "get_workspace_size: " + ws.error().message;
  }
  const auto count = [](const Dims& d) { return dnngraph::test::element_count(d); };
  const auto a = random_values(count(a_dims), 11, io);
  const auto b = random_values(count(b_dims), 12, io);
  const auto bias = random_values(count(bias_dims), 13, io);
  constexpr std::size_t canary = 4096;  // elements after C that nothing may write
  auto a_dev = DeviceBuffer::copy_of(encode(a, io));
  auto b_dev = DeviceBuffer::copy_of(encode(b, io));
  auto bias_dev = DeviceBuffer::copy_of(encode(bias, io));
  auto c_dev = DeviceBuffer::allocate((count(c_dims) + canary) * 2);
  auto ws_dev = DeviceBuffer::allocate(static_cast<std::size_t>(*ws));  // exactly the query
  if (!a_dev || !b_dev || !bias_dev || !c_dev || !ws_dev || !c_dev->fill_bytes(0xFF)) {
    return "device allocation failed";
  }
  std::unordered_map<std::int64_t, void*> pack{
      {1, a_dev->get()}, {2, b_dev->get()}, {3, c_dev->get()}};
  if (topology.bias) {
    pack.emplace(4, bias_dev->get());
  }
  auto ran = g.execute(handle, pack, ws_dev->get(), uids, dims, strides);
  if (!ran) {
    return "execute: " + ran.error().message;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    return "cudaDeviceSynchronize failed";
  }
  std::vector<std::uint16_t> out(count(c_dims) + canary);
  if (!c_dev->download(std::span<std::uint16_t>(out))) {
    return "download failed";
  }
  for (std::size_t i = count(c_dims); i < out.size(); ++i) {
    if (out[i] != 0xFFFF) {
      return "wrote past the override shape's output at element " + std::to_string(i);
    }
  }
  std::vector<float> got(count(c_dims));
  for (std::size_t i = 0; i < got.size(); ++i) {
    got[i] = io.decode(out[i]);
  }
  const auto expected = dnngraph::test::reference_matmul(
      {a_dims, b_dims}, a, b, topology.bias ? bias : std::vector<float>{}, topology.epilogue);
  const auto result = dnngraph::test::compare(got, expected, io.tolerance);
  BOOST_TEST_MESSAGE(io.name << " " << topology.name << " [" << c.b << ", " << c.m << ", " << c.n
                             << ", " << c.k << "]: workspace " << *ws << " B, "
                             << result.describe());
  return result.passed() ? "" : result.describe();
}

const char* mode_name(dnngraph::HeuristicMode mode) {
  switch (mode) {
    case dnngraph::HeuristicMode::A: return "A";
    case dnngraph::HeuristicMode::B: return "B";
    default: return "Fallback";
  }
}

// Builds the topology once per heuristics mode and runs every override shape. Below cuDNN 9.21
// overrides go through a dynamic-shape graph, where a fused epilogue failed in the driver at
// execute (cuDNN 9.19, H200): there build() must refuse it, saying which version it needs.
void run_all_shapes(const Io& io, const Topology& topology = plain) {
  auto handle = dnngraph::Handle::create();
  BOOST_TEST_REQUIRE(handle.has_value(), (handle ? "" : handle.error().message));
  const bool refused_here =
      topology.fused() && !dnngraph::cudnn_offers(dnngraph::CudnnCapability::OverrideShapeFlag);
  int built_modes = 0;
  for (auto mode : {dnngraph::HeuristicMode::A, dnngraph::HeuristicMode::B,
                    dnngraph::HeuristicMode::Fallback}) {
    BOOST_TEST_CONTEXT(io.name << " " << topology.name << ", heuristics " << mode_name(mode)) {
      auto g = cache_shape_graph(io, true, topology);
      auto built = g.build(*handle, {mode});
      if (refused_here) {
        BOOST_TEST_REQUIRE(!built.has_value());
        BOOST_TEST((built.error().code == dnngraph::ErrorCode::VersionTooOld));
        BOOST_TEST(built.error().message.find("9.21") != std::string::npos);
        BOOST_TEST_MESSAGE("refused at build, as it must be: " << built.error().message);
        continue;
      }
      if (!built && built.error().code == dnngraph::ErrorCode::NoEngine) {
        BOOST_TEST_MESSAGE(
            "no engine for this mode (a finding, not a pass): " << built.error().message);
        continue;
      }
      BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
      ++built_modes;
      const auto info = *g.plan_info();
      BOOST_TEST_MESSAGE(
          io.name << " " << topology.name << " cache shape [1, 1024, 1024, 1024]: "
                  << info.describe() << "; overrides via " << info.override_path
                  << "; workspace via " << info.override_workspace_path << "; cuDNN "
                  << dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()));
      BOOST_TEST(!info.override_path.empty());
      for (const Case& c : shapes) {
        BOOST_TEST_CONTEXT("[" << c.b << ", " << c.m << ", " << c.n << ", " << c.k << "]") {
          BOOST_TEST(run_case(g, *handle, io, c, topology) == "");
        }
      }
      // The same shape twice in a row takes the checked-once path; it must give the same answer.
      BOOST_TEST(run_case(g, *handle, io, shapes.front(), topology) == "");
    }
  }
  if (!refused_here) {
    BOOST_TEST(built_modes >= 1, "no heuristics mode built " << topology.name);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(fp16_matmul_built_once_runs_every_override_shape_exactly) {
  run_all_shapes(half);
}

BOOST_AUTO_TEST_CASE(bf16_matmul_built_once_runs_every_override_shape_exactly) {
  run_all_shapes(bf16);
}

BOOST_AUTO_TEST_CASE(bf16_matmul_bias_relu_runs_every_override_shape_exactly_or_is_refused) {
  run_all_shapes(bf16, bias_relu);
}

BOOST_AUTO_TEST_CASE(fp16_matmul_relu_runs_every_override_shape_exactly_or_is_refused) {
  run_all_shapes(half, relu);
}

BOOST_AUTO_TEST_CASE(fp16_matmul_bias_gelu_runs_every_override_shape_exactly_or_is_refused) {
  run_all_shapes(half, bias_gelu);
}

BOOST_AUTO_TEST_CASE(overrides_on_a_graph_built_without_them_are_refused) {
  auto handle = dnngraph::Handle::create();
  BOOST_TEST_REQUIRE(handle.has_value());
  auto g = cache_shape_graph(half, false);
  BOOST_TEST_REQUIRE(g.build(*handle, {dnngraph::HeuristicMode::A}).has_value());
  const std::vector<std::int64_t> uids{1};
  const std::vector<Dims> dims{Dims{1, 512, 1024}};
  const std::vector<Dims> strides{Dims{524288, 1024, 1}};
  auto ws = g.get_workspace_size(*handle, uids, dims, strides);
  BOOST_TEST_REQUIRE(!ws.has_value());
  BOOST_TEST((ws.error().code == dnngraph::ErrorCode::InvalidState));
  BOOST_TEST(ws.error().message.find("set_override_shape_enabled(true)") != std::string::npos);
  std::vector<std::uint16_t> unused(16);
  auto dev = DeviceBuffer::copy_of(unused);
  BOOST_TEST_REQUIRE(dev.has_value());
  auto ran = g.execute(*handle, {{1, dev->get()}, {2, dev->get()}, {3, dev->get()}}, nullptr, uids,
                       dims, strides);
  BOOST_TEST_REQUIRE(!ran.has_value());
  BOOST_TEST((ran.error().code == dnngraph::ErrorCode::InvalidState));
}

// Shapes or strides given without uids are overrides too: lists of different lengths, refused by
// execute() and get_workspace_size() alike, never a run at the build shapes on buffers meant for
// the listed ones; on a graph built without overrides, the not-enabled refusal.
BOOST_AUTO_TEST_CASE(shapes_and_strides_without_uids_are_refused_not_ignored) {
  auto handle = dnngraph::Handle::create();
  BOOST_TEST_REQUIRE(handle.has_value());
  const std::vector<std::int64_t> no_uids;
  const std::vector<Dims> dims{Dims{1, 512, 1024}};
  const std::vector<Dims> strides{Dims{524288, 1024, 1}};
  std::vector<std::uint16_t> unused(16);
  auto dev = DeviceBuffer::copy_of(unused);
  BOOST_TEST_REQUIRE(dev.has_value());
  const std::unordered_map<std::int64_t, void*> pack{
      {1, dev->get()}, {2, dev->get()}, {3, dev->get()}};
  for (const bool overrides : {true, false}) {
    auto g = cache_shape_graph(half, overrides);
    const auto built = g.build(*handle, {dnngraph::HeuristicMode::A});
    BOOST_TEST_REQUIRE(built.has_value(), (built ? "" : built.error().message));
    for (const auto& [shapes, strides_given] :
         {std::pair{dims, strides}, std::pair{dims, std::vector<Dims>{}},
          std::pair{std::vector<Dims>{}, strides}}) {
      const auto ws = g.get_workspace_size(*handle, no_uids, shapes, strides_given);
      const auto ran = g.execute(*handle, pack, nullptr, no_uids, shapes, strides_given);
      BOOST_TEST_REQUIRE(!ws.has_value());
      BOOST_TEST_REQUIRE(!ran.has_value());
      BOOST_TEST_MESSAGE("overrides " << overrides << ", " << shapes.size() << " shapes, "
                                      << strides_given.size()
                                      << " strides: " << ran.error().message);
      for (const dnngraph::Error& e : {ws.error(), ran.error()}) {
        if (overrides) {
          BOOST_TEST((e.code == dnngraph::ErrorCode::InvalidAttribute));
          BOOST_TEST(e.message.find("the lists differ in length: 0 uids") != std::string::npos,
                     e.message);
        } else {
          BOOST_TEST((e.code == dnngraph::ErrorCode::InvalidState));
          BOOST_TEST(e.message.find("set_override_shape_enabled(true)") != std::string::npos,
                     e.message);
        }
      }
    }
  }
}
