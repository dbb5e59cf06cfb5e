// The graphs the benches across processes build in one process and build again, or load, in
// another (issue 33): fp16 matmul + bias + ReLU, fp16 NHWC conv 3x3 + bias + ReLU, bf16 layernorm
// inference over 256 features, bf16 causal attention forward. Given a kernel cache, a graph is a
// dynamic-shape graph on it; given none, a static graph. Every graph writes one output, uid
// `output_uid`. Include where dnngraph's names are declared (after `import dnngraph;`).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace dnngraph_bench::persist {

enum class Topology : std::uint8_t { Matmul, Conv, Layernorm, Sdpa };

constexpr std::array all_topologies{Topology::Matmul, Topology::Conv, Topology::Layernorm,
                                    Topology::Sdpa};

constexpr std::int64_t output_uid = 3;

constexpr const char* name_of(Topology t) {
  switch (t) {
    case Topology::Matmul: return "matmul";
    case Topology::Conv: return "conv";
    case Topology::Layernorm: return "layernorm";
    case Topology::Sdpa: return "sdpa";
  }
  return "?";
}

// What the graph is, in a name a KernelCacheStore key can take.
constexpr std::string_view store_name_of(Topology t) {
  switch (t) {
    case Topology::Matmul: return "matmul_bias_relu_fp16";
    case Topology::Conv: return "conv_bias_relu_fp16";
    case Topology::Layernorm: return "layernorm_inference_bf16";
    case Topology::Sdpa: return "sdpa_causal_bf16";
  }
  return "?";
}

// The topology of that name among `among` (a program's own list); nullopt for any other name.
inline std::optional<Topology> topology_named(std::string_view name,
                                              std::span<const Topology> among) {
  for (const Topology t : among) {
    if (std::string_view(name_of(t)) == name) {
      return t;
    }
  }
  return std::nullopt;
}

// A dynamic-shape graph on `kc`, or with no cache a static one (the kernel cache needs dynamic
// shapes; a static graph is what a saved plan serves).
inline void set_cache(dnngraph::Graph& g, const std::shared_ptr<dnngraph::KernelCache>& kc) {
  if (kc) {
    g.set_dynamic_shape_enabled(true).set_kernel_cache(kc);
  }
}

// Matmul + bias + ReLU (A [1, m, 1024] x B [1, 1024, n]: 1024 x 1024, then 2048 x 512) or NHWC
// conv 3x3 + bias + ReLU (64 channels in and out, [1, 64, 56, 56], then [4, 64, 28, 28]), fp16.
inline dnngraph::Graph fused_graph(bool conv, bool second_shape,
                                   const std::shared_ptr<dnngraph::KernelCache>& kc) {
  using namespace dnngraph;
  using Dims = std::vector<std::int64_t>;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  set_cache(g, kc);
  std::shared_ptr<TensorAttributes> y;
  std::shared_ptr<TensorAttributes> bias;
  if (conv) {
    const std::int64_t n = second_shape ? 4 : 1, hw = second_shape ? 28 : 56;
    const Dims xd{n, 64, hw, hw}, wd{64, 64, 3, 3}, bd{1, 64, 1, 1};
    auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(xd).set_stride(
        channels_last_strides(xd)));
    auto w = g.tensor(TensorAttributes().set_name("W").set_uid(2).set_dim(wd).set_stride(
        channels_last_strides(wd)));
    bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim(bd).set_stride(
        channels_last_strides(bd)));
    y = g.conv_fprop(x, w, ConvFpropAttributes().set_padding({1, 1}));
  } else {
    const std::int64_t m = second_shape ? 2048 : 1024, n = second_shape ? 512 : 1024;
    auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, m, 1024}));
    auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 1024, n}));
    bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, n}));
    y = g.matmul(a, b);
  }
  auto d = g.pointwise(y, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd))
      ->set_output(true)
      .set_uid(output_uid);
  return g;
}

// Layernorm inference, bf16 X [rows, 256, 1, 1] channels-last (each row contiguous), Float
// scale and bias (as bench/kernel_cache_mixed_soak.cpp builds it); 1024 rows, then 4096.
inline dnngraph::Graph layernorm_graph(bool second_shape,
                                       const std::shared_ptr<dnngraph::KernelCache>& kc) {
  using namespace dnngraph;
  using Dims = std::vector<std::int64_t>;
  constexpr std::int64_t features = 256;
  const std::int64_t rows = second_shape ? 4096 : 1024;
  Graph g;
  g.set_io_data_type(DataType::BFloat16)
      .set_intermediate_data_type(DataType::Float)
      .set_compute_data_type(DataType::Float);
  set_cache(g, kc);
  const auto input = [&g](const char* name, std::int64_t uid, const Dims& dims,
                          std::optional<DataType> type) {
    TensorAttributes t;
    t.set_name(name).set_uid(uid).set_dim(dims).set_stride(channels_last_strides(dims));
    if (type) {
      t.set_data_type(*type);
    }
    return g.tensor(t);
  };
  const Dims parameter{1, features, 1, 1};
  auto x = input("X", 1, {rows, features, 1, 1}, std::nullopt);
  auto scale = input("scale", 2, parameter, DataType::Float);
  auto bias = input("bias", 4, parameter, DataType::Float);
  const auto outputs = g.layernorm(x, scale, bias,
                                   LayernormAttributes()
                                       .set_name("ln")
                                       .set_forward_phase(NormFwdPhase::Inference)
                                       .set_epsilon(g.tensor(1e-5F)));
  outputs.front()->set_output(true).set_uid(output_uid);  // Y; inference writes no statistics
  return g;
}

// Causal attention forward for inference (no Stats), bf16 Q, K, V [2, 8, 1024, 128] packed BHSD
// (uids 1, 2, 4), one shape. Meant static: no cuDNN serves dynamic-shape attention
// (docs/known-issues.md, sdpa-dynamic-shape).
inline dnngraph::Graph attention_graph(const std::shared_ptr<dnngraph::KernelCache>& kc) {
  using namespace dnngraph;
  constexpr std::int64_t b = 2, h = 8, s = 1024, d = 128;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  set_cache(g, kc);
  const auto input = [&g](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim({b, h, s, d}));
  };
  auto [o, stats] = g.sdpa(input("Q", 1), input("K", 2), input("V", 4),
                           SdpaAttributes()
                               .set_name("attn")
                               .set_attn_scale(1.0F / std::sqrt(static_cast<float>(d)))
                               .set_causal_mask(true)
                               .set_generate_stats(false));
  o->set_name("O").set_output(true).set_uid(output_uid);
  return g;
}

// The topology's graph at its first or second shape (attention has one).
inline dnngraph::Graph graph_of(Topology t, bool second_shape,
                                const std::shared_ptr<dnngraph::KernelCache>& kc) {
  switch (t) {
    case Topology::Matmul: return fused_graph(false, second_shape, kc);
    case Topology::Conv: return fused_graph(true, second_shape, kc);
    case Topology::Layernorm: return layernorm_graph(second_shape, kc);
    case Topology::Sdpa: return attention_graph(kc);
  }
  return fused_graph(false, second_shape, kc);
}

}  // namespace dnngraph_bench::persist
