// Slice nodes on the GPU against a CPU reference in double: a window of X (Half), every other
// element along two dims (Float), a slice then ReLU, and the form cudnn-frontend's own sample
// uses, a slice of A feeding a matmul (then ReLU). Every output is filled with NaN bytes first,
// so an element cuDNN never writes fails. cuDNN's slice operation exists from 9.22: below it
// build() refuses with VersionTooOld, and the case is skipped with that Error as the reason (a
// finding, never a pass), as it is where cuDNN has no engine (NoEngine).
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"
#include "support/run_case.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::MatmulAttributes;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::SliceAttributes;
using dnngraph::TensorAttributes;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::require_cuda;
using dnngraph::test::Tolerance;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t uid_x = 1, uid_b = 2, uid_y = 3;

// What follows the slice in the graph.
enum class Then : std::uint8_t {
  Nothing,     // Y = slice(X), an output
  Relu,        // Y = relu(slice(X))
  MatmulRelu,  // Y = relu(slice(X) x B), B [batch, K, n]
};

struct SliceCase {
  std::string name;
  DataType type;  // of X, B and Y; compute and intermediates Float
  Dims x;
  std::vector<std::pair<std::int64_t, std::int64_t>> slices;
  Dims steps;  // empty: 1 everywhere
  Then then = Then::Nothing;
  std::int64_t n = 0;  // Then::MatmulRelu: B's columns
  std::uint32_t seed = 1;

  [[nodiscard]] std::string text() const {
    std::string ranges;
    for (std::size_t d = 0; d < slices.size(); ++d) {
      ranges += (d == 0 ? "" : ", ") + std::to_string(slices[d].first) + ":" +
                std::to_string(slices[d].second) +
                (steps.empty() ? "" : ":" + std::to_string(steps[d]));
    }
    return name + " (" + std::string(dnngraph::to_string(type)) + ", X" + dnngraph::to_string(x) +
           "[" + ranges + "])";
  }
  [[nodiscard]] std::int64_t step(std::size_t d) const { return steps.empty() ? 1 : steps[d]; }
  [[nodiscard]] Dims sliced_dims() const {
    Dims dims;
    for (std::size_t d = 0; d < slices.size(); ++d) {
      dims.push_back(1 + (slices[d].second - slices[d].first - 1) / step(d));
    }
    return dims;
  }
  [[nodiscard]] Dims b_dims() const {
    const Dims s = sliced_dims();
    return {s[0], s[2], n};
  }
};

// Tolerances. A slice copies and ReLU keeps or zeroes: exact, 0. The matmul's K <= 128 and
// inputs in [-1, 1] exact in Half: Float accumulation leaves the Half output's rounding
// (2^-11 relative) to decide, and 1e-2 absolute + relative is ~20x that (as matmul_test.cpp).
Tolerance tolerance_for(const SliceCase& c) {
  return c.then == Then::MatmulRelu ? Tolerance{.abs = 1e-2, .rel = 1e-2}
                                    : Tolerance{.abs = 0, .rel = 0};
}

Graph make_graph(const SliceCase& c) {
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(uid_x).set_dim(c.x));
  auto attributes = SliceAttributes().set_name("slice").set_slices(c.slices);
  if (!c.steps.empty()) {
    attributes.set_strides(c.steps);
  }
  auto sliced = g.slice(x, attributes);
  std::shared_ptr<TensorAttributes> y;
  const auto relu = PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd);
  switch (c.then) {
    case Then::Nothing: y = sliced; break;
    case Then::Relu: y = g.pointwise(sliced, relu); break;
    case Then::MatmulRelu: {
      auto b = g.tensor(TensorAttributes().set_name("B").set_uid(uid_b).set_dim(c.b_dims()));
      y = g.pointwise(g.matmul(sliced, b, MatmulAttributes().set_name("mm")), relu);
      break;
    }
  }
  y->set_output(true).set_name("Y").set_uid(uid_y).set_data_type(c.type);
  return g;
}

// X[start:limit:step] in every dim, X packed row-major, in Y's (row-major) order.
std::vector<double> sliced(const SliceCase& c, const HostTensor& x) {
  const Dims dims = c.sliced_dims();
  const Dims x_strides = dnngraph::packed_strides(c.x);
  std::vector<double> y(dnngraph::test::element_count(dims));
  for (std::size_t e = 0; e < y.size(); ++e) {
    std::size_t rest = e;
    std::int64_t at = 0;
    for (std::size_t d = dims.size(); d-- > 0;) {
      const auto extent = static_cast<std::size_t>(dims[d]);
      const auto i = static_cast<std::int64_t>(rest % extent);
      rest /= extent;
      at += (c.slices[d].first + i * c.step(d)) * x_strides[d];
    }
    y[e] = x.values[static_cast<std::size_t>(at)];
  }
  return y;
}

std::vector<double> reference(const SliceCase& c, const HostTensor& x, const HostTensor& b) {
  std::vector<double> y = sliced(c, x);
  if (c.then == Then::MatmulRelu) {
    const std::vector<float> a(y.begin(), y.end());  // copies of values exact in the io type
    const dnngraph::test::MatmulShape shape{.a_dims = c.sliced_dims(), .b_dims = c.b_dims()};
    return dnngraph::test::reference_matmul(shape, a, b.values, {}, dnngraph::test::Epilogue::Relu);
  }
  if (c.then == Then::Relu) {
    for (double& v : y) {
      v = std::max(v, 0.0);
    }
  }
  return y;
}

boost::unit_test::precondition builds(const SliceCase& c) {
  return dnngraph::test::builds_or_skips(
      c.text(), [c] { return make_graph(c); },
      [](const dnngraph::Error& e) { return e.code == ErrorCode::VersionTooOld; });
}

// Runs the built case once on inputs uniform in [-1, 1] (fixed seed) and compares Y with the
// reference.
void check_against_reference(const SliceCase& c) {
  const auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_graph(c); });

  std::mt19937 rng(c.seed);
  const HostTensor x =
      dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(c.x), rng);
  HostTensor b;
  if (c.then == Then::MatmulRelu) {
    b = dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(c.b_dims()), rng);
  }
  const std::vector<double> expected = reference(c, x, b);

  DeviceBuffer x_dev = require_cuda(DeviceBuffer::copy_of(x.bytes), "X");
  DeviceBuffer b_dev;
  if (c.then == Then::MatmulRelu) {
    b_dev = require_cuda(DeviceBuffer::copy_of(b.bytes), "B");
  }
  DeviceBuffer y_dev = require_cuda(
      DeviceBuffer::allocate(expected.size() * static_cast<std::size_t>(dnngraph::size_of(c.type))),
      "Y");
  require_cuda(y_dev.fill_bytes(0xFF), "fill Y");  // NaN: an unwritten element fails
  std::unordered_map<std::int64_t, void*> pack{{uid_x, x_dev.get()}, {uid_y, y_dev.get()}};
  if (c.then == Then::MatmulRelu) {
    pack.emplace(uid_b, b_dev.get());
  }
  dnngraph::test::run_and_compare(taken, c.text(), pack, y_dev, c.type, expected, tolerance_for(c));
}

namespace cases {
const SliceCase window_half{.name = "a window of X",
                            .type = DataType::Half,
                            .x = {4, 48, 64},
                            .slices = {{1, 3}, {8, 40}, {0, 64}},
                            .steps = {},
                            .seed = 701};
const SliceCase strided_float{.name = "every other element along two dims",
                              .type = DataType::Float,
                              .x = {3, 40, 64},
                              .slices = {{0, 3}, {1, 40}, {0, 64}},
                              .steps = {1, 2, 2},
                              .seed = 702};
const SliceCase relu_half{.name = "a slice then ReLU",
                          .type = DataType::Half,
                          .x = {2, 64, 96},
                          .slices = {{0, 2}, {16, 48}, {32, 96}},
                          .steps = {},
                          .then = Then::Relu,
                          .seed = 703};
// cudnn-frontend 1.32's samples/cpp/misc/slice.cpp shape: A [11, 23, 64] sliced to [8, 16, 64].
const SliceCase matmul_half{.name = "a slice of A feeding a matmul and ReLU",
                            .type = DataType::Half,
                            .x = {11, 23, 64},
                            .slices = {{1, 9}, {3, 19}, {0, 64}},
                            .steps = {},
                            .then = Then::MatmulRelu,
                            .n = 32,
                            .seed = 704};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(slice_alone)
DNNGRAPH_REFERENCE_CASE(a_half_window_of_x_matches_reference, cases::window_half)
DNNGRAPH_REFERENCE_CASE(a_float_slice_with_steps_matches_reference, cases::strided_float)
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(slice_fused)
DNNGRAPH_REFERENCE_CASE(a_half_slice_then_relu_matches_reference, cases::relu_half)
DNNGRAPH_REFERENCE_CASE(a_half_slice_feeding_a_matmul_and_relu_matches_reference,
                        cases::matmul_half)
BOOST_AUTO_TEST_SUITE_END()
