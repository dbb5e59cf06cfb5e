// The batch-norm backward weight node (dbn_weight) without a GPU: it gives five per-channel Float
// outputs laid out like X, lowers to one finalized BN_BWD_WEIGHTS operation (alone and behind a
// conv_dgrad and ReLU backward, as cudnn-frontend's conv + batchnorm backward samples build it),
// and refuses wrong ranks, dims and types with Errors that name the node, the tensor, the
// expected and the given values.
#define BOOST_TEST_MODULE dbn_weight
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/graph_checks.hpp"
#include "support/printing.hpp"

using dnngraph::ConvDgradAttributes;
using dnngraph::DataType;
using dnngraph::DbnWeightAttributes;
using dnngraph::Error;
using dnngraph::ErrorCode;
using dnngraph::Graph;
using dnngraph::LoweringSummary;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using Names = std::vector<std::string>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

using namespace dnngraph::test;

namespace {

// dY and X [4, 32, 5, 3] channels-last (Half, uids 1 and 2), mean, inv_variance and scale
// [1, 32, 1, 1] Float (uids 3-5).
struct Backward {
  Graph g;
  TensorPtr dy, x, mean, inv_var, scale;

  explicit Backward(const Dims& dims = {4, 32, 5, 3}) {
    g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
    Dims channel(dims.size(), 1);
    channel[1] = dims[1];
    dy = channels_last_input(g, "dY", 1, dims);
    x = channels_last_input(g, "X", 2, dims);
    mean = channels_last_input(g, "mean", 3, channel, DataType::Float);
    inv_var = channels_last_input(g, "inv_variance", 4, channel, DataType::Float);
    scale = channels_last_input(g, "scale", 5, channel, DataType::Float);
  }
  std::array<TensorPtr, 5> dbn_weight() {
    auto outs = g.dbn_weight(dy, x, mean, inv_var, scale, DbnWeightAttributes().set_name("dbn"));
    for (const TensorPtr& t : outs) {
      t->set_output(true);
    }
    return outs;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(outputs_and_lowering)

BOOST_AUTO_TEST_CASE(gives_five_per_channel_float_outputs_laid_out_like_x) {
  Backward b;
  const auto outs = b.dbn_weight();
  const LoweringSummary s = require_lowered(b.g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.operations == (Names{"dbn_weight 'dbn'"}));
  BOOST_TEST(s.backend_operations == (Names{"OperationBnBwdWeights"}));
  for (const TensorPtr& t : outs) {
    BOOST_TEST(t->dim() == (Dims{1, 32, 1, 1}));
    BOOST_TEST(t->stride() == dnngraph::channels_last_strides({1, 32, 1, 1}));
    BOOST_TEST((t->data_type() == DataType::Float));
  }
  BOOST_TEST(outs[0]->name() == "dbn::dScale");
  BOOST_TEST(outs[4]->name() == "dbn::eq_bias");
}

BOOST_AUTO_TEST_CASE(a_float_ndhwc_input_lowers) {
  Backward b({2, 8, 3, 5, 7});
  b.dy->set_data_type(DataType::Float);
  b.x->set_data_type(DataType::Float);
  const auto outs = b.dbn_weight();
  BOOST_TEST(require_lowered(b.g).all_finalized);
  BOOST_TEST(outs[2]->dim() == (Dims{1, 8, 1, 1, 1}));
}

BOOST_AUTO_TEST_CASE(an_unnamed_node_takes_its_kind_and_index) {
  Backward b;
  auto outs = b.g.dbn_weight(b.dy, b.x, b.mean, b.inv_var, b.scale);
  outs[0]->set_output(true);
  BOOST_TEST(outs[0]->name() == "dbn_weight_0::dScale");
}

// cudnn-frontend 1.32's "Dgrad Drelu DBNweight Graph" sample: dY of the next layer through
// conv_dgrad, the ReLU's gradient against the batch norm's output recomputed from X, then the
// batch norm's weight gradients of that.
BOOST_AUTO_TEST_CASE(behind_a_dgrad_and_relu_backward_it_lowers_as_one_graph) {
  Graph g;
  g.set_io_data_type(DataType::Half)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  const Dims image{4, 32, 16, 16};
  const Dims next{4, 64, 16, 16};
  const Dims filter{64, 32, 3, 3};
  const Dims channel{1, 32, 1, 1};
  auto dy = channels_last_input(g, "dY", 1, next);
  auto w = channels_last_input(g, "W", 2, filter);
  auto x = channels_last_input(g, "X", 3, image);
  auto mean = channels_last_input(g, "mean", 4, channel, DataType::Float);
  auto inv_var = channels_last_input(g, "inv_variance", 5, channel, DataType::Float);
  auto scale = channels_last_input(g, "scale", 6, channel, DataType::Float);
  auto bias = channels_last_input(g, "bias", 7, channel, DataType::Float);
  auto dgrad = g.conv_dgrad(
      dy, w, ConvDgradAttributes().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
  const Dims nhwc = dnngraph::channels_last_strides(image);
  dgrad->set_dim(image).set_stride(nhwc);
  // Each step's output in X's layout (unset, a pointwise output is packed NCHW).
  const auto step = [&](const TensorPtr& a, const TensorPtr& b, PointwiseMode mode) {
    auto out = g.pointwise(a, b, PointwiseAttributes().set_mode(mode));
    out->set_stride(nhwc);
    return out;
  };
  auto centered = step(x, mean, PointwiseMode::Sub);
  auto normalized = step(centered, inv_var, PointwiseMode::Mul);
  auto scaled = step(normalized, scale, PointwiseMode::Mul);
  auto y = step(scaled, bias, PointwiseMode::Add);
  auto drelu = step(dgrad, y, PointwiseMode::ReluBwd);
  drelu->set_output(true).set_uid(8);
  auto outs = g.dbn_weight(drelu, x, mean, inv_var, scale);
  for (const TensorPtr& t : outs) {
    t->set_output(true);
  }
  const LoweringSummary s = require_lowered(g);
  BOOST_TEST(s.all_finalized);
  BOOST_TEST(s.backend_operations.front() == "OperationConvDgrad");
  BOOST_TEST(s.backend_operations.back() == "OperationBnBwdWeights");
  BOOST_TEST(s.operation_count == 7U);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(refusals)

BOOST_AUTO_TEST_CASE(a_rank_3_x_is_refused_naming_the_ranks_it_takes) {
  Backward b({4, 32, 7});
  b.dbn_weight();
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "dbn_weight 'dbn': X 'X' (uid 2) has dims [4, 32, 7] (rank 3); it takes "
                      "rank 4 to 5 ([N, C, (D,) H, W])"));
}

BOOST_AUTO_TEST_CASE(a_dy_of_other_dims_than_x_names_both) {
  Backward b;
  b.dy->set_dim({4, 32, 5, 4}).set_stride(dnngraph::channels_last_strides({4, 32, 5, 4}));
  b.dbn_weight();
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "dbn_weight 'dbn': dY 'dY' (uid 1) has dims [4, 32, 5, 4], expected "
                      "[4, 32, 5, 3] (X 'X' (uid 2)'s)"));
}

BOOST_AUTO_TEST_CASE(an_integer_dy_is_refused) {
  Backward b;
  b.dy->set_data_type(DataType::Int32);
  b.dbn_weight();
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(
      mentions(error, "dY 'dY' (uid 1) has data type Int32; it takes Half, BFloat16 or Float"));
}

BOOST_AUTO_TEST_CASE(a_mean_of_image_dims_names_the_channel_dims) {
  Backward b;
  b.mean->set_dim({4, 32, 1, 1}).set_stride(dnngraph::channels_last_strides({4, 32, 1, 1}));
  b.dbn_weight();
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error,
                      "dbn_weight 'dbn': mean 'mean' (uid 3) has dims [4, 32, 1, 1], expected "
                      "[1, 32, 1, 1] (per channel of X 'X' (uid 2) of dims [4, 32, 5, 3])"));
}

BOOST_AUTO_TEST_CASE(a_scale_of_other_channels_is_refused) {
  Backward b;
  b.scale->set_dim({1, 16, 1, 1}).set_stride(dnngraph::channels_last_strides({1, 16, 1, 1}));
  b.dbn_weight();
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(
      mentions(error, "scale 'scale' (uid 5) has dims [1, 16, 1, 1], expected [1, 32, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_half_inv_variance_is_refused) {
  Backward b;
  b.inv_var->set_data_type(DataType::Half);
  b.dbn_weight();
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error,
                      "dbn_weight 'dbn': inv_variance 'inv_variance' (uid 4) has data type Half; "
                      "it takes Float"));
}

BOOST_AUTO_TEST_CASE(a_half_gradient_output_is_refused) {
  Backward b;
  auto outs = b.dbn_weight();
  outs[1]->set_data_type(DataType::Half);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "dbn_weight 'dbn': dBias 'dbn::dBias'"));
  BOOST_TEST(mentions(error, "has data type Half; statistics are Float"));
}

BOOST_AUTO_TEST_CASE(an_output_of_other_dims_names_both_shapes) {
  Backward b;
  auto outs = b.dbn_weight();
  outs[3]->set_dim({1, 32, 5, 3});
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ShapeMismatch);
  BOOST_TEST(mentions(error, "dbn_weight 'dbn': output 'dbn::eq_scale_x'"));
  BOOST_TEST(mentions(error, "was given dims [1, 32, 5, 3], but the inputs give [1, 32, 1, 1]"));
}

BOOST_AUTO_TEST_CASE(a_half_compute_type_is_refused) {
  Backward b;
  auto outs = b.g.dbn_weight(b.dy, b.x, b.mean, b.inv_var, b.scale,
                             DbnWeightAttributes().set_compute_data_type(DataType::Half));
  outs[0]->set_output(true);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::UnsupportedDataType);
  BOOST_TEST(mentions(error, "compute data type Half is not supported"));
}

BOOST_AUTO_TEST_CASE(a_null_scale_is_a_foreign_tensor_error) {
  Backward b;
  auto outs = b.g.dbn_weight(b.dy, b.x, b.mean, b.inv_var, nullptr);
  const Error error = validation_error(b.g);
  BOOST_TEST(error.code == ErrorCode::ForeignTensor);
  BOOST_TEST(mentions(error, "input scale is null"));
}

BOOST_AUTO_TEST_SUITE_END()
