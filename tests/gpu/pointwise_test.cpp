// Pointwise modes on the GPU against the CPU reference in support/pointwise_reference.hpp: each
// mode alone on [2, 3, 40] (binary modes with B [2, 3, 40] and broadcast [1, 1, 40]) in Float and
// Half, comparisons and logical modes through a BinarySelect (so no Boolean tensor leaves the
// graph), and one case per family fused behind a Half matmul. A standalone graph that cuDNN has
// no engine for is a finding, printed and listed at the end; wrong numbers from a graph that
// built are a failure.
#include <boost/test/unit_test.hpp>

#include "support/device_buffer.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/gpu_checks.hpp"

#include "support/pointwise_reference.hpp"

namespace {

using dnngraph::test::require_cuda;

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::Handle;
using dnngraph::HeuristicMode;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::family;
using dnngraph::test::HostTensor;
using dnngraph::test::PointwiseFamily;
using dnngraph::test::Tolerance;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

const Dims full_dims{2, 3, 40};
const Dims row_dims{1, 1, 40};
constexpr std::size_t full_count = std::size_t{2} * 3 * 40;
constexpr std::int64_t uid_y = 100;

// Graphs that did not build, as "what: CODE: message", printed by the last test case.
std::vector<std::string>& not_supported() {
  static std::vector<std::string> list;
  return list;
}

std::string describe(const dnngraph::Error& error) {
  return std::string(dnngraph::to_string(error.code)) + ": " + error.message;
}

Handle require_handle() {
  auto handle = Handle::create();
  BOOST_REQUIRE_MESSAGE(handle.has_value(),
                        "Handle::create failed: " << (handle ? "" : describe(handle.error())));
  return std::move(*handle);
}

PointwiseAttributes pointwise(std::string name, PointwiseMode mode) {
  return PointwiseAttributes().set_name(std::move(name)).set_mode(mode);
}

struct Operand {
  std::int64_t uid;
  HostTensor data;
};

// A graph input named after its uid, with the graph's io data type.
TensorPtr input(Graph& g, std::int64_t uid, const Dims& dims) {
  return g.tensor(
      TensorAttributes().set_name("in" + std::to_string(uid)).set_uid(uid).set_dim(dims));
}

Graph new_graph(const std::string& name, DataType type) {
  Graph g;
  g.set_name(name)
      .set_io_data_type(type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  return g;
}

// Builds g (heuristics A, then Fallback) and runs it once. No value when the build failed: that
// is recorded as not supported (required: the failure is a test failure as well).
std::optional<std::vector<float>> run(Handle& handle, Graph& g, const std::vector<Operand>& ins,
                                      DataType out_type, std::size_t out_count,
                                      const std::string& what, bool required = false) {
  const auto built = g.build(handle, {HeuristicMode::A, HeuristicMode::Fallback});
  if (!built) {
    BOOST_TEST_MESSAGE(what << ": not supported: " << describe(built.error()));
    not_supported().push_back(what + ": " + describe(built.error()));
    BOOST_CHECK_MESSAGE(!required, what << ": build failed: " << describe(built.error()));
    return std::nullopt;
  }
  const auto info = g.plan_info();
  // Boost.Test may format a message even when the check passes: never read error() of a value.
  BOOST_REQUIRE_MESSAGE(info.has_value(),
                        what << ": plan_info: " << (info ? "" : describe(info.error())));
  std::vector<DeviceBuffer> buffers;
  std::unordered_map<std::int64_t, void*> pack;
  for (const Operand& in : ins) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(in.data.bytes), what + " upload"));
    pack.emplace(in.uid, buffers.back().get());
  }
  std::vector<std::byte> y_bytes(out_count * static_cast<std::size_t>(size_of(out_type)));
  DeviceBuffer y = require_cuda(DeviceBuffer::allocate(y_bytes.size()), what + " Y");
  require_cuda(y.fill_bytes(0xFF), what + " fill Y");  // NaN: an unwritten element fails
  pack.emplace(uid_y, y.get());
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(info->workspace_size)), what + " workspace");
  const auto ran = g.execute(handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(),
                        what << ": execute failed: " << (ran ? "" : describe(ran.error())));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               what + " after execute");
  require_cuda(y.download(std::span<std::byte>(y_bytes)), what + " download Y");
  return dnngraph::test::decode(out_type, y_bytes);
}

void check(const std::string& what, const std::optional<std::vector<float>>& got,
           const std::vector<double>& expected, Tolerance tolerance) {
  if (!got) {
    return;
  }
  const auto comparison = dnngraph::test::compare(*got, expected, tolerance);
  BOOST_TEST_MESSAGE(what << ": " << comparison.describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), what << ": " << comparison.describe());
}

std::string label(PointwiseMode mode, DataType type, const std::string& extra = "") {
  return std::string(to_string(mode)) + " " + std::string(to_string(type)) + extra;
}

HostTensor operand(DataType type, const dnngraph::test::OperandRange& range, std::size_t count,
                   std::mt19937& rng) {
  const std::vector<float> values = dnngraph::test::draw(type, range, count, rng);
  return dnngraph::test::encode(type, values);
}

// Y = mode(X) on [2, 3, 40].
void check_unary(Handle& handle, PointwiseMode mode, DataType type, std::mt19937& rng) {
  const std::string what = label(mode, type);
  Graph g = new_graph(what, type);
  auto x = input(g, 1, full_dims);
  g.pointwise(x, pointwise("op", mode))->set_output(true).set_uid(uid_y);
  const std::vector<Operand> ins{
      {1, operand(type, dnngraph::test::x_range(mode), full_count, rng)}};
  std::vector<double> expected;
  for (const float v : ins[0].data.values) {
    expected.push_back(dnngraph::test::pointwise_reference(mode, v));
  }
  check(what, run(handle, g, ins, type, full_count, what), expected,
        dnngraph::test::pointwise_tolerance(mode, type));
}

// Y = mode(X, B) (dX = mode(dY, X) for backward modes), B [2, 3, 40] or [1, 1, 40].
// The flat index into B (dims b_dims, packed) that element i of X (dims x_dims, packed) meets
// when B broadcasts: a size-1 B dim reads coordinate 0.
std::size_t broadcast_index(std::size_t i, const Dims& x_dims, const Dims& b_dims) {
  std::size_t rest = i;
  std::size_t at = 0;
  std::size_t scale = 1;
  for (std::size_t d = x_dims.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(x_dims[d]);
    const std::size_t coordinate = rest % extent;
    rest /= extent;
    at += (b_dims[d] == 1 ? 0 : coordinate) * scale;
    scale *= static_cast<std::size_t>(b_dims[d]);
  }
  return at;
}

// B's dims broadcast from the left ([1, ..., 1, n] against [..., n]): B's index is i % b_count.
void check_binary(Handle& handle, PointwiseMode mode, DataType type, const Dims& b_dims,
                  std::mt19937& rng, const Dims& x_dims = full_dims) {
  const std::string what = label(mode, type,
                                 (x_dims == full_dims ? "" : ", X " + dnngraph::to_string(x_dims)) +
                                     ", B " + dnngraph::to_string(b_dims));
  const std::size_t b_count = dnngraph::test::element_count(b_dims);
  const std::size_t x_count = dnngraph::test::element_count(x_dims);
  Graph g = new_graph(what, type);
  auto x = input(g, 1, x_dims);
  auto b = input(g, 2, b_dims);
  g.pointwise(x, b, pointwise("op", mode))->set_output(true).set_uid(uid_y);
  std::vector<float> b_values =
      dnngraph::test::draw(type, dnngraph::test::b_range(mode), b_count, rng);
  std::vector<float> x_values =
      dnngraph::test::draw(type, dnngraph::test::x_range(mode), x_count, rng);
  if (mode == PointwiseMode::Mod) {
    dnngraph::test::keep_off_mod_jumps(type, x_values, b_values);
  }
  const std::vector<Operand> ins{{1, dnngraph::test::encode(type, x_values)},
                                 {2, dnngraph::test::encode(type, b_values)}};
  std::vector<double> expected;
  expected.reserve(x_count);
  for (std::size_t i = 0; i < x_count; ++i) {
    expected.push_back(
        dnngraph::test::pointwise_reference(mode, x_values[i], b_values[i % b_count]));
  }
  check(what, run(handle, g, ins, type, x_count, what), expected,
        dnngraph::test::pointwise_tolerance(mode, type));
}

// Shapes cuDNN computed wrong in a graph of pointwise nodes alone (measured here, see
// detail/nodes/pointwise.hpp): validation must refuse them with a ShapeMismatch that says why.
void check_refused(PointwiseMode mode, DataType type, const Dims& x_dims, const Dims& b_dims) {
  const std::string what = label(
      mode, type,
      ", X " + dnngraph::to_string(x_dims) + ", B " + dnngraph::to_string(b_dims) + " (refused)");
  Graph g = new_graph(what, type);
  g.pointwise(input(g, 1, x_dims), input(g, 2, b_dims), pointwise("op", mode))
      ->set_output(true)
      .set_uid(uid_y)
      .set_data_type(type);
  const auto validated = g.validate();
  BOOST_TEST_MESSAGE(what << ": " << (validated ? "validated" : describe(validated.error())));
  BOOST_CHECK_MESSAGE(
      !validated && validated.error().code == dnngraph::ErrorCode::ShapeMismatch &&
          validated.error().message.find("measured with cuDNN 9.19") != std::string::npos,
      what << ": expected a ShapeMismatch refusing the shapes");
}

// How a select case builds its mask: B's dims ([1, 1, 40] broadcast, or [2, 3, 40]) and the
// compute type the comparison and logical nodes ask for (none: the library's default).
struct MaskVariant {
  Dims b_dims = {2, 1, 40};  // one broadcast dim: see check_comparison_as_number
  std::optional<DataType> compute;
  [[nodiscard]] std::string text() const {
    return ", B " + dnngraph::to_string(b_dims) +
           (compute ? ", mask compute " + std::string(to_string(*compute)) : "");
  }
};

PointwiseAttributes mask_node(std::string name, PointwiseMode mode, const MaskVariant& v) {
  PointwiseAttributes a = pointwise(std::move(name), mode);
  if (v.compute) {
    a.set_compute_data_type(*v.compute);
  }
  return a;
}

// Y = select(P, Q, mask), mask = cmp(X, B) or a logical mode of CmpGt(X, B) and CmpLt(X2, B)
// (LogicalNot: of CmpGt(X, B) alone); X, X2 and B on the grid {-1, -0.5, 0, 0.5, 1}, so ties
// happen.
void check_through_select(Handle& handle, PointwiseMode mode, DataType type, const MaskVariant& v,
                          std::mt19937& rng) {
  const std::string what = label(mode, type, " through BinarySelect" + v.text());
  const dnngraph::test::OperandRange grid{.grid = true};
  const dnngraph::test::OperandRange wide{.lo = -2, .hi = 2};
  const std::size_t b_count = dnngraph::test::element_count(v.b_dims);
  Graph g = new_graph(what, type);
  const bool comparison = family(mode) == PointwiseFamily::Comparison;
  const bool uses_x2 = !comparison && mode != PointwiseMode::LogicalNot;
  auto x = input(g, 1, full_dims);
  auto x2 = uses_x2 ? input(g, 2, full_dims) : nullptr;  // an unused input fails build()
  auto b = input(g, 3, v.b_dims);
  auto p = input(g, 4, full_dims);
  auto q = input(g, 5, full_dims);
  TensorPtr mask;
  if (comparison) {
    mask = g.pointwise(x, b, mask_node("cmp", mode, v));
  } else {
    auto gt = g.pointwise(x, b, mask_node("gt", PointwiseMode::CmpGt, v));
    mask = uses_x2 ? g.pointwise(gt, g.pointwise(x2, b, mask_node("lt", PointwiseMode::CmpLt, v)),
                                 mask_node("logic", mode, v))
                   : g.pointwise(gt, mask_node("logic", mode, v));
  }
  g.pointwise(p, q, mask, pointwise("select", PointwiseMode::BinarySelect))
      ->set_output(true)
      .set_uid(uid_y);
  const std::vector<Operand> ins{{1, operand(type, grid, full_count, rng)},
                                 {2, operand(type, grid, full_count, rng)},
                                 {3, operand(type, grid, b_count, rng)},
                                 {4, operand(type, wide, full_count, rng)},
                                 {5, operand(type, wide, full_count, rng)}};
  std::vector<double> expected;
  std::size_t trues = 0;
  for (std::size_t i = 0; i < full_count; ++i) {
    const double xv = ins[0].data.values[i];
    const double x2v = ins[1].data.values[i];
    const double bv = ins[2].data.values[broadcast_index(i, full_dims, v.b_dims)];
    double m = 0;
    if (comparison) {
      m = dnngraph::test::pointwise_reference(mode, xv, bv);
    } else {
      const double gt = dnngraph::test::pointwise_reference(PointwiseMode::CmpGt, xv, bv);
      const double lt = dnngraph::test::pointwise_reference(PointwiseMode::CmpLt, x2v, bv);
      m = dnngraph::test::pointwise_reference(mode, gt, lt);
    }
    trues += m != 0 ? 1 : 0;
    expected.push_back(dnngraph::test::pointwise_reference(
        PointwiseMode::BinarySelect, ins[3].data.values[i], ins[4].data.values[i], m != 0));
  }
  BOOST_TEST_MESSAGE(what << ": mask true for " << trues << " of " << full_count);
  std::vector<Operand> used;
  std::ranges::copy_if(ins, std::back_inserter(used),
                       [&](const Operand& in) { return uses_x2 || in.uid != 2; });
  check(what, run(handle, g, used, type, full_count, what), expected,
        dnngraph::test::pointwise_tolerance(PointwiseMode::BinarySelect, type));
}

// Y = cmp(X, B) written as numbers (1 or 0) in the io type: the comparison alone, no select.
// Prints where the wrong elements are (which X dims they sit at), to tell broadcast patterns
// apart.
void check_comparison_as_number(Handle& handle, PointwiseMode mode, DataType type,
                                const Dims& x_dims, const Dims& b_dims, std::mt19937& rng,
                                bool refused = false) {
  const std::string what = label(
      mode, type,
      " as a number, X " + dnngraph::to_string(x_dims) + ", B " + dnngraph::to_string(b_dims));
  if (refused) {
    check_refused(mode, type, x_dims, b_dims);
    return;
  }
  const dnngraph::test::OperandRange grid{.grid = true};
  const std::size_t x_count = dnngraph::test::element_count(x_dims);
  const std::size_t b_count = dnngraph::test::element_count(b_dims);
  Graph g = new_graph(what, type);
  auto x = input(g, 1, x_dims);
  auto b = input(g, 2, b_dims);
  g.pointwise(x, b, pointwise("cmp", mode))->set_output(true).set_uid(uid_y).set_data_type(type);
  const std::vector<Operand> ins{{1, operand(type, grid, x_count, rng)},
                                 {2, operand(type, grid, b_count, rng)}};
  std::vector<double> expected;
  expected.reserve(x_count);
  for (std::size_t i = 0; i < x_count; ++i) {
    expected.push_back(dnngraph::test::pointwise_reference(
        mode, ins[0].data.values[i], ins[1].data.values[broadcast_index(i, x_dims, b_dims)]));
  }
  const auto got = run(handle, g, ins, type, x_count, what);
  check(what, got, expected, dnngraph::test::pointwise_tolerance(mode, type));
  if (got) {
    std::string wrong;
    std::size_t count = 0;
    for (std::size_t i = 0; i < x_count; ++i) {
      if ((*got)[i] != expected[i] && count++ < 12) {
        wrong += " " + std::to_string(i);
      }
    }
    BOOST_TEST_MESSAGE(what << ": " << count << " wrong, the first at flat index" << wrong);
  }
}

// Y = mode(X, s) with s a by-value scalar (Graph::tensor(float)): not in the variant pack.
void check_by_value(Handle& handle, PointwiseMode mode, DataType type, float s, std::mt19937& rng) {
  const std::string what = label(mode, type, ", B by value " + std::to_string(s));
  Graph g = new_graph(what, type);
  auto x = input(g, 1, full_dims);
  auto scalar = g.tensor(s);
  g.pointwise(x, scalar, pointwise("op", mode))->set_output(true).set_uid(uid_y);
  const std::vector<Operand> ins{
      {1, operand(type, dnngraph::test::x_range(mode), full_count, rng)}};
  std::vector<double> expected;
  for (const float v : ins[0].data.values) {
    expected.push_back(dnngraph::test::pointwise_reference(mode, v, s));
  }
  check(what, run(handle, g, ins, type, full_count, what, true), expected,
        dnngraph::test::pointwise_tolerance(mode, type));
  // The scalar's value lives in the built graph: naming its uid in the variant pack is an error
  // (caught before cuDNN sees any pointer).
  BOOST_REQUIRE(scalar->uid().has_value());
  std::byte dummy{};
  const std::unordered_map<std::int64_t, void*> pack{
      {1, &dummy}, {uid_y, &dummy}, {*scalar->uid(), &dummy}};
  const auto refused = g.execute(handle, pack, nullptr);
  BOOST_CHECK_MESSAGE(!refused && refused.error().code == dnngraph::ErrorCode::InvalidAttribute &&
                          refused.error().message.find("passed by value") != std::string::npos,
                      what << ": a by-value uid in the variant pack was not refused: "
                           << (refused ? "ok" : describe(refused.error())));
}

void check_family(PointwiseFamily wanted, DataType type, std::uint32_t seed) {
  Handle handle = require_handle();
  std::mt19937 rng(seed);
  for (const PointwiseMode mode : dnngraph::test::all_pointwise_modes) {
    if (family(mode) != wanted) {
      continue;
    }
    switch (wanted) {
      case PointwiseFamily::UnaryMath:
      case PointwiseFamily::ActivationFwd: check_unary(handle, mode, type, rng); break;
      case PointwiseFamily::Arithmetic:
        check_binary(handle, mode, type, full_dims, rng);
        check_binary(handle, mode, type, {1, 3, 40}, rng);  // along one dim
        if (mode == PointwiseMode::Add || mode == PointwiseMode::Max) {
          check_binary(handle, mode, type, {1, 1, 1, 40}, rng, {2, 3, 5, 40});  // rank 4
          check_refused(mode, type, full_dims, row_dims);
          check_refused(mode, type, {6, 40}, {1, 40});
          check_refused(mode, type, {6, 40}, {6, 40});
        }
        if (mode == PointwiseMode::Add || mode == PointwiseMode::Mul ||
            mode == PointwiseMode::Max) {
          check_by_value(handle, mode, type, -0.375F, rng);
        }
        break;
      case PointwiseFamily::ActivationBwd: check_binary(handle, mode, type, full_dims, rng); break;
      case PointwiseFamily::Comparison:
        check_comparison_as_number(handle, mode, type, full_dims, full_dims, rng);
        check_comparison_as_number(handle, mode, type, full_dims, {2, 1, 40}, rng);
        check_comparison_as_number(handle, mode, type, full_dims, {1, 3, 40}, rng);
        check_comparison_as_number(handle, mode, type, {1, 6, 40}, row_dims, rng);
        check_comparison_as_number(handle, mode, type, {6, 40}, {6, 40}, rng, true);
        check_comparison_as_number(handle, mode, type, full_dims, row_dims, rng, true);
        check_comparison_as_number(handle, mode, type, {6, 40}, {1, 40}, rng, true);
        check_through_select(handle, mode, type, {}, rng);
        check_through_select(handle, mode, type, {.b_dims = full_dims, .compute = {}}, rng);
        check_through_select(handle, mode, type, {.b_dims = {2, 1, 40}, .compute = DataType::Float},
                             rng);
        check_through_select(handle, mode, type,
                             {.b_dims = {2, 1, 40}, .compute = DataType::Boolean}, rng);
        break;
      case PointwiseFamily::Logical:  // B full: the comparisons feeding them, exact
        check_through_select(handle, mode, type, {.b_dims = full_dims, .compute = {}}, rng);
        check_through_select(handle, mode, type, {.b_dims = full_dims, .compute = DataType::Float},
                             rng);
        break;
      case PointwiseFamily::Select: break;  // every select case above runs it
    }
  }
}

// C = A [1, 16, 32] x B [1, 32, 40] in Half with Float accumulation, then `epilogue` builds the
// rest of the graph from C and S [1, 1, 40] (uid 3) and X [1, 16, 40] (uid 4); `reference` maps
// (c, s, x) to the expected value. S and X exist only where the case uses them.
struct FusedCase {
  std::string what;
  bool uses_s = false;
  bool uses_x = false;
  std::function<TensorPtr(Graph&, TensorPtr, TensorPtr, TensorPtr)> epilogue;
  std::function<double(double, double, double)> reference;
  bool required = false;  // a build failure fails the test, not only a finding
  std::uint32_t seed = 1;
};

void check_fused(const FusedCase& f) {
  const std::string& what = f.what;
  constexpr DataType type = DataType::Half;
  const dnngraph::test::MatmulShape shape{.a_dims = {1, 16, 32}, .b_dims = {1, 32, 40}};
  Handle handle = require_handle();
  Graph g = new_graph(what, type);
  auto a = input(g, 1, shape.a_dims);
  auto b = input(g, 2, shape.b_dims);
  auto s = f.uses_s ? input(g, 3, row_dims) : nullptr;
  auto x = f.uses_x ? input(g, 4, {1, 16, 40}) : nullptr;
  auto c = g.matmul(a, b, dnngraph::MatmulAttributes().set_name("mm"));
  f.epilogue(g, c, s, x)->set_output(true).set_uid(uid_y);
  std::mt19937 rng(f.seed);
  const dnngraph::test::OperandRange unit{.lo = -1, .hi = 1};
  const dnngraph::test::OperandRange off_zero{.lo = -2, .hi = 2, .min_abs = 0.05};
  std::vector<Operand> ins{{1, operand(type, unit, std::size_t{16} * 32, rng)},
                           {2, operand(type, unit, std::size_t{32} * 40, rng)},
                           {3, operand(type, unit, 40, rng)},
                           {4, operand(type, off_zero, std::size_t{16} * 40, rng)}};
  const std::vector<double> cs = dnngraph::test::reference_matmul(
      shape, ins[0].data.values, ins[1].data.values, {}, dnngraph::test::Epilogue::None);
  std::vector<double> expected;
  expected.reserve(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) {
    expected.push_back(f.reference(cs[i], ins[2].data.values[i % 40], ins[3].data.values[i]));
  }
  // Only the inputs the graph has go into the variant pack.
  std::vector<Operand> used;
  for (Operand& in : ins) {
    if (in.uid <= 2 || (in.uid == 3 && f.uses_s) || (in.uid == 4 && f.uses_x)) {
      used.push_back(std::move(in));
    }
  }
  // Half output after Float accumulation of exact products: as tests/gpu/matmul_test.cpp.
  check(what, run(handle, g, used, type, cs.size(), what, f.required), expected,
        {.abs = 1e-2, .rel = 1e-2});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(standalone_pointwise_matches_reference)

BOOST_AUTO_TEST_CASE(arithmetic_modes_in_float) {
  check_family(PointwiseFamily::Arithmetic, DataType::Float, 1);
}
BOOST_AUTO_TEST_CASE(arithmetic_modes_in_half) {
  check_family(PointwiseFamily::Arithmetic, DataType::Half, 2);
}
BOOST_AUTO_TEST_CASE(unary_math_modes_in_float) {
  check_family(PointwiseFamily::UnaryMath, DataType::Float, 3);
}
BOOST_AUTO_TEST_CASE(arithmetic_modes_in_bfloat16) {
  check_family(PointwiseFamily::Arithmetic, DataType::BFloat16, 13);
}
BOOST_AUTO_TEST_CASE(unary_math_modes_in_bfloat16) {
  check_family(PointwiseFamily::UnaryMath, DataType::BFloat16, 14);
}
BOOST_AUTO_TEST_CASE(forward_activations_in_bfloat16) {
  check_family(PointwiseFamily::ActivationFwd, DataType::BFloat16, 15);
}
BOOST_AUTO_TEST_CASE(backward_activations_in_bfloat16) {
  check_family(PointwiseFamily::ActivationBwd, DataType::BFloat16, 16);
}
BOOST_AUTO_TEST_CASE(unary_math_modes_in_half) {
  check_family(PointwiseFamily::UnaryMath, DataType::Half, 4);
}
BOOST_AUTO_TEST_CASE(forward_activations_in_float) {
  check_family(PointwiseFamily::ActivationFwd, DataType::Float, 5);
}
BOOST_AUTO_TEST_CASE(forward_activations_in_half) {
  check_family(PointwiseFamily::ActivationFwd, DataType::Half, 6);
}
BOOST_AUTO_TEST_CASE(backward_activations_in_float) {
  check_family(PointwiseFamily::ActivationBwd, DataType::Float, 7);
}
BOOST_AUTO_TEST_CASE(backward_activations_in_half) {
  check_family(PointwiseFamily::ActivationBwd, DataType::Half, 8);
}
BOOST_AUTO_TEST_CASE(comparisons_select_between_two_inputs_in_float) {
  check_family(PointwiseFamily::Comparison, DataType::Float, 9);
}
BOOST_AUTO_TEST_CASE(comparisons_select_between_two_inputs_in_half) {
  check_family(PointwiseFamily::Comparison, DataType::Half, 10);
}
BOOST_AUTO_TEST_CASE(logical_modes_combine_two_comparisons_in_float) {
  check_family(PointwiseFamily::Logical, DataType::Float, 11);
}
BOOST_AUTO_TEST_CASE(logical_modes_combine_two_comparisons_in_half) {
  check_family(PointwiseFamily::Logical, DataType::Half, 12);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pointwise_fused_behind_matmul_matches_reference)

using dnngraph::test::pointwise_reference;

BOOST_AUTO_TEST_CASE(arithmetic_mul_by_row_s) {
  check_fused({.what = "matmul then Mul by S",
               .uses_s = true,
               .epilogue =
                   [](Graph& g, const TensorPtr& c, const TensorPtr& s, const TensorPtr&) {
                     return g.pointwise(c, s, pointwise("mul", PointwiseMode::Mul));
                   },
               .reference = [](double c, double s, double) { return c * s; },
               .required = true,
               .seed = 21});
}

BOOST_AUTO_TEST_CASE(unary_math_sin) {
  check_fused({.what = "matmul then Sin",
               .epilogue =
                   [](Graph& g, const TensorPtr& c, const TensorPtr&, const TensorPtr&) {
                     return g.pointwise(c, pointwise("sin", PointwiseMode::Sin));
                   },
               .reference = [](double c, double,
                               double) { return pointwise_reference(PointwiseMode::Sin, c); },
               .seed = 22});
}

BOOST_AUTO_TEST_CASE(forward_activation_gelu_approx_tanh) {
  check_fused(
      {.what = "matmul then GeluApproxTanhFwd",
       .epilogue =
           [](Graph& g, const TensorPtr& c, const TensorPtr&, const TensorPtr&) {
             return g.pointwise(c, pointwise("gelu_tanh", PointwiseMode::GeluApproxTanhFwd));
           },
       .reference = [](double c, double,
                       double) { return pointwise_reference(PointwiseMode::GeluApproxTanhFwd, c); },
       .required = true,
       .seed = 23});
}

BOOST_AUTO_TEST_CASE(backward_activation_relu_bwd_of_x) {
  check_fused(
      {.what = "matmul as dY then ReluBwd of X",
       .uses_x = true,
       .epilogue =
           [](Graph& g, const TensorPtr& c, const TensorPtr&, const TensorPtr& x) {
             return g.pointwise(c, x, pointwise("drelu", PointwiseMode::ReluBwd));
           },
       .reference = [](double c, double,
                       double x) { return pointwise_reference(PointwiseMode::ReluBwd, c, x); },
       .seed = 24});
}

BOOST_AUTO_TEST_CASE(comparison_and_select_give_max_with_s) {
  check_fused({.what = "matmul then select(C, S, CmpGt(C, S))",
               .uses_s = true,
               .epilogue =
                   [](Graph& g, const TensorPtr& c, const TensorPtr& s, const TensorPtr&) {
                     auto mask = g.pointwise(c, s, pointwise("gt", PointwiseMode::CmpGt));
                     return g.pointwise(c, s, mask,
                                        pointwise("select", PointwiseMode::BinarySelect));
                   },
               .reference = [](double c, double s, double) { return std::max(c, s); },
               .seed = 25});
}

BOOST_AUTO_TEST_CASE(mul_by_a_by_value_scalar_then_add_one) {
  check_fused(
      {.what = "matmul then Mul by 0.75 then Add 1.5, both by value",
       .epilogue =
           [](Graph& g, const TensorPtr& c, const TensorPtr&, const TensorPtr&) {
             auto scaled = g.pointwise(c, g.tensor(0.75F), pointwise("scale", PointwiseMode::Mul));
             return g.pointwise(scaled, g.tensor(1.5F), pointwise("shift", PointwiseMode::Add));
           },
       .reference = [](double c, double, double) { return c * 0.75 + 1.5; },
       .required = true,
       .seed = 27});
}

BOOST_AUTO_TEST_CASE(logical_not_and_select_give_min_with_s) {
  check_fused({.what = "matmul then select(C, S, LogicalNot(CmpGt(C, S)))",
               .uses_s = true,
               .epilogue =
                   [](Graph& g, const TensorPtr& c, const TensorPtr& s, const TensorPtr&) {
                     auto mask = g.pointwise(c, s, pointwise("gt", PointwiseMode::CmpGt));
                     auto inverted = g.pointwise(mask, pointwise("not", PointwiseMode::LogicalNot));
                     return g.pointwise(c, s, inverted,
                                        pointwise("select", PointwiseMode::BinarySelect));
                   },
               .reference = [](double c, double s, double) { return std::min(c, s); },
               .seed = 26});
}

BOOST_AUTO_TEST_SUITE_END()

// Runs last (Boost.Test keeps the order of the file): the graphs cuDNN built no plan for.
// A graph may fail to build only because cuDNN has no engine for it; any other Error (a graph
// the test got wrong, a refusal nobody expected) fails here.
BOOST_AUTO_TEST_CASE(graphs_without_an_engine_failed_only_for_that) {
  BOOST_TEST_MESSAGE(not_supported().size() << " graph(s) not supported:");
  for (const std::string& line : not_supported()) {
    BOOST_TEST_MESSAGE("  " << line);
    BOOST_CHECK_MESSAGE(line.find(": NoEngine: ") != std::string::npos,
                        "a build failed for another reason than NoEngine: " << line);
  }
}
