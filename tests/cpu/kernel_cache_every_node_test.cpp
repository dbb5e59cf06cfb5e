// The kernel cache persists for every node kind (issue 35): a dynamic-shape graph of each kind
// dnngraph offers, and the fused forms the GPU tests build, gets a kernel cache on the CPU (cuDNN
// 9.19 finalizes operation graphs and kernel caches without a GPU), cuDNN serializes it
// (to_json), and from_json loads that very document into a fresh cache. A kind the loaded cuDNN
// lacks is reported skipped, with the version it needs.
#define BOOST_TEST_MODULE kernel_cache_every_node
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"
#include "api/graph_access.hpp"
#include "api/layout.hpp"
#include "backend/features.hpp"

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "support/graph_checks.hpp"
#include "support/pointwise_reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::NormFwdPhase;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using dnngraph::backend::Feature;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

// --- what every case does ---

// g, made dynamic-shape with a new kernel cache, has the cache built on the CPU; cuDNN's
// document of it loads into a fresh cache.
void round_trips(Graph g) {
  auto cache = std::make_shared<dnngraph::KernelCache>();
  g.set_dynamic_shape_enabled(true).set_kernel_cache(cache);
  auto built = dnngraph::detail::GraphAccess::build_kernel_cache(g);
  BOOST_TEST_REQUIRE(built.has_value(), "the cache did not build on the CPU: "
                                            << (built ? "" : built.error().message));
  auto document = cache->to_json();
  BOOST_TEST_REQUIRE(document.has_value(),
                     "to_json: " << (document ? "" : document.error().message));
  dnngraph::KernelCache fresh;
  auto loaded = fresh.from_json(*document);
  BOOST_TEST(loaded.has_value(), "from_json refused cuDNN's own document: "
                                     << (loaded ? "" : loaded.error().message) << "\n"
                                     << *document);
}

// Skips a case whose node kind the loaded cuDNN lacks, naming the version it needs.
boost::unit_test::precondition needs(Feature feature) {
  return boost::unit_test::precondition([feature](boost::unit_test::test_unit_id) {
    boost::test_tools::assertion_result result(dnngraph::backend::available(feature));
    result.message() << dnngraph::backend::too_old_message(feature);
    return result;
  });
}

// --- graph pieces ---

// A graph in Half with Float intermediates and math, as most GPU tests build theirs.
Graph half_graph(const char* name) {
  Graph g;
  g.set_name(name)
      .set_io_data_type(DataType::Half)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  return g;
}

// A graph input with packed strides, of `type` where given, else the graph's io type.
TensorPtr input(Graph& g, const char* name, std::int64_t uid, const Dims& dims,
                std::optional<DataType> type = std::nullopt) {
  TensorAttributes t = dnngraph::test::tensor(name, uid, dims);
  if (type) {
    t.set_data_type(*type);
  }
  return g.tensor(t);
}

// A channels-last graph input (NHWC), as the convolution and batch statistics tests use.
TensorPtr nhwc(Graph& g, const char* name, std::int64_t uid, const Dims& dims,
               std::optional<DataType> type = std::nullopt) {
  return dnngraph::test::channels_last_input(g, name, uid, dims, type);
}

// A Float per-channel (or per-row) parameter, channels-last.
TensorPtr parameter(Graph& g, const char* name, std::int64_t uid, const Dims& dims) {
  return nhwc(g, name, uid, dims, DataType::Float);
}

TensorPtr pointwise(Graph& g, const TensorPtr& x, PointwiseMode mode) {
  return g.pointwise(x, dnngraph::PointwiseAttributes().set_mode(mode));
}

TensorPtr pointwise(Graph& g, const TensorPtr& x, const TensorPtr& b, PointwiseMode mode) {
  return g.pointwise(x, b, dnngraph::PointwiseAttributes().set_mode(mode));
}

// Marks each tensor an output (the absent ones skipped), with uids from 10 on.
template <class Tensors>
void outputs(const Tensors& tensors) {
  std::int64_t uid = 10;
  for (const TensorPtr& t : tensors) {
    if (t) {
      t->set_output(true).set_uid(uid++);
    }
  }
}
void outputs(std::initializer_list<TensorPtr> tensors) { outputs<>(tensors); }

const Dims image{4, 32, 8, 8};
const Dims channel{1, 32, 1, 1};

// --- matmul, pointwise, reduction, reshape, concatenate, slice, rng ---

Graph matmul_bias_relu() {
  Graph g = half_graph("matmul + bias + relu");
  auto c = g.matmul(input(g, "A", 1, {2, 64, 32}), input(g, "B", 2, {2, 32, 16}));
  auto biased = pointwise(g, c, input(g, "bias", 3, {1, 1, 16}), PointwiseMode::Add);
  outputs({pointwise(g, biased, PointwiseMode::ReluFwd)});
  return g;
}

Graph matmul_relu_with_uids_from(std::int64_t first) {
  Graph g = half_graph("matmul + relu");
  auto c = g.matmul(input(g, "A", first, {2, 64, 32}), input(g, "B", first + 1, {2, 32, 16}));
  outputs({pointwise(g, c, PointwiseMode::ReluFwd)});
  return g;
}

// Y = mode(inputs of the mode's arity), in Float (Boolean where the mode takes it); the second
// input broadcasts.
Graph pointwise_of(PointwiseMode mode) {
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  const bool logical = dnngraph::test::family(mode) == dnngraph::test::PointwiseFamily::Logical;
  std::vector<TensorPtr> in;
  for (int i = 0; i < dnngraph::arity(mode); ++i) {
    const bool boolean = logical || (mode == PointwiseMode::BinarySelect && i == 2);
    in.push_back(input(g, "in", i + 1, i == 1 ? Dims{2, 1, 40} : Dims{2, 3, 40},
                       boolean ? DataType::Boolean : DataType::Float));
  }
  const auto attributes = dnngraph::PointwiseAttributes().set_mode(mode);
  outputs({in.size() == 1   ? g.pointwise(in[0], attributes)
           : in.size() == 2 ? g.pointwise(in[0], in[1], attributes)
                            : g.pointwise(in[0], in[1], in[2], attributes)});
  return g;
}

Graph row_sums() {
  Graph g = half_graph("row sums");
  auto y = g.reduction(input(g, "X", 1, {1, 64, 32}),
                       dnngraph::ReductionAttributes().set_mode(dnngraph::ReductionMode::Add));
  y->set_dim({1, 64, 1}).set_data_type(DataType::Float);
  outputs({y});
  return g;
}

Graph transposed_b_matmul() {
  Graph g = half_graph("matmul of a transposed B");
  auto b = g.reshape(input(g, "B", 2, {2, 16, 32}),
                     dnngraph::ReshapeAttributes().set_permutation({0, 2, 1}));
  outputs({g.matmul(input(g, "A", 1, {2, 64, 32}), b)});
  return g;
}

Graph merged_rows_matmul() {
  Graph g = half_graph("matmul of merged rows");
  auto rows = g.reshape(input(g, "A", 1, {2, 64, 32}));
  rows->set_dim({1, 128, 32});
  outputs({g.matmul(rows, input(g, "B", 2, {1, 32, 16}))});
  return g;
}

Graph rank_changing_reshape() {
  Graph g = half_graph("reshape to another rank + relu");
  auto y = g.reshape(input(g, "X", 1, {2, 8, 16}));
  y->set_dim({16, 16});
  outputs({pointwise(g, y, PointwiseMode::ReluFwd)});
  return g;
}

// Concatenates [2, 8, 16] and [2, 24, 16] on axis 1; in place: the first input is a view of its
// part of Y.
Graph concatenate_relu(bool in_place) {
  Graph g = half_graph(in_place ? "concatenate in place" : "concatenate + relu");
  TensorAttributes x0 = dnngraph::test::tensor("X0", 1, {2, 8, 16});
  auto attributes = dnngraph::ConcatenateAttributes().set_axis(1);
  if (in_place) {
    x0.set_stride(dnngraph::packed_strides({2, 32, 16}));
    attributes.set_in_place_index(0);
  }
  auto y = g.concatenate({g.tensor(x0), input(g, "X1", 2, {2, 24, 16})}, attributes);
  outputs({in_place ? y : pointwise(g, y, PointwiseMode::ReluFwd)});
  return g;
}

Graph slice_relu() {
  Graph g = half_graph("slice + relu");
  auto sliced = g.slice(input(g, "X", 1, {2, 32, 16}),
                        dnngraph::SliceAttributes().set_slices({{0, 2}, {8, 24}, {0, 16}}));
  outputs({pointwise(g, sliced, PointwiseMode::ReluFwd)});
  return g;
}

// A Bernoulli mask [1, 64, 32] from Int64 seed and offset of `key_dims`.
TensorPtr mask(Graph& g, const Dims& key_dims) {
  auto y = g.rng(input(g, "seed", 1, key_dims, DataType::Int64),
                 input(g, "offset", 2, key_dims, DataType::Int64),
                 dnngraph::RngAttributes().set_bernoulli_probability(0.25));
  y->set_dim({1, 64, 32});
  return y;
}

Graph bernoulli_mask(const Dims& key_dims) {
  Graph g = half_graph("rng");
  outputs({mask(g, key_dims)});
  return g;
}

Graph masked_matmul() {
  Graph g = half_graph("matmul * rng mask");
  auto c = g.matmul(input(g, "A", 3, {1, 64, 16}), input(g, "B", 4, {1, 16, 32}));
  outputs({pointwise(g, c, mask(g, {1, 1, 1}), PointwiseMode::Mul)});
  return g;
}

// --- convolutions ---

// 3x3 filters, padding, stride and dilation 1: the GPU tests' common geometry.
template <class A>
A same_3x3(std::int64_t groups) {
  return A().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}).set_group_count(groups);
}

const Dims conv_x{2, 32, 9, 11};
const Dims conv_y{2, 64, 9, 11};

Dims filter(std::int64_t groups) { return {64, 32 / groups, 3, 3}; }

Graph conv_fprop_bias_relu(std::int64_t groups) {
  Graph g = half_graph("conv_fprop + bias + relu");
  auto y = g.conv_fprop(nhwc(g, "X", 1, conv_x), nhwc(g, "W", 2, filter(groups)),
                        same_3x3<dnngraph::ConvFpropAttributes>(groups));
  auto biased = pointwise(g, y, nhwc(g, "bias", 3, {1, 64, 1, 1}), PointwiseMode::Add);
  outputs({pointwise(g, biased, PointwiseMode::ReluFwd)});
  return g;
}

Graph conv_dgrad(std::int64_t groups) {
  Graph g = half_graph("conv_dgrad");
  auto dx = g.conv_dgrad(nhwc(g, "dY", 1, conv_y), nhwc(g, "W", 2, filter(groups)),
                         same_3x3<dnngraph::ConvDgradAttributes>(groups));
  dx->set_dim(conv_x).set_stride(dnngraph::channels_last_strides(conv_x));
  outputs({dx});
  return g;
}

Graph conv_wgrad(std::int64_t groups) {
  Graph g = half_graph("conv_wgrad");
  auto dw = g.conv_wgrad(nhwc(g, "X", 1, conv_x), nhwc(g, "dY", 2, conv_y),
                         same_3x3<dnngraph::ConvWgradAttributes>(groups));
  dw->set_dim(filter(groups));
  outputs({dw});
  return g;
}

Graph conv_3d_asymmetric() {
  Graph g = half_graph("3-d convolution, asymmetric padding");
  outputs({g.conv_fprop(input(g, "X", 1, {1, 8, 6, 7, 9}), input(g, "W", 2, {16, 8, 3, 3, 3}),
                        dnngraph::ConvFpropAttributes()
                            .set_pre_padding({1, 0, 1})
                            .set_post_padding({0, 1, 1})
                            .set_stride({1, 2, 1})
                            .set_dilation({1, 1, 2})
                            .set_convolution_mode(dnngraph::ConvolutionMode::Convolution))});
  return g;
}

Graph conv_batchnorm_relu() {
  Graph g = half_graph("conv_fprop + batchnorm inference + relu");
  auto conv = g.conv_fprop(nhwc(g, "X", 1, conv_x), nhwc(g, "W", 2, filter(1)),
                           same_3x3<dnngraph::ConvFpropAttributes>(1));
  const Dims c{1, 64, 1, 1};
  auto normalized =
      g.batchnorm_inference(conv, parameter(g, "mean", 3, c), parameter(g, "inv_variance", 4, c),
                            parameter(g, "scale", 5, c), parameter(g, "bias", 6, c), {});
  outputs({pointwise(g, normalized, PointwiseMode::ReluFwd)});
  return g;
}

Graph conv_genstats() {
  Graph g = half_graph("conv_fprop + genstats");
  auto y = g.conv_fprop(nhwc(g, "X", 1, conv_x), nhwc(g, "W", 2, filter(1)),
                        same_3x3<dnngraph::ConvFpropAttributes>(1));
  auto [sum, sq_sum] = g.genstats(y);
  outputs({y, sum, sq_sum});
  return g;
}

// --- norms ---

// X [8, 32, 1, 1] normalized over its 32 features.
const Dims rows{8, 32, 1, 1};
const Dims features{1, 32, 1, 1};
const Dims per_row{8, 1, 1, 1};

Graph layernorm(NormFwdPhase phase) {
  Graph g = half_graph("layernorm");
  auto [y, mean, inv_var] = g.layernorm(
      input(g, "X", 1, rows), input(g, "scale", 2, features, DataType::Float),
      input(g, "bias", 3, features, DataType::Float),
      dnngraph::LayernormAttributes().set_forward_phase(phase).set_epsilon(g.tensor(1e-5F)));
  outputs({y, mean, inv_var});  // null in inference
  return g;
}

Graph rmsnorm(NormFwdPhase phase, bool bias) {
  Graph g = half_graph("rmsnorm");
  auto a = dnngraph::RmsnormAttributes().set_forward_phase(phase).set_epsilon(g.tensor(1e-5F));
  if (bias) {
    a.set_bias(input(g, "bias", 3, features, DataType::Float));
  }
  outputs(g.rmsnorm(input(g, "X", 1, rows), input(g, "scale", 2, features, DataType::Float), a));
  return g;
}

// Layer norm backward (RMS norm: without mean and dbias).
Graph norm_backward(bool rms) {
  Graph g = half_graph(rms ? "rmsnorm backward" : "layernorm backward");
  auto dy = nhwc(g, "dY", 1, rows);
  auto x = nhwc(g, "X", 2, rows);
  auto scale = parameter(g, "scale", 3, features);
  auto inv_var = parameter(g, "inv_variance", 5, per_row);
  if (rms) {
    outputs(g.rmsnorm_backward(dy, x, scale, inv_var));
  } else {
    outputs(g.layernorm_backward(dy, x, scale, parameter(g, "mean", 4, per_row), inv_var));
  }
  return g;
}

Graph batchnorm() {
  Graph g = half_graph("batchnorm training");
  outputs(g.batchnorm(nhwc(g, "X", 1, image), parameter(g, "scale", 2, channel),
                      parameter(g, "bias", 3, channel),
                      dnngraph::BatchnormAttributes()
                          .set_epsilon(g.tensor(1e-5F))
                          .set_previous_running_stats(parameter(g, "prev_running_mean", 4, channel),
                                                      parameter(g, "prev_running_var", 5, channel),
                                                      g.tensor(0.1F))));
  return g;
}

Graph batchnorm_inference() {
  Graph g = half_graph("batchnorm inference");
  outputs({g.batchnorm_inference(nhwc(g, "X", 1, image), parameter(g, "mean", 2, channel),
                                 parameter(g, "inv_variance", 3, channel),
                                 parameter(g, "scale", 4, channel),
                                 parameter(g, "bias", 5, channel), {})});
  return g;
}

// dX, dscale and dbias of batchnorm (instance: instancenorm) from saved statistics.
Graph statistics_backward(bool instance) {
  Graph g = half_graph(instance ? "instancenorm backward" : "batchnorm backward");
  const Dims statistic = instance ? Dims{4, 32, 1, 1} : channel;
  auto dy = nhwc(g, "dY", 1, image);
  auto x = nhwc(g, "X", 2, image);
  auto scale = parameter(g, "scale", 3, channel);
  auto mean = parameter(g, "mean", 4, statistic);
  auto inv_var = parameter(g, "inv_variance", 5, statistic);
  outputs(instance ? g.instancenorm_backward(dy, x, scale, mean, inv_var)
                   : g.batchnorm_backward(dy, x, scale, mean, inv_var));
  return g;
}

Graph instancenorm() {
  Graph g = half_graph("instancenorm training");
  outputs(g.instancenorm(nhwc(g, "X", 1, image), parameter(g, "scale", 2, channel),
                         parameter(g, "bias", 3, channel),
                         dnngraph::InstancenormAttributes()
                             .set_forward_phase(NormFwdPhase::Training)
                             .set_epsilon(g.tensor(1e-5F))));
  return g;
}

// X [2, 16, 64]: per-sample scale and bias [2, 1, 64], statistics [2, 16, 1].
Graph adalayernorm(NormFwdPhase phase) {
  Graph g = half_graph("adalayernorm");
  outputs(g.adalayernorm(
      input(g, "X", 1, {2, 16, 64}), input(g, "scale", 2, {2, 1, 64}, DataType::Float),
      input(g, "bias", 3, {2, 1, 64}, DataType::Float),
      dnngraph::AdaLayernormAttributes().set_forward_phase(phase).set_epsilon(g.tensor(1e-5F))));
  return g;
}

Graph adalayernorm_backward() {
  Graph g = half_graph("adalayernorm backward");
  outputs(g.adalayernorm_backward(input(g, "dY", 1, {2, 16, 64}), input(g, "X", 2, {2, 16, 64}),
                                  input(g, "scale", 3, {2, 1, 64}, DataType::Float),
                                  input(g, "mean", 4, {2, 16, 1}, DataType::Float),
                                  input(g, "inv_variance", 5, {2, 16, 1}, DataType::Float)));
  return g;
}

Graph genstats() {
  Graph g = half_graph("genstats");
  outputs(g.genstats(nhwc(g, "X", 1, image)));
  return g;
}

Graph bn_finalize() {
  Graph g;
  g.set_name("bn_finalize").set_compute_data_type(DataType::Float);
  outputs(g.bn_finalize(parameter(g, "sum", 1, channel), parameter(g, "sq_sum", 2, channel),
                        parameter(g, "scale", 3, channel), parameter(g, "bias", 4, channel),
                        dnngraph::BnFinalizeAttributes()
                            .set_epsilon(g.tensor(1e-5F))
                            .set_accumulation_count(g.int64_scalar(256))
                            .set_previous_running_stats(
                                parameter(g, "prev_running_mean", 5, channel),
                                parameter(g, "prev_running_var", 6, channel), g.tensor(0.125F))));
  return g;
}

Graph dbn_weight() {
  Graph g = half_graph("dbn_weight");
  outputs(g.dbn_weight(nhwc(g, "dY", 1, image), nhwc(g, "X", 2, image),
                       parameter(g, "mean", 3, channel), parameter(g, "inv_variance", 4, channel),
                       parameter(g, "scale", 5, channel)));
  return g;
}

// --- resample ---

const Dims pooled{4, 32, 4, 4};

// Max pooling 2x2 by 2; average pooling 3x3 by 2 excluding padding (1 before, 0 after).
template <class A>
A window(bool max) {
  A a;
  if (max) {
    a.set_mode(dnngraph::ResampleMode::MaxPool).set_window({2, 2}).set_stride({2, 2});
  } else {
    a.set_mode(dnngraph::ResampleMode::AvgPoolExcludePadding)
        .set_window({3, 3})
        .set_stride({2, 2})
        .set_pre_padding({1, 1})
        .set_post_padding({0, 0});
  }
  return a;
}

// Max pooling writes its index.
Graph pool(bool max) {
  Graph g = half_graph(max ? "max pooling" : "average pooling");
  outputs(g.resample(nhwc(g, "X", 1, image),
                     window<dnngraph::ResampleAttributes>(max).set_generate_index(max)));
  return g;
}

// Max pooling backward reads the forward's index, average pooling backward its X and Y.
Graph pool_backward(bool max) {
  Graph g = half_graph(max ? "max pooling backward" : "average pooling backward");
  auto a = window<dnngraph::ResampleBackwardAttributes>(max);
  if (max) {
    a.set_index(nhwc(g, "Index", 2, pooled, DataType::Int8));
  } else {
    a.set_x(nhwc(g, "X", 2, image)).set_y(nhwc(g, "Y", 3, pooled));
  }
  auto dx = g.resample_backward(nhwc(g, "dY", 1, pooled), a);
  dx->set_dim(image);
  outputs({dx});
  return g;
}

// --- attention ---

const Dims q_dims{2, 4, 64, 64};
const Dims kv_dims{2, 4, 128, 64};

// Q [2, 4, 64, 64], K and V [2, 4, 128, 64] (or kv).
struct Attention {
  TensorPtr q, k, v;
};
Attention attention_inputs(Graph& g, const Dims& kv = kv_dims) {
  return {input(g, "Q", 1, q_dims), input(g, "K", 2, kv), input(g, "V", 3, kv)};
}

// Int32 [2, 1, 1, 1] sequence lengths (uids 4 and 5).
template <class A>
void padding_mask(Graph& g, A& a) {
  a.set_padding_mask(true)
      .set_seq_len_q(input(g, "seq_len_q", 4, {2, 1, 1, 1}, DataType::Int32))
      .set_seq_len_kv(input(g, "seq_len_kv", 5, {2, 1, 1, 1}, DataType::Int32));
}

// Int64 [1, 1, 1, 1] seed and offset (uids 7 and 8) for attention dropout.
template <class A>
void dropout(Graph& g, A& a) {
  a.set_dropout(0.1, input(g, "seed", 7, {1, 1, 1, 1}, DataType::Int64),
                input(g, "offset", 8, {1, 1, 1, 1}, DataType::Int64));
}

enum class Variant { Plain, CausalPadded, Dropout };

Graph sdpa(Variant variant) {
  Graph g = half_graph("sdpa");
  const Attention in = attention_inputs(g);
  auto a = dnngraph::SdpaAttributes().set_attn_scale(0.125F).set_generate_stats(true);
  if (variant == Variant::CausalPadded) {
    a.set_causal_mask_bottom_right(true);
    padding_mask(g, a);
  } else if (variant == Variant::Dropout) {
    a.set_causal_mask(true);
    dropout(g, a);
  }
  outputs(g.sdpa(in.q, in.k, in.v, a));
  return g;
}

Graph sdpa_paged() {
  Graph g = half_graph("sdpa over a paged K/V cache");
  constexpr std::int64_t block = 32, pages = 4;
  const Attention in = attention_inputs(g, {2 * pages, 4, block, 64});
  auto a = dnngraph::SdpaAttributes().set_attn_scale(0.125F).set_generate_stats(true);
  padding_mask(g, a);
  a.set_paged_attention(input(g, "page_table_k", 6, {2, 1, pages, 1}, DataType::Int32),
                        input(g, "page_table_v", 7, {2, 1, pages, 1}, DataType::Int32), kv_dims[2]);
  outputs(g.sdpa(in.q, in.k, in.v, a));
  return g;
}

// Q, K, V and O packed token after token ("THD") with ragged offsets.
Graph sdpa_ragged() {
  Graph g = half_graph("sdpa over token-packed (ragged) sequences");
  const auto token_major = [](const Dims& d) {
    return Dims{d[2] * d[1] * d[3], d[3], d[1] * d[3], 1};
  };
  auto q_offsets = input(g, "q_offsets", 6, {3, 1, 1, 1}, DataType::Int32);
  auto kv_offsets = input(g, "kv_offsets", 7, {3, 1, 1, 1}, DataType::Int32);
  const Attention in = attention_inputs(g);
  in.q->set_stride(token_major(q_dims)).set_ragged_offset(q_offsets);
  in.k->set_stride(token_major(kv_dims)).set_ragged_offset(kv_offsets);
  in.v->set_stride(token_major(kv_dims)).set_ragged_offset(kv_offsets);
  auto a = dnngraph::SdpaAttributes().set_attn_scale(0.125F).set_generate_stats(true);
  padding_mask(g, a);
  auto out = g.sdpa(in.q, in.k, in.v, a);
  out[0]->set_stride(token_major(q_dims)).set_ragged_offset(q_offsets);
  outputs(out);
  return g;
}

Graph sdpa_backward(Variant variant) {
  Graph g = half_graph("sdpa backward");
  const Attention in = attention_inputs(g);
  auto o = input(g, "O", 4, q_dims);
  auto d_o = input(g, "dO", 5, q_dims);
  auto stats = input(g, "Stats", 6, {2, 4, 64, 1}, DataType::Float);
  auto a = dnngraph::SdpaBackwardAttributes().set_attn_scale(0.125F).set_causal_mask(true);
  if (variant == Variant::Dropout) {
    dropout(g, a);
  }
  outputs(g.sdpa_backward(in.q, in.k, in.v, o, d_o, stats, a));
  return g;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(the_document_cudnn_writes_loads_into_a_fresh_cache)

BOOST_AUTO_TEST_CASE(for_matmul_with_a_bias_and_relu) { round_trips(matmul_bias_relu()); }
BOOST_AUTO_TEST_CASE(for_tensors_of_any_int64_uid) {
  // cuDNN writes uids as decimal names; validate() gives the tensors without one uids above the
  // largest.
  for (const std::int64_t first :
       {std::int64_t{-5}, std::int64_t{1'000'000'000'000'000'000},
        std::numeric_limits<std::int64_t>::max() - 3, std::numeric_limits<std::int64_t>::min()}) {
    BOOST_TEST_CONTEXT("uids from " << first) { round_trips(matmul_relu_with_uids_from(first)); }
  }
}
BOOST_AUTO_TEST_CASE(for_every_pointwise_mode) {
  for (const PointwiseMode mode : dnngraph::test::all_pointwise_modes) {
    BOOST_TEST_CONTEXT(dnngraph::to_string(mode)) { round_trips(pointwise_of(mode)); }
  }
}
BOOST_AUTO_TEST_CASE(for_a_reduction) { round_trips(row_sums()); }
BOOST_AUTO_TEST_CASE(for_a_reshape_that_transposes_a_matmul_input) {
  round_trips(transposed_b_matmul());
}
BOOST_AUTO_TEST_CASE(for_a_reshape_that_merges_dims) { round_trips(merged_rows_matmul()); }
BOOST_AUTO_TEST_CASE(for_a_reshape_that_changes_the_rank) { round_trips(rank_changing_reshape()); }
BOOST_AUTO_TEST_CASE(for_concatenate_and_relu, *needs(Feature::ConcatOperation)) {
  round_trips(concatenate_relu(false));
}
BOOST_AUTO_TEST_CASE(for_concatenate_in_place, *needs(Feature::ConcatOperation)) {
  round_trips(concatenate_relu(true));
}
BOOST_AUTO_TEST_CASE(for_slice_and_relu, *needs(Feature::SliceOperation)) {
  round_trips(slice_relu());
}
BOOST_AUTO_TEST_CASE(for_an_rng_mask) { round_trips(bernoulli_mask({1, 1, 1})); }
BOOST_AUTO_TEST_CASE(for_an_rng_mask_with_keys_of_rank_one) { round_trips(bernoulli_mask({1})); }
BOOST_AUTO_TEST_CASE(for_an_rng_mask_on_a_matmul) { round_trips(masked_matmul()); }

BOOST_AUTO_TEST_CASE(for_conv_fprop_with_a_bias_and_relu) { round_trips(conv_fprop_bias_relu(1)); }
BOOST_AUTO_TEST_CASE(for_a_grouped_conv_fprop) { round_trips(conv_fprop_bias_relu(4)); }
BOOST_AUTO_TEST_CASE(for_conv_dgrad) { round_trips(conv_dgrad(1)); }
BOOST_AUTO_TEST_CASE(for_a_grouped_conv_dgrad) { round_trips(conv_dgrad(4)); }
BOOST_AUTO_TEST_CASE(for_conv_wgrad) { round_trips(conv_wgrad(1)); }
BOOST_AUTO_TEST_CASE(for_a_grouped_conv_wgrad) { round_trips(conv_wgrad(4)); }
BOOST_AUTO_TEST_CASE(for_a_3d_convolution_with_asymmetric_padding) {
  round_trips(conv_3d_asymmetric());
}
BOOST_AUTO_TEST_CASE(for_conv_fprop_with_batchnorm_inference_and_relu) {
  round_trips(conv_batchnorm_relu());
}
BOOST_AUTO_TEST_CASE(for_conv_fprop_with_genstats) { round_trips(conv_genstats()); }

BOOST_AUTO_TEST_CASE(for_layernorm_training) { round_trips(layernorm(NormFwdPhase::Training)); }
BOOST_AUTO_TEST_CASE(for_layernorm_inference) { round_trips(layernorm(NormFwdPhase::Inference)); }
BOOST_AUTO_TEST_CASE(for_rmsnorm_training) { round_trips(rmsnorm(NormFwdPhase::Training, false)); }
BOOST_AUTO_TEST_CASE(for_rmsnorm_inference_with_a_bias) {
  round_trips(rmsnorm(NormFwdPhase::Inference, true));
}
BOOST_AUTO_TEST_CASE(for_layernorm_backward) { round_trips(norm_backward(false)); }
BOOST_AUTO_TEST_CASE(for_rmsnorm_backward) { round_trips(norm_backward(true)); }
BOOST_AUTO_TEST_CASE(for_batchnorm_training) { round_trips(batchnorm()); }
BOOST_AUTO_TEST_CASE(for_batchnorm_inference) { round_trips(batchnorm_inference()); }
BOOST_AUTO_TEST_CASE(for_batchnorm_backward) { round_trips(statistics_backward(false)); }
BOOST_AUTO_TEST_CASE(for_instancenorm) { round_trips(instancenorm()); }
BOOST_AUTO_TEST_CASE(for_instancenorm_backward) { round_trips(statistics_backward(true)); }
BOOST_AUTO_TEST_CASE(for_adalayernorm_training, *needs(Feature::AdaptiveLayerNorm)) {
  round_trips(adalayernorm(NormFwdPhase::Training));
}
BOOST_AUTO_TEST_CASE(for_adalayernorm_inference, *needs(Feature::AdaptiveLayerNorm)) {
  round_trips(adalayernorm(NormFwdPhase::Inference));
}
BOOST_AUTO_TEST_CASE(for_adalayernorm_backward, *needs(Feature::AdaptiveLayerNorm)) {
  round_trips(adalayernorm_backward());
}
BOOST_AUTO_TEST_CASE(for_genstats) { round_trips(genstats()); }
BOOST_AUTO_TEST_CASE(for_bn_finalize) { round_trips(bn_finalize()); }
BOOST_AUTO_TEST_CASE(for_dbn_weight) { round_trips(dbn_weight()); }

BOOST_AUTO_TEST_CASE(for_max_pooling_with_an_index) { round_trips(pool(true)); }
BOOST_AUTO_TEST_CASE(for_average_pooling_with_asymmetric_padding) { round_trips(pool(false)); }
BOOST_AUTO_TEST_CASE(for_max_pooling_backward_from_an_index) { round_trips(pool_backward(true)); }
BOOST_AUTO_TEST_CASE(for_average_pooling_backward_from_x_and_y) {
  round_trips(pool_backward(false));
}

BOOST_AUTO_TEST_CASE(for_sdpa) { round_trips(sdpa(Variant::Plain)); }
BOOST_AUTO_TEST_CASE(for_sdpa_with_a_bottom_right_causal_and_padding_mask) {
  round_trips(sdpa(Variant::CausalPadded));
}
BOOST_AUTO_TEST_CASE(for_sdpa_with_dropout) { round_trips(sdpa(Variant::Dropout)); }
BOOST_AUTO_TEST_CASE(for_sdpa_over_a_paged_cache, *needs(Feature::PagedCacheLoad)) {
  round_trips(sdpa_paged());
}
BOOST_AUTO_TEST_CASE(for_sdpa_over_ragged_sequences) { round_trips(sdpa_ragged()); }
BOOST_AUTO_TEST_CASE(for_sdpa_backward) { round_trips(sdpa_backward(Variant::Plain)); }
BOOST_AUTO_TEST_CASE(for_sdpa_backward_with_dropout) {
  round_trips(sdpa_backward(Variant::Dropout));
}

BOOST_AUTO_TEST_SUITE_END()
