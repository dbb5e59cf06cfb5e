// Convolution nodes without a GPU: conv_fprop, conv_dgrad and conv_wgrad reject each kind of bad
// input with its ErrorCode and a message that names the node, tensor, dim, expected and given
// values; infer output dims (padding, stride, dilation, 2-D and 3-D) and strides (the output
// follows the layout of its reference input); and lower to finalized cuDNN descriptors.
#define BOOST_TEST_MODULE conv
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::ConvDgradAttributes;
using dnngraph::ConvFpropAttributes;
using dnngraph::ConvolutionMode;
using dnngraph::ConvWgradAttributes;
using dnngraph::DataType;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

// A Half graph with X [2, 8, 10, 12] (uid 1) and W [16, 8, 3, 3] (uid 2), packed NCHW unless
// the test changes them before validate().
struct Conv2d {
  Graph g;
  TensorPtr x;
  TensorPtr w;

  Conv2d() {
    g.set_io_data_type(DataType::Half);
    x = g.tensor(tensor("X", 1, {2, 8, 10, 12}));
    w = g.tensor(tensor("W", 2, {16, 8, 3, 3}));
  }
  TensorPtr conv(ConvFpropAttributes attributes) {
    return g.conv_fprop(x, w, std::move(attributes.set_name("conv")));
  }
};

// The dims of conv_fprop(X, W) in a Half graph, after validate().
Dims fprop_dims(Dims x_dims, Dims w_dims, ConvFpropAttributes attributes) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, std::move(x_dims)));
  auto w = g.tensor(tensor("W", 2, std::move(w_dims)));
  auto y = g.conv_fprop(x, w, std::move(attributes));
  require_valid(g);
  return y->dim();
}

// The strides Y gets when X has x_strides and Y has none, after validate().
Dims fprop_y_strides(Dims x_dims, Dims x_strides, Dims w_dims, ConvFpropAttributes attributes) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, std::move(x_dims)).set_stride(std::move(x_strides)));
  auto w = g.tensor(tensor("W", 2, std::move(w_dims)));
  auto y = g.conv_fprop(x, w, std::move(attributes));
  require_valid(g);
  return y->stride();
}

// A Half graph with dY [2, 16, 10, 12] (uid 1) and W [16, 8, 3, 3] (uid 2).
struct Dgrad {
  Graph g;
  TensorPtr dy;
  TensorPtr w;

  Dgrad() {
    g.set_io_data_type(DataType::Half);
    dy = g.tensor(tensor("dY", 1, {2, 16, 10, 12}));
    w = g.tensor(tensor("W", 2, {16, 8, 3, 3}));
  }
  TensorPtr dgrad(ConvDgradAttributes attributes) {
    return g.conv_dgrad(dy, w, std::move(attributes.set_name("dgrad")));
  }
};

// A Half graph with X [2, 8, 10, 12] (uid 1) and dY [2, 16, 10, 12] (uid 2): a 3 x 3 conv with
// padding 1 leaves 10 x 12 as it is.
struct Wgrad {
  Graph g;
  TensorPtr x;
  TensorPtr dy;

  Wgrad() {
    g.set_io_data_type(DataType::Half);
    x = g.tensor(tensor("X", 1, {2, 8, 10, 12}));
    dy = g.tensor(tensor("dY", 2, {2, 16, 10, 12}));
  }
  TensorPtr wgrad(ConvWgradAttributes attributes) {
    return g.conv_wgrad(x, dy, std::move(attributes.set_name("wgrad")));
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(conv_fprop_validation)

BOOST_AUTO_TEST_CASE(x_with_3_dims_is_rejected_naming_x_and_its_dims) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 8, 10}));
  auto w = g.tensor(tensor("W", 2, {16, 8, 3}));
  g.conv_fprop(x, w, ConvFpropAttributes().set_name("conv"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "conv_fprop 'conv'"));
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has 3 dims [2, 8, 10]"));
  BOOST_TEST(mentions(error, "takes 4"));
}

BOOST_AUTO_TEST_CASE(x_with_6_dims_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {1, 2, 3, 3, 3, 3}));
  auto w = g.tensor(tensor("W", 2, {1, 2, 1, 1, 1, 1}));
  g.conv_fprop(x, w, ConvFpropAttributes().set_name("conv"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "has 6 dims"));
}

BOOST_AUTO_TEST_CASE(w_of_another_rank_than_x_is_rejected_naming_both) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 8, 10, 12}));
  auto w = g.tensor(tensor("W", 2, {16, 8, 3, 3, 3}));
  g.conv_fprop(x, w, ConvFpropAttributes().set_name("conv"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "W 'W' (uid 2) has 5 dims [16, 8, 3, 3, 3]"));
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has 4"));
}

BOOST_AUTO_TEST_CASE(channel_mismatch_is_rejected_naming_dim_1_and_both_values) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 8, 10, 12}));
  auto w = g.tensor(tensor("W", 2, {16, 4, 3, 3}));
  g.conv_fprop(x, w, ConvFpropAttributes().set_name("conv"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "conv_fprop 'conv': dim 1 of W 'W' (uid 2) is 4"));
  BOOST_TEST(mentions(error, "expected C / groups = 8 / 1 = 8"));
  // W's C divides X's: maybe a grouped convolution the user did not state.
  BOOST_TEST(mentions(error, "(a grouped convolution: set_group_count(2))"));
}

BOOST_AUTO_TEST_CASE(a_grouped_conv_takes_w_with_c_per_group_and_infers_y) {
  const Dims y = fprop_dims({2, 8, 10, 12}, {16, 2, 3, 3},
                            ConvFpropAttributes().set_padding({1, 1}).set_group_count(4));
  BOOST_TEST(y == (Dims{2, 16, 10, 12}));
  // Depthwise: groups = C = K.
  const Dims depthwise = fprop_dims({2, 8, 10, 12}, {8, 1, 3, 3},
                                    ConvFpropAttributes().set_padding({1, 1}).set_group_count(8));
  BOOST_TEST(depthwise == (Dims{2, 8, 10, 12}));
}

BOOST_AUTO_TEST_CASE(a_group_count_that_does_not_divide_c_and_k_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_group_count(3));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "the group count 3 does not divide C = 8 (dim 1 of X 'X' (uid 1)) "
                      "and K = 16"));
}

BOOST_AUTO_TEST_CASE(a_group_count_below_1_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_group_count(0));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "the group count 0 must be at least 1"));
}

BOOST_AUTO_TEST_CASE(a_group_count_that_w_does_not_match_is_rejected) {
  Conv2d c;  // W [16, 8, 3, 3]: C per group 8, which 2 groups of X's 8 channels are not
  c.conv(ConvFpropAttributes().set_group_count(2));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 1 of W 'W' (uid 2) is 8, expected C / groups = 8 / 2 = 4"));
}

BOOST_AUTO_TEST_CASE(stride_with_a_value_per_dim_of_another_rank_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_stride({1, 1, 1}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "conv_fprop 'conv': stride has 3 values [1, 1, 1]"));
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has 2 spatial dims"));
}

BOOST_AUTO_TEST_CASE(pre_padding_with_too_few_values_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_pre_padding({1}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "pre-padding has 1 values [1]"));
}

BOOST_AUTO_TEST_CASE(post_padding_with_too_many_values_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_post_padding({1, 1, 1}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "post-padding has 3 values [1, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(padding_with_the_wrong_number_of_values_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_padding({}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "pre-padding has 0 values []"));
}

BOOST_AUTO_TEST_CASE(dilation_with_the_wrong_number_of_values_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_dilation({2}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "dilation has 1 values [2]"));
}

BOOST_AUTO_TEST_CASE(zero_stride_is_rejected_naming_its_index) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_stride({1, 0}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "stride 1 is 0 (stride [1, 0]); it must be at least 1"));
}

BOOST_AUTO_TEST_CASE(negative_stride_is_rejected_naming_its_index) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_stride({-2, 1}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "stride 0 is -2"));
}

BOOST_AUTO_TEST_CASE(zero_dilation_is_rejected_naming_its_index) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_dilation({0, 1}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "dilation 0 is 0 (dilation [0, 1]); it must be at least 1"));
}

BOOST_AUTO_TEST_CASE(negative_pre_padding_is_rejected_naming_its_index) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_pre_padding({0, -1}).set_post_padding({0, 0}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "pre-padding 1 is -1 (pre-padding [0, -1]); it must be at least 0"));
}

BOOST_AUTO_TEST_CASE(negative_post_padding_is_rejected_naming_its_index) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_pre_padding({0, 0}).set_post_padding({-3, 0}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "post-padding 0 is -3"));
}

BOOST_AUTO_TEST_CASE(filter_larger_than_the_padded_input_is_rejected_naming_the_dim) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {1, 4, 3, 16}));
  auto w = g.tensor(tensor("W", 2, {8, 4, 5, 3}));
  g.conv_fprop(x, w, ConvFpropAttributes().set_name("conv").set_padding({0, 1}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 2 of X 'X' (uid 1) is 3 and of W 'W' (uid 2) is 5"));
  BOOST_TEST(mentions(error, "padding 0 + 0, stride 1, dilation 1"));
  BOOST_TEST(mentions(error, "output dim 2 would be empty"));
}

BOOST_AUTO_TEST_CASE(dilation_that_makes_the_filter_overhang_is_rejected) {
  // 3 taps at dilation 5 span 11 > 10.
  Conv2d c;
  c.conv(ConvFpropAttributes().set_dilation({5, 1}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "spans 11 but the padded input is only 10"));
}

BOOST_AUTO_TEST_CASE(padding_whose_sum_overflows_int64_is_rejected) {
  constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max() - 4;
  Conv2d c;
  c.conv(ConvFpropAttributes().set_padding({huge, 0}));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "overflows int64"));
}

BOOST_AUTO_TEST_CASE(output_given_other_dims_than_inferred_is_rejected) {
  Conv2d c;
  auto y = c.conv(ConvFpropAttributes().set_padding({1, 1}));
  y->set_dim({2, 16, 10, 10});
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(
      mentions(error, "was given dims [2, 16, 10, 10], but the inputs give [2, 16, 10, 12]"));
}

BOOST_AUTO_TEST_CASE(int32_input_is_rejected_naming_the_tensor_and_type) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 8, 10, 12}).set_data_type(DataType::Int32));
  auto w = g.tensor(tensor("W", 2, {16, 8, 3, 3}));
  g.conv_fprop(x, w, ConvFpropAttributes().set_name("conv"));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "X 'X' (uid 1) has data type Int32"));
}

BOOST_AUTO_TEST_CASE(double_compute_type_is_rejected) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_compute_data_type(DataType::Double));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "compute data type Double is not supported"));
}

BOOST_AUTO_TEST_CASE(w_of_another_graph_is_a_foreign_tensor) {
  Conv2d c;
  Graph other;
  auto foreign = other.tensor(tensor("foreign", 9, {16, 8, 3, 3}));
  c.g.conv_fprop(c.x, foreign, ConvFpropAttributes().set_name("conv"));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "conv_fprop 'conv': input W 'foreign' (uid 9)"));
}

BOOST_AUTO_TEST_CASE(null_x_is_a_foreign_tensor) {
  Conv2d c;
  c.g.conv_fprop(nullptr, c.w, ConvFpropAttributes().set_name("conv"));
  const Error error = validation_error(c.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "input X is null"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_fprop_shape_inference)

BOOST_AUTO_TEST_CASE(padding_1_keeps_the_spatial_size_of_a_3x3_conv) {
  BOOST_TEST(fprop_dims({2, 8, 10, 12}, {16, 8, 3, 3}, ConvFpropAttributes().set_padding({1, 1})) ==
             (Dims{2, 16, 10, 12}));
}

BOOST_AUTO_TEST_CASE(unset_attributes_mean_no_padding_stride_1_dilation_1) {
  BOOST_TEST(fprop_dims({2, 8, 10, 12}, {16, 8, 3, 3}, ConvFpropAttributes()) ==
             (Dims{2, 16, 8, 10}));
}

BOOST_AUTO_TEST_CASE(stride_2_on_odd_sizes_rounds_down) {
  // floor((7 + 2 - 2 - 1) / 2) + 1 = 4 and floor((9 + 2 - 2 - 1) / 2) + 1 = 5.
  BOOST_TEST(fprop_dims({1, 3, 7, 9}, {4, 3, 3, 3},
                        ConvFpropAttributes().set_padding({1, 1}).set_stride({2, 2})) ==
             (Dims{1, 4, 4, 5}));
}

BOOST_AUTO_TEST_CASE(dilation_2_widens_the_filter) {
  // A 3-tap filter at dilation 2 spans 5: 10 - 5 + 1 = 6.
  BOOST_TEST(fprop_dims({1, 3, 10, 10}, {4, 3, 3, 3}, ConvFpropAttributes().set_dilation({2, 2})) ==
             (Dims{1, 4, 6, 6}));
}

BOOST_AUTO_TEST_CASE(pre_and_post_padding_can_differ) {
  // H: 8 + 2 + 0 - 3 + 1 = 8; W: 8 + 0 + 1 - 3 + 1 = 7.
  BOOST_TEST(fprop_dims({1, 3, 8, 8}, {4, 3, 3, 3},
                        ConvFpropAttributes().set_pre_padding({2, 0}).set_post_padding({0, 1})) ==
             (Dims{1, 4, 8, 7}));
}

BOOST_AUTO_TEST_CASE(stride_dilation_and_padding_combine) {
  // floor((15 + 3 + 3 - 2 * 4 - 1) / 3) + 1 = 5.
  BOOST_TEST(fprop_dims({1, 2, 15, 15}, {2, 2, 5, 5},
                        ConvFpropAttributes().set_padding({3, 3}).set_stride({3, 3}).set_dilation(
                            {2, 2})) == (Dims{1, 2, 5, 5}));
}

BOOST_AUTO_TEST_CASE(three_d_conv_infers_depth_height_and_width) {
  BOOST_TEST(fprop_dims({1, 4, 6, 8, 10}, {8, 4, 3, 3, 3},
                        ConvFpropAttributes().set_padding({1, 1, 1}).set_stride({1, 2, 2})) ==
             (Dims{1, 8, 6, 4, 5}));
}

BOOST_AUTO_TEST_CASE(output_of_an_nchw_input_gets_packed_nchw_strides) {
  BOOST_TEST(fprop_y_strides({2, 8, 10, 12}, dnngraph::packed_strides({2, 8, 10, 12}),
                             {16, 8, 3, 3}, ConvFpropAttributes().set_padding({1, 1})) ==
             (Dims{16L * 10 * 12, 10L * 12, 12, 1}));
}

BOOST_AUTO_TEST_CASE(output_of_an_nhwc_input_is_nhwc) {
  // X [2, 8, 10, 12] as NHWC: strides [10 * 12 * 8, 1, 12 * 8, 8]; Y [2, 16, 10, 12] likewise.
  BOOST_TEST(fprop_y_strides({2, 8, 10, 12}, {960, 1, 96, 8}, {16, 8, 3, 3},
                             ConvFpropAttributes().set_padding({1, 1})) ==
             (Dims{10L * 12 * 16, 1, 12L * 16, 16}));
}

BOOST_AUTO_TEST_CASE(output_of_an_ndhwc_input_is_ndhwc) {
  const Dims x_dims{1, 4, 6, 8, 10};
  BOOST_TEST(fprop_y_strides(x_dims, dnngraph::channels_last_strides(x_dims), {8, 4, 3, 3, 3},
                             ConvFpropAttributes().set_padding({1, 1, 1})) ==
             dnngraph::channels_last_strides({1, 8, 6, 8, 10}));
}

BOOST_AUTO_TEST_CASE(output_of_a_single_channel_nhwc_input_is_nhwc) {
  // C = 1: C's and W's strides tie at 1; the strides are exactly the packed NHWC ones.
  const Dims x_dims{2, 1, 10, 12};
  BOOST_TEST(fprop_y_strides(x_dims, dnngraph::channels_last_strides(x_dims), {16, 1, 3, 3},
                             ConvFpropAttributes().set_padding({1, 1})) ==
             dnngraph::channels_last_strides({2, 16, 10, 12}));
}

BOOST_AUTO_TEST_CASE(output_of_a_1x1_spatial_nchw_input_stays_nchw) {
  // Both layouts put a [4, 8, 1, 1] tensor's bytes in the same places; the user wrote NCHW.
  BOOST_TEST(fprop_y_strides({4, 8, 1, 1}, {8, 1, 1, 1}, {16, 8, 1, 1},
                             ConvFpropAttributes().set_padding({1, 1})) ==
             (Dims{16L * 3 * 3, 3L * 3, 3, 1}));
}

BOOST_AUTO_TEST_CASE(output_of_a_row_padded_nhwc_input_is_nhwc) {
  // NHWC with each row of 12 pixels padded to 16: not packed, but C still moves fastest.
  BOOST_TEST(fprop_y_strides({2, 8, 10, 12}, {10L * 16 * 8, 1, 16L * 8, 8}, {16, 8, 3, 3},
                             ConvFpropAttributes().set_padding({1, 1})) ==
             dnngraph::channels_last_strides({2, 16, 10, 12}));
}

BOOST_AUTO_TEST_CASE(output_strides_the_user_set_are_kept) {
  Conv2d c;
  c.x->set_stride(dnngraph::channels_last_strides(c.x->dim()));
  auto y = c.conv(ConvFpropAttributes().set_padding({1, 1}));
  y->set_stride({1920, 120, 12, 1}).set_output(true);
  require_valid(c.g);
  BOOST_TEST(y->stride() == (Dims{1920, 120, 12, 1}));
}

BOOST_AUTO_TEST_CASE(virtual_output_is_float_and_a_graph_output_has_the_io_type) {
  Conv2d c;
  auto inner = c.g.conv_fprop(c.x, c.w, ConvFpropAttributes().set_padding({1, 1}));
  auto outer = c.g.conv_fprop(c.x, c.w, ConvFpropAttributes().set_padding({1, 1}));
  outer->set_output(true);
  require_valid(c.g);
  BOOST_TEST(*inner->data_type() == DataType::Float);
  BOOST_TEST(*outer->data_type() == DataType::Half);
}

BOOST_AUTO_TEST_CASE(unnamed_conv_gets_a_name_with_its_node_index) {
  Conv2d c;
  auto y = c.g.conv_fprop(c.x, c.w, {});
  BOOST_TEST(y->name() == "conv_fprop_0::Y");
}

BOOST_AUTO_TEST_CASE(channels_last_strides_put_c_innermost) {
  BOOST_TEST(dnngraph::channels_last_strides({2, 3, 4, 5}) == (Dims{60, 1, 15, 3}));
  BOOST_TEST(dnngraph::channels_last_strides({2, 3, 4, 5, 6}) == (Dims{360, 1, 90, 18, 3}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_dgrad)

BOOST_AUTO_TEST_CASE(dx_of_a_stride_1_conv_has_the_forward_input_size) {
  Dgrad d;
  auto dx = d.dgrad(ConvDgradAttributes().set_padding({1, 1}));
  require_valid(d.g);
  BOOST_TEST(dx->dim() == (Dims{2, 8, 10, 12}));
  BOOST_TEST(dx->name() == "dgrad::dX");
}

BOOST_AUTO_TEST_CASE(dx_of_a_grouped_conv_has_every_input_channel) {
  Dgrad d;  // W [16, 8, 3, 3] in 2 groups: dX has 16 channels
  auto dx = d.dgrad(ConvDgradAttributes().set_padding({1, 1}).set_group_count(2));
  require_valid(d.g);
  BOOST_TEST(dx->dim() == (Dims{2, 16, 10, 12}));
}

BOOST_AUTO_TEST_CASE(a_dgrad_group_count_that_does_not_divide_k_is_rejected) {
  Dgrad d;
  d.dgrad(ConvDgradAttributes().set_padding({1, 1}).set_group_count(3));
  const Error error = validation_error(d.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "the group count 3 does not divide C = 24"));
}

BOOST_AUTO_TEST_CASE(dx_of_a_stride_2_conv_defaults_to_the_smallest_input) {
  // Inputs 19 and 20 both give 10 at stride 2 (3 x 3, padding 1): the smallest is 19; 23, 24 -> 12.
  Dgrad d;
  auto dx = d.dgrad(ConvDgradAttributes().set_padding({1, 1}).set_stride({2, 2}));
  require_valid(d.g);
  BOOST_TEST(dx->dim() == (Dims{2, 8, 19, 23}));
}

BOOST_AUTO_TEST_CASE(dx_dims_the_user_set_pick_among_inputs_that_give_dy) {
  Dgrad d;
  auto dx = d.dgrad(ConvDgradAttributes().set_padding({1, 1}).set_stride({2, 2}));
  dx->set_dim({2, 8, 20, 24});
  require_valid(d.g);
  BOOST_TEST(dx->dim() == (Dims{2, 8, 20, 24}));
}

BOOST_AUTO_TEST_CASE(dx_dims_that_do_not_give_dy_are_rejected_naming_the_dim) {
  Dgrad d;
  auto dx = d.dgrad(ConvDgradAttributes().set_padding({1, 1}).set_stride({2, 2}));
  dx->set_dim({2, 8, 20, 26});
  const Error error = validation_error(d.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "conv_dgrad 'dgrad': dim 3 of dX 'dgrad::dX'"));
  BOOST_TEST(mentions(error, "is 26, whose forward output is 13"));
  BOOST_TEST(mentions(error, "dim 3 of dY 'dY' (uid 1) is 12"));
}

BOOST_AUTO_TEST_CASE(dy_whose_k_differs_from_w_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto dy = g.tensor(tensor("dY", 1, {2, 12, 10, 12}));
  auto w = g.tensor(tensor("W", 2, {16, 8, 3, 3}));
  g.conv_dgrad(dy, w, ConvDgradAttributes().set_name("dgrad").set_padding({1, 1}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 0 (K) of W 'W' (uid 2) is 16"));
  BOOST_TEST(mentions(error, "dim 1 (K) of dY 'dY' (uid 1) is 12"));
}

BOOST_AUTO_TEST_CASE(dy_that_no_input_gives_is_rejected) {
  // A 1 x 1 filter with padding 2 makes every output at least 5 wide: dY's 1 cannot be reached.
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto dy = g.tensor(tensor("dY", 1, {1, 4, 1, 8}));
  auto w = g.tensor(tensor("W", 2, {4, 4, 1, 1}));
  g.conv_dgrad(dy, w, ConvDgradAttributes().set_name("dgrad").set_padding({2, 0}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 2 of dY 'dY' (uid 1) is 1"));
  BOOST_TEST(mentions(error, "no input size gives this output"));
}

BOOST_AUTO_TEST_CASE(int8_dy_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto dy = g.tensor(tensor("dY", 1, {2, 16, 10, 12}).set_data_type(DataType::Int8));
  auto w = g.tensor(tensor("W", 2, {16, 8, 3, 3}));
  g.conv_dgrad(dy, w, ConvDgradAttributes().set_name("dgrad").set_padding({1, 1}));
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "dY 'dY' (uid 1) has data type Int8"));
}

BOOST_AUTO_TEST_CASE(dx_follows_the_layout_of_an_nhwc_dy) {
  Dgrad d;
  d.dy->set_stride(dnngraph::channels_last_strides(d.dy->dim()));
  auto dx = d.dgrad(ConvDgradAttributes().set_padding({1, 1}));
  require_valid(d.g);
  BOOST_TEST(dx->stride() == dnngraph::channels_last_strides({2, 8, 10, 12}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_wgrad)

BOOST_AUTO_TEST_CASE(dw_without_dims_is_rejected_saying_what_to_set) {
  Wgrad w;
  w.wgrad(ConvWgradAttributes().set_padding({1, 1}));
  const Error error = validation_error(w.g);
  BOOST_TEST(error.code == ErrorCode::InvalidAttribute);
  BOOST_TEST(mentions(error, "conv_wgrad 'wgrad': dW 'wgrad::dW'"));
  BOOST_TEST(
      mentions(error, "has no dims; set them to [K, C / groups, filter...] (K = 16, C = 8)"));
}

BOOST_AUTO_TEST_CASE(dw_dims_consistent_with_x_and_dy_are_accepted) {
  Wgrad w;
  auto dw = w.wgrad(ConvWgradAttributes().set_padding({1, 1}));
  dw->set_dim({16, 8, 3, 3});
  require_valid(w.g);
  BOOST_TEST(dw->stride() == (Dims{72, 9, 3, 1}));
}

BOOST_AUTO_TEST_CASE(dw_follows_the_layout_of_an_nhwc_x) {
  Wgrad w;
  w.x->set_stride(dnngraph::channels_last_strides(w.x->dim()));
  auto dw = w.wgrad(ConvWgradAttributes().set_padding({1, 1}));
  dw->set_dim({16, 8, 3, 3});
  require_valid(w.g);
  BOOST_TEST(dw->stride() == dnngraph::channels_last_strides({16, 8, 3, 3}));
}

BOOST_AUTO_TEST_CASE(dw_whose_k_differs_from_dy_is_rejected) {
  Wgrad w;
  w.wgrad(ConvWgradAttributes().set_padding({1, 1}))->set_dim({12, 8, 3, 3});
  const Error error = validation_error(w.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 0 (K) of dW 'wgrad::dW'"));
  BOOST_TEST(mentions(error, "is 12, but dim 1 (K) of dY 'dY' (uid 2) is 16"));
}

BOOST_AUTO_TEST_CASE(dw_whose_c_differs_from_x_is_rejected) {
  Wgrad w;
  w.wgrad(ConvWgradAttributes().set_padding({1, 1}))->set_dim({16, 4, 3, 3});
  const Error error = validation_error(w.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "dim 1 of dW 'wgrad::dW' (no uid yet) is 4, expected C / groups = "
                      "8 / 1 = 8 (a grouped convolution: set_group_count(2))"));
}

BOOST_AUTO_TEST_CASE(a_grouped_wgrad_takes_dw_with_c_per_group) {
  Wgrad w;
  auto dw = w.wgrad(ConvWgradAttributes().set_padding({1, 1}).set_group_count(2));
  dw->set_dim({16, 4, 3, 3});
  require_valid(w.g);
  BOOST_TEST(dw->dim() == (Dims{16, 4, 3, 3}));
}

BOOST_AUTO_TEST_CASE(dw_of_another_rank_is_rejected) {
  Wgrad w;
  w.wgrad(ConvWgradAttributes().set_padding({1, 1}))->set_dim({16, 8, 3});
  const Error error = validation_error(w.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dW 'wgrad::dW' (no uid yet) has 3 dims [16, 8, 3]"));
}

BOOST_AUTO_TEST_CASE(batch_mismatch_between_x_and_dy_is_rejected) {
  Graph g;
  g.set_io_data_type(DataType::Half);
  auto x = g.tensor(tensor("X", 1, {2, 8, 10, 12}));
  auto dy = g.tensor(tensor("dY", 2, {3, 16, 10, 12}));
  g.conv_wgrad(x, dy, ConvWgradAttributes().set_name("wgrad").set_padding({1, 1}))
      ->set_dim({16, 8, 3, 3});
  const Error error = validation_error(g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(
      mentions(error, "dim 0 (N) of dY 'dY' (uid 2) is 3, but dim 0 (N) of X 'X' (uid 1) is 2"));
}

BOOST_AUTO_TEST_CASE(dw_spatial_dims_that_do_not_give_dy_are_rejected) {
  Wgrad w;
  w.wgrad(ConvWgradAttributes().set_padding({1, 1}))->set_dim({16, 8, 3, 5});
  const Error error = validation_error(w.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dim 3 of X 'X' (uid 1) is 12 and of dW 'wgrad::dW'"));
  BOOST_TEST(mentions(error, "is 5, which give a forward output of 10"));
  BOOST_TEST(mentions(error, "dim 3 of dY 'dY' (uid 2) is 12"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_lowering)

BOOST_AUTO_TEST_CASE(nchw_conv_fprop_lowers_to_three_tensors_and_one_operation) {
  Conv2d c;
  c.conv(ConvFpropAttributes().set_padding({1, 1}))->set_output(true);
  const LoweringSummary summary = require_lowered(c.g);
  BOOST_TEST(summary.tensor_count == 3U);
  BOOST_TEST(summary.operation_count == 1U);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(summary.operations == (std::vector<std::string>{"conv_fprop 'conv'"}));
}

BOOST_AUTO_TEST_CASE(nhwc_conv_fprop_lowers) {
  Conv2d c;
  c.x->set_stride(dnngraph::channels_last_strides(c.x->dim()));
  c.w->set_stride(dnngraph::channels_last_strides(c.w->dim()));
  c.conv(ConvFpropAttributes().set_padding({1, 1}))->set_output(true);
  BOOST_TEST(require_lowered(c.g).all_finalized);
}

BOOST_AUTO_TEST_CASE(strided_dilated_asymmetric_conv_fprop_lowers) {
  Conv2d c;
  c.conv(ConvFpropAttributes()
             .set_pre_padding({2, 1})
             .set_post_padding({1, 0})
             .set_stride({2, 3})
             .set_dilation({2, 1}))
      ->set_output(true);
  BOOST_TEST(require_lowered(c.g).all_finalized);
}

BOOST_AUTO_TEST_CASE(convolution_mode_lowers) {
  Conv2d c;
  c.conv(
       ConvFpropAttributes().set_padding({1, 1}).set_convolution_mode(ConvolutionMode::Convolution))
      ->set_output(true);
  BOOST_TEST(require_lowered(c.g).all_finalized);
}

BOOST_AUTO_TEST_CASE(three_d_conv_fprop_lowers) {
  Graph g;
  g.set_io_data_type(DataType::BFloat16);
  auto x = g.tensor(tensor("X", 1, {1, 4, 6, 8, 10}));
  auto w = g.tensor(tensor("W", 2, {8, 4, 3, 3, 3}));
  g.conv_fprop(x, w, ConvFpropAttributes().set_padding({1, 1, 1}))->set_output(true);
  BOOST_TEST(require_lowered(g).all_finalized);
}

BOOST_AUTO_TEST_CASE(conv_bias_relu_lowers_to_six_tensors_and_three_operations) {
  Conv2d c;
  c.x->set_stride(dnngraph::channels_last_strides(c.x->dim()));
  c.w->set_stride(dnngraph::channels_last_strides(c.w->dim()));
  auto bias = c.g.tensor(tensor("bias", 3, {1, 16, 1, 1}).set_stride({16, 1, 16, 16}));
  auto y = c.conv(ConvFpropAttributes().set_padding({1, 1}));
  auto z = c.g.pointwise(y, bias,
                         PointwiseAttributes().set_name("bias_add").set_mode(PointwiseMode::Add));
  auto out =
      c.g.pointwise(z, PointwiseAttributes().set_name("relu").set_mode(PointwiseMode::ReluFwd));
  out->set_output(true).set_uid(4);
  const LoweringSummary summary = require_lowered(c.g);
  BOOST_TEST(summary.tensor_count == 6U);
  BOOST_TEST(summary.operation_count == 3U);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(
      summary.operations ==
      (std::vector<std::string>{"conv_fprop 'conv'", "pointwise 'bias_add'", "pointwise 'relu'"}));
  BOOST_TEST(y->stride() == dnngraph::channels_last_strides({2, 16, 10, 12}));
}

BOOST_AUTO_TEST_CASE(conv_dgrad_lowers) {
  Dgrad d;
  d.dgrad(ConvDgradAttributes().set_padding({1, 1}).set_stride({2, 2}))
      ->set_dim({2, 8, 20, 24})
      .set_output(true);
  const LoweringSummary summary = require_lowered(d.g);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(summary.operations == (std::vector<std::string>{"conv_dgrad 'dgrad'"}));
}

BOOST_AUTO_TEST_CASE(conv_wgrad_lowers) {
  Wgrad w;
  w.wgrad(ConvWgradAttributes().set_padding({1, 1}))
      ->set_dim({16, 8, 3, 3})
      .set_output(true)
      .set_data_type(DataType::Float);
  const LoweringSummary summary = require_lowered(w.g);
  BOOST_TEST(summary.all_finalized);
  BOOST_TEST(summary.operations == (std::vector<std::string>{"conv_wgrad 'wgrad'"}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(conv_overrides)

// NHWC X [2, 8, 10, 12] and W [16, 8, 3, 3], padding 1, Y an output; override-enabled.
struct NhwcConv {
  Graph g;
  NhwcConv() {
    g.set_io_data_type(DataType::Half).set_override_shape_enabled(true);
    auto x = g.tensor(
        tensor("X", 1, {2, 8, 10, 12}).set_stride(dnngraph::channels_last_strides({2, 8, 10, 12})));
    auto w = g.tensor(
        tensor("W", 2, {16, 8, 3, 3}).set_stride(dnngraph::channels_last_strides({16, 8, 3, 3})));
    g.conv_fprop(x, w, ConvFpropAttributes().set_name("conv").set_padding({1, 1}))
        ->set_output(true)
        .set_uid(3);
    require_valid(g);
  }
};

BOOST_AUTO_TEST_CASE(conv_fprop_accepts_overrides_whose_output_the_inputs_give) {
  NhwcConv c;
  const Dims x{4, 8, 20, 24};
  const Dims y{4, 16, 20, 24};
  auto checked = c.g.check_overrides(
      std::vector<std::int64_t>{1, 3}, std::vector<Dims>{x, y},
      std::vector<Dims>{dnngraph::channels_last_strides(x), dnngraph::channels_last_strides(y)});
  BOOST_TEST(checked.has_value(), (checked ? "" : checked.error().message));
}

BOOST_AUTO_TEST_CASE(conv_fprop_rejects_an_output_override_the_inputs_do_not_give) {
  NhwcConv c;
  const Dims x{4, 8, 20, 24};
  const Dims y{4, 16, 20, 20};
  auto checked = c.g.check_overrides(
      std::vector<std::int64_t>{1, 3}, std::vector<Dims>{x, y},
      std::vector<Dims>{dnngraph::channels_last_strides(x), dnngraph::channels_last_strides(y)});
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST(checked.error().code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(checked.error(), "[4, 16, 20, 24]"));
}

BOOST_AUTO_TEST_CASE(conv_dgrad_refuses_overrides) {
  Dgrad d;
  d.g.set_override_shape_enabled(true);
  d.dgrad(ConvDgradAttributes().set_padding({1, 1}))->set_output(true).set_uid(3);
  require_valid(d.g);
  const Dims dy{4, 16, 10, 12};
  auto checked = d.g.check_overrides(std::vector<std::int64_t>{1}, std::vector<Dims>{dy},
                                     std::vector<Dims>{dnngraph::packed_strides(dy)});
  BOOST_TEST_REQUIRE(!checked.has_value());
  BOOST_TEST_MESSAGE(checked.error().message);
  BOOST_TEST(mentions(checked.error(), "conv_dgrad 'dgrad'"));
}

BOOST_AUTO_TEST_SUITE_END()
