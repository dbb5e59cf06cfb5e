// gpu_conv_test's BFloat16 NCHW convolutions through cudnn-frontend's own conv_fprop node on the
// same cuDNN: the reference for the initcheck finding in cudnn::engines_precompiled::
// nhwcToNchwKernel (docs/development.md, "The GPU sanitizers over the suite": 12,524 reads of
// uninitialized device memory on cuDNN 9.19.0, in those cases' layout transform). The graphs
// are tests/support/conv_cases.hpp's bfloat16_nchw ("plain": X [2, 32, 16, 16], W [64, 32, 3, 3],
// padding 1) and bfloat16_nchw_grouped ("grouped": X [2, 32, 14, 14], W [64, 8, 3, 3], so 4
// groups, padding 1, stride 2): io BFloat16, intermediates and compute Float, X, W and Y packed
// NCHW (W KCRS), cross-correlation, uids 1, 2, 3 (make_conv_graph's). Inputs are the test's:
// uniform in [-1, 1] rounded to BFloat16, drawn X then W from the case's seed, so every byte is
// written; Y is filled with 0xFF (NaN) as the test fills it. Each case is built once, executed
// once and compared with a CPU convolution in double within the test's BFloat16 tolerance
// (4e-2 + 4e-2 |y|). Prints the plan choice, each case's engine configs offered (plan names, in
// ranked order) and the one built as "engine N, knobs {...}". If initcheck reports the same
// kernel here, the finding is cuDNN's:
//   compute-sanitizer --tool initcheck bundle/bench_conv_frontend_probe
// Arguments: case names (plain, grouped; default both), and the plan options of
// frontend_probe.hpp (parse_plan_choice: --heuristics A|Fallback|A,Fallback, --index N,
// --engine "engine N, knobs {...}" as gpu_conv_test's log prints the plan with
// --log_level=message, --zero-workspace). Exit 0 when every case built, ran and agreed; 1
// otherwise; 2 for a bad command line; 77 without a CUDA device.
#include "frontend_probe.hpp"

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

constexpr std::int64_t kUidX = 1, kUidW = 2, kUidY = 3;

struct Case {
  const char* key;   // the command line's name
  const char* name;  // gpu_conv_test's
  Dims x, w;         // NCHW, KCRS; groups = X's C / W's C
  std::int64_t padding, stride;
  std::uint32_t seed;

  [[nodiscard]] Dims y() const {
    const auto out = [&](std::size_t i) { return (x[i] + 2 * padding - w[i]) / stride + 1; };
    return {x[0], w[0], out(2), out(3)};
  }
};

const std::array<Case, 2> kCases{{
    {"plain", "bf16 NCHW conv_fprop 3x3", {2, 32, 16, 16}, {64, 32, 3, 3}, 1, 1, 203},
    {"grouped",
     "bf16 NCHW grouped conv_fprop, 4 groups, stride 2",
     {2, 32, 14, 14},
     {64, 8, 3, 3},
     1,
     2,
     252},
}};

// count values uniform in [-1, 1] rounded to BFloat16, as the test's random_tensor draws them:
// the bits, and their values.
struct Bf16 {
  std::vector<std::uint16_t> bits;
  std::vector<float> values;
};
Bf16 random_bf16(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  Bf16 t;
  for (std::size_t i = 0; i < count; ++i) {
    t.bits.push_back(dnngraph_bench::to_bits(dist(rng), true));
    t.values.push_back(dnngraph_bench::from_bits(t.bits.back(), true));
  }
  return t;
}

// Y = conv(X, W) in double, all packed NCHW: each output channel k reads its group's C / groups
// input channels.
std::vector<double> reference(const Case& c, const std::vector<float>& x,
                              const std::vector<float>& w) {
  const Dims y_dims = c.y();
  const std::int64_t per_group = c.w[1], out_per_group = c.w[0] / (c.x[1] / c.w[1]);
  std::vector<double> y(dnngraph_bench::element_count(y_dims));
  const auto at = [](const Dims& d, std::int64_t n, std::int64_t ch, std::int64_t h,
                     std::int64_t col) {
    return static_cast<std::size_t>(((n * d[1] + ch) * d[2] + h) * d[3] + col);
  };
  for (std::int64_t n = 0; n < y_dims[0]; ++n) {
    for (std::int64_t k = 0; k < y_dims[1]; ++k) {
      const std::int64_t first = k / out_per_group * per_group;
      for (std::int64_t p = 0; p < y_dims[2]; ++p) {
        for (std::int64_t q = 0; q < y_dims[3]; ++q) {
          double sum = 0;
          for (std::int64_t ch = 0; ch < per_group; ++ch) {
            for (std::int64_t r = 0; r < c.w[2]; ++r) {
              for (std::int64_t s = 0; s < c.w[3]; ++s) {
                const std::int64_t h = p * c.stride - c.padding + r;
                const std::int64_t col = q * c.stride - c.padding + s;
                if (h >= 0 && h < c.x[2] && col >= 0 && col < c.x[3]) {
                  sum += static_cast<double>(x[at(c.x, n, first + ch, h, col)]) *
                         w[at(c.w, k, ch, r, s)];
                }
              }
            }
          }
          y[at(y_dims, n, k, p, q)] = sum;
        }
      }
    }
  }
  return y;
}

std::string text(const Dims& d) {
  std::string s = "[";
  for (const std::int64_t v : d) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
  return s + "]";
}

bool run(cudnnHandle_t handle, const Case& c, const dnngraph_bench::PlanChoice& choice) {
  std::printf("%s: %s (X %s, W %s -> Y %s): ", c.key, c.name, text(c.x).c_str(), text(c.w).c_str(),
              text(c.y()).c_str());
  fe::graph::Graph graph;
  graph.set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const auto tensor = [&](const char* name, std::int64_t uid, const Dims& dims) {
    return graph.tensor(
        fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
            dnngraph_bench::packed(dims)));
  };
  auto y = graph.conv_fprop(tensor("X", kUidX, c.x), tensor("W", kUidW, c.w),
                            fe::graph::Conv_fprop_attributes()
                                .set_name("conv_fprop")
                                .set_padding({c.padding, c.padding})
                                .set_stride({c.stride, c.stride})
                                .set_dilation({1, 1}));
  y->set_output(true).set_name("Y").set_uid(kUidY).set_dim(c.y()).set_stride(
      dnngraph_bench::packed(c.y()));
  if (!dnngraph_bench::build_and_print(graph, handle, choice)) {
    return false;
  }

  std::mt19937 rng(c.seed);
  const Bf16 x = random_bf16(dnngraph_bench::element_count(c.x), rng);
  const Bf16 w = random_bf16(dnngraph_bench::element_count(c.w), rng);
  const std::size_t y_count = dnngraph_bench::element_count(c.y());
  Device x_device(x.bits);
  Device w_device(w.bits);
  Device y_device(y_count * sizeof(std::uint16_t));
  if (!y_device.fill(0xFF)) {  // NaN until written (beta is 0: cuDNN does not read Y)
    return false;
  }
  std::unordered_map<std::int64_t, void*> pack{
      {kUidX, x_device.ptr}, {kUidW, w_device.ptr}, {kUidY, y_device.ptr}};
  if (const std::string error =
          dnngraph_bench::execute(graph, handle, pack, {}, choice.zero_workspace);
      !error.empty()) {
    std::printf("  %s\n", error.c_str());
    return false;
  }
  const std::vector<std::uint16_t> got = y_device.read<std::uint16_t>(y_count);
  const std::vector<double> want = reference(c, x.values, w.values);
  dnngraph_bench::Worst worst;
  for (std::size_t i = 0; i < y_count; ++i) {
    worst.add_within(dnngraph_bench::from_bits(got[i], true), want[i], 4e-2, 4e-2);
  }
  const bool agrees = worst.outside == 0;
  std::printf("  Y NaN %zu of %zu, max |Y - reference| %.3g, %zu outside 4e-2 + 4e-2 |y|: %s\n",
              worst.nan, worst.compared, worst.max_error, worst.outside,
              agrees ? "agrees" : "DIFFERS");
  return agrees;
}

}  // namespace

int main(int argc, char** argv) {
  return dnngraph_bench::run_cases(argc, argv, "gpu_conv_test's BFloat16 NCHW conv_fprop", kCases,
                                   run);
}
