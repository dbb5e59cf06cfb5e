// Concatenate nodes on the GPU against a CPU reference in double: two and three inputs along the
// first, a middle and the last dim, in Half and Float; the fused forms users write (concat then
// ReLU, concat then a bias add broadcast along the concatenated dim, two K blocks concatenated
// into a matmul's A); and an in-place concatenate, where input 1 already lies in Y's buffer.
// Every output is filled with NaN bytes first, so an element cuDNN never writes fails. A graph
// cuDNN has no engine for (NoEngine), or a cuDNN older than the operation needs (VersionTooOld,
// below 9.7), is a finding: the case is skipped with the Error as the reason, never passed.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
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

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"
#include "support/run_case.hpp"

namespace {

using dnngraph::ConcatenateAttributes;
using dnngraph::ConvFpropAttributes;
using dnngraph::DataType;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::MatmulAttributes;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::require_cuda;
using dnngraph::test::Tolerance;
using Dims = std::vector<std::int64_t>;

constexpr std::int64_t uid_first_input = 1;  // inputs 1, 2, 3
constexpr std::int64_t uid_bias = 20, uid_b = 21, uid_y = 30;

// What follows the concatenate in the graph.
enum class Then : std::uint8_t {
  Nothing,  // Y = concat(...), an output
  Relu,     // Y = relu(concat(...))
  Bias,     // Y = concat(...) + bias, bias [1, ..., extent along the axis, ..., 1]
  Matmul,   // C = concat(A1, A2 along K) x B [batch, K, n]
};

struct ConcatCase {
  std::string name;
  DataType type;  // of every input and the output; compute and intermediates Float
  std::vector<Dims> inputs;
  std::int64_t axis;
  Then then = Then::Nothing;
  std::optional<std::int64_t> in_place = std::nullopt;  // the input that lies in Y's buffer
  std::int64_t n = 0;                                   // Then::Matmul: B's columns
  std::uint32_t seed = 1;

  [[nodiscard]] std::string text() const {
    std::string dims;
    for (const Dims& d : inputs) {
      dims += (dims.empty() ? "" : " + ") + dnngraph::to_string(d);
    }
    return name + " (" + std::string(dnngraph::to_string(type)) + ", " + dims + " along axis " +
           std::to_string(axis) + ")";
  }
  // The concatenation's dims.
  [[nodiscard]] Dims cat_dims() const {
    Dims dims = inputs.front();
    const auto along = static_cast<std::size_t>(axis);
    dims[along] = 0;
    for (const Dims& d : inputs) {
      dims[along] += d[along];
    }
    return dims;
  }
  [[nodiscard]] Dims b_dims() const {
    const Dims cat = cat_dims();
    return {cat[0], cat[2], n};
  }
  [[nodiscard]] Dims bias_dims() const {
    Dims dims(inputs.front().size(), 1);
    dims[static_cast<std::size_t>(axis)] = cat_dims()[static_cast<std::size_t>(axis)];
    return dims;
  }
  [[nodiscard]] Dims output_dims() const {
    if (then != Then::Matmul) {
      return cat_dims();
    }
    const Dims cat = cat_dims();
    return {cat[0], cat[1], n};
  }
};

// Tolerances. A concatenate copies and ReLU keeps or zeroes: both exact, so 0. The bias add sums
// two values exact in the storage type in Float and rounds once to Half (2^-11 relative) or not
// at all (Float): 1e-3 absolute + relative covers Half's rounding twice over. The matmul's K <=
// 128 and inputs in [-1, 1] (see matmul_test.cpp): Half output rounding decides, 1e-2.
Tolerance tolerance_for(const ConcatCase& c) {
  switch (c.then) {
    case Then::Nothing:
    case Then::Relu: return {.abs = 0, .rel = 0};
    case Then::Bias: return {.abs = 1e-3, .rel = 1e-3};
    case Then::Matmul: return {.abs = 1e-2, .rel = 1e-2};
  }
  return {};
}

Graph make_graph(const ConcatCase& c) {
  Graph g;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  std::vector<std::shared_ptr<TensorAttributes>> inputs;
  const Dims y_strides = dnngraph::packed_strides(c.cat_dims());
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    auto t = TensorAttributes()
                 .set_name("X" + std::to_string(i))
                 .set_uid(uid_first_input + static_cast<std::int64_t>(i))
                 .set_dim(c.inputs[i]);
    if (c.in_place == static_cast<std::int64_t>(i)) {
      t.set_stride(y_strides);  // a view of its part of Y
    }
    inputs.push_back(g.tensor(t));
  }
  auto attributes = ConcatenateAttributes().set_name("cat").set_axis(c.axis);
  if (c.in_place) {
    attributes.set_in_place_index(*c.in_place);
  }
  auto cat = g.concatenate(inputs, attributes);
  std::shared_ptr<TensorAttributes> y;
  switch (c.then) {
    case Then::Nothing: y = cat; break;
    case Then::Relu:
      y = g.pointwise(cat, PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
      break;
    case Then::Bias: {
      auto bias =
          g.tensor(TensorAttributes().set_name("bias").set_uid(uid_bias).set_dim(c.bias_dims()));
      y = g.pointwise(cat, bias,
                      PointwiseAttributes().set_name("add").set_mode(PointwiseMode::Add));
      break;
    }
    case Then::Matmul: {
      auto b = g.tensor(TensorAttributes().set_name("B").set_uid(uid_b).set_dim(c.b_dims()));
      y = g.matmul(cat, b, MatmulAttributes().set_name("mm"));
      break;
    }
  }
  // The concatenation keeps its inputs' type (the io type); what follows it is written in it too.
  y->set_output(true).set_name("Y").set_uid(uid_y).set_data_type(c.type);
  return g;
}

// The inputs one after another along the axis, all packed row-major, in Y's order.
std::vector<double> concatenated(const ConcatCase& c, const std::vector<HostTensor>& inputs) {
  const auto along = static_cast<std::size_t>(c.axis);
  const Dims& first = c.inputs.front();
  std::size_t outer = 1;
  std::size_t inner = 1;
  for (std::size_t d = 0; d < first.size(); ++d) {
    if (d < along) outer *= static_cast<std::size_t>(first[d]);
    if (d > along) inner *= static_cast<std::size_t>(first[d]);
  }
  std::vector<double> y;
  y.reserve(dnngraph::test::element_count(c.cat_dims()));
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::size_t block = static_cast<std::size_t>(c.inputs[i][along]) * inner;
      const auto begin = inputs[i].values.begin() + static_cast<std::ptrdiff_t>(o * block);
      y.insert(y.end(), begin, begin + static_cast<std::ptrdiff_t>(block));
    }
  }
  return y;
}

std::vector<double> reference(const ConcatCase& c, const std::vector<HostTensor>& inputs,
                              const HostTensor& extra) {
  std::vector<double> y = concatenated(c, inputs);
  switch (c.then) {
    case Then::Nothing: break;
    case Then::Relu:
      for (double& v : y) {
        v = std::max(v, 0.0);
      }
      break;
    case Then::Bias: {
      // bias has Y's extent along the axis and 1 elsewhere: element e of Y adds bias[index].
      const auto along = static_cast<std::size_t>(c.axis);
      const Dims dims = c.cat_dims();
      std::size_t inner = 1;
      for (std::size_t d = along + 1; d < dims.size(); ++d) {
        inner *= static_cast<std::size_t>(dims[d]);
      }
      const auto extent = static_cast<std::size_t>(dims[along]);
      for (std::size_t e = 0; e < y.size(); ++e) {
        y[e] += static_cast<double>(extra.values[(e / inner) % extent]);
      }
      break;
    }
    case Then::Matmul: {
      const std::vector<float> a(y.begin(), y.end());  // copies of values exact in the io type
      const dnngraph::test::MatmulShape shape{.a_dims = c.cat_dims(), .b_dims = c.b_dims()};
      return dnngraph::test::reference_matmul(shape, a, extra.values, {},
                                              dnngraph::test::Epilogue::None);
    }
  }
  return y;
}

boost::unit_test::precondition builds(const ConcatCase& c) {
  return dnngraph::test::builds_or_skips(
      c.text(), [c] { return make_graph(c); },
      [](const dnngraph::Error& e) { return e.code == ErrorCode::VersionTooOld; });
}

// Byte offset of input `index`'s part in a packed Y (along the axis, after the inputs before it).
std::size_t offset_in_y(const ConcatCase& c, std::int64_t index) {
  const auto along = static_cast<std::size_t>(c.axis);
  const Dims strides = dnngraph::packed_strides(c.cat_dims());
  std::int64_t before = 0;
  for (std::int64_t i = 0; i < index; ++i) {
    before += c.inputs[static_cast<std::size_t>(i)][along];
  }
  return static_cast<std::size_t>(before * strides[along] * dnngraph::size_of(c.type));
}

// Runs the built case once on inputs uniform in [-1, 1] (fixed seed) and compares Y with the
// reference.
void check_against_reference(const ConcatCase& c) {
  const auto taken = dnngraph::test::take_built_case(c.text(), [c] { return make_graph(c); });

  std::mt19937 rng(c.seed);
  std::vector<HostTensor> inputs;
  inputs.reserve(c.inputs.size());
  for (const Dims& d : c.inputs) {
    inputs.push_back(dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(d), rng));
  }
  HostTensor extra;
  if (c.then == Then::Bias) {
    extra =
        dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(c.bias_dims()), rng);
  } else if (c.then == Then::Matmul) {
    extra = dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(c.b_dims()), rng);
  }
  const std::vector<double> expected = reference(c, inputs, extra);

  DeviceBuffer y_dev = require_cuda(
      DeviceBuffer::allocate(expected.size() * static_cast<std::size_t>(dnngraph::size_of(c.type))),
      "Y");
  require_cuda(y_dev.fill_bytes(0xFF), "fill Y");  // NaN: an unwritten element fails
  std::unordered_map<std::int64_t, void*> pack{{uid_y, y_dev.get()}};
  std::vector<DeviceBuffer> buffers;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto uid = uid_first_input + static_cast<std::int64_t>(i);
    if (c.in_place == static_cast<std::int64_t>(i)) {
      // The input is already where Y holds it (a packed block: its part is contiguous for an
      // axis-0 concatenate, which the in-place cases use).
      auto* at = static_cast<std::byte*>(y_dev.get()) + offset_in_y(c, c.in_place.value_or(0));
      require_cuda(
          dnngraph::test::cuda_check(cudaMemcpy(at, inputs[i].bytes.data(), inputs[i].bytes.size(),
                                                cudaMemcpyHostToDevice),
                                     "cudaMemcpy in-place input"),
          "in-place input");
      pack.emplace(uid, at);
      continue;
    }
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(inputs[i].bytes), "input"));
    pack.emplace(uid, buffers.back().get());
  }
  if (c.then == Then::Bias || c.then == Then::Matmul) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(extra.bytes), "bias or B"));
    pack.emplace(c.then == Then::Bias ? uid_bias : uid_b, buffers.back().get());
  }
  dnngraph::test::run_and_compare(taken, c.text(), pack, y_dev, c.type, expected, tolerance_for(c));
}

namespace cases {
const ConcatCase two_half_middle{.name = "concatenate of two inputs",
                                 .type = DataType::Half,
                                 .inputs = {{2, 24, 64}, {2, 40, 64}},
                                 .axis = 1,
                                 .seed = 601};
const ConcatCase two_float_last{.name = "concatenate of two inputs",
                                .type = DataType::Float,
                                .inputs = {{4, 32, 48}, {4, 32, 16}},
                                .axis = 2,
                                .seed = 602};
const ConcatCase three_half_first{.name = "concatenate of three inputs",
                                  .type = DataType::Half,
                                  .inputs = {{1, 16, 64}, {3, 16, 64}, {2, 16, 64}},
                                  .axis = 0,
                                  .seed = 603};
const ConcatCase three_float_middle{.name = "concatenate of three inputs",
                                    .type = DataType::Float,
                                    .inputs = {{2, 8, 8, 32}, {2, 24, 8, 32}, {2, 16, 8, 32}},
                                    .axis = 1,
                                    .seed = 604};
const ConcatCase three_half_last{.name = "concatenate of three inputs",
                                 .type = DataType::Half,
                                 .inputs = {{2, 32, 16}, {2, 32, 48}, {2, 32, 64}},
                                 .axis = 2,
                                 .seed = 605};
const ConcatCase relu_half{.name = "concatenate then ReLU",
                           .type = DataType::Half,
                           .inputs = {{2, 32, 64}, {2, 32, 64}},
                           .axis = 1,
                           .then = Then::Relu,
                           .seed = 606};
const ConcatCase bias_half{.name = "concatenate then a bias along the axis",
                           .type = DataType::Half,
                           .inputs = {{2, 16, 64}, {2, 48, 64}},
                           .axis = 1,
                           .then = Then::Bias,
                           .seed = 607};
const ConcatCase bias_float{.name = "concatenate then a bias along the axis",
                            .type = DataType::Float,
                            .inputs = {{2, 32, 16}, {2, 32, 32}, {2, 32, 16}},
                            .axis = 2,
                            .then = Then::Bias,
                            .seed = 608};
const ConcatCase matmul_half{.name = "two K blocks concatenated into a matmul's A",
                             .type = DataType::Half,
                             .inputs = {{2, 64, 64}, {2, 64, 64}},
                             .axis = 2,
                             .then = Then::Matmul,
                             .n = 96,
                             .seed = 609};
const ConcatCase in_place_half{.name = "in-place concatenate (input 1 in Y's buffer)",
                               .type = DataType::Half,
                               .inputs = {{2, 32, 64}, {3, 32, 64}},
                               .axis = 0,
                               .in_place = 1,
                               .seed = 610};
}  // namespace cases

// cudnn-frontend's concatenate fusion on Hopper (its samples/cpp/convolution/fprop.cpp, cuDNN
// 9.8+; its standalone "membound" concatenate sample asks for Blackwell): a 1x1 conv_fprop's Y
// concatenated along the channels with an input already in the output's buffer (in place, index
// 1), NHWC Half. Y1 [n, 2k, h, w]: channels 0..k-1 the convolution, k..2k-1 the input.
struct ConvConcat {
  static constexpr std::int64_t n = 2, c = 32, k = 48, h = 6, w = 5;
  static constexpr std::int64_t uid_x = 1, uid_w = 2, uid_y0 = 3;
  static std::string text() {
    return "1x1 conv_fprop then in-place concatenate along the channels (Half NHWC, X [2, 32, 6, "
           "5], W [48, 32, 1, 1], Y1 [2, 96, 6, 5])";
  }
  static Dims nhwc(std::int64_t channels) { return {channels * h * w, 1, channels * w, channels}; }
  static Graph make() {
    Graph g;
    g.set_name("conv_concat")
        .set_io_data_type(DataType::Half)
        .set_intermediate_data_type(DataType::Half)
        .set_compute_data_type(DataType::Float);
    auto x = g.tensor(
        TensorAttributes().set_name("X").set_uid(uid_x).set_dim({n, c, h, w}).set_stride(nhwc(c)));
    auto f = g.tensor(TensorAttributes()
                          .set_name("W")
                          .set_uid(uid_w)
                          .set_dim({k, c, 1, 1})
                          .set_stride({c, 1, c, c}));
    auto y = g.conv_fprop(x, f, ConvFpropAttributes().set_name("conv"));
    y->set_data_type(DataType::Half);
    // Y0 is a view of its part of Y1: Y1's strides, at channel k of Y1's buffer.
    auto y0 = g.tensor(TensorAttributes()
                           .set_name("Y0")
                           .set_uid(uid_y0)
                           .set_dim({n, k, h, w})
                           .set_stride(nhwc(2 * k)));
    auto y1 = g.concatenate(
        {y, y0}, ConcatenateAttributes().set_name("cat").set_axis(1).set_in_place_index(1));
    y1->set_output(true).set_name("Y1").set_uid(uid_y).set_stride(nhwc(2 * k));
    return g;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(concatenate_alone)
DNNGRAPH_REFERENCE_CASE(two_half_inputs_along_a_middle_dim_match_reference, cases::two_half_middle)
DNNGRAPH_REFERENCE_CASE(two_float_inputs_along_the_last_dim_match_reference, cases::two_float_last)
DNNGRAPH_REFERENCE_CASE(three_half_inputs_along_the_first_dim_match_reference,
                        cases::three_half_first)
DNNGRAPH_REFERENCE_CASE(three_float_inputs_along_a_middle_dim_of_rank_4_match_reference,
                        cases::three_float_middle)
DNNGRAPH_REFERENCE_CASE(three_half_inputs_along_the_last_dim_match_reference,
                        cases::three_half_last)
DNNGRAPH_REFERENCE_CASE(an_in_place_half_concatenate_keeps_the_input_in_y_and_adds_the_other,
                        cases::in_place_half)
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(concatenate_fused)
DNNGRAPH_REFERENCE_CASE(half_concatenate_then_relu_matches_reference, cases::relu_half)
DNNGRAPH_REFERENCE_CASE(half_concatenate_then_a_bias_along_the_axis_matches_reference,
                        cases::bias_half)
DNNGRAPH_REFERENCE_CASE(float_concatenate_of_three_then_a_bias_matches_reference, cases::bias_float)
DNNGRAPH_REFERENCE_CASE(half_k_blocks_concatenated_into_a_matmul_match_reference,
                        cases::matmul_half)
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(concatenate_after_a_convolution)
BOOST_AUTO_TEST_CASE(half_conv_fprop_then_in_place_concatenate_matches_reference,
                     *dnngraph::test::builds_or_skips(
                         ConvConcat::text(), [] { return ConvConcat::make(); },
                         [](const dnngraph::Error& e) {
                           return e.code == ErrorCode::VersionTooOld;
                         })) {
  using C = ConvConcat;
  const auto taken = dnngraph::test::take_built_case(C::text(), [] { return C::make(); });
  std::mt19937 rng(611);
  // Memory order: NHWC for X, Y0 and Y1; W [k, c] (1x1).
  const HostTensor x =
      dnngraph::test::random_tensor(DataType::Half, C::n * C::h * C::w * C::c, rng);
  const HostTensor f = dnngraph::test::random_tensor(DataType::Half, C::k * C::c, rng);
  const HostTensor y0 =
      dnngraph::test::random_tensor(DataType::Half, C::n * C::h * C::w * C::k, rng);
  std::vector<double> expected(static_cast<std::size_t>(C::n * C::h * C::w * 2 * C::k));
  for (std::int64_t pixel = 0; pixel < C::n * C::h * C::w; ++pixel) {
    for (std::int64_t o = 0; o < C::k; ++o) {
      double sum = 0;
      for (std::int64_t i = 0; i < C::c; ++i) {
        sum += static_cast<double>(x.values[static_cast<std::size_t>(pixel * C::c + i)]) *
               f.values[static_cast<std::size_t>(o * C::c + i)];
      }
      expected[static_cast<std::size_t>(pixel * 2 * C::k + o)] = sum;
      expected[static_cast<std::size_t>(pixel * 2 * C::k + C::k + o)] =
          y0.values[static_cast<std::size_t>(pixel * C::k + o)];
    }
  }
  DeviceBuffer y1 = require_cuda(DeviceBuffer::allocate(expected.size() * 2), "Y1");
  require_cuda(y1.fill_bytes(0xFF), "fill Y1");  // NaN: an unwritten element fails
  // Y0's values into their place in Y1 (channels k..2k-1 of every pixel).
  std::vector<std::byte> placed(expected.size() * 2);
  require_cuda(y1.download(std::span<std::byte>(placed)), "Y1");
  for (std::int64_t pixel = 0; pixel < C::n * C::h * C::w; ++pixel) {
    std::memcpy(&placed[static_cast<std::size_t>((pixel * 2 * C::k + C::k) * 2)],
                &y0.bytes[static_cast<std::size_t>(pixel * C::k * 2)],
                static_cast<std::size_t>(C::k * 2));
  }
  require_cuda(dnngraph::test::cuda_check(
                   cudaMemcpy(y1.get(), placed.data(), placed.size(), cudaMemcpyHostToDevice),
                   "cudaMemcpy Y0 into Y1"),
               "Y0");
  DeviceBuffer x_dev = require_cuda(DeviceBuffer::copy_of(x.bytes), "X");
  DeviceBuffer f_dev = require_cuda(DeviceBuffer::copy_of(f.bytes), "W");
  auto* y0_at = static_cast<std::byte*>(y1.get()) + static_cast<std::size_t>(C::k * 2);
  const std::unordered_map<std::int64_t, void*> pack{
      {C::uid_x, x_dev.get()}, {C::uid_w, f_dev.get()}, {C::uid_y0, y0_at}, {uid_y, y1.get()}};
  // K = 32 products of values in [-1, 1], Float accumulation, one rounding to Half: 1e-2.
  dnngraph::test::run_and_compare(taken, C::text(), pack, y1, DataType::Half, expected,
                                  Tolerance{.abs = 1e-2, .rel = 1e-2});
}
BOOST_AUTO_TEST_SUITE_END()
