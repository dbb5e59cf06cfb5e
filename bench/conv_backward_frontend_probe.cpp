// gpu_conv_test's backward convolutions through cudnn-frontend's own conv_dgrad and conv_wgrad on
// the same cuDNN: the reference for the cases racecheck did not finish on cuDNN 9.28.1 (past 900 s
// a case in gpu_conv_test, past 1,400 s in gpu_plan_serialize_test's round trips: docs/
// development.md, "The GPU sanitizers over the suite"). The cases are support/conv_cases.hpp's,
// every tensor channels-last, intermediates and compute Float, padding 1, stride 1:
//   half_dgrad, half_wgrad        Half, X [2, 16, 16, 16], W [32, 16, 3, 3] (half_nhwc_dgrad/wgrad)
//   float_dgrad, float_wgrad      the same in Float (cuDNN may use TF32)
//   grouped_dgrad, grouped_wgrad  Half, X [2, 32, 14, 14], W [64, 8, 3, 3]: 4 groups
// dgrad takes dY and W and gives dX; wgrad takes dY and X and gives dW. Inputs uniform in
// [-1, 1] rounded to the type, dY first, from a generator seeded with the test's seed (every byte
// written); the output is
// filled with 0xFF (NaN) and compared with a CPU convolution in double within the test's
// 1e-2 + 1e-2 |y|. Prints the plan choice and, per case, the configs offered and the one built
// (or with --every, a line per candidate as it ends: under racecheck the candidate that does not
// end is the one after the last line):
//   compute-sanitizer --tool racecheck bundle/bench_conv_backward_frontend_probe half_dgrad --every
// Arguments: case names (default all), --every, and the plan options of frontend_probe.hpp
// (--heuristics, --index N, --engine "engine N, knobs {...}" as gpu_conv_test's log prints the
// plan with --log_level=message, --zero-workspace). Exit 0 when every case built, ran and agreed
// (with --every: every candidate that built); 1 otherwise; 2 for a bad command line; 77 without
// a CUDA device.
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

constexpr std::int64_t kUidDy = 1, kUidOther = 2, kUidOut = 3;

struct Case {
  const char* key;   // the command line's name
  const char* name;  // gpu_conv_test's
  bool wgrad;        // else dgrad
  bool half;         // else Float
  Dims x, w;         // logical NCHW, KCRS; groups = X's C / W's C
  std::uint32_t seed;

  [[nodiscard]] Dims y() const { return {x[0], w[0], x[2] + 2 - w[2] + 1, x[3] + 2 - w[3] + 1}; }
  [[nodiscard]] std::int64_t groups() const { return x[1] / w[1]; }
};

const std::array<Case, 6> kCases{{
    {"half_dgrad", "half NHWC conv_dgrad 3x3", false, true, {2, 16, 16, 16}, {32, 16, 3, 3}, 221},
    {"half_wgrad", "half NHWC conv_wgrad 3x3", true, true, {2, 16, 16, 16}, {32, 16, 3, 3}, 231},
    {"float_dgrad",
     "float NHWC conv_dgrad 3x3",
     false,
     false,
     {2, 16, 16, 16},
     {32, 16, 3, 3},
     242},
    {"float_wgrad", "float NHWC conv_wgrad 3x3", true, false, {2, 16, 16, 16}, {32, 16, 3, 3}, 243},
    {"grouped_dgrad",
     "half NHWC grouped conv_dgrad, 4 groups",
     false,
     true,
     {2, 32, 14, 14},
     {64, 8, 3, 3},
     254},
    {"grouped_wgrad",
     "half NHWC grouped conv_wgrad, 4 groups",
     true,
     true,
     {2, 32, 14, 14},
     {64, 8, 3, 3},
     255},
}};

// Channels-last strides of a logical NCHW (KCRS) tensor, and the memory offset of an element.
Dims nhwc(const Dims& d) { return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}; }
std::size_t at(const Dims& d, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  const Dims s = nhwc(d);
  return static_cast<std::size_t>(n * s[0] + c * s[1] + h * s[2] + w * s[3]);
}

// An input's bits as the device takes them (Half, or Float) and its values.
struct Input {
  std::vector<std::uint16_t> half;
  std::vector<float> values;  // also the Float tensor's bits
};
Input random_input(const Case& c, const Dims& dims, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  Input in;
  for (std::size_t i = 0; i < dnngraph_bench::element_count(dims); ++i) {
    const float v = dist(rng);
    if (c.half) {
      in.half.push_back(dnngraph_bench::to_bits(v, false));
      in.values.push_back(dnngraph_bench::from_bits(in.half.back(), false));
    } else {
      in.values.push_back(v);
    }
  }
  return in;
}

// dX (dgrad, from dY and W) or dW (wgrad, from dY and X) in double, in memory order: the
// forward's sum over the same taps, padding 1, stride 1.
std::vector<double> reference(const Case& c, const std::vector<float>& dy,
                              const std::vector<float>& other) {
  const Dims y = c.y();
  const std::int64_t per_group = c.w[1], out_per_group = c.w[0] / c.groups();
  std::vector<double> out(dnngraph_bench::element_count(c.wgrad ? c.w : c.x), 0.0);
  for (std::int64_t n = 0; n < y[0]; ++n) {
    for (std::int64_t k = 0; k < y[1]; ++k) {
      const std::int64_t first = k / out_per_group * per_group;
      for (std::int64_t p = 0; p < y[2]; ++p) {
        for (std::int64_t q = 0; q < y[3]; ++q) {
          const double g = dy[at(y, n, k, p, q)];
          for (std::int64_t ch = 0; ch < per_group; ++ch) {
            for (std::int64_t r = 0; r < c.w[2]; ++r) {
              for (std::int64_t s = 0; s < c.w[3]; ++s) {
                const std::int64_t h = p - 1 + r, col = q - 1 + s;
                if (h < 0 || h >= c.x[2] || col < 0 || col >= c.x[3]) continue;
                if (c.wgrad) {
                  out[at(c.w, k, ch, r, s)] += g * other[at(c.x, n, first + ch, h, col)];
                } else {
                  out[at(c.x, n, first + ch, h, col)] += g * other[at(c.w, k, ch, r, s)];
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

void describe(fe::graph::Graph& graph, const Case& c) {
  graph.set_io_data_type(c.half ? fe::DataType_t::HALF : fe::DataType_t::FLOAT)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const auto tensor = [&](const char* name, std::int64_t uid, const Dims& dims) {
    return graph.tensor(
        fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(
            nhwc(dims)));
  };
  auto dy = tensor("dY", kUidDy, c.y());
  const Dims out_dims = c.wgrad ? c.w : c.x;
  auto out = c.wgrad ? graph.conv_wgrad(dy, tensor("X", kUidOther, c.x),
                                        fe::graph::Conv_wgrad_attributes()
                                            .set_name("conv_wgrad")
                                            .set_padding({1, 1})
                                            .set_stride({1, 1})
                                            .set_dilation({1, 1}))
                     : graph.conv_dgrad(dy, tensor("W", kUidOther, c.w),
                                        fe::graph::Conv_dgrad_attributes()
                                            .set_name("conv_dgrad")
                                            .set_padding({1, 1})
                                            .set_stride({1, 1})
                                            .set_dilation({1, 1}));
  out->set_output(true)
      .set_name(c.wgrad ? "dW" : "dX")
      .set_uid(kUidOut)
      .set_dim(out_dims)
      .set_stride(nhwc(out_dims));
}

// Executes the built graph once and compares its output with `want`; prints the comparison.
bool execute_and_check(fe::graph::Graph& graph, cudnnHandle_t handle, const Case& c,
                       const Input& dy, const Input& other, const std::vector<double>& want,
                       bool zero_workspace) {
  const std::size_t element_bytes = c.half ? 2 : 4;
  Device dy_device = c.half ? Device(dy.half) : Device(dy.values);
  Device other_device = c.half ? Device(other.half) : Device(other.values);
  Device out(want.size() * element_bytes);
  if (!out.fill(0xFF)) {
    return false;
  }
  std::unordered_map<std::int64_t, void*> pack{
      {kUidDy, dy_device.ptr}, {kUidOther, other_device.ptr}, {kUidOut, out.ptr}};
  if (const std::string error = dnngraph_bench::execute(graph, handle, pack, {}, zero_workspace);
      !error.empty()) {
    std::printf("%s", error.c_str());
    return false;
  }
  std::vector<double> got;
  if (c.half) {
    for (const std::uint16_t bits : out.read<std::uint16_t>(want.size())) {
      got.push_back(dnngraph_bench::from_bits(bits, false));
    }
  } else {
    for (const float v : out.read<float>(want.size())) got.push_back(v);
  }
  dnngraph_bench::Worst worst;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst.add_within(got[i], want[i], 1e-2, 1e-2);
  }
  std::printf("%s NaN %zu of %zu, max |got - reference| %.3g, %zu outside 1e-2 + 1e-2 |y|: %s",
              c.wgrad ? "dW" : "dX", worst.nan, worst.compared, worst.max_error, worst.outside,
              worst.outside == 0 ? "agrees" : "DIFFERS");
  return worst.outside == 0;
}

bool run(cudnnHandle_t handle, const Case& c, const dnngraph_bench::PlanChoice& choice) {
  std::printf("%s: %s\n", c.key, c.name);
  std::mt19937 rng(c.seed);
  const Input dy = random_input(c, c.y(), rng);
  const Input other = random_input(c, c.wgrad ? c.x : c.w, rng);
  const std::vector<double> want = reference(c, dy.values, other.values);
  return dnngraph_bench::build_and_check(
      handle, choice, [&](fe::graph::Graph& graph) { describe(graph, c); },
      [&](fe::graph::Graph& graph) {
        return execute_and_check(graph, handle, c, dy, other, want, choice.zero_workspace);
      });
}

}  // namespace

int main(int argc, char** argv) {
  return dnngraph_bench::run_cases(argc, argv, "gpu_conv_test's backward convolutions", kCases, run,
                                   /*every_allowed=*/true);
}
