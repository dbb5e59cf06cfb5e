// The convolution cases the GPU test runs against the CPU reference, and the graph of each. A
// CPU test validates and lowers every one of these graphs and checks the tolerance argument's
// bound on each case, so what runs on the GPU is already known to be well formed.
// Include after support/dnngraph.hpp.
#pragma once

#include "support/conv_reference.hpp"
#include "support/reference.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dnngraph::test {

enum class ConvKind : std::uint8_t { Fprop, Dgrad, Wgrad };
// ChannelsFirst: NCHW / NCDHW (and W as KCRS); ChannelsLast: NHWC / NDHWC (W as KRSC).
enum class Layout : std::uint8_t { ChannelsFirst, ChannelsLast };

[[nodiscard]] inline Dims strides_for(Layout layout, const Dims& dims) {
  return layout == Layout::ChannelsLast ? channels_last_strides(dims) : packed_strides(dims);
}

struct ConvCase {
  std::string name;
  ConvKind kind = ConvKind::Fprop;
  DataType type = DataType::Half;  // of every non-virtual tensor
  Layout layout = Layout::ChannelsFirst;
  ConvProblem problem;
  bool bias_relu = false;  // Fprop only: Y = ReLU(conv(X, W) + bias), bias [1, K, 1, 1]
  std::uint32_t seed = 1;

  // Fprop: X, W -> Y. Dgrad: dY, W -> dX. Wgrad: X, dY -> dW.
  [[nodiscard]] Dims input0_dims() const {
    return kind == ConvKind::Dgrad ? problem.y_dims() : problem.x_dims;
  }
  [[nodiscard]] Dims input1_dims() const {
    return kind == ConvKind::Wgrad ? problem.y_dims() : problem.w_dims;
  }
  [[nodiscard]] Dims output_dims() const {
    switch (kind) {
      case ConvKind::Fprop: return problem.y_dims();
      case ConvKind::Dgrad: return problem.x_dims;
      case ConvKind::Wgrad: return problem.w_dims;
    }
    return {};
  }
  [[nodiscard]] Dims bias_dims() const {
    Dims dims(problem.x_dims.size(), 1);
    dims[1] = problem.w_dims[0];
    return dims;
  }
  // The most products summed into one output element: C / groups x taps (fprop), K / groups x
  // taps (dgrad, an
  // upper bound), N x output positions (wgrad). The tolerances are argued for up to
  // max_conv_terms.
  [[nodiscard]] std::int64_t terms() const {
    const std::size_t s = problem.spatial();
    const std::int64_t taps = product(std::span(problem.w_dims).subspan(2, s));
    switch (kind) {
      case ConvKind::Fprop: return problem.w_dims[1] * taps;
      case ConvKind::Dgrad: return problem.w_dims[0] / problem.groups() * taps;
      case ConvKind::Wgrad: {
        const Dims y = problem.y_dims();
        return y[0] * product(std::span(y).subspan(2, s));
      }
    }
    return 0;
  }
};

constexpr std::int64_t uid_input0 = 1;
constexpr std::int64_t uid_input1 = 2;
constexpr std::int64_t uid_output = 3;
constexpr std::int64_t uid_bias = 4;

// The same padding, stride and dilation in every spatial dim.
[[nodiscard]] inline ConvProblem uniform_problem(Dims x_dims, Dims w_dims, std::int64_t padding,
                                                 std::int64_t stride, std::int64_t dilation) {
  const std::size_t s = x_dims.size() - 2;
  return {.x_dims = std::move(x_dims),
          .w_dims = std::move(w_dims),
          .pre_padding = Dims(s, padding),
          .post_padding = Dims(s, padding),
          .stride = Dims(s, stride),
          .dilation = Dims(s, dilation)};
}

struct ConvGraph {
  Graph graph;
  std::shared_ptr<TensorAttributes> output;
};

// The case's graph: io type = the case's type, intermediates and compute Float. Inputs and the
// output carry the case's layout; the conv node's output strides are left to inference (it
// follows its reference input), except where pointwise nodes follow, whose outputs get packed
// NCHW strides unless set, so they are set here.
[[nodiscard]] inline ConvGraph make_conv_graph(const ConvCase& c) {
  const ConvProblem& p = c.problem;
  ConvGraph out;
  Graph& g = out.graph;
  g.set_name(c.name)
      .set_io_data_type(c.type)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  const char* names[3][3] = {{"X", "W", "Y"}, {"dY", "W", "dX"}, {"X", "dY", "dW"}};
  const auto& name = names[static_cast<int>(c.kind)];
  const Dims in0_dims = c.input0_dims();
  const Dims in1_dims = c.input1_dims();
  auto in0 = g.tensor(TensorAttributes()
                          .set_name(name[0])
                          .set_uid(uid_input0)
                          .set_dim(in0_dims)
                          .set_stride(strides_for(c.layout, in0_dims)));
  auto in1 = g.tensor(TensorAttributes()
                          .set_name(name[1])
                          .set_uid(uid_input1)
                          .set_dim(in1_dims)
                          .set_stride(strides_for(c.layout, in1_dims)));
  const ConvolutionMode mode =
      p.flip ? ConvolutionMode::Convolution : ConvolutionMode::CrossCorrelation;
  std::shared_ptr<TensorAttributes> result;
  switch (c.kind) {
    case ConvKind::Fprop:
      result = g.conv_fprop(in0, in1,
                            ConvFpropAttributes()
                                .set_name("conv_fprop")
                                .set_pre_padding(p.pre_padding)
                                .set_post_padding(p.post_padding)
                                .set_stride(p.stride)
                                .set_dilation(p.dilation)
                                .set_convolution_mode(mode)
                                .set_group_count(p.groups()));
      break;
    case ConvKind::Dgrad:
      result = g.conv_dgrad(in0, in1,
                            ConvDgradAttributes()
                                .set_name("conv_dgrad")
                                .set_pre_padding(p.pre_padding)
                                .set_post_padding(p.post_padding)
                                .set_stride(p.stride)
                                .set_dilation(p.dilation)
                                .set_convolution_mode(mode)
                                .set_group_count(p.groups()));
      // With a stride above 1 several dX sizes give dY: say which one.
      result->set_dim(p.x_dims);
      break;
    case ConvKind::Wgrad:
      result = g.conv_wgrad(in0, in1,
                            ConvWgradAttributes()
                                .set_name("conv_wgrad")
                                .set_pre_padding(p.pre_padding)
                                .set_post_padding(p.post_padding)
                                .set_stride(p.stride)
                                .set_dilation(p.dilation)
                                .set_convolution_mode(mode)
                                .set_group_count(p.groups()));
      result->set_dim(p.w_dims);  // X and dY do not determine the filter size
      break;
  }
  if (c.bias_relu) {
    const Dims y_strides = strides_for(c.layout, p.y_dims());
    auto bias = g.tensor(TensorAttributes()
                             .set_name("bias")
                             .set_uid(uid_bias)
                             .set_dim(c.bias_dims())
                             .set_stride(strides_for(c.layout, c.bias_dims())));
    result = g.pointwise(result, bias,
                         PointwiseAttributes().set_name("bias_add").set_mode(PointwiseMode::Add));
    result->set_stride(y_strides);
    result = g.pointwise(result,
                         PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
    result->set_stride(y_strides);
  }
  result->set_output(true).set_name(name[2]).set_uid(uid_output);
  out.output = std::move(result);
  return out;
}

// Tolerances. Inputs are uniform in [-1, 1] (each product has variance 1/9) and no output sums
// more than max_conv_terms products (ConvCase::terms()), so |result| is typically below
// sqrt(600 / 9) ~ 8. The products of fp16 or bf16 inputs are exact in fp32 and the fp32 sum's
// error (~ terms x 2^-24 relative) is far below one rounding of the output, so the output type
// decides: fp16 rounds to 2^-11 relative, and 1e-2 absolute + 1e-2 relative leaves ~20x that at
// any magnitude; bf16 rounds to 2^-8 relative (8x coarser), and 4x looser still leaves ~10x.
// This assumes fp32 accumulation, which compute type Float asks for; an engine with Winograd or
// FFT transforms in fp32 adds far less than that. A CPU test runs the same comparison on a
// simulated fp32-accumulating GPU for every case.
constexpr std::int64_t max_conv_terms = 600;
[[nodiscard]] inline Tolerance conv_tolerance(DataType type) {
  return type == DataType::BFloat16 ? Tolerance{.abs = 4e-2, .rel = 4e-2}
                                    : Tolerance{.abs = 1e-2, .rel = 1e-2};
}

// The reference result of the case on these inputs (memory order, the case's layout); Acc float
// simulates a GPU that accumulates in fp32.
template <class Acc = double>
[[nodiscard]] std::vector<Acc> reference_output(const ConvCase& c, std::span<const float> input0,
                                                std::span<const float> input1,
                                                std::span<const float> bias) {
  const ConvProblem& p = c.problem;
  const Dims x_strides = strides_for(c.layout, p.x_dims);
  const Dims w_strides = strides_for(c.layout, p.w_dims);
  const Dims y_strides = strides_for(c.layout, p.y_dims());
  switch (c.kind) {
    case ConvKind::Fprop:
      return reference_conv_fprop<Acc>(p, input0, x_strides, input1, w_strides, y_strides, bias,
                                       c.bias_relu);
    case ConvKind::Dgrad:
      return reference_conv_dgrad<Acc>(p, input0, y_strides, input1, w_strides, x_strides);
    case ConvKind::Wgrad:
      return reference_conv_wgrad<Acc>(p, input0, x_strides, input1, y_strides, w_strides);
  }
  return {};
}

// The cases, one function each so that each GPU test case names one.
namespace conv_cases {

// X [2, 32, 16, 16], W [64, 32, 3, 3], padding 1: 288 products per output.
inline ConvProblem plain_2d() { return uniform_problem({2, 32, 16, 16}, {64, 32, 3, 3}, 1, 1, 1); }
// X [2, 16, 16, 16], W [32, 16, 3, 3], padding 1, for the backward passes.
inline ConvProblem backward_2d(std::int64_t stride) {
  return uniform_problem({2, 16, 16, 16}, {32, 16, 3, 3}, 1, stride, 1);
}

inline ConvCase fprop(std::string name, DataType type, Layout layout, ConvProblem problem,
                      std::uint32_t seed) {
  return {.name = std::move(name),
          .kind = ConvKind::Fprop,
          .type = type,
          .layout = layout,
          .problem = std::move(problem),
          .seed = seed};
}

inline ConvCase half_nchw() {
  return fprop("half NCHW conv_fprop 3x3", DataType::Half, Layout::ChannelsFirst, plain_2d(), 201);
}
inline ConvCase half_nhwc() {
  return fprop("half NHWC conv_fprop 3x3", DataType::Half, Layout::ChannelsLast, plain_2d(), 202);
}
inline ConvCase bfloat16_nchw() {
  return fprop("bf16 NCHW conv_fprop 3x3", DataType::BFloat16, Layout::ChannelsFirst, plain_2d(),
               203);
}
inline ConvCase bfloat16_nhwc() {
  return fprop("bf16 NHWC conv_fprop 3x3", DataType::BFloat16, Layout::ChannelsLast, plain_2d(),
               204);
}
inline ConvCase half_nhwc_bias_relu() {
  ConvCase c = fprop("half NHWC conv_fprop + bias + relu", DataType::Half, Layout::ChannelsLast,
                     plain_2d(), 205);
  c.bias_relu = true;
  return c;
}
inline ConvCase bfloat16_nhwc_bias_relu() {
  ConvCase c = fprop("bf16 NHWC conv_fprop + bias + relu", DataType::BFloat16, Layout::ChannelsLast,
                     plain_2d(), 206);
  c.bias_relu = true;
  return c;
}
// 17 x 17 at stride 2 and padding 1: 9 x 9, the last window partly in the padding.
inline ConvCase half_nhwc_stride_2() {
  return fprop("half NHWC conv_fprop stride 2", DataType::Half, Layout::ChannelsLast,
               uniform_problem({2, 32, 17, 17}, {64, 32, 3, 3}, 1, 2, 1), 207);
}
// A 3 x 3 filter at dilation 2 spans 5; padding 2 keeps 16 x 16.
inline ConvCase half_nhwc_dilation_2() {
  return fprop("half NHWC conv_fprop dilation 2", DataType::Half, Layout::ChannelsLast,
               uniform_problem({2, 32, 16, 16}, {64, 32, 3, 3}, 2, 1, 2), 208);
}
// N = 3, C = 5, K = 7, 13 x 11 input, 3 x 5 filter: no size is a multiple of a vector width.
inline ConvProblem odd_problem() {
  return {.x_dims = {3, 5, 13, 11},
          .w_dims = {7, 5, 3, 5},
          .pre_padding = {1, 2},
          .post_padding = {1, 2},
          .stride = {1, 1},
          .dilation = {1, 1}};
}
inline ConvCase half_nchw_odd_sizes() {
  return fprop("half NCHW conv_fprop, odd sizes", DataType::Half, Layout::ChannelsFirst,
               odd_problem(), 209);
}
inline ConvCase bfloat16_nhwc_odd_sizes() {
  return fprop("bf16 NHWC conv_fprop, odd sizes", DataType::BFloat16, Layout::ChannelsLast,
               odd_problem(), 210);
}
// X [1, 16, 8, 8, 8], W [32, 16, 3, 3, 3], padding 1: 432 products per output.
inline ConvCase half_ndhwc_3d() {
  return fprop("half NDHWC conv_fprop 3x3x3", DataType::Half, Layout::ChannelsLast,
               uniform_problem({1, 16, 8, 8, 8}, {32, 16, 3, 3, 3}, 1, 1, 1), 211);
}
inline ConvCase half_ncdhw_3d() {
  return fprop("half NCDHW conv_fprop 3x3x3", DataType::Half, Layout::ChannelsFirst,
               uniform_problem({1, 16, 8, 8, 8}, {32, 16, 3, 3, 3}, 1, 1, 1), 212);
}
// ConvolutionMode::Convolution: the filter applied mirrored.
inline ConvCase half_nchw_convolution_mode() {
  ConvCase c =
      fprop("half NCHW conv_fprop, convolution mode", DataType::Half, Layout::ChannelsFirst,
            uniform_problem({2, 8, 12, 12}, {16, 8, 3, 3}, 1, 1, 1), 213);
  c.problem.flip = true;
  return c;
}

inline ConvCase backward(std::string name, ConvKind kind, DataType type, Layout layout,
                         std::int64_t stride, std::uint32_t seed) {
  return {.name = std::move(name),
          .kind = kind,
          .type = type,
          .layout = layout,
          .problem = backward_2d(stride),
          .seed = seed};
}

inline ConvCase half_nhwc_dgrad() {
  return backward("half NHWC conv_dgrad 3x3", ConvKind::Dgrad, DataType::Half, Layout::ChannelsLast,
                  1, 221);
}
inline ConvCase bfloat16_nhwc_dgrad() {
  return backward("bf16 NHWC conv_dgrad 3x3", ConvKind::Dgrad, DataType::BFloat16,
                  Layout::ChannelsLast, 1, 222);
}
inline ConvCase half_nchw_dgrad() {
  return backward("half NCHW conv_dgrad 3x3", ConvKind::Dgrad, DataType::Half,
                  Layout::ChannelsFirst, 1, 223);
}
// dY 8 x 8 comes from dX 15 x 15 or 16 x 16: the graph asks for 16 x 16.
inline ConvCase half_nhwc_dgrad_stride_2() {
  return backward("half NHWC conv_dgrad stride 2", ConvKind::Dgrad, DataType::Half,
                  Layout::ChannelsLast, 2, 224);
}
inline ConvCase half_nhwc_wgrad() {
  return backward("half NHWC conv_wgrad 3x3", ConvKind::Wgrad, DataType::Half, Layout::ChannelsLast,
                  1, 231);
}
inline ConvCase bfloat16_nhwc_wgrad() {
  return backward("bf16 NHWC conv_wgrad 3x3", ConvKind::Wgrad, DataType::BFloat16,
                  Layout::ChannelsLast, 1, 232);
}
inline ConvCase half_nchw_wgrad() {
  return backward("half NCHW conv_wgrad 3x3", ConvKind::Wgrad, DataType::Half,
                  Layout::ChannelsFirst, 1, 233);
}
inline ConvCase half_nhwc_wgrad_stride_2() {
  return backward("half NHWC conv_wgrad stride 2", ConvKind::Wgrad, DataType::Half,
                  Layout::ChannelsLast, 2, 234);
}

// Float inputs: cuDNN may run them on TF32 tensor cores (inputs rounded to 10 mantissa bits):
// ~2^-11 relative per product, a random walk over at most max_conv_terms products of |x| <= 1,
// i.e. ~sqrt(600) / 3 * 2^-11 ~ 0.004 rms, inside conv_tolerance(Float) (1e-2 + 1e-2).
inline ConvCase float_nhwc() {
  return fprop("float NHWC conv_fprop 3x3", DataType::Float, Layout::ChannelsLast, plain_2d(), 241);
}
inline ConvCase float_nhwc_dgrad() {
  return backward("float NHWC conv_dgrad 3x3", ConvKind::Dgrad, DataType::Float,
                  Layout::ChannelsLast, 1, 242);
}
inline ConvCase float_nhwc_wgrad() {
  return backward("float NHWC conv_wgrad 3x3", ConvKind::Wgrad, DataType::Float,
                  Layout::ChannelsLast, 1, 243);
}

// Grouped (4 groups of 8 input and 16 output channels) and depthwise (groups = C = K = 32)
// convolutions: W [K, C / groups, 3, 3]. MobileNet-style depthwise + bias + ReLU fused.
inline ConvProblem grouped_2d(std::int64_t stride) {
  return uniform_problem({2, 32, 14, 14}, {64, 8, 3, 3}, 1, stride, 1);
}
inline ConvProblem depthwise_2d() {
  return uniform_problem({2, 32, 14, 14}, {32, 1, 3, 3}, 1, 1, 1);
}
inline ConvCase half_nhwc_grouped() {
  return fprop("half NHWC grouped conv_fprop, 4 groups", DataType::Half, Layout::ChannelsLast,
               grouped_2d(1), 251);
}
inline ConvCase bfloat16_nchw_grouped() {
  return fprop("bf16 NCHW grouped conv_fprop, 4 groups, stride 2", DataType::BFloat16,
               Layout::ChannelsFirst, grouped_2d(2), 252);
}
inline ConvCase half_nhwc_depthwise_bias_relu() {
  ConvCase c = fprop("half NHWC depthwise conv_fprop + bias + ReLU", DataType::Half,
                     Layout::ChannelsLast, depthwise_2d(), 253);
  c.bias_relu = true;
  return c;
}
// The same problem, as a backward pass of `kind`.
inline ConvCase as_backward(ConvCase c, ConvKind kind, std::string name, std::uint32_t seed) {
  c.name = std::move(name);
  c.kind = kind;
  c.seed = seed;
  return c;
}
inline ConvCase half_nhwc_grouped_dgrad() {
  return as_backward(half_nhwc_grouped(), ConvKind::Dgrad, "half NHWC grouped conv_dgrad, 4 groups",
                     254);
}
inline ConvCase half_nhwc_grouped_wgrad() {
  return as_backward(half_nhwc_grouped(), ConvKind::Wgrad, "half NHWC grouped conv_wgrad, 4 groups",
                     255);
}
inline ConvCase half_nhwc_depthwise_dgrad() {
  ConvCase c = half_nhwc_depthwise_bias_relu();
  c.bias_relu = false;
  return as_backward(std::move(c), ConvKind::Dgrad, "half NHWC depthwise conv_dgrad", 256);
}
inline ConvCase half_nhwc_depthwise_wgrad() {
  ConvCase c = half_nhwc_depthwise_bias_relu();
  c.bias_relu = false;
  return as_backward(std::move(c), ConvKind::Wgrad, "half NHWC depthwise conv_wgrad", 257);
}

inline std::vector<ConvCase> all() {
  return {half_nchw(),
          half_nhwc(),
          float_nhwc(),
          float_nhwc_dgrad(),
          float_nhwc_wgrad(),
          bfloat16_nchw(),
          bfloat16_nhwc(),
          half_nhwc_bias_relu(),
          bfloat16_nhwc_bias_relu(),
          half_nhwc_stride_2(),
          half_nhwc_dilation_2(),
          half_nchw_odd_sizes(),
          bfloat16_nhwc_odd_sizes(),
          half_ndhwc_3d(),
          half_ncdhw_3d(),
          half_nchw_convolution_mode(),
          half_nhwc_dgrad(),
          bfloat16_nhwc_dgrad(),
          half_nchw_dgrad(),
          half_nhwc_dgrad_stride_2(),
          half_nhwc_wgrad(),
          bfloat16_nhwc_wgrad(),
          half_nchw_wgrad(),
          half_nhwc_wgrad_stride_2(),
          half_nhwc_grouped(),
          bfloat16_nchw_grouped(),
          half_nhwc_depthwise_bias_relu(),
          half_nhwc_grouped_dgrad(),
          half_nhwc_grouped_wgrad(),
          half_nhwc_depthwise_dgrad(),
          half_nhwc_depthwise_wgrad()};
}

}  // namespace conv_cases

}  // namespace dnngraph::test
