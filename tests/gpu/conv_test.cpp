// Convolution graphs on the GPU against a CPU reference in double: conv_fprop in NCHW and NHWC
// for fp16 and bf16, fused with bias + ReLU, at stride 2 and dilation 2, of odd sizes, in 3-D and
// in convolution mode; conv_dgrad and conv_wgrad. The cases and their graphs live in
// support/conv_cases.hpp, where a CPU test validates and lowers each of them. Each case prints
// its max error and the chosen plan.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/gpu_checks.hpp"

#include "support/built_cases.hpp"
#include "support/conv_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::test::describe;
using dnngraph::test::require_cuda;

using dnngraph::DataType;
using dnngraph::Handle;
using dnngraph::Result;
using dnngraph::test::ConvCase;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::Tolerance;
namespace conv_cases = dnngraph::test::conv_cases;

std::size_t bytes_of(DataType type, const dnngraph::test::Dims& dims) {
  return dnngraph::test::element_count(dims) * static_cast<std::size_t>(dnngraph::size_of(type));
}

// Builds the case with the suite's heuristics (A then Fallback unless DNNGRAPH_TEST_HEURISTICS
// names one; support/built_cases.hpp), runs it once on inputs uniform in [-1, 1]
// (fixed seed), and compares the output with the reference within the output type's tolerance.
// A build failure (no engine for the case) is a finding: the message carries all of it.
void check_against_reference(const ConvCase& c) {
  // The tolerances (support/conv_cases.hpp) are argued for sums of at most max_conv_terms.
  BOOST_REQUIRE_MESSAGE(c.terms() <= dnngraph::test::max_conv_terms,
                        c.name << ": " << c.terms() << " products per output exceed the "
                               << dnngraph::test::max_conv_terms << " the tolerances allow");
  const Tolerance tolerance = dnngraph::test::conv_tolerance(c.type);
  auto handle = Handle::create();
  BOOST_REQUIRE_MESSAGE(handle.has_value(), "Handle::create failed: " << describe(handle));
  dnngraph::test::ConvGraph graph = dnngraph::test::make_conv_graph(c);
  const auto built = graph.graph.build(*handle, dnngraph::test::case_heuristics());
  if (!built) {
    BOOST_TEST_MESSAGE(c.name << ": build failed: " << describe(built));
  }
  BOOST_REQUIRE_MESSAGE(built.has_value(), c.name << ": build failed: " << describe(built));
  const auto info = graph.graph.plan_info();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "plan_info: " << describe(info));
  // The output's strides are the case's layout: given, or inferred from the conv's input.
  BOOST_TEST(graph.output->stride() == dnngraph::test::strides_for(c.layout, c.output_dims()));

  std::mt19937 rng(c.seed);
  const auto count = [](const dnngraph::test::Dims& dims) {
    return dnngraph::test::element_count(dims);
  };
  const HostTensor in0 = dnngraph::test::random_tensor(c.type, count(c.input0_dims()), rng);
  const HostTensor in1 = dnngraph::test::random_tensor(c.type, count(c.input1_dims()), rng);
  const HostTensor bias =
      c.bias_relu ? dnngraph::test::random_tensor(c.type, count(c.bias_dims()), rng) : HostTensor{};
  std::vector<std::byte> out_bytes(bytes_of(c.type, c.output_dims()));

  DeviceBuffer in0_dev = require_cuda(DeviceBuffer::copy_of(in0.bytes), "input 0");
  DeviceBuffer in1_dev = require_cuda(DeviceBuffer::copy_of(in1.bytes), "input 1");
  DeviceBuffer bias_dev = require_cuda(DeviceBuffer::copy_of(bias.bytes), "bias");
  DeviceBuffer out_dev = require_cuda(DeviceBuffer::allocate(out_bytes.size()), "output");
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(info->workspace_size)), "workspace");
  // NaN everywhere, so an element the kernel never writes cannot pass by accident (beta is 0,
  // so cuDNN does not read the output).
  require_cuda(out_dev.fill_bytes(0xFF), "fill output");

  std::unordered_map<std::int64_t, void*> pack{{dnngraph::test::uid_input0, in0_dev.get()},
                                               {dnngraph::test::uid_input1, in1_dev.get()},
                                               {dnngraph::test::uid_output, out_dev.get()}};
  if (c.bias_relu) {
    pack.emplace(dnngraph::test::uid_bias, bias_dev.get());
  }
  const auto ran = graph.graph.execute(*handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), c.name << ": execute failed: " << describe(ran));
  require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               c.name + " after execute");
  require_cuda(out_dev.download(std::span<std::byte>(out_bytes)), "output");

  const std::vector<double> expected =
      dnngraph::test::reference_output(c, in0.values, in1.values, bias.values);
  const std::vector<float> got = dnngraph::test::decode(c.type, out_bytes);
  const auto comparison = dnngraph::test::compare(got, expected, tolerance);
  BOOST_TEST_MESSAGE(c.name << " (" << dnngraph::to_string(c.input0_dims()) << ", "
                            << dnngraph::to_string(c.input1_dims()) << " -> "
                            << dnngraph::to_string(c.output_dims())
                            << "): " << comparison.describe() << "; plan: " << info->describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), c.name << ": " << comparison.describe());
}

// If cuDNN has no engine for these sizes, build() fails with NoEngine and the test says so:
// that is a finding.
// Cases measured without an engine on some cuDNN: skipped there with the Error as the reason (a
// finding), checked against the reference everywhere else. On cuDNN 9.27 (runtime-fusion
// libraries, H200) the odd NCHW case's only engine is engine 7 with a workspace, which the
// known-issues table refuses (it wrote wrong numbers); convolution mode has no engine config.
// On cuDNN 9.28.1 (the same libraries) every NCHW candidate is engine 4 with a workspace, which
// the table refuses from 9.27 on (engine4-channels-first-conv: wrong numbers for small cases).
boost::unit_test::precondition builds(const ConvCase& c) {
  return dnngraph::test::builds_or_skips(c.name,
                                         [c] { return dnngraph::test::make_conv_graph(c).graph; });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(conv_fprop_matches_reference)

BOOST_AUTO_TEST_CASE(half_nchw_conv_matches_reference, *builds(conv_cases::half_nchw())) {
  check_against_reference(conv_cases::half_nchw());
}

BOOST_AUTO_TEST_CASE(half_nhwc_conv_matches_reference) {
  check_against_reference(conv_cases::half_nhwc());
}

BOOST_AUTO_TEST_CASE(bfloat16_nchw_conv_matches_reference, *builds(conv_cases::bfloat16_nchw())) {
  check_against_reference(conv_cases::bfloat16_nchw());
}

BOOST_AUTO_TEST_CASE(bfloat16_nhwc_conv_matches_reference) {
  check_against_reference(conv_cases::bfloat16_nhwc());
}

BOOST_AUTO_TEST_CASE(float_nhwc_conv_matches_reference_within_tf32_error) {
  check_against_reference(conv_cases::float_nhwc());
}

BOOST_AUTO_TEST_CASE(float_nhwc_dgrad_matches_reference_within_tf32_error) {
  check_against_reference(conv_cases::float_nhwc_dgrad());
}

BOOST_AUTO_TEST_CASE(float_nhwc_wgrad_matches_reference_within_tf32_error) {
  check_against_reference(conv_cases::float_nhwc_wgrad());
}

BOOST_AUTO_TEST_CASE(half_nhwc_conv_bias_relu_fused_matches_reference) {
  check_against_reference(conv_cases::half_nhwc_bias_relu());
}

BOOST_AUTO_TEST_CASE(bfloat16_nhwc_conv_bias_relu_fused_matches_reference) {
  check_against_reference(conv_cases::bfloat16_nhwc_bias_relu());
}

BOOST_AUTO_TEST_CASE(stride_2_conv_matches_reference) {
  check_against_reference(conv_cases::half_nhwc_stride_2());
}

BOOST_AUTO_TEST_CASE(dilation_2_conv_matches_reference) {
  check_against_reference(conv_cases::half_nhwc_dilation_2());
}

BOOST_AUTO_TEST_CASE(half_nchw_conv_of_odd_sizes_matches_reference,
                     *builds(conv_cases::half_nchw_odd_sizes())) {
  check_against_reference(conv_cases::half_nchw_odd_sizes());
}

BOOST_AUTO_TEST_CASE(bfloat16_nhwc_conv_of_odd_sizes_matches_reference) {
  check_against_reference(conv_cases::bfloat16_nhwc_odd_sizes());
}

BOOST_AUTO_TEST_CASE(half_ndhwc_3d_conv_matches_reference) {
  check_against_reference(conv_cases::half_ndhwc_3d());
}

BOOST_AUTO_TEST_CASE(half_ncdhw_3d_conv_matches_reference, *builds(conv_cases::half_ncdhw_3d())) {
  check_against_reference(conv_cases::half_ncdhw_3d());
}

BOOST_AUTO_TEST_CASE(convolution_mode_applies_the_filter_mirrored,
                     *builds(conv_cases::half_nchw_convolution_mode())) {
  check_against_reference(conv_cases::half_nchw_convolution_mode());
}

// Grouped and depthwise: cuDNN reads the group count from W's dims (C / groups); each may lack
// an engine on some cuDNN (then skipped with the Error as the reason, a finding).
BOOST_AUTO_TEST_CASE(grouped_nhwc_conv_matches_reference,
                     *builds(conv_cases::half_nhwc_grouped())) {
  check_against_reference(conv_cases::half_nhwc_grouped());
}

BOOST_AUTO_TEST_CASE(grouped_nchw_stride_2_conv_matches_reference,
                     *builds(conv_cases::bfloat16_nchw_grouped())) {
  check_against_reference(conv_cases::bfloat16_nchw_grouped());
}

BOOST_AUTO_TEST_CASE(depthwise_conv_bias_relu_fused_matches_reference,
                     *builds(conv_cases::half_nhwc_depthwise_bias_relu())) {
  check_against_reference(conv_cases::half_nhwc_depthwise_bias_relu());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(grouped_backward_matches_reference)

BOOST_AUTO_TEST_CASE(grouped_dgrad_matches_reference,
                     *builds(conv_cases::half_nhwc_grouped_dgrad())) {
  check_against_reference(conv_cases::half_nhwc_grouped_dgrad());
}

BOOST_AUTO_TEST_CASE(grouped_wgrad_matches_reference,
                     *builds(conv_cases::half_nhwc_grouped_wgrad())) {
  check_against_reference(conv_cases::half_nhwc_grouped_wgrad());
}

BOOST_AUTO_TEST_CASE(depthwise_dgrad_matches_reference,
                     *builds(conv_cases::half_nhwc_depthwise_dgrad())) {
  check_against_reference(conv_cases::half_nhwc_depthwise_dgrad());
}

BOOST_AUTO_TEST_CASE(depthwise_wgrad_matches_reference,
                     *builds(conv_cases::half_nhwc_depthwise_wgrad())) {
  check_against_reference(conv_cases::half_nhwc_depthwise_wgrad());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_dgrad_matches_reference)

BOOST_AUTO_TEST_CASE(half_nhwc_dgrad_matches_reference) {
  check_against_reference(conv_cases::half_nhwc_dgrad());
}

BOOST_AUTO_TEST_CASE(bfloat16_nhwc_dgrad_matches_reference) {
  check_against_reference(conv_cases::bfloat16_nhwc_dgrad());
}

BOOST_AUTO_TEST_CASE(half_nchw_dgrad_matches_reference, *builds(conv_cases::half_nchw_dgrad())) {
  check_against_reference(conv_cases::half_nchw_dgrad());
}

BOOST_AUTO_TEST_CASE(stride_2_dgrad_into_the_larger_of_two_input_sizes_matches_reference) {
  check_against_reference(conv_cases::half_nhwc_dgrad_stride_2());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_wgrad_matches_reference)

BOOST_AUTO_TEST_CASE(half_nhwc_wgrad_matches_reference) {
  check_against_reference(conv_cases::half_nhwc_wgrad());
}

BOOST_AUTO_TEST_CASE(bfloat16_nhwc_wgrad_matches_reference) {
  check_against_reference(conv_cases::bfloat16_nhwc_wgrad());
}

BOOST_AUTO_TEST_CASE(half_nchw_wgrad_matches_reference, *builds(conv_cases::half_nchw_wgrad())) {
  check_against_reference(conv_cases::half_nchw_wgrad());
}

BOOST_AUTO_TEST_CASE(stride_2_wgrad_matches_reference) {
  check_against_reference(conv_cases::half_nhwc_wgrad_stride_2());
}

BOOST_AUTO_TEST_SUITE_END()
