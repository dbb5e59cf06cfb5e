// gpu_plan_control_test's two problems through cudnn-frontend on the same cuDNN, candidate by
// candidate: the reference for that test's cases that build every candidate, which racecheck did
// not finish in 10 minutes or more on either cuDNN (docs/development.md, "The GPU sanitizers over
// the suite"). The graphs are the test's: "matmul", Y = ReLU(A x B + bias), A [1, 64, 128],
// B [1, 128, 96], bias [1, 1, 96]; "conv", Y = ReLU(conv_fprop(X, W) + bias), X [2, 32, 16, 16],
// W [64, 32, 3, 3], bias [1, 64, 1, 1], padding 1, every tensor channels-last (support/
// conv_cases.hpp's half_nhwc_bias_relu). io Half, intermediates and compute Float. Inputs uniform
// in [-1, 1] rounded to Half (every byte written), Y filled with 0xFF (NaN); each build executed
// once and Y compared with a CPU reference in double within the test's 1e-2 + 1e-2 |y|.
//   --every   each engine config the heuristics offer (A then Fallback unless --heuristics says
//             otherwise) in turn, a line each as it ends (frontend_probe.hpp, build_and_check):
//             under a tool, the candidate that never ends is the one after the last line:
//               compute-sanitizer --tool racecheck bundle/bench_plan_control_frontend_probe --every
// Without --every, the plan options of frontend_probe.hpp (--heuristics, --index N, --engine
// "engine N, knobs {...}" as the test's log prints a candidate, --zero-workspace) choose one.
// Arguments: case names (matmul, conv; default both). Exit 0 when each case's plan built, ran
// and agreed (with --every: every candidate cuDNN built agreed; one it refused at its build is
// shown, not counted); 1 otherwise; 2 for a bad command line; 77 without a CUDA device.
#include "frontend_probe.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace fe = cudnn_frontend;
using dnngraph_bench::Device;
using dnngraph_bench::Dims;

constexpr std::int64_t kUidIn0 = 1, kUidIn1 = 2, kUidBias = 3, kUidY = 4;

struct Case {
  const char* key;  // the command line's name
  const char* name;
  bool conv;
  Dims in0, in1, bias, y;  // matmul: A, B; conv: X, W (logical NCHW, KCRS)
  std::uint32_t seed;
};

const std::array<Case, 2> kCases{{
    {"matmul",
     "Half matmul + bias + ReLU [1, 64, 128] x [1, 128, 96]",
     false,
     {1, 64, 128},
     {1, 128, 96},
     {1, 1, 96},
     {1, 64, 96},
     1401},
    {"conv",
     "half NHWC conv_fprop + bias + relu",
     true,
     {2, 32, 16, 16},
     {64, 32, 3, 3},
     {1, 64, 1, 1},
     {2, 64, 16, 16},
     205},
}};

// Channels-last strides of a logical NCHW (KCRS) tensor; packed row-major for a matmul's.
Dims strides_of(const Case& c, const Dims& dims) {
  if (!c.conv) {
    return dnngraph_bench::packed(dims);
  }
  return {dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]};
}

void describe(fe::graph::Graph& graph, const Case& c) {
  graph.set_io_data_type(fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const auto tensor = [&](const char* name, std::int64_t uid, const Dims& dims) {
    return graph.tensor(
        fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
            strides_of(c, dims)));
  };
  auto in0 = tensor(c.conv ? "X" : "A", kUidIn0, c.in0);
  auto in1 = tensor(c.conv ? "W" : "B", kUidIn1, c.in1);
  auto y = c.conv ? graph.conv_fprop(in0, in1,
                                     fe::graph::Conv_fprop_attributes()
                                         .set_name("conv_fprop")
                                         .set_padding({1, 1})
                                         .set_stride({1, 1})
                                         .set_dilation({1, 1}))
                  : graph.matmul(in0, in1, fe::graph::Matmul_attributes().set_name("mm"));
  y = graph.pointwise(
      y, tensor("bias", kUidBias, c.bias),
      fe::graph::Pointwise_attributes().set_name("bias").set_mode(fe::PointwiseMode_t::ADD));
  y = graph.pointwise(y, fe::graph::Pointwise_attributes().set_name("relu").set_mode(
                             fe::PointwiseMode_t::RELU_FWD));
  y->set_output(true).set_name("Y").set_uid(kUidY).set_dim(c.y).set_stride(strides_of(c, c.y));
}

// The case's inputs in memory order (Half bits and their values) and Y in memory order.
struct Data {
  std::vector<std::uint16_t> in0, in1, bias;
  std::vector<float> in0_values, in1_values, bias_values;
  std::vector<double> want;
};

Data make_data(const Case& c) {
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  Data d;
  const auto fill = [&](const Dims& dims, std::vector<std::uint16_t>& bits,
                        std::vector<float>& values) {
    for (std::size_t i = 0; i < dnngraph_bench::element_count(dims); ++i) {
      bits.push_back(dnngraph_bench::to_bits(dist(rng), false));
      values.push_back(dnngraph_bench::from_bits(bits.back(), false));
    }
  };
  fill(c.in0, d.in0, d.in0_values);
  fill(c.in1, d.in1, d.in1_values);
  fill(c.bias, d.bias, d.bias_values);
  d.want.assign(dnngraph_bench::element_count(c.y), 0.0);
  const Dims ys = strides_of(c, c.y);
  const auto at = [](const Dims& strides, std::int64_t a, std::int64_t b, std::int64_t h,
                     std::int64_t w) {
    return static_cast<std::size_t>(a * strides[0] + b * strides[1] + h * strides[2] +
                                    w * strides[3]);
  };
  if (!c.conv) {  // [1, M, K] x [1, K, N], row-major
    const std::int64_t m_count = c.in0[1], k_count = c.in0[2], n_count = c.in1[2];
    for (std::int64_t m = 0; m < m_count; ++m) {
      for (std::int64_t n = 0; n < n_count; ++n) {
        double sum = d.bias_values[static_cast<std::size_t>(n)];
        for (std::int64_t k = 0; k < k_count; ++k) {
          sum += static_cast<double>(d.in0_values[static_cast<std::size_t>(m * k_count + k)]) *
                 d.in1_values[static_cast<std::size_t>(k * n_count + n)];
        }
        d.want[static_cast<std::size_t>(m * n_count + n)] = std::max(sum, 0.0);
      }
    }
    return d;
  }
  const Dims xs = strides_of(c, c.in0), ws = strides_of(c, c.in1);
  for (std::int64_t n = 0; n < c.y[0]; ++n) {
    for (std::int64_t k = 0; k < c.y[1]; ++k) {
      for (std::int64_t p = 0; p < c.y[2]; ++p) {
        for (std::int64_t q = 0; q < c.y[3]; ++q) {
          double sum = d.bias_values[static_cast<std::size_t>(k)];
          for (std::int64_t ch = 0; ch < c.in1[1]; ++ch) {
            for (std::int64_t r = 0; r < c.in1[2]; ++r) {
              for (std::int64_t s = 0; s < c.in1[3]; ++s) {
                const std::int64_t h = p - 1 + r, w = q - 1 + s;  // padding 1, stride 1
                if (h >= 0 && h < c.in0[2] && w >= 0 && w < c.in0[3]) {
                  sum += static_cast<double>(d.in0_values[at(xs, n, ch, h, w)]) *
                         d.in1_values[at(ws, k, ch, r, s)];
                }
              }
            }
          }
          d.want[at(ys, n, k, p, q)] = std::max(sum, 0.0);
        }
      }
    }
  }
  return d;
}

// Executes the built graph once on the case's data and compares Y; prints the comparison.
bool execute_and_check(fe::graph::Graph& graph, cudnnHandle_t handle, const Data& d,
                       bool zero_workspace) {
  Device in0(d.in0), in1(d.in1), bias(d.bias);
  Device y(d.want.size() * sizeof(std::uint16_t));
  if (!y.fill(0xFF)) {
    return false;
  }
  std::unordered_map<std::int64_t, void*> pack{
      {kUidIn0, in0.ptr}, {kUidIn1, in1.ptr}, {kUidBias, bias.ptr}, {kUidY, y.ptr}};
  if (const std::string error = dnngraph_bench::execute(graph, handle, pack, {}, zero_workspace);
      !error.empty()) {
    std::printf("%s", error.c_str());
    return false;
  }
  const std::vector<std::uint16_t> got = y.read<std::uint16_t>(d.want.size());
  dnngraph_bench::Worst worst;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst.add_within(dnngraph_bench::from_bits(got[i], false), d.want[i], 1e-2, 1e-2);
  }
  std::printf("Y NaN %zu of %zu, max |Y - reference| %.3g, %zu outside 1e-2 + 1e-2 |y|: %s",
              worst.nan, worst.compared, worst.max_error, worst.outside,
              worst.outside == 0 ? "agrees" : "DIFFERS");
  return worst.outside == 0;
}

bool run(cudnnHandle_t handle, const Case& c, const dnngraph_bench::PlanChoice& choice) {
  std::printf("%s: %s\n", c.key, c.name);
  const Data d = make_data(c);
  return dnngraph_bench::build_and_check(
      handle, choice, [&](fe::graph::Graph& graph) { describe(graph, c); },
      [&](fe::graph::Graph& graph) {
        return execute_and_check(graph, handle, d, choice.zero_workspace);
      });
}

}  // namespace

int main(int argc, char** argv) {
  return dnngraph_bench::run_cases(argc, argv, "gpu_plan_control_test's problems", kCases, run,
                                   /*every_allowed=*/true);
}
