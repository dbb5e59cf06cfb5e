// Matmul graphs on the GPU: results of matmul, matmul + bias + ReLU/GELU, batched and broadcast
// matmul against a CPU reference in double; and execute() refusing bad variant packs, a null
// workspace and a graph edited since its build before anything reaches cuDNN.
#include <boost/test/unit_test.hpp>

#include "support/device_buffer.hpp"
#include "support/host_types.hpp"
#include "support/reference.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/gpu_checks.hpp"

namespace {

using dnngraph::test::describe;
using dnngraph::test::require_cuda;

using dnngraph::DataType;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::Handle;
using dnngraph::HeuristicMode;
using dnngraph::PointwiseMode;
using dnngraph::Result;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::Epilogue;
using dnngraph::test::MatmulShape;
using dnngraph::test::Tolerance;

constexpr std::int64_t uid_a = 1;
constexpr std::int64_t uid_b = 2;
constexpr std::int64_t uid_bias = 3;
constexpr std::int64_t uid_y = 4;

// Tolerances. Inputs are uniform in [-1, 1] and K <= 256, so |Y| stays below ~30 and is of order
// sqrt(K)/3 typically. With fp32 accumulation the products of fp16 or bf16 inputs are exact and
// the sum's error is far below one rounding of the output, so the output type decides:
// fp16 rounds to 2^-11 relative; 1e-2 absolute + 1e-2 relative leaves ~20x that.
constexpr Tolerance half_tolerance{.abs = 1e-2, .rel = 1e-2};
// bf16 rounds to 2^-8 relative (8x coarser than fp16); 4x looser still leaves ~10x.
constexpr Tolerance bfloat16_tolerance{.abs = 4e-2, .rel = 4e-2};
// Float inputs with Float compute may run on TF32 tensor cores on Hopper (10 mantissa bits, and
// the inputs may be truncated, not rounded). That error does not shrink with |Y|: it grows like
// sqrt(K) * |a||b| * 2^-10, i.e. ~6e-3 rms at K = 256. So the absolute part is 1e-2 of the
// typical output size sqrt(K)/3 (~8 rms), and the relative part is 1e-2.
Tolerance float_tolerance(std::int64_t k) {
  return {.abs = 1e-2 * std::sqrt(static_cast<double>(k)) / 3.0, .rel = 1e-2};
}

Tolerance tolerance_for(DataType type, std::int64_t k) {
  switch (type) {
    case DataType::Half: return half_tolerance;
    case DataType::BFloat16: return bfloat16_tolerance;
    default: return float_tolerance(k);
  }
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Handle require_handle() {
  auto handle = Handle::create();
  BOOST_REQUIRE_MESSAGE(handle.has_value(), "Handle::create failed: " << describe(handle));
  return std::move(*handle);
}

// Values as the reference sees them (exactly representable in the storage type) and the bytes
// the device reads.
struct HostTensor {
  std::vector<float> values;
  std::vector<std::byte> bytes;
};

HostTensor random_tensor(DataType type, std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  HostTensor t;
  t.values.reserve(count);
  t.bytes.resize(count * static_cast<std::size_t>(dnngraph::size_of(type)));
  for (std::size_t i = 0; i < count; ++i) {
    const float drawn = dist(rng);
    if (type == DataType::Half) {
      const std::uint16_t bits = dnngraph::test::float_to_half(drawn);
      t.values.push_back(dnngraph::test::half_to_float(bits));
      std::memcpy(t.bytes.data() + i * sizeof bits, &bits, sizeof bits);
    } else if (type == DataType::BFloat16) {
      const std::uint16_t bits = dnngraph::test::float_to_bfloat16(drawn);
      t.values.push_back(dnngraph::test::bfloat16_to_float(bits));
      std::memcpy(t.bytes.data() + i * sizeof bits, &bits, sizeof bits);
    } else {
      t.values.push_back(drawn);
      std::memcpy(t.bytes.data() + i * sizeof drawn, &drawn, sizeof drawn);
    }
  }
  return t;
}

std::vector<float> decode(DataType type, std::span<const std::byte> bytes) {
  std::vector<float> values;
  if (type == DataType::Half || type == DataType::BFloat16) {
    values.resize(bytes.size() / sizeof(std::uint16_t));
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::uint16_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * sizeof bits, sizeof bits);
      values[i] = type == DataType::Half ? dnngraph::test::half_to_float(bits)
                                         : dnngraph::test::bfloat16_to_float(bits);
    }
  } else {
    values.resize(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  }
  return values;
}

struct MatmulCase {
  std::string name;
  DataType type;  // of A, B, bias and Y
  MatmulShape shape;
  bool bias = false;
  Epilogue epilogue = Epilogue::None;
  std::uint32_t seed = 1;
};

std::size_t bytes_of(DataType type, const std::vector<std::int64_t>& dims) {
  return dnngraph::test::element_count(dims) * static_cast<std::size_t>(dnngraph::size_of(type));
}

std::string shape_text(const MatmulCase& c) {
  return std::string(dnngraph::to_string(c.type)) + " " + dnngraph::to_string(c.shape.a_dims) +
         " x " + dnngraph::to_string(c.shape.b_dims);
}

// Y = epilogue(A x B [+ bias]); io type = the case's type, compute and intermediates Float.
Graph make_graph(const MatmulCase& c) {
  using dnngraph::MatmulAttributes;
  using dnngraph::PointwiseAttributes;
  using dnngraph::TensorAttributes;
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(uid_a).set_dim(c.shape.a_dims));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(uid_b).set_dim(c.shape.b_dims));
  auto y = g.matmul(a, b, MatmulAttributes().set_name("mm"));
  if (c.bias) {
    auto bias = g.tensor(
        TensorAttributes().set_name("bias").set_uid(uid_bias).set_dim(c.shape.bias_dims()));
    y = g.pointwise(y, bias,
                    PointwiseAttributes().set_name("bias_add").set_mode(PointwiseMode::Add));
  }
  if (c.epilogue == Epilogue::Relu) {
    y = g.pointwise(y, PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
  } else if (c.epilogue == Epilogue::Gelu) {
    y = g.pointwise(y, PointwiseAttributes().set_name("gelu").set_mode(PointwiseMode::GeluFwd));
  }
  y->set_output(true).set_name("Y").set_uid(uid_y);
  return g;
}

// A build failure here is a finding (e.g. no engine for a shape): print all of it, then stop.
void require_built(const Result<void>& built, const std::string& what) {
  if (!built) {
    BOOST_TEST_MESSAGE(what << ": build failed: " << describe(built));
  }
  BOOST_REQUIRE_MESSAGE(built.has_value(), what << ": build failed: " << describe(built));
}

// Builds the case with heuristics A then Fallback, runs it once on inputs uniform in [-1, 1]
// (fixed seed) and compares Y with the reference within the output type's tolerance.
void check_against_reference(const MatmulCase& c) {
  const Tolerance tolerance = tolerance_for(c.type, c.shape.k());
  Handle handle = require_handle();
  Graph g = make_graph(c);
  require_built(g.build(handle, {HeuristicMode::A, HeuristicMode::Fallback}),
                c.name + " (" + shape_text(c) + ")");
  const auto info = g.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));
  const std::int64_t workspace_size = info->workspace_size;

  std::mt19937 rng(c.seed);
  const HostTensor a = random_tensor(c.type, dnngraph::test::element_count(c.shape.a_dims), rng);
  const HostTensor b = random_tensor(c.type, dnngraph::test::element_count(c.shape.b_dims), rng);
  const HostTensor bias =
      c.bias ? random_tensor(c.type, static_cast<std::size_t>(c.shape.n()), rng) : HostTensor{};
  std::vector<std::byte> y_bytes(bytes_of(c.type, c.shape.c_dims()));

  DeviceBuffer a_dev = require_cuda(DeviceBuffer::copy_of(a.bytes), "A");
  DeviceBuffer b_dev = require_cuda(DeviceBuffer::copy_of(b.bytes), "B");
  DeviceBuffer bias_dev = require_cuda(DeviceBuffer::copy_of(bias.bytes), "bias");
  DeviceBuffer y_dev = require_cuda(DeviceBuffer::allocate(y_bytes.size()), "Y");
  DeviceBuffer workspace =
      require_cuda(DeviceBuffer::allocate(static_cast<std::size_t>(workspace_size)), "workspace");
  // NaN everywhere, so an element the kernel never writes cannot pass by accident.
  require_cuda(y_dev.fill_bytes(0xFF), "fill Y");

  std::unordered_map<std::int64_t, void*> pack{
      {uid_a, a_dev.get()}, {uid_b, b_dev.get()}, {uid_y, y_dev.get()}};
  if (c.bias) {
    pack.emplace(uid_bias, bias_dev.get());
  }
  const auto ran = g.execute(handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.name << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  require_cuda(y_dev.download(std::span<std::byte>(y_bytes)), "Y");

  const std::vector<double> expected =
      dnngraph::test::reference_matmul(c.shape, a.values, b.values, bias.values, c.epilogue);
  const std::vector<float> got = decode(c.type, y_bytes);
  const auto comparison = dnngraph::test::compare(got, expected, tolerance);
  BOOST_TEST_MESSAGE(c.name << " (" << shape_text(c) << "): " << comparison.describe()
                            << "; plan: " << info->describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), c.name << ": " << comparison.describe());
}

MatmulShape single(std::int64_t m, std::int64_t n, std::int64_t k) {
  return {.a_dims = {1, m, k}, .b_dims = {1, k, n}};
}

// M, N and K of the plain cases: K = 256 is the largest the tolerances above are argued for.
constexpr std::int64_t m_main = 128;
constexpr std::int64_t n_main = 64;
constexpr std::int64_t k_main = 256;

}  // namespace

BOOST_AUTO_TEST_SUITE(matmul_matches_reference)

BOOST_AUTO_TEST_CASE(half_matmul_matches_reference) {
  check_against_reference({.name = "half matmul",
                           .type = DataType::Half,
                           .shape = single(m_main, n_main, k_main),
                           .seed = 101});
}

BOOST_AUTO_TEST_CASE(bfloat16_matmul_matches_reference) {
  check_against_reference({.name = "bf16 matmul",
                           .type = DataType::BFloat16,
                           .shape = single(m_main, n_main, k_main),
                           .seed = 102});
}

BOOST_AUTO_TEST_CASE(float_matmul_matches_reference_within_tf32_error) {
  check_against_reference({.name = "float matmul",
                           .type = DataType::Float,
                           .shape = single(m_main, n_main, k_main),
                           .seed = 103});
}

BOOST_AUTO_TEST_CASE(half_matmul_bias_relu_matches_reference) {
  check_against_reference({.name = "half matmul + bias + relu",
                           .type = DataType::Half,
                           .shape = single(m_main, n_main, k_main),
                           .bias = true,
                           .epilogue = Epilogue::Relu,
                           .seed = 104});
}

BOOST_AUTO_TEST_CASE(bfloat16_matmul_bias_relu_matches_reference) {
  check_against_reference({.name = "bf16 matmul + bias + relu",
                           .type = DataType::BFloat16,
                           .shape = single(m_main, n_main, k_main),
                           .bias = true,
                           .epilogue = Epilogue::Relu,
                           .seed = 105});
}

BOOST_AUTO_TEST_CASE(half_matmul_bias_gelu_matches_reference) {
  check_against_reference({.name = "half matmul + bias + gelu",
                           .type = DataType::Half,
                           .shape = single(m_main, n_main, k_main),
                           .bias = true,
                           .epilogue = Epilogue::Gelu,
                           .seed = 106});
}

BOOST_AUTO_TEST_CASE(bfloat16_matmul_bias_gelu_matches_reference) {
  check_against_reference({.name = "bf16 matmul + bias + gelu",
                           .type = DataType::BFloat16,
                           .shape = single(m_main, n_main, k_main),
                           .bias = true,
                           .epilogue = Epilogue::Gelu,
                           .seed = 107});
}

BOOST_AUTO_TEST_CASE(batched_matmul_multiplies_each_batch_separately) {
  check_against_reference({.name = "half batched matmul (b = 3)",
                           .type = DataType::Half,
                           .shape = {.a_dims = {3, 64, 128}, .b_dims = {3, 128, 96}},
                           .seed = 108});
}

// The bias [1, 1, N] broadcasts along the batch and the rows: two dims, which a graph of
// pointwise nodes alone gets wrong at rank 3 (detail/nodes/pointwise.hpp); behind a matmul it is
// the epilogue's own case.
BOOST_AUTO_TEST_CASE(batched_matmul_bias_relu_broadcasts_the_bias_over_batch_and_rows) {
  check_against_reference({.name = "half batched matmul + bias + relu (b = 3)",
                           .type = DataType::Half,
                           .shape = {.a_dims = {3, 64, 128}, .b_dims = {3, 128, 96}},
                           .bias = true,
                           .epilogue = Epilogue::Relu,
                           .seed = 110});
}

BOOST_AUTO_TEST_CASE(batch_of_one_in_b_broadcasts_over_the_batch_of_a) {
  check_against_reference({.name = "half broadcast matmul ([4, M, K] x [1, K, N])",
                           .type = DataType::Half,
                           .shape = {.a_dims = {4, 32, 64}, .b_dims = {1, 64, 48}},
                           .seed = 109});
}

// M = 127, N = 33, K = 65: no dimension is a multiple of any vector width. If cuDNN has no
// engine for this, build() fails with NoEngine and the test says so: that is a finding.
BOOST_AUTO_TEST_CASE(half_matmul_of_odd_sizes_matches_reference) {
  check_against_reference({.name = "half matmul, odd sizes",
                           .type = DataType::Half,
                           .shape = single(127, 33, 65),
                           .seed = 110});
}

BOOST_AUTO_TEST_CASE(bfloat16_matmul_of_odd_sizes_matches_reference) {
  check_against_reference({.name = "bf16 matmul, odd sizes",
                           .type = DataType::BFloat16,
                           .shape = single(127, 33, 65),
                           .seed = 111});
}

BOOST_AUTO_TEST_CASE(float_matmul_of_odd_sizes_matches_reference) {
  check_against_reference({.name = "float matmul, odd sizes",
                           .type = DataType::Float,
                           .shape = single(127, 33, 65),
                           .seed = 112});
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// A built half matmul with every buffer it needs, for the execute() argument checks.
struct ReadyMatmul {
  Handle handle;
  Graph graph;
  DeviceBuffer a;
  DeviceBuffer b;
  DeviceBuffer y;
  DeviceBuffer workspace;

  [[nodiscard]] std::unordered_map<std::int64_t, void*> full_pack() const {
    return {{uid_a, a.get()}, {uid_b, b.get()}, {uid_y, y.get()}};
  }
};

ReadyMatmul make_ready_matmul() {
  const MatmulCase c{.name = "half matmul", .type = DataType::Half, .shape = single(64, 64, 64)};
  ReadyMatmul ready;
  ready.handle = require_handle();
  ready.graph = make_graph(c);
  require_built(ready.graph.build(ready.handle, {HeuristicMode::A, HeuristicMode::Fallback}),
                c.name);
  ready.a = require_cuda(DeviceBuffer::allocate(bytes_of(c.type, c.shape.a_dims)), "A");
  ready.b = require_cuda(DeviceBuffer::allocate(bytes_of(c.type, c.shape.b_dims)), "B");
  ready.y = require_cuda(DeviceBuffer::allocate(bytes_of(c.type, c.shape.c_dims())), "Y");
  const auto workspace_size = ready.graph.get_workspace_size();
  BOOST_REQUIRE_MESSAGE(workspace_size.has_value(), describe(workspace_size));
  ready.workspace =
      require_cuda(DeviceBuffer::allocate(static_cast<std::size_t>(*workspace_size)), "workspace");
  return ready;
}

struct WorkspaceProbe {
  Graph graph;
  MatmulCase c;
  std::int64_t workspace = 0;
};

// Builds candidate graphs, one heuristics mode at a time, until a chosen plan needs a workspace;
// `tried` gets one line per attempt.
std::optional<WorkspaceProbe> find_plan_needing_workspace(const Handle& handle,
                                                          std::string& tried) {
  struct Candidate {
    DataType type;
    std::int64_t m;
    std::int64_t n;
    std::int64_t k;
  };
  const std::vector<Candidate> candidates{
      {DataType::Half, 16, 16, 8192},     {DataType::Half, 64, 64, 8192},
      {DataType::Half, 16, 16, 65536},    {DataType::Half, 128, 128, 32768},
      {DataType::BFloat16, 16, 16, 8192}, {DataType::Float, 16, 16, 8192},
      {DataType::Float, 64, 64, 65536},
  };
  for (const Candidate& candidate : candidates) {
    for (const HeuristicMode mode : {HeuristicMode::A, HeuristicMode::B, HeuristicMode::Fallback}) {
      MatmulCase c{.name = "workspace probe",
                   .type = candidate.type,
                   .shape = single(candidate.m, candidate.n, candidate.k)};
      tried +=
          "\n  " + shape_text(c) + ", heuristics " + std::string(dnngraph::to_string(mode)) + ": ";
      Graph g = make_graph(c);
      const auto built = g.build(handle, {mode});
      if (!built) {
        tried += "build failed (" + std::string(dnngraph::to_string(built.error().code)) + ")";
        continue;
      }
      const auto info = g.plan_info();
      if (!info) {
        tried += "plan_info failed: " + describe(info);
        continue;
      }
      tried += info->describe();
      if (info->workspace_size > 0) {
        return WorkspaceProbe{std::move(g), std::move(c), info->workspace_size};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(execute_checks_its_arguments)

BOOST_AUTO_TEST_CASE(a_uid_missing_from_the_pack_is_a_missing_tensor_naming_it) {
  ReadyMatmul ready = make_ready_matmul();
  auto pack = ready.full_pack();
  pack.erase(uid_b);
  const auto ran = ready.graph.execute(ready.handle, pack, ready.workspace.get());
  BOOST_TEST_MESSAGE("pack without B: " << describe(ran));
  BOOST_REQUIRE(!ran.has_value());
  BOOST_TEST(dnngraph::to_string(ran.error().code) ==
             dnngraph::to_string(ErrorCode::MissingTensor));
  BOOST_CHECK_MESSAGE(contains(ran.error().message, "'B' (uid 2)"),
                      "message should name 'B' (uid 2): " << ran.error().message);
}

BOOST_AUTO_TEST_CASE(a_null_device_pointer_is_a_null_pointer_naming_the_tensor) {
  ReadyMatmul ready = make_ready_matmul();
  auto pack = ready.full_pack();
  pack[uid_b] = nullptr;
  const auto ran = ready.graph.execute(ready.handle, pack, ready.workspace.get());
  BOOST_TEST_MESSAGE("null pointer for B: " << describe(ran));
  BOOST_REQUIRE(!ran.has_value());
  BOOST_TEST(dnngraph::to_string(ran.error().code) == dnngraph::to_string(ErrorCode::NullPointer));
  BOOST_CHECK_MESSAGE(contains(ran.error().message, "'B'"),
                      "message should name 'B': " << ran.error().message);
}

// The pack is otherwise complete; the extra uid alone must be refused, by dnngraph itself.
BOOST_AUTO_TEST_CASE(a_pack_naming_an_unknown_uid_is_refused_naming_the_uid) {
  ReadyMatmul ready = make_ready_matmul();
  auto pack = ready.full_pack();
  pack.emplace(99, ready.y.get());
  const auto ran = ready.graph.execute(ready.handle, pack, ready.workspace.get());
  BOOST_TEST_MESSAGE("pack with unknown uid 99: " << describe(ran));
  BOOST_REQUIRE(!ran.has_value());
  BOOST_TEST(dnngraph::to_string(ran.error().code) != dnngraph::to_string(ErrorCode::CudnnFailure));
  BOOST_CHECK_MESSAGE(contains(ran.error().message, "uid 99"),
                      "message should name uid 99: " << ran.error().message);
}

// A tensor edited after build() would not take effect (the plan runs as built, on buffers meant
// for the edit): execute() refuses it naming the tensor, and runs again once built again.
BOOST_AUTO_TEST_CASE(a_tensor_edited_after_build_is_refused_until_built_again) {
  using dnngraph::TensorAttributes;
  Handle handle = require_handle();
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(uid_a).set_dim({1, 64, 64}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(uid_b).set_dim({1, 64, 64}));
  g.matmul(a, b)->set_output(true).set_name("Y").set_uid(uid_y);
  require_built(g.build(handle, {HeuristicMode::A, HeuristicMode::Fallback}), "64 x 64 x 64");
  const auto first_workspace = g.get_workspace_size();
  BOOST_REQUIRE_MESSAGE(first_workspace.has_value(), describe(first_workspace));
  const auto bytes = static_cast<std::size_t>(64 * 64 * 2);
  DeviceBuffer da = require_cuda(DeviceBuffer::allocate(bytes), "A");
  DeviceBuffer db = require_cuda(DeviceBuffer::allocate(bytes), "B");
  DeviceBuffer dy = require_cuda(DeviceBuffer::allocate(bytes), "Y");
  DeviceBuffer ws = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(*first_workspace, 1))),
      "workspace");
  const std::unordered_map<std::int64_t, void*> pack{
      {uid_a, da.get()}, {uid_b, db.get()}, {uid_y, dy.get()}};
  BOOST_REQUIRE_MESSAGE(g.execute(handle, pack, ws.get()).has_value(), "the built graph runs");

  a->set_dim({1, 32, 64});  // half the rows
  const auto refused = g.execute(handle, pack, ws.get());
  BOOST_TEST_MESSAGE("execute after A->set_dim: " << describe(refused));
  BOOST_REQUIRE(!refused.has_value());
  BOOST_TEST(dnngraph::to_string(refused.error().code) ==
             dnngraph::to_string(ErrorCode::InvalidState));
  BOOST_CHECK_MESSAGE(contains(refused.error().message, "'A' (uid 1)") &&
                          contains(refused.error().message, "changed after"),
                      "message should name 'A' (uid 1) as changed: " << refused.error().message);

  require_built(g.build(handle, {HeuristicMode::A, HeuristicMode::Fallback}), "32 x 64 x 64");
  const auto second_workspace = g.get_workspace_size();
  BOOST_REQUIRE_MESSAGE(second_workspace.has_value(), describe(second_workspace));
  DeviceBuffer ws2 = require_cuda(DeviceBuffer::allocate(static_cast<std::size_t>(
                                      std::max<std::int64_t>(*second_workspace, 1))),
                                  "workspace");
  const auto ran = g.execute(handle, pack, ws2.get());
  BOOST_TEST(ran.has_value(), "built again, it runs: " << describe(ran));
}

// Every tensor is declared 16-byte aligned to cuDNN; bench_alignment_probe measured cuDNN 9.19.0
// and 9.28.1 returning success on pointers 2, 4 or 8 bytes off and then computing wrong values
// or faulting on the device. execute() refuses such a pointer, naming the tensor, before cuDNN
// sees it; a pointer 16 bytes into a buffer is aligned and runs (ones x ones: every Y is 64).
BOOST_AUTO_TEST_CASE(a_pointer_off_a_16_byte_boundary_is_refused_naming_its_tensor) {
  using dnngraph::TensorAttributes;
  Handle handle = require_handle();
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(uid_a).set_dim({1, 64, 64}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(uid_b).set_dim({1, 64, 64}));
  g.matmul(a, b)->set_output(true).set_name("Y").set_uid(uid_y);
  require_built(g.build(handle, {HeuristicMode::A, HeuristicMode::Fallback}), "64 x 64 x 64");
  const auto workspace = g.get_workspace_size();
  BOOST_REQUIRE_MESSAGE(workspace.has_value(), describe(workspace));
  constexpr std::size_t count = std::size_t{64} * 64;
  constexpr std::size_t slack = 16;
  constexpr std::uint16_t half_one = 0x3C00, half_64 = 0x5400, nan_bits = 0x7E00;
  const std::vector<std::uint16_t> ones(count + slack / 2, half_one);
  DeviceBuffer da = require_cuda(DeviceBuffer::allocate(2 * count + slack), "A");
  DeviceBuffer db = require_cuda(DeviceBuffer::allocate(2 * count + slack), "B");
  DeviceBuffer dy = require_cuda(DeviceBuffer::allocate(2 * count + slack), "Y");
  DeviceBuffer ws = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(*workspace, 1))),
      "workspace");
  for (DeviceBuffer* buffer : {&da, &db}) {
    BOOST_REQUIRE(cudaMemcpy(buffer->get(), ones.data(), ones.size() * 2, cudaMemcpyHostToDevice) ==
                  cudaSuccess);
  }
  const std::vector<std::uint16_t> nans(count + slack / 2, nan_bits);
  BOOST_REQUIRE(cudaMemcpy(dy.get(), nans.data(), nans.size() * 2, cudaMemcpyHostToDevice) ==
                cudaSuccess);
  const auto at = [](DeviceBuffer& buffer, std::size_t offset) {
    return static_cast<void*>(static_cast<std::byte*>(buffer.get()) + offset);
  };
  const std::pair<const char*, std::int64_t> tensors[] = {
      {"'A' (uid 1)", uid_a}, {"'B' (uid 2)", uid_b}, {"'Y' (uid 4)", uid_y}};
  for (const auto& [name, uid] : tensors) {
    for (const std::size_t offset : {2U, 4U, 8U}) {
      std::unordered_map<std::int64_t, void*> pack{
          {uid_a, da.get()}, {uid_b, db.get()}, {uid_y, dy.get()}};
      pack[uid] = at(uid == uid_a ? da : uid == uid_b ? db : dy, offset);
      const auto refused = g.execute(handle, pack, ws.get());
      BOOST_TEST_CONTEXT(name << " moved " << offset << " bytes") {
        BOOST_REQUIRE(!refused.has_value());
        BOOST_TEST(dnngraph::to_string(refused.error().code) ==
                   dnngraph::to_string(ErrorCode::InvalidAttribute));
        BOOST_TEST(contains(refused.error().message, name), refused.error().message);
        BOOST_TEST(contains(refused.error().message,
                            std::to_string(offset) + " byte(s) past a 16-byte boundary"),
                   refused.error().message);
      }
    }
  }
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);  // nothing reached the device
  const std::unordered_map<std::int64_t, void*> moved{
      {uid_a, at(da, slack)}, {uid_b, at(db, slack)}, {uid_y, at(dy, slack)}};
  const auto ran = g.execute(handle, moved, ws.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), "16 bytes in is aligned: " << describe(ran));
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<std::uint16_t> y(count + slack / 2);
  BOOST_REQUIRE(cudaMemcpy(y.data(), dy.get(), y.size() * 2, cudaMemcpyDeviceToHost) ==
                cudaSuccess);
  BOOST_TEST(std::ranges::count(std::span(y).first(slack / 2), nan_bits) ==
             static_cast<std::ptrdiff_t>(slack / 2));  // the refused calls wrote nothing there
  BOOST_TEST(std::ranges::count(std::span(y).subspan(slack / 2), half_64) ==
             static_cast<std::ptrdiff_t>(count));
}

// Needs a plan that asks for a workspace. Which plan cuDNN picks is up to its heuristics, so try
// shapes that tend to get split-K (small M and N, large K) under each mode; if none of them
// needs a workspace, fail and list what was tried: the check must never pass unexercised.
BOOST_AUTO_TEST_CASE(a_null_workspace_is_a_null_pointer_when_the_plan_needs_one) {
  Handle handle = require_handle();
  std::string tried;
  auto probe = find_plan_needing_workspace(handle, tried);
  BOOST_TEST_MESSAGE("workspace probes:" << tried);
  if (!probe) {
    BOOST_FAIL(
        "no tried graph has a plan that needs a workspace, so a null workspace could not "
        "be checked; tried:"
        << tried);
    return;  // not reached: BOOST_FAIL throws
  }

  const MatmulCase& c = probe->c;
  DeviceBuffer a = require_cuda(DeviceBuffer::allocate(bytes_of(c.type, c.shape.a_dims)), "A");
  DeviceBuffer b = require_cuda(DeviceBuffer::allocate(bytes_of(c.type, c.shape.b_dims)), "B");
  DeviceBuffer y = require_cuda(DeviceBuffer::allocate(bytes_of(c.type, c.shape.c_dims())), "Y");
  const std::unordered_map<std::int64_t, void*> pack{
      {uid_a, a.get()}, {uid_b, b.get()}, {uid_y, y.get()}};
  const auto ran = probe->graph.execute(handle, pack, nullptr);
  BOOST_TEST_MESSAGE("null workspace for " << shape_text(c) << ", which needs " << probe->workspace
                                           << " B: " << describe(ran));
  BOOST_REQUIRE(!ran.has_value());
  BOOST_TEST(dnngraph::to_string(ran.error().code) == dnngraph::to_string(ErrorCode::NullPointer));
  BOOST_CHECK_MESSAGE(
      contains(ran.error().message, std::to_string(probe->workspace)),
      "message should give the workspace size " << probe->workspace << ": " << ran.error().message);
}

BOOST_AUTO_TEST_SUITE_END()
