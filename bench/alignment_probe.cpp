// What cuDNN does with a device pointer that is not 16-byte aligned, and with an output written
// over an input. dnngraph declares every tensor 16-byte aligned (CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT);
// session 29's review found it checked neither alignment nor aliasing. A bf16 matmul + bias +
// ReLU, [1, 64, 64] x [1, 64, 64], built once (static shapes) under one heuristics mode, runs
// with one buffer (A, B, bias or Y) moved 2, 4 or 8 bytes off a 256-byte boundary (0: the
// control), every output checked against the CPU. Session 30 measured those (cuDNN 9.19.0 and
// 9.28.1: success, then a device fault or wrong values), and execute() now refuses such a
// pointer: the moved cases answer InvalidAttribute. The alias cases (session 30, not yet run)
// write Y over A or over B of that graph (Y@A, Y@B), and over X of an elementwise
// Y = ReLU(X + bias) (Y@X): whether cuDNN computes in place, before dnngraph refuses aliasing or
// allows it where it works. Each case is a process of its own: a misaligned access can leave the
// CUDA context unusable. One line per case: the plan, what execute() returned, what the device's
// synchronize returned, and how many of the 4,096 outputs were wrong (not read when the
// synchronize failed).
//   bench_alignment_probe                      every case, heuristics A and Fallback
//   bench_alignment_probe MODE TENSOR OFFSET   one case (what the first form runs): MODE
//                                              A|Fallback, TENSOR A|B|bias|Y with OFFSET 0 to
//                                              255, or Y@A|Y@B|Y@X with OFFSET 0
// Exit 77 without a CUDA device, 1 when a case did not run to its line, 2 for a bad command line.
import dnngraph;

#include "arguments.hpp"
#include "bf16_matmul.hpp"

#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using dnngraph_bench::DeviceBuffer;
using dnngraph_bench::MatmulShape;

constexpr int exit_skip = 77;
constexpr std::size_t slack = 256;  // each buffer's room to move its pointer in
constexpr MatmulShape shape{1, 64, 64, 64};
constexpr std::array<std::string_view, 4> tensors{"A", "B", "bias", "Y"};
constexpr std::array<int, 4> offsets{0, 2, 4, 8};
// Y written over an input's buffer (aligned): over A or B of the matmul, and over X of an
// elementwise Y = ReLU(X + bias), [1, 64, 64] each: whether cuDNN computes in place.
constexpr std::array<std::string_view, 3> aliases{"Y@A", "Y@B", "Y@X"};

// Y = ReLU(A x B + bias), or with_matmul false the elementwise Y = ReLU(X + bias): A or X
// [1, 64, 64] (uid 1), B [1, 64, 64] (uid 2), bias [1, 1, 64] (uid 4), Y (uid 3); bf16 in and
// out, Float math.
dnngraph::Graph bias_relu_graph(bool with_matmul) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::BFloat16).set_compute_data_type(DataType::Float);
  auto a = g.tensor(
      TensorAttributes().set_name(with_matmul ? "A" : "X").set_uid(1).set_dim({1, 64, 64}));
  auto b = with_matmul ? g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 64, 64}))
                       : nullptr;
  auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, 64}));
  auto y = g.pointwise(with_matmul ? g.matmul(a, b) : a, bias,
                       PointwiseAttributes().set_mode(PointwiseMode::Add));
  g.pointwise(y, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd))
      ->set_output(true)
      .set_uid(3)
      .set_name("Y");
  return g;
}

std::vector<std::uint16_t> values(std::size_t count, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(-8, 8);
  std::vector<std::uint16_t> v(count);
  for (auto& x : v) {
    x = dnngraph_bench::to_bf16(static_cast<float>(pick(rng)) / 8.0F);
  }
  return v;
}

// One case, in this process; 0 once its line is printed.
int one_case(dnngraph::HeuristicMode mode, std::string_view moved, int offset) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return exit_skip;
  }
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("Handle::create: %s\n", handle.error().message.c_str());
    return 1;
  }
  const bool elementwise = moved == "Y@X";
  dnngraph::Graph g = bias_relu_graph(!elementwise);
  if (auto built = g.build(*handle, {mode}); !built) {
    std::printf("%s %s +%d: build: %s\n", std::string(dnngraph::to_string(mode)).c_str(),
                std::string(moved).c_str(), offset, built.error().message.c_str());
    return 1;
  }
  const auto count = [](std::int64_t n) { return static_cast<std::size_t>(n); };
  std::mt19937 rng(29);
  const auto a = values(count(shape.m * shape.k), rng);
  const auto b = values(count(shape.k * shape.n), rng);
  const auto bias = values(count(shape.n), rng);
  std::vector<std::uint16_t> y(count(shape.m * shape.n));
  const std::int64_t workspace = g.get_workspace_size().value_or(0);
  DeviceBuffer da(a.size() * 2 + slack), db(b.size() * 2 + slack), dbias(bias.size() * 2 + slack),
      dy(y.size() * 2 + slack), dws(static_cast<std::size_t>(std::max<std::int64_t>(workspace, 1)));
  for (void* p : {da.p, db.p, dbias.p, dy.p, dws.p}) {
    if (p == nullptr) {
      std::printf("cudaMalloc failed\n");
      return 1;
    }
  }
  const auto at = [&](std::string_view name, void* base) {
    return static_cast<void*>(static_cast<char*>(base) + (name == moved ? offset : 0));
  };
  void* pa = at("A", da.p);
  void* pb = at("B", db.p);
  void* pbias = at("bias", dbias.p);
  void* py = moved == "Y@B" ? pb : moved.starts_with("Y@") ? pa : at("Y", dy.p);
  cudaMemcpy(pa, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(pb, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(pbias, bias.data(), bias.size() * 2, cudaMemcpyHostToDevice);
  if (!moved.starts_with("Y@")) {
    cudaMemset(py, 0xFF, y.size() * 2);  // NaN: an output never written counts as wrong
  }
  std::unordered_map<std::int64_t, void*> pack{{1, pa}, {4, pbias}, {3, py}};
  if (!elementwise) {
    pack.emplace(2, pb);
  }
  const auto ran = g.execute(*handle, pack, dws.p);
  const cudaError_t synced = cudaDeviceSynchronize();
  std::string wrong = "not read";
  if (synced == cudaSuccess &&
      cudaMemcpy(y.data(), py, y.size() * 2, cudaMemcpyDeviceToHost) == cudaSuccess) {
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < shape.m; ++i) {
      for (std::int64_t j = 0; j < shape.n; ++j) {
        const double ref =
            elementwise
                ? std::max(0.0, double(dnngraph_bench::from_bf16(a[count(i * shape.k + j)])) +
                                    dnngraph_bench::from_bf16(bias[count(j)]))
                : dnngraph_bench::matmul_reference(shape, a, b, bias, true, 0, i, j);
        const double got = dnngraph_bench::from_bf16(y[count(i * shape.n + j)]);
        n += dnngraph_bench::close_to_reference(got, ref) ? 0 : 1;
      }
    }
    wrong = std::to_string(n) + " of " + std::to_string(y.size());
  }
  const std::string executed =
      ran ? "ok" : std::string(dnngraph::to_string(ran.error().code)) + " " + ran.error().message;
  const auto info = g.plan_info();
  std::printf("%s %s +%d: plan %s; execute %s; synchronize %s; wrong %s\n",
              std::string(dnngraph::to_string(mode)).c_str(), std::string(moved).c_str(), offset,
              info ? info->describe().c_str() : "?", executed.c_str(),
              synced == cudaSuccess ? "ok" : cudaGetErrorString(synced), wrong.c_str());
  std::fflush(stdout);
  return 0;
}

// Runs `self MODE TENSOR OFFSET` in a child process; its exit code.
int in_child(const char* self, std::string_view mode, std::string_view tensor, int offset) {
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::string name(self), m(mode), t(tensor), o = std::to_string(offset);
    std::array<char*, 5> args{name.data(), m.data(), t.data(), o.data(), nullptr};
    ::execv("/proc/self/exe", args.data());
    _exit(1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// Whether a case ran to its line; says so when it did not.
bool reported(std::string_view mode, std::string_view tensor, int offset, int code) {
  if (code != 0) {
    std::printf("%s %s +%d: the case ended with code %d\n", std::string(mode).c_str(),
                std::string(tensor).c_str(), offset, code);
  }
  return code == 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_alignment_probe [A|Fallback A|B|bias|Y OFFSET(0-255) | "
               "A|Fallback Y@A|Y@B|Y@X 0]\n");
  return 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  const std::span<char*> args(argv, static_cast<std::size_t>(argc));
  if (args.size() == 4) {
    const std::string_view mode = args[1];
    const std::string_view tensor = args[2];
    const auto offset = dnngraph_bench::whole_number(args[3], 0, 255);
    const bool known_tensor = std::ranges::find(tensors, tensor) != tensors.end();
    const bool alias = std::ranges::find(aliases, tensor) != aliases.end();
    if ((mode != "A" && mode != "Fallback") || !(known_tensor || alias) || !offset ||
        (alias && *offset != 0)) {
      return usage();
    }
    return one_case(mode == "A" ? dnngraph::HeuristicMode::A : dnngraph::HeuristicMode::Fallback,
                    tensor, static_cast<int>(*offset));
  }
  if (args.size() != 1) {
    return usage();
  }
  // The parent loads neither CUDA nor cuDNN: each case starts clean.
  std::printf(
      "a misaligned buffer, bf16 matmul + bias + ReLU [1, 64, 64] x [1, 64, 64]; then Y "
      "over an input (Y@X: Y = ReLU(X + bias))\n");
  int result = 0;
  for (const std::string_view mode : {"A", "Fallback"}) {
    for (const std::string_view tensor : tensors) {
      for (const int offset : offsets) {
        if (tensor != "A" && offset == 0) {
          continue;  // one control per mode
        }
        const int code = in_child(args[0], mode, tensor, offset);
        if (code == exit_skip) {
          return exit_skip;
        }
        result = reported(mode, tensor, offset, code) ? result : 1;
      }
    }
    for (const std::string_view alias : aliases) {
      const int code = in_child(args[0], mode, alias, 0);
      result = reported(mode, alias, 0, code) ? result : 1;
    }
  }
  return result;
}
