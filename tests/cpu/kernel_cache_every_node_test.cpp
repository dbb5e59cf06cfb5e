// The kernel cache persists for every node kind (issue 35): a dynamic-shape graph of each kind
// dnngraph offers, and the fused forms the GPU tests build, gets a kernel cache on the CPU (cuDNN
// 9.19 finalizes operation graphs and kernel caches without a GPU), cuDNN serializes it
// (to_json), and from_json loads that very document into a fresh cache. A kind the CPU cannot
// take that far is reported skipped, with the reason.
#define BOOST_TEST_MODULE kernel_cache_every_node
#include <boost/test/unit_test.hpp>

#include "api/graph.hpp"
#include "api/graph_access.hpp"
#include "api/layout.hpp"
#include "backend/features.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/graph_checks.hpp"
#include "support/pointwise_reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::PointwiseAttributes;
using dnngraph::PointwiseMode;
using dnngraph::TensorAttributes;
using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

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

PointwiseAttributes op(const char* name, PointwiseMode mode) {
  return PointwiseAttributes().set_name(name).set_mode(mode);
}

// A graph in Half with Float intermediates and math, as most GPU tests build theirs.
Graph half_graph(const char* name) {
  Graph g;
  g.set_name(name)
      .set_io_data_type(DataType::Half)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  return g;
}

// Marks each tensor an output with uids from `first` on.
void outputs(std::initializer_list<TensorPtr> tensors, std::int64_t first) {
  for (const auto& t : tensors) {
    t->set_output(true).set_uid(first++);
  }
}

// The case: g, made dynamic-shape with a new kernel cache, has the cache built on the CPU;
// cuDNN's document of it loads into a fresh cache.
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

// Skips a case whose node kind the loaded cuDNN does not have, naming the version it needs.
boost::unit_test::precondition needs(dnngraph::backend::Feature feature) {
  return boost::unit_test::precondition([feature](boost::unit_test::test_unit_id) {
    boost::test_tools::assertion_result result(dnngraph::backend::available(feature));
    result.message() << dnngraph::backend::too_old_message(feature);
    return result;
  });
}

// --- matmul, pointwise, reduction, reshape, concatenate, slice, rng ---

Graph matmul_bias_relu() {
  Graph g = half_graph("matmul + bias + relu");
  auto a = input(g, "A", 1, {2, 64, 32});
  auto b = input(g, "B", 2, {2, 32, 16});
  auto bias = input(g, "bias", 3, {1, 1, 16});
  auto c = g.matmul(a, b, dnngraph::MatmulAttributes().set_name("mm"));
  auto d = g.pointwise(c, bias, op("bias", PointwiseMode::Add));
  outputs({g.pointwise(d, op("relu", PointwiseMode::ReluFwd))}, 10);
  return g;
}

Graph binary_select() {
  Graph g = half_graph("binary select");
  auto x = input(g, "X", 1, {2, 8, 16});
  auto y = input(g, "Y", 2, {2, 8, 16});
  auto t = input(g, "T", 3, {2, 8, 16}, DataType::Boolean);
  outputs({g.pointwise(x, y, t, op("select", PointwiseMode::BinarySelect))}, 10);
  return g;
}

Graph row_sums() {
  Graph g = half_graph("row sums");
  auto x = input(g, "X", 1, {1, 64, 32});
  auto y = g.reduction(
      x, dnngraph::ReductionAttributes().set_name("sum").set_mode(dnngraph::ReductionMode::Add));
  y->set_dim({1, 64, 1}).set_data_type(DataType::Float);
  outputs({y}, 10);
  return g;
}

Graph transposed_b_matmul() {
  Graph g = half_graph("matmul of a transposed B");
  auto a = input(g, "A", 1, {2, 64, 32});
  auto b = input(g, "B", 2, {2, 16, 32});
  auto bt = g.reshape(b, dnngraph::ReshapeAttributes().set_name("t").set_permutation({0, 2, 1}));
  outputs({g.matmul(a, bt, dnngraph::MatmulAttributes().set_name("mm"))}, 10);
  return g;
}

Graph merged_rows_matmul() {
  Graph g = half_graph("matmul of merged rows");
  auto a = input(g, "A", 1, {2, 64, 32});
  auto b = input(g, "B", 2, {1, 32, 16});
  auto rows = g.reshape(a, dnngraph::ReshapeAttributes().set_name("merge"));
  rows->set_dim({1, 128, 32});
  outputs({g.matmul(rows, b, dnngraph::MatmulAttributes().set_name("mm"))}, 10);
  return g;
}

Graph concatenate_relu() {
  Graph g = half_graph("concatenate + relu");
  auto x0 = input(g, "X0", 1, {2, 8, 16});
  auto x1 = input(g, "X1", 2, {2, 24, 16});
  auto cat = g.concatenate({x0, x1}, dnngraph::ConcatenateAttributes().set_name("cat").set_axis(1));
  outputs({g.pointwise(cat, op("relu", PointwiseMode::ReluFwd))}, 10);
  return g;
}

Graph slice_relu() {
  Graph g = half_graph("slice + relu");
  auto x = input(g, "X", 1, {2, 32, 16});
  auto sliced = g.slice(
      x, dnngraph::SliceAttributes().set_name("slice").set_slices({{0, 2}, {8, 24}, {0, 16}}));
  outputs({g.pointwise(sliced, op("relu", PointwiseMode::ReluFwd))}, 10);
  return g;
}

// seed and offset: Int64 [1, 1, 1] inputs.
TensorPtr rng_key(Graph& g, const char* name, std::int64_t uid) {
  return input(g, name, uid, {1, 1, 1}, DataType::Int64);
}

Graph bernoulli_mask() {
  Graph g = half_graph("rng");
  auto mask = g.rng(rng_key(g, "seed", 1), rng_key(g, "offset", 2),
                    dnngraph::RngAttributes().set_name("mask").set_bernoulli_probability(0.25));
  mask->set_dim({1, 64, 32});
  outputs({mask}, 10);
  return g;
}

Graph masked_matmul() {
  Graph g = half_graph("matmul * rng mask");
  auto a = input(g, "A", 3, {1, 64, 16});
  auto b = input(g, "B", 4, {1, 16, 32});
  auto mask = g.rng(rng_key(g, "seed", 1), rng_key(g, "offset", 2),
                    dnngraph::RngAttributes().set_name("mask").set_bernoulli_probability(0.25));
  mask->set_dim({1, 64, 32});
  auto c = g.matmul(a, b, dnngraph::MatmulAttributes().set_name("mm"));
  outputs({g.pointwise(c, mask, op("dropout", PointwiseMode::Mul))}, 10);
  return g;
}

// --- convolutions ---

Graph conv_fprop_bias_relu(std::int64_t groups) {
  Graph g = half_graph(groups == 1 ? "conv_fprop + bias + relu" : "grouped conv_fprop");
  auto x = nhwc(g, "X", 1, {2, 32, 9, 11});
  auto w = nhwc(g, "W", 2, {64, 32 / groups, 3, 3});
  auto bias = nhwc(g, "bias", 3, {1, 64, 1, 1});
  auto y = g.conv_fprop(x, w,
                        dnngraph::ConvFpropAttributes()
                            .set_name("conv")
                            .set_padding({1, 1})
                            .set_stride({1, 1})
                            .set_dilation({1, 1})
                            .set_group_count(groups));
  auto biased = g.pointwise(y, bias, op("bias", PointwiseMode::Add));
  outputs({g.pointwise(biased, op("relu", PointwiseMode::ReluFwd))}, 10);
  return g;
}

Graph conv_dgrad(std::int64_t groups) {
  Graph g = half_graph(groups == 1 ? "conv_dgrad" : "grouped conv_dgrad");
  auto dy = nhwc(g, "dY", 1, {2, 64, 9, 11});
  auto w = nhwc(g, "W", 2, {64, 32 / groups, 3, 3});
  auto dx = g.conv_dgrad(dy, w,
                         dnngraph::ConvDgradAttributes()
                             .set_name("dgrad")
                             .set_padding({1, 1})
                             .set_stride({1, 1})
                             .set_dilation({1, 1})
                             .set_group_count(groups));
  dx->set_dim({2, 32, 9, 11}).set_stride(dnngraph::channels_last_strides({2, 32, 9, 11}));
  outputs({dx}, 10);
  return g;
}

Graph conv_wgrad(std::int64_t groups) {
  Graph g = half_graph(groups == 1 ? "conv_wgrad" : "grouped conv_wgrad");
  auto x = nhwc(g, "X", 1, {2, 32, 9, 11});
  auto dy = nhwc(g, "dY", 2, {2, 64, 9, 11});
  auto dw = g.conv_wgrad(x, dy,
                         dnngraph::ConvWgradAttributes()
                             .set_name("wgrad")
                             .set_padding({1, 1})
                             .set_stride({1, 1})
                             .set_dilation({1, 1})
                             .set_group_count(groups));
  dw->set_dim({64, 32 / groups, 3, 3});
  outputs({dw}, 10);
  return g;
}

Graph conv_batchnorm_relu() {
  Graph g = half_graph("conv_fprop + batchnorm inference + relu");
  auto x = nhwc(g, "X", 1, {2, 32, 9, 11});
  auto w = nhwc(g, "W", 2, {64, 32, 3, 3});
  const Dims channel{1, 64, 1, 1};
  auto conv = g.conv_fprop(x, w,
                           dnngraph::ConvFpropAttributes()
                               .set_name("conv")
                               .set_padding({1, 1})
                               .set_stride({1, 1})
                               .set_dilation({1, 1}));
  auto normalized = g.batchnorm_inference(conv, nhwc(g, "mean", 3, channel, DataType::Float),
                                          nhwc(g, "inv_variance", 4, channel, DataType::Float),
                                          nhwc(g, "scale", 5, channel, DataType::Float),
                                          nhwc(g, "bias", 6, channel, DataType::Float),
                                          dnngraph::BatchnormInferenceAttributes().set_name("bn"));
  outputs({g.pointwise(normalized, op("relu", PointwiseMode::ReluFwd))}, 10);
  return g;
}

Graph conv_genstats() {
  Graph g = half_graph("conv_fprop + genstats");
  auto x = nhwc(g, "X", 1, {2, 32, 9, 11});
  auto w = nhwc(g, "W", 2, {64, 32, 3, 3});
  auto y = g.conv_fprop(x, w,
                        dnngraph::ConvFpropAttributes()
                            .set_name("conv")
                            .set_padding({1, 1})
                            .set_stride({1, 1})
                            .set_dilation({1, 1}));
  y->set_output(true).set_uid(10);
  auto [sum, sq_sum] = g.genstats(y, dnngraph::GenstatsAttributes().set_name("stats"));
  outputs({sum, sq_sum}, 11);
  return g;
}

// --- norms ---

Graph layernorm(dnngraph::NormFwdPhase phase) {
  Graph g = half_graph("layernorm");
  auto x = input(g, "X", 1, {8, 32, 1, 1});
  auto scale = input(g, "scale", 2, {1, 32, 1, 1}, DataType::Float);
  auto bias = input(g, "bias", 3, {1, 32, 1, 1}, DataType::Float);
  auto [y, mean, inv_var] = g.layernorm(
      x, scale, bias,
      dnngraph::LayernormAttributes().set_name("ln").set_forward_phase(phase).set_epsilon(
          g.tensor(1e-5F)));
  outputs({y}, 10);
  if (phase == dnngraph::NormFwdPhase::Training) {
    outputs({mean, inv_var}, 11);
  }
  return g;
}

Graph rmsnorm() {
  Graph g = half_graph("rmsnorm");
  auto x = input(g, "X", 1, {8, 32, 1, 1});
  auto scale = input(g, "scale", 2, {1, 32, 1, 1}, DataType::Float);
  auto [y, inv_rms] = g.rmsnorm(x, scale,
                                dnngraph::RmsnormAttributes()
                                    .set_name("rms")
                                    .set_forward_phase(dnngraph::NormFwdPhase::Training)
                                    .set_epsilon(g.tensor(1e-5F)));
  outputs({y, inv_rms}, 10);
  return g;
}

Graph layernorm_backward() {
  Graph g = half_graph("layernorm backward");
  auto dy = nhwc(g, "dY", 1, {8, 32, 1, 1});
  auto x = nhwc(g, "X", 2, {8, 32, 1, 1});
  auto scale = nhwc(g, "scale", 3, {1, 32, 1, 1}, DataType::Float);
  auto mean = nhwc(g, "mean", 4, {8, 1, 1, 1}, DataType::Float);
  auto inv_var = nhwc(g, "inv_variance", 5, {8, 1, 1, 1}, DataType::Float);
  auto [dx, dscale, dbias] = g.layernorm_backward(
      dy, x, scale, mean, inv_var, dnngraph::NormBackwardAttributes().set_name("bwd"));
  outputs({dx, dscale, dbias}, 10);
  return g;
}

Graph rmsnorm_backward() {
  Graph g = half_graph("rmsnorm backward");
  auto dy = nhwc(g, "dY", 1, {8, 32, 1, 1});
  auto x = nhwc(g, "X", 2, {8, 32, 1, 1});
  auto scale = nhwc(g, "scale", 3, {1, 32, 1, 1}, DataType::Float);
  auto inv_var = nhwc(g, "inv_variance", 4, {8, 1, 1, 1}, DataType::Float);
  auto [dx, dscale] =
      g.rmsnorm_backward(dy, x, scale, inv_var, dnngraph::NormBackwardAttributes().set_name("bwd"));
  outputs({dx, dscale}, 10);
  return g;
}

const Dims image{4, 32, 8, 8};
const Dims channel{1, 32, 1, 1};

Graph batchnorm() {
  Graph g = half_graph("batchnorm training");
  auto x = nhwc(g, "X", 1, image);
  auto scale = nhwc(g, "scale", 2, channel, DataType::Float);
  auto bias = nhwc(g, "bias", 3, channel, DataType::Float);
  auto prev_mean = nhwc(g, "prev_running_mean", 4, channel, DataType::Float);
  auto prev_var = nhwc(g, "prev_running_var", 5, channel, DataType::Float);
  auto [y, mean, inv_var, next_mean, next_var] =
      g.batchnorm(x, scale, bias,
                  dnngraph::BatchnormAttributes()
                      .set_name("bn")
                      .set_epsilon(g.tensor(1e-5F))
                      .set_previous_running_stats(prev_mean, prev_var, g.tensor(0.1F)));
  outputs({y, mean, inv_var, next_mean, next_var}, 10);
  return g;
}

Graph batchnorm_inference() {
  Graph g = half_graph("batchnorm inference");
  auto x = nhwc(g, "X", 1, image);
  auto y = g.batchnorm_inference(x, nhwc(g, "mean", 2, channel, DataType::Float),
                                 nhwc(g, "inv_variance", 3, channel, DataType::Float),
                                 nhwc(g, "scale", 4, channel, DataType::Float),
                                 nhwc(g, "bias", 5, channel, DataType::Float),
                                 dnngraph::BatchnormInferenceAttributes().set_name("bn"));
  outputs({y}, 10);
  return g;
}

// dX, dscale and dbias of batchnorm (instance: instancenorm) from saved statistics.
Graph statistics_backward(bool instance) {
  Graph g = half_graph(instance ? "instancenorm backward" : "batchnorm backward");
  const Dims statistic = instance ? Dims{4, 32, 1, 1} : channel;
  auto dy = nhwc(g, "dY", 1, image);
  auto x = nhwc(g, "X", 2, image);
  auto scale = nhwc(g, "scale", 3, channel, DataType::Float);
  auto mean = nhwc(g, "mean", 4, statistic, DataType::Float);
  auto inv_var = nhwc(g, "inv_variance", 5, statistic, DataType::Float);
  const auto attributes = dnngraph::NormBackwardAttributes().set_name("bwd");
  auto [dx, dscale, dbias] = instance
                                 ? g.instancenorm_backward(dy, x, scale, mean, inv_var, attributes)
                                 : g.batchnorm_backward(dy, x, scale, mean, inv_var, attributes);
  outputs({dx, dscale, dbias}, 10);
  return g;
}

Graph instancenorm() {
  Graph g = half_graph("instancenorm training");
  auto x = nhwc(g, "X", 1, image);
  auto scale = nhwc(g, "scale", 2, channel, DataType::Float);
  auto bias = nhwc(g, "bias", 3, channel, DataType::Float);
  auto [y, mean, inv_var] = g.instancenorm(x, scale, bias,
                                           dnngraph::InstancenormAttributes()
                                               .set_name("in")
                                               .set_forward_phase(dnngraph::NormFwdPhase::Training)
                                               .set_epsilon(g.tensor(1e-5F)));
  outputs({y, mean, inv_var}, 10);
  return g;
}

Graph adalayernorm(dnngraph::NormFwdPhase phase) {
  Graph g = half_graph("adalayernorm");
  auto x = input(g, "X", 1, {2, 16, 64});
  auto scale = input(g, "scale", 2, {2, 1, 64}, DataType::Float);
  auto bias = input(g, "bias", 3, {2, 1, 64}, DataType::Float);
  auto [y, mean, inv_var] = g.adalayernorm(
      x, scale, bias,
      dnngraph::AdaLayernormAttributes().set_name("ada").set_forward_phase(phase).set_epsilon(
          g.tensor(1e-5F)));
  outputs({y}, 10);
  if (phase == dnngraph::NormFwdPhase::Training) {
    outputs({mean, inv_var}, 11);
  }
  return g;
}

Graph adalayernorm_backward() {
  Graph g = half_graph("adalayernorm backward");
  auto dy = input(g, "dY", 1, {2, 16, 64});
  auto x = input(g, "X", 2, {2, 16, 64});
  auto scale = input(g, "scale", 3, {2, 1, 64}, DataType::Float);
  auto mean = input(g, "mean", 4, {2, 16, 1}, DataType::Float);
  auto inv_var = input(g, "inv_variance", 5, {2, 16, 1}, DataType::Float);
  auto [dx, dscale, dbias] = g.adalayernorm_backward(
      dy, x, scale, mean, inv_var, dnngraph::NormBackwardAttributes().set_name("ada_bwd"));
  outputs({dx, dscale, dbias}, 10);
  return g;
}

Graph genstats() {
  Graph g = half_graph("genstats");
  auto [sum, sq_sum] =
      g.genstats(nhwc(g, "X", 1, image), dnngraph::GenstatsAttributes().set_name("stats"));
  outputs({sum, sq_sum}, 10);
  return g;
}

Graph bn_finalize() {
  Graph g;
  g.set_name("bn_finalize").set_compute_data_type(DataType::Float);
  const auto in = [&](const char* name, std::int64_t uid) {
    return nhwc(g, name, uid, channel, DataType::Float);
  };
  const auto outs =
      g.bn_finalize(in("sum", 1), in("sq_sum", 2), in("scale", 3), in("bias", 4),
                    dnngraph::BnFinalizeAttributes()
                        .set_name("finalize")
                        .set_epsilon(g.tensor(1e-5F))
                        .set_accumulation_count(g.int64_scalar(256))
                        .set_previous_running_stats(in("prev_running_mean", 5),
                                                    in("prev_running_var", 6), g.tensor(0.125F)));
  std::int64_t uid = 10;
  for (const auto& t : outs) {
    t->set_output(true).set_uid(uid++);
  }
  return g;
}

Graph dbn_weight() {
  Graph g = half_graph("dbn_weight");
  const auto outs = g.dbn_weight(nhwc(g, "dY", 1, image), nhwc(g, "X", 2, image),
                                 nhwc(g, "mean", 3, channel, DataType::Float),
                                 nhwc(g, "inv_variance", 4, channel, DataType::Float),
                                 nhwc(g, "scale", 5, channel, DataType::Float),
                                 dnngraph::DbnWeightAttributes().set_name("dbn"));
  std::int64_t uid = 10;
  for (const auto& t : outs) {
    t->set_output(true).set_uid(uid++);
  }
  return g;
}

// --- resample ---

template <class A>
A pool_window(A attributes) {
  attributes.set_mode(dnngraph::ResampleMode::MaxPool)
      .set_window({2, 2})
      .set_stride({2, 2})
      .set_padding({0, 0});
  return attributes;
}

Graph max_pool_with_index() {
  Graph g = half_graph("max pool with index");
  auto [y, index] = g.resample(
      nhwc(g, "X", 1, image),
      pool_window(dnngraph::ResampleAttributes().set_name("pool").set_generate_index(true)));
  outputs({y, index}, 10);
  return g;
}

Graph max_pool_backward() {
  Graph g = half_graph("max pool backward");
  const Dims pooled{4, 32, 4, 4};
  auto dy = nhwc(g, "dY", 1, pooled);
  auto attributes = pool_window(dnngraph::ResampleBackwardAttributes().set_name("pool_bwd"));
  attributes.set_index(nhwc(g, "Index", 2, pooled, DataType::Int8));
  auto dx = g.resample_backward(dy, attributes);
  dx->set_dim(image);
  outputs({dx}, 10);
  return g;
}

// --- attention ---

const Dims q_dims{2, 4, 64, 64};
const Dims kv_dims{2, 4, 128, 64};

TensorPtr lengths(Graph& g, const char* name, std::int64_t uid) {
  return input(g, name, uid, {2, 1, 1, 1}, DataType::Int32);
}

Graph sdpa(bool causal_padded) {
  Graph g = half_graph(causal_padded ? "sdpa, causal and padded" : "sdpa");
  auto q = input(g, "Q", 1, q_dims);
  auto k = input(g, "K", 2, kv_dims);
  auto v = input(g, "V", 3, kv_dims);
  dnngraph::SdpaAttributes a;
  a.set_name("attn").set_attn_scale(0.125F).set_generate_stats(true);
  if (causal_padded) {
    a.set_causal_mask_bottom_right(true)
        .set_padding_mask(true)
        .set_seq_len_q(lengths(g, "seq_len_q", 4))
        .set_seq_len_kv(lengths(g, "seq_len_kv", 5));
  }
  auto [o, stats] = g.sdpa(q, k, v, a);
  outputs({o, stats}, 10);
  return g;
}

Graph sdpa_dropout() {
  Graph g = half_graph("sdpa with dropout");
  auto q = input(g, "Q", 1, q_dims);
  auto k = input(g, "K", 2, kv_dims);
  auto v = input(g, "V", 3, kv_dims);
  auto seed = input(g, "seed", 4, {1, 1, 1, 1}, DataType::Int64);
  auto offset = input(g, "offset", 5, {1, 1, 1, 1}, DataType::Int64);
  auto [o, stats] = g.sdpa(q, k, v,
                           dnngraph::SdpaAttributes()
                               .set_name("attn")
                               .set_attn_scale(0.125F)
                               .set_generate_stats(true)
                               .set_causal_mask(true)
                               .set_dropout(0.1, seed, offset));
  outputs({o, stats}, 10);
  return g;
}

Graph sdpa_paged() {
  Graph g = half_graph("sdpa over a paged K/V cache");
  constexpr std::int64_t block = 32, pages = 4, blocks = 2 * pages;
  auto q = input(g, "Q", 1, q_dims);
  auto k = input(g, "K pages", 2, {blocks, 4, block, 64});
  auto v = input(g, "V pages", 3, {blocks, 4, block, 64});
  auto [o, stats] =
      g.sdpa(q, k, v,
             dnngraph::SdpaAttributes()
                 .set_name("attn")
                 .set_attn_scale(0.125F)
                 .set_generate_stats(true)
                 .set_padding_mask(true)
                 .set_seq_len_q(lengths(g, "seq_len_q", 4))
                 .set_seq_len_kv(lengths(g, "seq_len_kv", 5))
                 .set_paged_attention(
                     input(g, "page_table_k", 6, {2, 1, pages, 1}, DataType::Int32),
                     input(g, "page_table_v", 7, {2, 1, pages, 1}, DataType::Int32), kv_dims[2]));
  outputs({o, stats}, 10);
  return g;
}

Graph sdpa_backward(bool dropout) {
  Graph g = half_graph(dropout ? "sdpa backward with dropout" : "sdpa backward");
  auto q = input(g, "Q", 1, q_dims);
  auto k = input(g, "K", 2, kv_dims);
  auto v = input(g, "V", 3, kv_dims);
  auto o = input(g, "O", 4, q_dims);
  auto d_o = input(g, "dO", 5, q_dims);
  auto stats = input(g, "Stats", 6, {2, 4, 64, 1}, DataType::Float);
  dnngraph::SdpaBackwardAttributes a;
  a.set_name("attn_bwd").set_attn_scale(0.125F).set_causal_mask(true);
  if (dropout) {
    a.set_dropout(0.1, input(g, "seed", 7, {1, 1, 1, 1}, DataType::Int64),
                  input(g, "offset", 8, {1, 1, 1, 1}, DataType::Int64));
  }
  auto [dq, dk, dv, d_sum] = g.sdpa_backward(q, k, v, o, d_o, stats, a);
  outputs({dq, dk, dv, d_sum}, 10);
  return g;
}

// --- more shapes of the same kinds ---

Graph rank_changing_reshape() {
  Graph g = half_graph("reshape to another rank");
  auto x = input(g, "X", 1, {2, 8, 16});
  auto y = g.reshape(x, dnngraph::ReshapeAttributes().set_name("flatten"));
  y->set_dim({16, 16});
  outputs({g.pointwise(y, op("relu", PointwiseMode::ReluFwd))}, 10);
  return g;
}

Graph rng_with_rank_one_keys() {
  Graph g = half_graph("rng, keys of rank 1");
  auto mask =
      g.rng(input(g, "seed", 1, {1}, DataType::Int64), input(g, "offset", 2, {1}, DataType::Int64),
            dnngraph::RngAttributes().set_name("mask").set_bernoulli_probability(0.5));
  mask->set_dim({1, 64, 32});
  outputs({mask}, 10);
  return g;
}

template <class A>
A average_window(A attributes) {
  attributes.set_mode(dnngraph::ResampleMode::AvgPoolExcludePadding)
      .set_window({3, 3})
      .set_stride({2, 2})
      .set_pre_padding({1, 1})
      .set_post_padding({0, 0});
  return attributes;
}

Graph average_pool() {
  Graph g = half_graph("average pool");
  auto [y, index] = g.resample(nhwc(g, "X", 1, image),
                               average_window(dnngraph::ResampleAttributes().set_name("pool")));
  outputs({y}, 10);
  return g;
}

Graph average_pool_backward() {
  Graph g = half_graph("average pool backward from X and Y");
  const Dims pooled{4, 32, 4, 4};
  auto attributes = average_window(dnngraph::ResampleBackwardAttributes().set_name("pool_bwd"));
  attributes.set_x(nhwc(g, "X", 2, image)).set_y(nhwc(g, "Y", 3, pooled));
  auto dx = g.resample_backward(nhwc(g, "dY", 1, pooled), attributes);
  dx->set_dim(image);
  outputs({dx}, 10);
  return g;
}

Graph concatenate_in_place() {
  Graph g = half_graph("concatenate in place");
  const Dims y_dims{2, 32, 16};
  auto x0 = g.tensor(
      dnngraph::test::tensor("X0", 1, {2, 8, 16}).set_stride(dnngraph::packed_strides(y_dims)));
  auto x1 = input(g, "X1", 2, {2, 24, 16});
  outputs({g.concatenate(
              {x0, x1},
              dnngraph::ConcatenateAttributes().set_name("cat").set_axis(1).set_in_place_index(0))},
          10);
  return g;
}

Graph conv_3d_asymmetric() {
  Graph g = half_graph("3-d convolution, asymmetric padding");
  auto x = input(g, "X", 1, {1, 8, 6, 7, 9});
  auto w = input(g, "W", 2, {16, 8, 3, 3, 3});
  outputs({g.conv_fprop(x, w,
                        dnngraph::ConvFpropAttributes()
                            .set_name("conv")
                            .set_pre_padding({1, 0, 1})
                            .set_post_padding({0, 1, 1})
                            .set_stride({1, 2, 1})
                            .set_dilation({1, 1, 2})
                            .set_convolution_mode(dnngraph::ConvolutionMode::Convolution))},
          10);
  return g;
}

Graph rmsnorm_with_bias() {
  Graph g = half_graph("rmsnorm with a bias");
  auto x = input(g, "X", 1, {8, 32, 1, 1});
  auto scale = input(g, "scale", 2, {1, 32, 1, 1}, DataType::Float);
  auto bias = input(g, "bias", 3, {1, 32, 1, 1}, DataType::Float);
  auto [y, inv_rms] = g.rmsnorm(x, scale,
                                dnngraph::RmsnormAttributes()
                                    .set_name("rms")
                                    .set_forward_phase(dnngraph::NormFwdPhase::Inference)
                                    .set_epsilon(g.tensor(1e-5F))
                                    .set_bias(bias));
  outputs({y}, 10);
  return g;
}

Graph sdpa_ragged() {
  Graph g = half_graph("sdpa over token-packed (ragged) sequences");
  const auto offsets = [&](const char* name, std::int64_t uid) {
    return input(g, name, uid, {3, 1, 1, 1}, DataType::Int32);
  };
  auto q_offsets = offsets("q_offsets", 6);
  auto kv_offsets = offsets("kv_offsets", 7);
  const auto packed = [&](const char* name, std::int64_t uid, const Dims& d,
                          const TensorPtr& ragged) {
    return g.tensor(dnngraph::test::tensor(name, uid, d)
                        .set_stride({d[2] * d[1] * d[3], d[3], d[1] * d[3], 1})
                        .set_ragged_offset(ragged));
  };
  auto q = packed("Q", 1, q_dims, q_offsets);
  auto k = packed("K", 2, kv_dims, kv_offsets);
  auto v = packed("V", 3, kv_dims, kv_offsets);
  auto [o, stats] = g.sdpa(q, k, v,
                           dnngraph::SdpaAttributes()
                               .set_name("attn")
                               .set_attn_scale(0.125F)
                               .set_generate_stats(true)
                               .set_padding_mask(true)
                               .set_seq_len_q(lengths(g, "seq_len_q", 4))
                               .set_seq_len_kv(lengths(g, "seq_len_kv", 5)));
  o->set_stride({q_dims[2] * q_dims[1] * q_dims[3], q_dims[3], q_dims[1] * q_dims[3], 1})
      .set_ragged_offset(q_offsets);
  outputs({o, stats}, 10);
  return g;
}

// Y = mode(inputs of the mode's arity), in Float (Boolean where the mode takes it); the second
// input broadcasts.
Graph pointwise_mode(PointwiseMode mode) {
  Graph g;
  g.set_io_data_type(DataType::Float).set_compute_data_type(DataType::Float);
  const bool logical = dnngraph::test::family(mode) == dnngraph::test::PointwiseFamily::Logical;
  std::vector<TensorPtr> in;
  for (int i = 0; i < dnngraph::arity(mode); ++i) {
    const bool boolean = logical || (mode == PointwiseMode::BinarySelect && i == 2);
    in.push_back(input(g, "in", i + 1, i == 1 ? Dims{2, 1, 40} : Dims{2, 3, 40},
                       boolean ? DataType::Boolean : DataType::Float));
  }
  const auto attributes = op("op", mode);
  outputs({in.size() == 1   ? g.pointwise(in[0], attributes)
           : in.size() == 2 ? g.pointwise(in[0], in[1], attributes)
                            : g.pointwise(in[0], in[1], in[2], attributes)},
          10);
  return g;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(the_document_cudnn_writes_loads_into_a_fresh_cache)

BOOST_AUTO_TEST_CASE(for_matmul_with_a_bias_and_relu) { round_trips(matmul_bias_relu()); }
BOOST_AUTO_TEST_CASE(for_a_ternary_pointwise_binary_select) { round_trips(binary_select()); }
BOOST_AUTO_TEST_CASE(for_a_reduction) { round_trips(row_sums()); }
BOOST_AUTO_TEST_CASE(for_a_reshape_that_transposes_a_matmul_input) {
  round_trips(transposed_b_matmul());
}
BOOST_AUTO_TEST_CASE(for_a_reshape_that_merges_dims) { round_trips(merged_rows_matmul()); }
BOOST_AUTO_TEST_CASE(for_concatenate_and_relu,
                     *needs(dnngraph::backend::Feature::ConcatOperation)) {
  round_trips(concatenate_relu());
}
BOOST_AUTO_TEST_CASE(for_slice_and_relu, *needs(dnngraph::backend::Feature::SliceOperation)) {
  round_trips(slice_relu());
}
BOOST_AUTO_TEST_CASE(for_an_rng_mask) { round_trips(bernoulli_mask()); }
BOOST_AUTO_TEST_CASE(for_an_rng_mask_on_a_matmul) { round_trips(masked_matmul()); }
BOOST_AUTO_TEST_CASE(for_conv_fprop_with_a_bias_and_relu) { round_trips(conv_fprop_bias_relu(1)); }
BOOST_AUTO_TEST_CASE(for_a_grouped_conv_fprop) { round_trips(conv_fprop_bias_relu(4)); }
BOOST_AUTO_TEST_CASE(for_conv_dgrad) { round_trips(conv_dgrad(1)); }
BOOST_AUTO_TEST_CASE(for_a_grouped_conv_dgrad) { round_trips(conv_dgrad(4)); }
BOOST_AUTO_TEST_CASE(for_conv_wgrad) { round_trips(conv_wgrad(1)); }
BOOST_AUTO_TEST_CASE(for_a_grouped_conv_wgrad) { round_trips(conv_wgrad(4)); }
BOOST_AUTO_TEST_CASE(for_conv_fprop_with_batchnorm_inference_and_relu) {
  round_trips(conv_batchnorm_relu());
}
BOOST_AUTO_TEST_CASE(for_conv_fprop_with_genstats) { round_trips(conv_genstats()); }
BOOST_AUTO_TEST_CASE(for_layernorm_training) {
  round_trips(layernorm(dnngraph::NormFwdPhase::Training));
}
BOOST_AUTO_TEST_CASE(for_layernorm_inference) {
  round_trips(layernorm(dnngraph::NormFwdPhase::Inference));
}
BOOST_AUTO_TEST_CASE(for_rmsnorm) { round_trips(rmsnorm()); }
BOOST_AUTO_TEST_CASE(for_layernorm_backward) { round_trips(layernorm_backward()); }
BOOST_AUTO_TEST_CASE(for_rmsnorm_backward) { round_trips(rmsnorm_backward()); }
BOOST_AUTO_TEST_CASE(for_batchnorm_training) { round_trips(batchnorm()); }
BOOST_AUTO_TEST_CASE(for_batchnorm_inference) { round_trips(batchnorm_inference()); }
BOOST_AUTO_TEST_CASE(for_batchnorm_backward) { round_trips(statistics_backward(false)); }
BOOST_AUTO_TEST_CASE(for_instancenorm) { round_trips(instancenorm()); }
BOOST_AUTO_TEST_CASE(for_instancenorm_backward) { round_trips(statistics_backward(true)); }
BOOST_AUTO_TEST_CASE(for_adalayernorm_training,
                     *needs(dnngraph::backend::Feature::AdaptiveLayerNorm)) {
  round_trips(adalayernorm(dnngraph::NormFwdPhase::Training));
}
BOOST_AUTO_TEST_CASE(for_adalayernorm_inference,
                     *needs(dnngraph::backend::Feature::AdaptiveLayerNorm)) {
  round_trips(adalayernorm(dnngraph::NormFwdPhase::Inference));
}
BOOST_AUTO_TEST_CASE(for_adalayernorm_backward,
                     *needs(dnngraph::backend::Feature::AdaptiveLayerNorm)) {
  round_trips(adalayernorm_backward());
}
BOOST_AUTO_TEST_CASE(for_genstats) { round_trips(genstats()); }
BOOST_AUTO_TEST_CASE(for_bn_finalize) { round_trips(bn_finalize()); }
BOOST_AUTO_TEST_CASE(for_dbn_weight) { round_trips(dbn_weight()); }
BOOST_AUTO_TEST_CASE(for_max_pooling_with_an_index) { round_trips(max_pool_with_index()); }
BOOST_AUTO_TEST_CASE(for_max_pooling_backward_from_an_index) { round_trips(max_pool_backward()); }
BOOST_AUTO_TEST_CASE(for_sdpa) { round_trips(sdpa(false)); }
BOOST_AUTO_TEST_CASE(for_sdpa_with_a_bottom_right_causal_and_padding_mask) {
  round_trips(sdpa(true));
}
BOOST_AUTO_TEST_CASE(for_sdpa_with_dropout) { round_trips(sdpa_dropout()); }
BOOST_AUTO_TEST_CASE(for_sdpa_over_a_paged_cache,
                     *needs(dnngraph::backend::Feature::PagedCacheLoad)) {
  round_trips(sdpa_paged());
}
BOOST_AUTO_TEST_CASE(for_sdpa_backward) { round_trips(sdpa_backward(false)); }
BOOST_AUTO_TEST_CASE(for_sdpa_backward_with_dropout) { round_trips(sdpa_backward(true)); }

BOOST_AUTO_TEST_CASE(for_a_reshape_that_changes_the_rank) { round_trips(rank_changing_reshape()); }
BOOST_AUTO_TEST_CASE(for_an_rng_mask_with_keys_of_rank_one) {
  round_trips(rng_with_rank_one_keys());
}
BOOST_AUTO_TEST_CASE(for_average_pooling_with_asymmetric_padding) { round_trips(average_pool()); }
BOOST_AUTO_TEST_CASE(for_average_pooling_backward_from_x_and_y) {
  round_trips(average_pool_backward());
}
BOOST_AUTO_TEST_CASE(for_concatenate_in_place,
                     *needs(dnngraph::backend::Feature::ConcatOperation)) {
  round_trips(concatenate_in_place());
}
BOOST_AUTO_TEST_CASE(for_a_3d_convolution_with_asymmetric_padding) {
  round_trips(conv_3d_asymmetric());
}
BOOST_AUTO_TEST_CASE(for_rmsnorm_with_a_bias) { round_trips(rmsnorm_with_bias()); }
BOOST_AUTO_TEST_CASE(for_sdpa_over_ragged_sequences) { round_trips(sdpa_ragged()); }
BOOST_AUTO_TEST_CASE(for_every_pointwise_mode) {
  for (const PointwiseMode mode : dnngraph::test::all_pointwise_modes) {
    BOOST_TEST_CONTEXT(dnngraph::to_string(mode)) { round_trips(pointwise_mode(mode)); }
  }
}

BOOST_AUTO_TEST_SUITE_END()
