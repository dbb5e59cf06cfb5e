// dnngraph's findings on concatenate and slice checked against the reference: cudnn-frontend's
// own concatenate and slice nodes on the same cuDNN and GPU. dnngraph measured on the H200
// (cuDNN 9.19 and 9.27): concatenate alone gets no engine config (in place behind a 1x1
// conv_fprop it runs); slice alone or before ReLU gets none on 9.27, slice -> matmul -> ReLU runs.
// The graphs: concatenate of two Half NHWC [1, 8, 4, 4] along C, and the frontend's own
// "membound" sample (Float NHWC [2, 4, 8, 8] twice, Y strides left to the frontend); slice of
// Half [2, 16, 32] rows 4..12 alone (Y packed, as dnngraph lays it out, and with the strides the
// frontend infers, X's), before ReLU, and into a matmul ([2, 8, 32] x [2, 32, 16]) then ReLU, as
// the frontend's sample "Slice gemm". Per graph and heuristics mode (A, Fallback) it prints
// whether a plan was built or the frontend's error, and for a plan the max |Y - CPU reference|
// and Y's NaN count (Y is NaN until written). It first says how the frontend lowers slice here:
// cuDNN's SLICE operation when both the cuDNN it was compiled against and the loaded one are
// 9.22 or newer, else no operation at all (Y is X's pointer plus an offset in the variant pack).
// Exit 0 whatever the numbers; 1 on a setup failure. Built only with cudnn-frontend's headers
// (DNNGRAPH_CUDNN_FRONTEND_INCLUDE).
#include "frontend_probe.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

namespace fe = cudnn_frontend;
using dnngraph_bench::Dims;
using Tensor = std::shared_ptr<fe::graph::Tensor_attributes>;

constexpr std::int64_t kUidY = 100;

// One tensor's memory on the host: its values as floats at their offsets (dims and strides
// give where each element lies).
struct Host {
  Dims dims, strides;
  std::vector<float> values;

  Host(Dims d, Dims s) : dims(std::move(d)), strides(std::move(s)) {
    std::int64_t span = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      span += (dims[i] - 1) * strides[i];
    }
    values.assign(static_cast<std::size_t>(span), 0.0F);
  }
  [[nodiscard]] std::size_t offset(const Dims& index) const {
    std::int64_t at = 0;
    for (std::size_t i = 0; i < index.size(); ++i) {
      at += index[i] * strides[i];
    }
    return static_cast<std::size_t>(at);
  }
  [[nodiscard]] double at(const Dims& index) const { return values[offset(index)]; }
  [[nodiscard]] std::int64_t count() const {
    std::int64_t n = 1;
    for (const std::int64_t d : dims) n *= d;
    return n;
  }
  // The row-major index of element e of dims.
  [[nodiscard]] Dims index(std::int64_t e) const {
    Dims index(dims.size());
    for (std::size_t i = dims.size(); i-- > 0;) {
      index[i] = e % dims[i];
      e /= dims[i];
    }
    return index;
  }
};

// Bytes of values in the io type (Half or Float), and back.
std::vector<std::uint8_t> encode(const std::vector<float>& values, bool half) {
  std::vector<std::uint8_t> bytes(values.size() * (half ? 2 : 4));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (half) {
      const std::uint16_t bits = dnngraph_bench::to_bits(values[i], false);
      std::memcpy(&bytes[i * 2], &bits, 2);
    } else {
      std::memcpy(&bytes[i * 4], &values[i], 4);
    }
  }
  return bytes;
}
float decode(const std::vector<std::uint8_t>& bytes, std::size_t i, bool half) {
  if (half) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, &bytes[i * 2], 2);
    return dnngraph_bench::from_bits(bits, false);
  }
  float v = 0;
  std::memcpy(&v, &bytes[i * 4], 4);
  return v;
}

struct Spec {
  std::int64_t uid;
  Dims dims, strides;  // an output's strides may be empty: the frontend infers them
};

struct Case {
  std::string name;
  fe::DataType_t type;  // io type: Half or Float (intermediates and compute Float)
  std::vector<Spec> inputs;
  Spec y;
  // Adds the case's nodes to the inputs; returns Y.
  std::function<Tensor(fe::graph::Graph&, const std::vector<Tensor>&)> make;
  // Y's value at an index of its dims, from the inputs.
  std::function<double(const std::vector<Host>&, const Dims&)> want;
  double tolerance = 0;  // copies are exact
};

// Builds the case under one heuristics mode and, with a plan, runs it once against the reference.
void run(cudnnHandle_t handle, const Case& c, fe::HeurMode_t mode) {
  std::printf("%s, heuristics %s: ", c.name.c_str(), dnngraph_bench::mode_name(mode));
  const bool half = c.type == fe::DataType_t::HALF;
  fe::graph::Graph graph;
  graph.set_io_data_type(c.type)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  std::vector<Tensor> xs;
  for (const Spec& s : c.inputs) {
    xs.push_back(graph.tensor(fe::graph::Tensor_attributes()
                                  .set_name("X" + std::to_string(s.uid))
                                  .set_uid(s.uid)
                                  .set_dim(s.dims)
                                  .set_stride(s.strides)
                                  .set_data_type(c.type)));
  }
  Tensor y = c.make(graph, xs);
  y->set_output(true).set_name("Y").set_uid(kUidY).set_dim(c.y.dims).set_data_type(c.type);
  if (!c.y.strides.empty()) {
    y->set_stride(c.y.strides);
  }
  if (!dnngraph_bench::print_built(dnngraph_bench::build(graph, handle, {mode}))) {
    return;
  }

  std::mt19937 gen(5);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  std::vector<Host> hosts;
  std::vector<std::unique_ptr<dnngraph_bench::Device>> buffers;
  std::unordered_map<std::int64_t, void*> pack;
  for (const Spec& s : c.inputs) {
    Host& host = hosts.emplace_back(s.dims, s.strides);
    for (float& v : host.values) {
      v = half ? dnngraph_bench::round_trip(uniform(gen), false) : uniform(gen);
    }
    buffers.push_back(std::make_unique<dnngraph_bench::Device>(encode(host.values, half)));
    pack.emplace(s.uid, buffers.back()->ptr);
  }
  const Host y_layout(c.y.dims, y->get_stride());  // the strides the frontend settled on
  const std::size_t y_bytes = y_layout.values.size() * (half ? 2 : 4);
  dnngraph_bench::Device y_device(y_bytes);
  dnngraph_bench::cuda_ok(cudaMemset(y_device.ptr, 0xFF, y_bytes), "memset");  // NaN until written
  pack.emplace(kUidY, y_device.ptr);
  if (const std::string error = dnngraph_bench::execute(graph, handle, pack); !error.empty()) {
    std::printf("%s\n", error.c_str());
    return;
  }
  const std::vector<std::uint8_t> y_bytes_back = y_device.read<std::uint8_t>(y_bytes);
  dnngraph_bench::Worst worst;
  for (std::int64_t e = 0; e < y_layout.count(); ++e) {
    const Dims index = y_layout.index(e);
    worst.add(decode(y_bytes_back, y_layout.offset(index), half), c.want(hosts, index));
  }
  std::printf("Y NaN %zu of %zu, max |Y - reference| %.3g: %s\n", worst.nan, worst.compared,
              worst.max_error, worst.within(c.tolerance) ? "agrees" : "DIFFERS");
}

Dims nhwc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  (void)n;
  return {c * h * w, 1, c * w, c};
}

// Y = concatenate(X0, X1) along C, both NHWC [n, c, h, w].
Case concat_case(std::string name, fe::DataType_t type, std::int64_t n, std::int64_t c,
                 std::int64_t h, std::int64_t w, bool y_strides) {
  const Dims y_dims{n, 2 * c, h, w};
  return Case{
      .name = std::move(name),
      .type = type,
      .inputs = {{1, {n, c, h, w}, nhwc(n, c, h, w)}, {2, {n, c, h, w}, nhwc(n, c, h, w)}},
      .y = {kUidY, y_dims, y_strides ? nhwc(n, 2 * c, h, w) : Dims{}},
      .make =
          [](fe::graph::Graph& g, const std::vector<Tensor>& x) {
            return g.concatenate(
                x, fe::graph::Concatenate_attributes().set_name("concat").set_axis(1));
          },
      .want =
          [c](const std::vector<Host>& in, const Dims& i) {
            return i[1] < c ? in[0].at(i) : in[1].at({i[0], i[1] - c, i[2], i[3]});
          },
  };
}

// What follows slice(X) in the graph; X Half [2, 16, 32] packed, the slice rows 4..12.
enum class Then : std::uint8_t { Nothing, Relu, MatmulRelu };
constexpr std::int64_t kRows = 16, kCols = 32, kFirst = 4, kLast = 12, kN = 16;

Case slice_case(std::string name, Then then, bool y_packed) {
  const Dims x_dims{2, kRows, kCols};
  const Dims sliced{2, kLast - kFirst, kCols};
  Case c{
      .name = std::move(name),
      .type = fe::DataType_t::HALF,
      .inputs = {{1, x_dims, {kRows * kCols, kCols, 1}}},
      .y = {kUidY, sliced, y_packed ? Dims{sliced[1] * kCols, kCols, 1} : Dims{}},
      .make =
          [then](fe::graph::Graph& g, const std::vector<Tensor>& x) {
            auto s = g.slice(x[0], fe::graph::Slice_attributes().set_name("slice").set_slices(
                                       {{0, 2}, {kFirst, kLast}, {0, kCols}}));
            s->set_data_type(fe::DataType_t::HALF);
            const auto relu = fe::graph::Pointwise_attributes().set_name("relu").set_mode(
                fe::PointwiseMode_t::RELU_FWD);
            if (then == Then::Relu) {
              return g.pointwise(s, relu);
            }
            if (then == Then::MatmulRelu) {
              auto product = g.matmul(s, x[1], fe::graph::Matmul_attributes().set_name("mm"));
              product->set_data_type(fe::DataType_t::FLOAT);
              return g.pointwise(product, relu);
            }
            return s;
          },
      .want =
          [then](const std::vector<Host>& in, const Dims& i) {
            if (then != Then::MatmulRelu) {
              const double v = in[0].at({i[0], i[1] + kFirst, i[2]});
              return then == Then::Relu ? std::max(v, 0.0) : v;
            }
            double acc = 0;
            for (std::int64_t k = 0; k < kCols; ++k) {
              acc += in[0].at({i[0], i[1] + kFirst, k}) * in[1].at({i[0], k, i[2]});
            }
            return std::max(acc, 0.0);
          },
  };
  if (then == Then::MatmulRelu) {
    c.inputs.push_back({2, {2, kCols, kN}, {kCols * kN, kN, 1}});
    c.y = {kUidY, {2, kLast - kFirst, kN}, {(kLast - kFirst) * kN, kN, 1}};
    c.tolerance = 1e-2;  // K 32, Float accumulation, Half output
  }
  return c;
}

}  // namespace

int main() {
  const auto backend = fe::detail::get_backend_version();
  const auto compiled = fe::detail::get_compiled_version();
  std::printf("# cudnn-frontend %d, cuDNN %lld (compiled against %lld): concatenate and slice\n",
              CUDNN_FRONTEND_VERSION, static_cast<long long>(backend),
              static_cast<long long>(compiled));
  // The frontend's own test (node/slice.h, create_cudnn_tensors_node and
  // collect_variant_pack_replacements_node).
  std::printf(
      "# concatenate lowers to CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR (cuDNN >= 9.7); slice "
      "lowers to %s\n",
      backend >= 92200 && compiled >= 92200
          ? "CUDNN_BACKEND_OPERATION_SLICE_DESCRIPTOR (cuDNN >= 9.22 compiled and loaded)"
          : "no operation: Y made non-virtual and given X's pointer plus the slice's byte offset "
            "(cuDNN below 9.22 compiled or loaded)");
  cudnnHandle_t handle = dnngraph_bench::open_handle();
  if (handle == nullptr) {
    return 1;
  }
  const std::vector<Case> cases{
      concat_case("(a) concatenate alone, Half NHWC [1, 8, 4, 4] + [1, 8, 4, 4] -> [1, 16, 4, 4]",
                  fe::DataType_t::HALF, 1, 8, 4, 4, true),
      concat_case("(a') concatenate alone, the frontend's membound sample: Float NHWC [2, 4, 8, 8] "
                  "twice, Y strides inferred",
                  fe::DataType_t::FLOAT, 2, 4, 8, 8, false),
      slice_case("(b) slice alone, Half [2, 16, 32][:, 4:12, :], Y packed", Then::Nothing, true),
      slice_case("(b') slice alone, Y strides inferred (X's)", Then::Nothing, false),
      slice_case("(b'') slice -> ReLU, Y packed", Then::Relu, true),
      slice_case("(c) slice -> matmul [2, 8, 32] x [2, 32, 16] -> ReLU", Then::MatmulRelu, true),
  };
  for (const Case& c : cases) {
    for (const fe::HeurMode_t mode : {fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}) {
      run(handle, c, mode);
    }
  }
  cudnnDestroy(handle);
  return 0;
}
