// The graphs of issue 35, "the kernel cache must persist for every node kind": one graph of each
// node kind dnngraph offers, and of the fused forms the GPU tests build, as a table of named cases
// for the tests to make dynamic-shape with a kernel cache. tests/cpu/kernel_cache_every_node_test
// round-trips each one's cache document on the CPU; tests/gpu/kernel_cache_persist_test builds
// each on a GPU, saves its cache in one process and loads it in another. For tests that include
// the api headers (it names backend::Feature, which the module does not export).
#pragma once

#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"
#include "api/layout.hpp"
#include "backend/features.hpp"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/graph_checks.hpp"
#include "support/pointwise_reference.hpp"

namespace dnngraph::test::every_node {

using backend::Feature;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

// --- graph pieces ---

// A graph in Half with Float intermediates and math, as most GPU tests build theirs.
inline Graph half_graph(const char* name) {
  Graph g;
  g.set_name(name)
      .set_io_data_type(DataType::Half)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  return g;
}

// A graph input with packed strides, of `type` where given, else the graph's io type.
inline TensorPtr input(Graph& g, const char* name, std::int64_t uid, const Dims& dims,
                       std::optional<DataType> type = std::nullopt) {
  TensorAttributes t = dnngraph::test::tensor(name, uid, dims);
  if (type) {
    t.set_data_type(*type);
  }
  return g.tensor(t);
}

// A channels-last graph input (NHWC), as the convolution and batch statistics tests use.
inline TensorPtr nhwc(Graph& g, const char* name, std::int64_t uid, const Dims& dims,
                      std::optional<DataType> type = std::nullopt) {
  return dnngraph::test::channels_last_input(g, name, uid, dims, type);
}

// A Float per-channel (or per-row) parameter, channels-last.
inline TensorPtr parameter(Graph& g, const char* name, std::int64_t uid, const Dims& dims) {
  return nhwc(g, name, uid, dims, DataType::Float);
}

inline TensorPtr pointwise(Graph& g, const TensorPtr& x, PointwiseMode mode) {
  return g.pointwise(x, dnngraph::PointwiseAttributes().set_mode(mode));
}

inline TensorPtr pointwise(Graph& g, const TensorPtr& x, const TensorPtr& b, PointwiseMode mode) {
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
inline void outputs(std::initializer_list<TensorPtr> tensors) { outputs<>(tensors); }

inline const Dims image{4, 32, 8, 8};
inline const Dims channel{1, 32, 1, 1};

// --- matmul, pointwise, reduction, reshape, concatenate, slice, rng ---

inline Graph matmul_bias_relu() {
  Graph g = half_graph("matmul + bias + relu");
  auto c = g.matmul(input(g, "A", 1, {2, 64, 32}), input(g, "B", 2, {2, 32, 16}));
  auto biased = pointwise(g, c, input(g, "bias", 3, {1, 1, 16}), PointwiseMode::Add);
  outputs({pointwise(g, biased, PointwiseMode::ReluFwd)});
  return g;
}

inline Graph matmul_relu_with_uids_from(std::int64_t first) {
  Graph g = half_graph("matmul + relu");
  auto c = g.matmul(input(g, "A", first, {2, 64, 32}), input(g, "B", first + 1, {2, 32, 16}));
  outputs({pointwise(g, c, PointwiseMode::ReluFwd)});
  return g;
}

// Y = mode(inputs of the mode's arity), in Float (Boolean where the mode takes it); the second
// input broadcasts.
inline Graph pointwise_of(PointwiseMode mode) {
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

inline Graph row_sums() {
  Graph g = half_graph("row sums");
  auto y = g.reduction(input(g, "X", 1, {1, 64, 32}),
                       dnngraph::ReductionAttributes().set_mode(dnngraph::ReductionMode::Add));
  y->set_dim({1, 64, 1}).set_data_type(DataType::Float);
  outputs({y});
  return g;
}

inline Graph transposed_b_matmul() {
  Graph g = half_graph("matmul of a transposed B");
  auto b = g.reshape(input(g, "B", 2, {2, 16, 32}),
                     dnngraph::ReshapeAttributes().set_permutation({0, 2, 1}));
  outputs({g.matmul(input(g, "A", 1, {2, 64, 32}), b)});
  return g;
}

inline Graph merged_rows_matmul() {
  Graph g = half_graph("matmul of merged rows");
  auto rows = g.reshape(input(g, "A", 1, {2, 64, 32}));
  rows->set_dim({1, 128, 32});
  outputs({g.matmul(rows, input(g, "B", 2, {1, 32, 16}))});
  return g;
}

inline Graph rank_changing_reshape() {
  Graph g = half_graph("reshape to another rank + relu");
  auto y = g.reshape(input(g, "X", 1, {2, 8, 16}));
  y->set_dim({16, 16});
  outputs({pointwise(g, y, PointwiseMode::ReluFwd)});
  return g;
}

// Concatenates [2, 8, 16] and [2, 24, 16] on axis 1; in place: the first input is a view of its
// part of Y.
inline Graph concatenate_relu(bool in_place) {
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

inline Graph slice_relu() {
  Graph g = half_graph("slice + relu");
  auto sliced = g.slice(input(g, "X", 1, {2, 32, 16}),
                        dnngraph::SliceAttributes().set_slices({{0, 2}, {8, 24}, {0, 16}}));
  outputs({pointwise(g, sliced, PointwiseMode::ReluFwd)});
  return g;
}

// A Bernoulli mask [1, 64, 32] from Int64 seed and offset of `key_dims`.
inline TensorPtr mask(Graph& g, const Dims& key_dims) {
  auto y = g.rng(input(g, "seed", 1, key_dims, DataType::Int64),
                 input(g, "offset", 2, key_dims, DataType::Int64),
                 dnngraph::RngAttributes().set_bernoulli_probability(0.25));
  y->set_dim({1, 64, 32});
  return y;
}

inline Graph bernoulli_mask(const Dims& key_dims) {
  Graph g = half_graph("rng");
  outputs({mask(g, key_dims)});
  return g;
}

inline Graph masked_matmul() {
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

inline const Dims conv_x{2, 32, 9, 11};
inline const Dims conv_y{2, 64, 9, 11};

inline Dims filter(std::int64_t groups) { return {64, 32 / groups, 3, 3}; }

inline Graph conv_fprop_bias_relu(std::int64_t groups) {
  Graph g = half_graph("conv_fprop + bias + relu");
  auto y = g.conv_fprop(nhwc(g, "X", 1, conv_x), nhwc(g, "W", 2, filter(groups)),
                        same_3x3<dnngraph::ConvFpropAttributes>(groups));
  auto biased = pointwise(g, y, nhwc(g, "bias", 3, {1, 64, 1, 1}), PointwiseMode::Add);
  outputs({pointwise(g, biased, PointwiseMode::ReluFwd)});
  return g;
}

inline Graph conv_dgrad(std::int64_t groups) {
  Graph g = half_graph("conv_dgrad");
  auto dx = g.conv_dgrad(nhwc(g, "dY", 1, conv_y), nhwc(g, "W", 2, filter(groups)),
                         same_3x3<dnngraph::ConvDgradAttributes>(groups));
  dx->set_dim(conv_x).set_stride(dnngraph::channels_last_strides(conv_x));
  outputs({dx});
  return g;
}

inline Graph conv_wgrad(std::int64_t groups) {
  Graph g = half_graph("conv_wgrad");
  auto dw = g.conv_wgrad(nhwc(g, "X", 1, conv_x), nhwc(g, "dY", 2, conv_y),
                         same_3x3<dnngraph::ConvWgradAttributes>(groups));
  dw->set_dim(filter(groups));
  outputs({dw});
  return g;
}

inline Graph conv_3d_asymmetric() {
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

inline Graph conv_batchnorm_relu() {
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

inline Graph conv_genstats() {
  Graph g = half_graph("conv_fprop + genstats");
  auto y = g.conv_fprop(nhwc(g, "X", 1, conv_x), nhwc(g, "W", 2, filter(1)),
                        same_3x3<dnngraph::ConvFpropAttributes>(1));
  auto [sum, sq_sum] = g.genstats(y);
  outputs({y, sum, sq_sum});
  return g;
}

// --- norms ---

// X [8, 32, 1, 1] normalized over its 32 features.
inline const Dims rows{8, 32, 1, 1};
inline const Dims features{1, 32, 1, 1};
inline const Dims per_row{8, 1, 1, 1};

inline Graph layernorm(NormFwdPhase phase) {
  Graph g = half_graph("layernorm");
  auto [y, mean, inv_var] = g.layernorm(
      input(g, "X", 1, rows), input(g, "scale", 2, features, DataType::Float),
      input(g, "bias", 3, features, DataType::Float),
      dnngraph::LayernormAttributes().set_forward_phase(phase).set_epsilon(g.tensor(1e-5F)));
  outputs({y, mean, inv_var});  // null in inference
  return g;
}

inline Graph rmsnorm(NormFwdPhase phase, bool bias) {
  Graph g = half_graph("rmsnorm");
  auto a = dnngraph::RmsnormAttributes().set_forward_phase(phase).set_epsilon(g.tensor(1e-5F));
  if (bias) {
    a.set_bias(input(g, "bias", 3, features, DataType::Float));
  }
  outputs(g.rmsnorm(input(g, "X", 1, rows), input(g, "scale", 2, features, DataType::Float), a));
  return g;
}

// Layer norm backward (RMS norm: without mean and dbias).
inline Graph norm_backward(bool rms) {
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

inline Graph batchnorm() {
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

inline Graph batchnorm_inference() {
  Graph g = half_graph("batchnorm inference");
  outputs({g.batchnorm_inference(nhwc(g, "X", 1, image), parameter(g, "mean", 2, channel),
                                 parameter(g, "inv_variance", 3, channel),
                                 parameter(g, "scale", 4, channel),
                                 parameter(g, "bias", 5, channel), {})});
  return g;
}

// dX, dscale and dbias of batchnorm (instance: instancenorm) from saved statistics.
inline Graph statistics_backward(bool instance) {
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

inline Graph instancenorm() {
  Graph g = half_graph("instancenorm training");
  outputs(g.instancenorm(nhwc(g, "X", 1, image), parameter(g, "scale", 2, channel),
                         parameter(g, "bias", 3, channel),
                         dnngraph::InstancenormAttributes()
                             .set_forward_phase(NormFwdPhase::Training)
                             .set_epsilon(g.tensor(1e-5F))));
  return g;
}

// X [2, 16, 64]: per-sample scale and bias [2, 1, 64], statistics [2, 16, 1].
inline Graph adalayernorm(NormFwdPhase phase) {
  Graph g = half_graph("adalayernorm");
  outputs(g.adalayernorm(
      input(g, "X", 1, {2, 16, 64}), input(g, "scale", 2, {2, 1, 64}, DataType::Float),
      input(g, "bias", 3, {2, 1, 64}, DataType::Float),
      dnngraph::AdaLayernormAttributes().set_forward_phase(phase).set_epsilon(g.tensor(1e-5F))));
  return g;
}

inline Graph adalayernorm_backward() {
  Graph g = half_graph("adalayernorm backward");
  outputs(g.adalayernorm_backward(input(g, "dY", 1, {2, 16, 64}), input(g, "X", 2, {2, 16, 64}),
                                  input(g, "scale", 3, {2, 1, 64}, DataType::Float),
                                  input(g, "mean", 4, {2, 16, 1}, DataType::Float),
                                  input(g, "inv_variance", 5, {2, 16, 1}, DataType::Float)));
  return g;
}

inline Graph genstats() {
  Graph g = half_graph("genstats");
  outputs(g.genstats(nhwc(g, "X", 1, image)));
  return g;
}

inline Graph bn_finalize() {
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

inline Graph dbn_weight() {
  Graph g = half_graph("dbn_weight");
  outputs(g.dbn_weight(nhwc(g, "dY", 1, image), nhwc(g, "X", 2, image),
                       parameter(g, "mean", 3, channel), parameter(g, "inv_variance", 4, channel),
                       parameter(g, "scale", 5, channel)));
  return g;
}

// --- resample ---

inline const Dims pooled{4, 32, 4, 4};

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
inline Graph pool(bool max) {
  Graph g = half_graph(max ? "max pooling" : "average pooling");
  outputs(g.resample(nhwc(g, "X", 1, image),
                     window<dnngraph::ResampleAttributes>(max).set_generate_index(max)));
  return g;
}

// Max pooling backward reads the forward's index, average pooling backward its X and Y.
inline Graph pool_backward(bool max) {
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

inline const Dims q_dims{2, 4, 64, 64};
inline const Dims kv_dims{2, 4, 128, 64};

// Q [2, 4, 64, 64], K and V [2, 4, 128, 64] (or kv).
struct Attention {
  TensorPtr q, k, v;
};
inline Attention attention_inputs(Graph& g, const Dims& kv = kv_dims) {
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

inline Graph sdpa(Variant variant) {
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

inline Graph sdpa_paged() {
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
inline Graph sdpa_ragged() {
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

// FP8 attention: Q, K, V in Fp8E4M3 (d 64), the six factors Float [1, 1, 1, 1] (uids 20-25), a
// causal mask and a padding mask, training.
inline Graph sdpa_fp8() {
  Graph g = half_graph("sdpa_fp8");
  g.set_io_data_type(DataType::Fp8E4M3);
  const Attention in = attention_inputs(g);
  std::vector<TensorPtr> factors;
  for (std::int64_t uid = 20; uid < 26; ++uid) {
    factors.push_back(input(g, "factor", uid, {1, 1, 1, 1}, DataType::Float));
  }
  auto a = dnngraph::SdpaFp8Attributes().set_attn_scale(0.125F).set_causal_mask(true);
  a.set_generate_stats(true);
  padding_mask(g, a);
  outputs(g.sdpa_fp8(in.q, in.k, in.v, factors[0], factors[1], factors[2], factors[3], factors[4],
                     factors[5], a));
  return g;
}

// The FP8 attention backward: Q [2, 4, 64, 128], K and V [2, 2, 128, 128] (grouped-query) in
// Fp8E4M3 (uids 1-3), the forward's O (6, Fp8E4M3), dO (7, Fp8E5M2) and Stats (8), the twelve
// factors Float [1, 1, 1, 1] (uids 20-31, in sdpa_fp8_backward's order), a causal mask and a
// padding mask; outputs dQ, dK, dV (10-12) and the four amax (13-16).
inline Graph sdpa_fp8_backward() {
  Graph g = half_graph("sdpa_fp8_backward");
  g.set_io_data_type(DataType::Fp8E4M3);
  const Dims q{2, 4, 64, 128};
  const Dims kv{2, 2, 128, 128};
  auto o = input(g, "O", 6, q);
  auto d_o = input(g, "dO", 7, q, DataType::Fp8E5M2);
  auto stats = input(g, "Stats", 8, {2, 4, 64, 1}, DataType::Float);
  std::vector<TensorPtr> f;
  for (std::int64_t uid = 20; uid < 32; ++uid) {
    f.push_back(input(g, "factor", uid, {1, 1, 1, 1}, DataType::Float));
  }
  auto a = dnngraph::SdpaFp8BackwardAttributes().set_attn_scale(0.088F).set_causal_mask(true);
  padding_mask(g, a);
  outputs(g.sdpa_fp8_backward(input(g, "Q", 1, q), input(g, "K", 2, kv), input(g, "V", 3, kv), o,
                              d_o, stats, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8],
                              f[9], f[10], f[11], a));
  return g;
}

inline Graph sdpa_backward(Variant variant) {
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

// --- the cases ---

// One graph of a case: `label` names it among the case's graphs ("" for a case of one graph).
struct NodeGraph {
  std::string label;
  std::function<Graph()> make;
};

// A test case of the every-node suites, named as a sentence; the capability its node kind needs
// where cuDNN 9.19 lacks it; its graphs (one, or one per variant: a uid range, a pointwise mode).
struct NodeCase {
  std::string name;
  std::optional<Feature> needs;
  std::vector<NodeGraph> graphs;
};

inline std::vector<NodeGraph> one(std::function<Graph()> make) { return {{"", std::move(make)}}; }

// cuDNN writes uids as decimal names; validate() gives the tensors without one uids above the
// largest.
inline std::vector<NodeGraph> uids_of_any_int64() {
  std::vector<NodeGraph> graphs;
  for (const std::int64_t first :
       {std::int64_t{-5}, std::int64_t{1'000'000'000'000'000'000},
        std::numeric_limits<std::int64_t>::max() - 3, std::numeric_limits<std::int64_t>::min()}) {
    graphs.push_back({"uids from " + std::to_string(first),
                      [first] { return matmul_relu_with_uids_from(first); }});
  }
  return graphs;
}

inline std::vector<NodeGraph> every_pointwise_mode() {
  std::vector<NodeGraph> graphs;
  for (const PointwiseMode mode : all_pointwise_modes) {
    graphs.push_back({std::string(to_string(mode)), [mode] { return pointwise_of(mode); }});
  }
  return graphs;
}

// Every case, in the order the suites run them.
inline const std::vector<NodeCase>& cases() {
  static const std::vector<NodeCase> table{
      {"for_matmul_with_a_bias_and_relu", {}, one(matmul_bias_relu)},
      {"for_tensors_of_any_int64_uid", {}, uids_of_any_int64()},
      {"for_every_pointwise_mode", {}, every_pointwise_mode()},
      {"for_a_reduction", {}, one(row_sums)},
      {"for_a_reshape_that_transposes_a_matmul_input", {}, one(transposed_b_matmul)},
      {"for_a_reshape_that_merges_dims", {}, one(merged_rows_matmul)},
      {"for_a_reshape_that_changes_the_rank", {}, one(rank_changing_reshape)},
      {"for_concatenate_and_relu", Feature::ConcatOperation,
       one([] { return concatenate_relu(false); })},
      {"for_concatenate_in_place", Feature::ConcatOperation,
       one([] { return concatenate_relu(true); })},
      {"for_slice_and_relu", Feature::SliceOperation, one(slice_relu)},
      {"for_an_rng_mask", {}, one([] { return bernoulli_mask({1, 1, 1}); })},
      {"for_an_rng_mask_with_keys_of_rank_one", {}, one([] { return bernoulli_mask({1}); })},
      {"for_an_rng_mask_on_a_matmul", {}, one(masked_matmul)},

      {"for_conv_fprop_with_a_bias_and_relu", {}, one([] { return conv_fprop_bias_relu(1); })},
      {"for_a_grouped_conv_fprop", {}, one([] { return conv_fprop_bias_relu(4); })},
      {"for_conv_dgrad", {}, one([] { return conv_dgrad(1); })},
      {"for_a_grouped_conv_dgrad", {}, one([] { return conv_dgrad(4); })},
      {"for_conv_wgrad", {}, one([] { return conv_wgrad(1); })},
      {"for_a_grouped_conv_wgrad", {}, one([] { return conv_wgrad(4); })},
      {"for_a_3d_convolution_with_asymmetric_padding", {}, one(conv_3d_asymmetric)},
      {"for_conv_fprop_with_batchnorm_inference_and_relu", {}, one(conv_batchnorm_relu)},
      {"for_conv_fprop_with_genstats", {}, one(conv_genstats)},

      {"for_layernorm_training", {}, one([] { return layernorm(NormFwdPhase::Training); })},
      {"for_layernorm_inference", {}, one([] { return layernorm(NormFwdPhase::Inference); })},
      {"for_rmsnorm_training", {}, one([] { return rmsnorm(NormFwdPhase::Training, false); })},
      {"for_rmsnorm_inference_with_a_bias", {}, one([] {
         return rmsnorm(NormFwdPhase::Inference, true);
       })},
      {"for_layernorm_backward", {}, one([] { return norm_backward(false); })},
      {"for_rmsnorm_backward", {}, one([] { return norm_backward(true); })},
      {"for_batchnorm_training", {}, one(batchnorm)},
      {"for_batchnorm_inference", {}, one(batchnorm_inference)},
      {"for_batchnorm_backward", {}, one([] { return statistics_backward(false); })},
      {"for_instancenorm", {}, one(instancenorm)},
      {"for_instancenorm_backward", {}, one([] { return statistics_backward(true); })},
      {"for_adalayernorm_training", Feature::AdaptiveLayerNorm,
       one([] { return adalayernorm(NormFwdPhase::Training); })},
      {"for_adalayernorm_inference", Feature::AdaptiveLayerNorm,
       one([] { return adalayernorm(NormFwdPhase::Inference); })},
      {"for_adalayernorm_backward", Feature::AdaptiveLayerNorm, one(adalayernorm_backward)},
      {"for_genstats", {}, one(genstats)},
      {"for_bn_finalize", {}, one(bn_finalize)},
      {"for_dbn_weight", {}, one(dbn_weight)},

      {"for_max_pooling_with_an_index", {}, one([] { return pool(true); })},
      {"for_average_pooling_with_asymmetric_padding", {}, one([] { return pool(false); })},
      {"for_max_pooling_backward_from_an_index", {}, one([] { return pool_backward(true); })},
      {"for_average_pooling_backward_from_x_and_y", {}, one([] { return pool_backward(false); })},

      {"for_sdpa", {}, one([] { return sdpa(Variant::Plain); })},
      {"for_sdpa_with_a_bottom_right_causal_and_padding_mask", {}, one([] {
         return sdpa(Variant::CausalPadded);
       })},
      {"for_sdpa_with_dropout", {}, one([] { return sdpa(Variant::Dropout); })},
      {"for_sdpa_over_a_paged_cache", Feature::PagedCacheLoad, one(sdpa_paged)},
      {"for_sdpa_over_ragged_sequences", {}, one(sdpa_ragged)},
      {"for_sdpa_fp8", Feature::Fp8Attention, one(sdpa_fp8)},
      {"for_sdpa_fp8_backward", Feature::Fp8AttentionBackward, one(sdpa_fp8_backward)},
      {"for_sdpa_backward", {}, one([] { return sdpa_backward(Variant::Plain); })},
      {"for_sdpa_backward_with_dropout", {}, one([] { return sdpa_backward(Variant::Dropout); })},
  };
  return table;
}

// --- running them ---

// The precondition of a case whose node kind needs `feature`: it skips the case where the loaded
// cuDNN lacks it, naming the version it needs.
inline boost::test_tools::assertion_result cudnn_has(Feature feature) {
  boost::test_tools::assertion_result result(backend::available(feature));
  result.message() << backend::too_old_message(feature);
  return result;
}

// Whether the loaded cuDNN has what the case's node kind needs.
[[nodiscard]] inline bool runs_here(const NodeCase& c) {
  return !c.needs || backend::available(*c.needs);
}

// "for_every_pointwise_mode [Add]"; the case's name for a case of one graph.
[[nodiscard]] inline std::string full_name(const NodeCase& c, const NodeGraph& graph) {
  return graph.label.empty() ? c.name : c.name + " [" + graph.label + "]";
}

// Calls body(graph) for each of the case's graphs, in a test context naming the graph where the
// case has several.
inline void for_each_graph(const NodeCase& c, const std::function<void(const NodeGraph&)>& body) {
  for (const NodeGraph& graph : c.graphs) {
    if (graph.label.empty()) {
      body(graph);
    } else {
      BOOST_TEST_CONTEXT(graph.label) { body(graph); }
    }
  }
}

// Adds a suite `suite` to the master suite with one test case per entry of cases(), in order,
// each running body(case) and skipped (naming the version it needs) where the loaded cuDNN lacks
// its capability. Call it during static initialization, as Boost.Test's own registration does.
inline boost::unit_test::test_suite* register_cases(
    const char* suite, const std::function<void(const NodeCase&)>& body) {
  auto* registered = BOOST_TEST_SUITE(suite);
  for (const NodeCase& c : cases()) {
    boost::unit_test::test_case* tc =
        boost::unit_test::make_test_case([&c, body] { body(c); }, c.name, __FILE__, __LINE__);
    if (c.needs) {
      tc->add_precondition(
          [feature = *c.needs](boost::unit_test::test_unit_id) { return cudnn_has(feature); });
    }
    registered->add(tc);
  }
  boost::unit_test::framework::master_test_suite().add(registered);
  return registered;
}

}  // namespace dnngraph::test::every_node
