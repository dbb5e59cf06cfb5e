// Graphs of every node kind (and the fused forms the GPU tests build) with parameters drawn from
// the fuzz bytes within the ranges the nodes' checks take: most of them validate and lower, so
// graph_fuzz reaches cuDNN's kernel cache document of each kind (random graphs reach it rarely:
// two documents in 290k runs, both of matmuls). Dims, data types, layouts and attributes vary;
// a draw outside what a node takes (a group count that does not divide the channels) is an
// Error, as for any graph.
#pragma once

#include "api/graph.hpp"
#include "api/layout.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace dnngraph::fuzz {

using Dims = std::vector<std::int64_t>;
using TensorPtr = std::shared_ptr<TensorAttributes>;

class PlausibleGraph {
 public:
  PlausibleGraph(FuzzedDataProvider& in, Graph& g) : in_(in), g_(g) {}

  // Adds one node kind's graph to g and returns its outputs (marked as outputs).
  std::vector<TensorPtr> add() {
    constexpr std::array types{DataType::Half, DataType::BFloat16, DataType::Float};
    g_.set_io_data_type(in_.PickValueInArray(types))
        .set_intermediate_data_type(DataType::Float)
        .set_compute_data_type(DataType::Float);
    channels_last_ = in_.ConsumeBool();
    std::vector<TensorPtr> outs;
    switch (between(0, 12)) {
      case 0: outs = matmul(); break;
      case 1: outs = pointwise(); break;
      case 2: outs = reduction(); break;
      case 3: outs = convolution(); break;
      case 4: outs = reshape(); break;
      case 5: outs = concatenate(); break;
      case 6: outs = rng(); break;
      case 7: outs = norm(); break;
      case 8: outs = norm_backward(); break;
      case 9: outs = batch_statistics(); break;
      case 10: outs = resample(); break;
      case 11: outs = slice(); break;
      default: outs = attention(); break;
    }
    for (const auto& t : outs) {
      if (t) {
        t->set_output(true);
      }
    }
    return outs;
  }

 private:
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return in_.ConsumeIntegralInRange(lo, hi);
  }

  TensorPtr input(const Dims& dims, std::optional<DataType> type = std::nullopt,
                  bool layout = false) {
    TensorAttributes t;
    t.set_dim(dims);
    if (layout && channels_last_ && dims.size() >= 3) {
      t.set_stride(channels_last_strides(dims));
    }
    if (type) {
      t.set_data_type(*type);
    }
    return g_.tensor(t);
  }
  TensorPtr image(const Dims& dims) { return input(dims, std::nullopt, true); }
  TensorPtr parameter(const Dims& dims) { return input(dims, DataType::Float, true); }
  TensorPtr relu(const TensorPtr& x) {
    return g_.pointwise(x, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd));
  }

  // [N, C, (D,) H, W] with 2 or 3 spatial dims.
  Dims image_dims(std::int64_t c) {
    Dims d{between(1, 4), c, between(1, 12), between(1, 12)};
    if (in_.ConsumeBool()) {
      d.push_back(between(1, 6));
    }
    return d;
  }
  Dims channel_dims(const Dims& x) {
    Dims d(x.size(), 1);
    d[1] = x[1];
    return d;
  }

  std::vector<TensorPtr> matmul() {
    const std::int64_t b = between(1, 4), m = between(1, 64), n = between(1, 64),
                       k = between(1, 64);
    auto c = g_.matmul(input({b, m, k}), input({in_.ConsumeBool() ? b : 1, k, n}));
    if (in_.ConsumeBool()) {
      c = relu(
          g_.pointwise(c, input({1, 1, n}), PointwiseAttributes().set_mode(PointwiseMode::Add)));
    }
    return {c};
  }

  std::vector<TensorPtr> pointwise() {
    const auto mode = static_cast<PointwiseMode>(between(0, 48));
    const Dims dims{between(1, 4), between(1, 16), between(1, 16)};
    const Dims broadcast{dims[0], 1, dims[2]};
    const bool logical = mode == PointwiseMode::LogicalAnd || mode == PointwiseMode::LogicalOr ||
                         mode == PointwiseMode::LogicalNot;
    const auto type = logical ? std::optional(DataType::Boolean) : std::nullopt;
    auto a = PointwiseAttributes().set_mode(mode);
    if (mode == PointwiseMode::SwishFwd && in_.ConsumeBool()) {
      a.set_swish_beta(in_.ConsumeFloatingPointInRange(0.1, 4.0));
    }
    switch (arity(mode)) {
      case 1: return {g_.pointwise(input(dims, type), a)};
      case 2: return {g_.pointwise(input(dims, type), input(broadcast, type), a)};
      default: return {g_.pointwise(input(dims), input(dims), input(dims, DataType::Boolean), a)};
    }
  }

  std::vector<TensorPtr> reduction() {
    const Dims x{between(1, 4), between(1, 32), between(1, 32)};
    Dims y = x;
    for (auto& d : y) {
      if (in_.ConsumeBool()) d = 1;
    }
    auto out = g_.reduction(
        input(x), ReductionAttributes().set_mode(static_cast<ReductionMode>(between(0, 8))));
    out->set_dim(y).set_data_type(DataType::Float);
    return {out};
  }

  // A convolution's or pooling window's geometry per spatial dim, and the output extent it gives.
  struct Geometry {
    Dims pre, post, stride, dilation;
    [[nodiscard]] Dims output(const Dims& x, const Dims& window, std::int64_t channels) const {
      Dims y = x;
      y[1] = channels;
      for (std::size_t i = 0; i + 2 < x.size(); ++i) {
        const std::int64_t span = dilation[i] * (window[i] - 1) + 1;
        y[i + 2] = (x[i + 2] + pre[i] + post[i] - span) / stride[i] + 1;
      }
      return y;
    }
  };
  Geometry geometry(const Dims& window, bool dilated) {
    Geometry g;
    for (const std::int64_t size : window) {
      g.pre.push_back(between(0, size - 1));
      g.post.push_back(in_.ConsumeBool() ? g.pre.back() : between(0, size - 1));
      g.stride.push_back(between(1, 2));
      g.dilation.push_back(dilated ? between(1, 2) : 1);
    }
    return g;
  }
  template <class A>
  A convolution_attributes(const Geometry& geometry, std::int64_t groups) {
    A a;
    a.set_pre_padding(geometry.pre)
        .set_post_padding(geometry.post)
        .set_stride(geometry.stride)
        .set_dilation(geometry.dilation)
        .set_group_count(groups);
    if (in_.ConsumeBool()) {
      a.set_convolution_mode(ConvolutionMode::Convolution);
    }
    return a;
  }

  std::vector<TensorPtr> convolution() {
    const std::int64_t groups = in_.PickValueInArray(std::array<std::int64_t, 3>{1, 2, 4});
    const std::int64_t c = groups * between(1, 8), k = groups * between(1, 8);
    const Dims x = image_dims(c);
    Dims filter;
    for (std::size_t i = 2; i < x.size(); ++i) {
      filter.push_back(between(1, 3));
    }
    Dims w{k, c / groups};
    w.insert(w.end(), filter.begin(), filter.end());
    const Geometry geo = geometry(filter, true);
    const Dims y_dims = geo.output(x, filter, k);
    switch (between(0, 4)) {
      case 0: {
        auto dx = g_.conv_dgrad(image(y_dims), image(w),
                                convolution_attributes<ConvDgradAttributes>(geo, groups));
        dx->set_dim(x);
        return {dx};
      }
      case 1: {
        auto dw = g_.conv_wgrad(image(x), image(y_dims),
                                convolution_attributes<ConvWgradAttributes>(geo, groups));
        dw->set_dim(w);
        return {dw};
      }
      default: break;
    }
    auto y =
        g_.conv_fprop(image(x), image(w), convolution_attributes<ConvFpropAttributes>(geo, groups));
    const Dims ch = channel_dims(y_dims);
    switch (between(0, 3)) {
      case 0:
        return {relu(
            g_.pointwise(y, parameter(ch), PointwiseAttributes().set_mode(PointwiseMode::Add)))};
      case 1:
        return {relu(g_.batchnorm_inference(y, parameter(ch), parameter(ch), parameter(ch),
                                            parameter(ch), {}))};
      case 2: {
        auto [sum, sq_sum] = g_.genstats(y);
        return {y, sum, sq_sum};
      }
      default: return {y};
    }
  }

  std::vector<TensorPtr> reshape() {
    const Dims x{between(1, 4), between(1, 16), between(1, 16)};
    if (in_.ConsumeBool()) {
      return {relu(g_.reshape(input(x), ReshapeAttributes().set_permutation({0, 2, 1})))};
    }
    auto y = g_.reshape(input(x));
    y->set_dim(in_.ConsumeBool() ? Dims{x[0] * x[1], x[2]} : Dims{1, x[0] * x[1], x[2]});
    return {relu(y)};
  }

  std::vector<TensorPtr> concatenate() {
    const std::int64_t axis = between(0, 2);
    Dims dims{between(1, 4), between(1, 16), between(1, 16)};
    std::vector<TensorPtr> inputs;
    for (std::int64_t i = between(1, 3); i > 0; --i) {
      dims[static_cast<std::size_t>(axis)] = between(1, 8);
      inputs.push_back(input(dims));
    }
    auto y = g_.concatenate(inputs, ConcatenateAttributes().set_axis(axis));
    return {in_.ConsumeBool() ? relu(y) : y};
  }

  std::vector<TensorPtr> rng() {
    const Dims key(static_cast<std::size_t>(between(1, 4)), 1);
    auto mask = g_.rng(input(key, DataType::Int64), input(key, DataType::Int64),
                       RngAttributes().set_bernoulli_probability(in_.ConsumeProbability<double>()));
    mask->set_dim({1, between(1, 32), between(1, 32)});
    return {mask};
  }

  std::vector<TensorPtr> norm() {
    const auto phase = in_.ConsumeBool() ? NormFwdPhase::Training : NormFwdPhase::Inference;
    const std::int64_t n = between(1, 8), c = between(1, 64);
    const Dims rows{n, c, 1, 1}, features{1, c, 1, 1};
    switch (between(0, 4)) {
      case 0: {
        auto [y, mean, inv_var] = g_.layernorm(
            image(rows), parameter(features), parameter(features),
            LayernormAttributes().set_forward_phase(phase).set_epsilon(g_.tensor(1e-5F)));
        return {y, mean, inv_var};
      }
      case 1: {
        auto a = RmsnormAttributes().set_forward_phase(phase).set_epsilon(g_.tensor(1e-5F));
        if (in_.ConsumeBool()) {
          a.set_bias(parameter(features));
        }
        auto [y, inv_rms] = g_.rmsnorm(image(rows), parameter(features), a);
        return {y, inv_rms};
      }
      case 2: {
        const Dims x = image_dims(c);
        auto [y, mean, inv_var] = g_.instancenorm(
            image(x), parameter(channel_dims(x)), parameter(channel_dims(x)),
            InstancenormAttributes().set_forward_phase(phase).set_epsilon(g_.tensor(1e-5F)));
        return {y, mean, inv_var};
      }
      case 3: {
        const std::int64_t b = between(1, 4), s = between(1, 16);
        auto [y, mean, inv_var] = g_.adalayernorm(
            input({b, s, c}), input({b, 1, c}, DataType::Float), input({b, 1, c}, DataType::Float),
            AdaLayernormAttributes().set_forward_phase(phase).set_epsilon(g_.tensor(1e-5F)));
        return {y, mean, inv_var};
      }
      default: {
        const Dims x = image_dims(c), ch = channel_dims(x);
        return {g_.batchnorm_inference(image(x), parameter(ch), parameter(ch), parameter(ch),
                                       parameter(ch), {})};
      }
    }
  }

  std::vector<TensorPtr> norm_backward() {
    const std::int64_t n = between(1, 8), c = between(1, 64);
    switch (between(0, 4)) {
      case 0:
      case 1: {
        const Dims rows{n, c, 1, 1}, per_row{n, 1, 1, 1};
        auto dy = image(rows);
        auto x = image(rows);
        auto scale = parameter({1, c, 1, 1});
        if (in_.ConsumeBool()) {
          auto [dx, dscale] = g_.rmsnorm_backward(dy, x, scale, parameter(per_row));
          return {dx, dscale};
        }
        auto [dx, dscale, dbias] =
            g_.layernorm_backward(dy, x, scale, parameter(per_row), parameter(per_row));
        return {dx, dscale, dbias};
      }
      case 2:
      case 3: {
        const bool instance = in_.ConsumeBool();
        const Dims x = image_dims(c), ch = channel_dims(x);
        Dims statistic = ch;
        if (instance) {
          statistic[0] = x[0];
        }
        auto outs = instance ? g_.instancenorm_backward(image(x), image(x), parameter(ch),
                                                        parameter(statistic), parameter(statistic))
                             : g_.batchnorm_backward(image(x), image(x), parameter(ch),
                                                     parameter(statistic), parameter(statistic));
        return {outs.begin(), outs.end()};
      }
      default: {
        const std::int64_t b = between(1, 4), s = between(1, 16);
        auto outs = g_.adalayernorm_backward(
            input({b, s, c}), input({b, s, c}), input({b, 1, c}, DataType::Float),
            input({b, s, 1}, DataType::Float), input({b, s, 1}, DataType::Float));
        return {outs.begin(), outs.end()};
      }
    }
  }

  std::vector<TensorPtr> batch_statistics() {
    const Dims x = image_dims(between(1, 64)), ch = channel_dims(x);
    switch (between(0, 3)) {
      case 0: {
        auto a = BatchnormAttributes().set_epsilon(g_.tensor(1e-5F));
        if (in_.ConsumeBool()) {
          a.set_previous_running_stats(parameter(ch), parameter(ch), g_.tensor(0.1F));
        }
        auto outs = g_.batchnorm(image(x), parameter(ch), parameter(ch), a);
        return {outs.begin(), outs.end()};
      }
      case 1: {
        auto [sum, sq_sum] = g_.genstats(image(x));
        return {sum, sq_sum};
      }
      case 2: {
        auto a = BnFinalizeAttributes()
                     .set_epsilon(g_.tensor(1e-5F))
                     .set_accumulation_count(g_.int64_scalar(between(1, 1 << 20)));
        if (in_.ConsumeBool()) {
          a.set_previous_running_stats(parameter(ch), parameter(ch), g_.tensor(0.1F));
        }
        auto outs = g_.bn_finalize(parameter(ch), parameter(ch), parameter(ch), parameter(ch), a);
        return {outs.begin(), outs.end()};
      }
      default: {
        auto outs = g_.dbn_weight(image(x), image(x), parameter(ch), parameter(ch), parameter(ch));
        return {outs.begin(), outs.end()};
      }
    }
  }

  template <class A>
  A pooling_attributes(ResampleMode mode, const Dims& window, const Geometry& geometry) {
    A a;
    a.set_mode(mode)
        .set_window(window)
        .set_stride(geometry.stride)
        .set_pre_padding(geometry.pre)
        .set_post_padding(geometry.post);
    return a;
  }

  // Pooling, or its backward from the forward's Index (max) or its X and Y.
  std::vector<TensorPtr> resample() {
    // Half or Float: BFloat16 pooling is refused below 9.27 and depends on plan choice from 9.27
    // (known issues resample-bfloat16-wrong, resample-bfloat16-without-tensor-core): GPU tests.
    g_.set_io_data_type(in_.ConsumeBool() ? DataType::Half : DataType::Float);
    const Dims x = image_dims(between(1, 32));
    Dims window;
    for (std::size_t i = 2; i < x.size(); ++i) {
      window.push_back(between(1, 3));
    }
    const Geometry geo = geometry(window, false);
    const Dims y_dims = geo.output(x, window, x[1]);
    const auto mode = static_cast<ResampleMode>(between(0, 2));
    if (in_.ConsumeBool()) {
      const bool index = mode == ResampleMode::MaxPool && in_.ConsumeBool();
      auto [y, idx] = g_.resample(
          image(x),
          pooling_attributes<ResampleAttributes>(mode, window, geo).set_generate_index(index));
      return {y, idx};
    }
    auto a = pooling_attributes<ResampleBackwardAttributes>(mode, window, geo);
    if (mode == ResampleMode::MaxPool) {
      a.set_index(input(y_dims, DataType::Int8, true));
    } else if (in_.ConsumeBool()) {
      a.set_x(image(x)).set_y(image(y_dims));
    }
    auto dx = g_.resample_backward(image(y_dims), a);
    dx->set_dim(x);
    return {dx};
  }

  std::vector<TensorPtr> slice() {
    const Dims x{between(1, 4), between(2, 32), between(1, 16)};
    const std::int64_t start = between(0, x[1] - 1);
    auto y = g_.slice(input(x), SliceAttributes().set_slices(
                                    {{0, x[0]}, {start, between(start + 1, x[1])}, {0, x[2]}}));
    return {relu(y)};
  }

  std::vector<TensorPtr> attention() {
    g_.set_io_data_type(in_.ConsumeBool() ? DataType::Half : DataType::BFloat16);  // no Float
    const std::int64_t b = between(1, 4), h_k = between(1, 4), h_q = h_k * between(1, 2),
                       s_q = between(1, 128), s_kv = between(1, 128);
    const std::int64_t d = in_.PickValueInArray(std::array<std::int64_t, 3>{32, 64, 128});
    const Dims q_dims{b, h_q, s_q, d}, kv_dims{b, h_k, s_kv, d};
    auto q = input(q_dims);
    const bool paged = in_.ConsumeBool() && in_.ConsumeBool();
    const std::int64_t block = in_.PickValueInArray(std::array<std::int64_t, 3>{16, 32, 64});
    const std::int64_t pages = (s_kv + block - 1) / block;
    const Dims container{b * pages, h_k, block, d};
    auto k = input(paged ? container : kv_dims);
    auto v = input(paged ? container : kv_dims);
    const auto lengths = [&] { return input({b, 1, 1, 1}, DataType::Int32); };
    const auto key = [&] { return input({1, 1, 1, 1}, DataType::Int64); };
    const bool padded = paged || in_.ConsumeBool();
    const bool dropout = !paged && in_.ConsumeBool();
    const float scale = 1.0F / 8.0F;
    if (!paged && in_.ConsumeBool()) {
      auto o = input(q_dims);
      auto d_o = input(q_dims);
      auto stats = input({b, h_q, s_q, 1}, DataType::Float);
      auto a = SdpaBackwardAttributes().set_attn_scale(scale).set_causal_mask(in_.ConsumeBool());
      if (padded) {
        a.set_padding_mask(true).set_seq_len_q(lengths()).set_seq_len_kv(lengths());
      }
      if (dropout) {
        a.set_dropout(in_.ConsumeFloatingPointInRange(0.01, 0.5), key(), key());
      }
      auto outs = g_.sdpa_backward(q, k, v, o, d_o, stats, a);
      return {outs.begin(), outs.end()};
    }
    auto a = SdpaAttributes().set_attn_scale(scale).set_generate_stats(in_.ConsumeBool());
    if (in_.ConsumeBool()) {
      a.set_causal_mask_bottom_right(true);
    } else {
      a.set_causal_mask(in_.ConsumeBool());
    }
    if (padded) {
      a.set_padding_mask(true).set_seq_len_q(lengths()).set_seq_len_kv(lengths());
    }
    if (dropout) {
      a.set_dropout(in_.ConsumeFloatingPointInRange(0.01, 0.5), key(), key());
    }
    if (paged) {
      a.set_paged_attention(input({b, 1, pages, 1}, DataType::Int32),
                            input({b, 1, pages, 1}, DataType::Int32), s_kv);
    }
    auto [o, stats] = g_.sdpa(q, k, v, a);
    return {o, stats};
  }

  FuzzedDataProvider& in_;
  Graph& g_;
  bool channels_last_ = false;
};

}  // namespace dnngraph::fuzz
