// dnngraph's finding "BFloat16 pooling returns wrong values" checked against the reference:
// cudnn-frontend's own resample node on the same cuDNN and GPU, for the two graphs
// gpu_resample_test measured wrong through dnngraph (BFloat16 X [2, 16, 9, 11] NHWC max pooling
// 2x2 stride 2; BFloat16 X [2, 8, 7, 9] NHWC average pooling excluding padding, 3x3, stride 2,
// padding 1: on 9.19, and through engine 3 on 9.28.1 with every library of its wheel), and their
// Half twins that dnngraph measured exact; and a ReLU fused before Half max pooling, whose Y
// dnngraph found unwritten. Per graph: built or the frontend's error, and how many of Y's
// elements differ from a CPU reference by more than the type's rounding; with --every, each
// engine config of the ranked list in turn (which engine pools wrong). Cases by key:
// bf16_max half_max bf16_avg half_avg half_relu_max (all when none). Exit 1 when any Y was
// wrong (the BFloat16 cases are where cuDNN is), 2 on bad arguments, 77 without a GPU. Built
// only with cudnn-frontend's headers (DNNGRAPH_CUDNN_FRONTEND_INCLUDE).
#include "frontend_probe.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

namespace fe = cudnn_frontend;
using Dims = std::vector<std::int64_t>;
using dnngraph_bench::PlanChoice;

struct Probe {
  const char* key;
  const char* name;
  bool bf16;
  bool max;
  Dims x;  // N, C, H, W
  std::int64_t window, stride, padding;
  bool relu = false;  // ReLU fused before the pooling, inside the graph

  [[nodiscard]] Dims y_dims() const {
    return {x[0], x[1], (x[2] + 2 * padding - window) / stride + 1,
            (x[3] + 2 * padding - window) / stride + 1};
  }
};

Dims nhwc(const Dims& d) { return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}; }

void describe_graph(fe::graph::Graph& graph, const Probe& p) {
  const auto type = p.bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
  graph.set_io_data_type(type)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto x = graph.tensor(
      fe::graph::Tensor_attributes().set_name("X").set_uid(1).set_dim(p.x).set_stride(nhwc(p.x)));
  auto pooled_input = x;
  if (p.relu) {
    pooled_input = graph.pointwise(
        x, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
    pooled_input->set_dim(p.x).set_stride(nhwc(p.x));
  }
  auto [y, index] = graph.resample(
      pooled_input,
      fe::graph::Resample_attributes()
          .set_resampling_mode(p.max ? fe::ResampleMode_t::MAXPOOL
                                     : fe::ResampleMode_t::AVGPOOL_EXCLUDE_PADDING)
          .set_padding_mode(p.max ? fe::PaddingMode_t::NEG_INF_PAD : fe::PaddingMode_t::ZERO_PAD)
          .set_window({p.window, p.window})
          .set_stride({p.stride, p.stride})
          .set_pre_padding({p.padding, p.padding})
          .set_post_padding({p.padding, p.padding})
          .set_generate_index(false));
  const Dims y_dims = p.y_dims();
  y->set_output(true).set_uid(2).set_dim(y_dims).set_stride(nhwc(y_dims));
}

// Runs the built graph once on X drawn from a fixed seed (Y filled with NaN first, so an
// unwritten element counts as wrong), prints how many of Y's elements are wrong; true when none.
bool check(fe::graph::Graph& graph, cudnnHandle_t handle, const Probe& p,
           const PlanChoice& choice) {
  const std::int64_t n = p.x[0], c = p.x[1], h = p.x[2], w = p.x[3];
  const Dims y_dims = p.y_dims();
  const std::int64_t oh = y_dims[2], ow = y_dims[3];
  const auto x_count = static_cast<std::size_t>(n * c * h * w);
  const auto y_count = static_cast<std::size_t>(n * c * oh * ow);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> xv(x_count);
  std::vector<std::uint16_t> x_bits(x_count);
  for (std::size_t i = 0; i < x_count; ++i) {
    xv[i] = dnngraph_bench::round_trip(dist(rng), p.bf16);
    x_bits[i] = dnngraph_bench::to_bits(xv[i], p.bf16);
  }
  const dnngraph_bench::Device xd(x_bits);
  const dnngraph_bench::Device yd(y_count * 2);
  if (!yd.fill(0xFF)) {
    return false;
  }
  std::unordered_map<std::int64_t, void*> pack{{1, xd.ptr}, {2, yd.ptr}};
  if (const std::string failed =
          dnngraph_bench::execute(graph, handle, pack, {}, choice.zero_workspace);
      !failed.empty()) {
    std::printf("%s", failed.c_str());
    return false;
  }
  const std::vector<std::uint16_t> y_bits = yd.read<std::uint16_t>(y_count);
  std::size_t wrong = 0;
  double worst = 0;
  // NHWC: element (n, c, i, j) at ((n * H + i) * W + j) * C + c.
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t i = 0; i < oh; ++i) {
      for (std::int64_t j = 0; j < ow; ++j) {
        for (std::int64_t k = 0; k < c; ++k) {
          double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
          int taps = 0;
          for (std::int64_t di = 0; di < p.window; ++di) {
            for (std::int64_t dj = 0; dj < p.window; ++dj) {
              const std::int64_t r = i * p.stride - p.padding + di;
              const std::int64_t s = j * p.stride - p.padding + dj;
              if (r < 0 || r >= h || s < 0 || s >= w) continue;
              double v = xv[static_cast<std::size_t>(((b * h + r) * w + s) * c + k)];
              v = p.relu ? std::max(v, 0.0) : v;
              acc = p.max ? std::max(acc, v) : acc + v;
              ++taps;
            }
          }
          const double want = p.max ? acc : acc / taps;
          const auto at = static_cast<std::size_t>(((b * oh + i) * ow + j) * c + k);
          const float got = dnngraph_bench::from_bits(y_bits[at], p.bf16);
          const double error = std::abs(got - want);
          worst = std::isnan(error) ? error : std::max(worst, error);
          wrong += !(error <= (p.bf16 ? 8e-3 : 1e-3) * std::abs(want) + 1e-5) ? 1 : 0;
        }
      }
    }
  }
  std::printf("%zu of %zu elements wrong, max |error| %.3g", wrong, y_count, worst);
  return wrong == 0;
}

const std::array<Probe, 5> probes{{
    {"bf16_max", "BFloat16 max 2x2 stride 2 [2, 16, 9, 11]", true, true, {2, 16, 9, 11}, 2, 2, 0},
    {"half_max", "Half max 2x2 stride 2 [2, 16, 9, 11]", false, true, {2, 16, 9, 11}, 2, 2, 0},
    {"bf16_avg",
     "BFloat16 average excluding padding 3x3 stride 2 pad 1 [2, 8, 7, 9]",
     true,
     false,
     {2, 8, 7, 9},
     3,
     2,
     1},
    {"half_avg",
     "Half average excluding padding 3x3 stride 2 pad 1 [2, 8, 7, 9]",
     false,
     false,
     {2, 8, 7, 9},
     3,
     2,
     1},
    {"half_relu_max",
     "Half ReLU then max 3x3 stride 2 pad 1 [2, 8, 7, 9]",
     false,
     true,
     {2, 8, 7, 9},
     3,
     2,
     1,
     true},
}};

}  // namespace

int main(int argc, char** argv) {
  return dnngraph_bench::run_cases(
      argc, argv, "pooling (resample) against a CPU reference", probes,
      [](cudnnHandle_t handle, const Probe& p, const PlanChoice& choice) {
        std::printf("%s: %s", p.name, choice.every ? "\n" : "");
        return dnngraph_bench::build_and_check(
            handle, choice, [&](fe::graph::Graph& graph) { describe_graph(graph, p); },
            [&](fe::graph::Graph& graph) { return check(graph, handle, p, choice); });
      },
      true);
}
