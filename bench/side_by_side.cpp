// dnngraph, cudnn-frontend (when compiled in: DNNGRAPH_CUDNN_FRONTEND_INCLUDE) and the
// direct-backend floor, case by case in one process, same cuDNN, same shapes, same heuristics
// modes, taking turns so drift cancels. Every result is one JSON line ("{"case": ...}") for
// scripts/perf-charts; the human-readable lines start with "#".
//   bench_side_by_side [--quick]       every case (children for the first-build-after-load case)
//   bench_side_by_side --child=STEP IMPL FILE   one process of that case (what the parent runs)
// The floor is what the same work costs with the fewest calls through dnngraph's backend layer
// (the thin typed wrapper of cuDNN's backend API): no graph model, no checks, a variant pack made
// once, a plan rebuilt from a known engine config.
#include "api/dnngraph.hpp"
#include "backend/engine.hpp"
#include "backend/engine_config.hpp"
#include "backend/engine_heuristics.hpp"
#include "backend/execution_plan.hpp"
#include "backend/kernel_cache.hpp"
#include "backend/knob_choice.hpp"
#include "backend/matmul.hpp"
#include "backend/operation_graph.hpp"
#include "backend/operation_matmul.hpp"
#include "backend/operation_pointwise.hpp"
#include "backend/pointwise.hpp"
#include "backend/tensor.hpp"
#include "backend/variant_pack.hpp"
#include "bench/timing.hpp"
#include "detail/cache/kernel_cache_json.hpp"

// bench/CMakeLists.txt defines it to 1 when cudnn-frontend's headers were found.
#ifndef DNNGRAPH_WITH_CUDNN_FRONTEND
#define DNNGRAPH_WITH_CUDNN_FRONTEND 0
#endif
#if DNNGRAPH_WITH_CUDNN_FRONTEND
#include <cudnn_frontend.h>
#endif

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using dnngraph_bench::Clock;
using dnngraph_bench::median;
using dnngraph_bench::ms_since;
using Dims = std::vector<std::int64_t>;
namespace be = dnngraph::backend;

constexpr bool with_frontend = DNNGRAPH_WITH_CUDNN_FRONTEND != 0;

void emit(std::string_view what, std::string_view impl, std::string_view fields) {
  std::printf("{\"case\": \"%.*s\", \"impl\": \"%.*s\", %.*s}\n", static_cast<int>(what.size()),
              what.data(), static_cast<int>(impl.size()), impl.data(),
              static_cast<int>(fields.size()), fields.data());
  std::fflush(stdout);
}

std::string num(std::string_view key, double value) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "\"%.*s\": %.4f", static_cast<int>(key.size()), key.data(), value);
  return buf;
}

Dims packed(const Dims& d) { return dnngraph::packed_strides(d); }

struct Shape {
  std::int64_t b, m, n, k;
};
// Matmul + bias + ReLU (b, m, n, k); conv + bias + ReLU NHWC C = K = 64, 3x3 (n, h, w).
constexpr std::array matmul_shapes{Shape{1, 1024, 1024, 1024}, Shape{1, 512, 512, 1024},
                                   Shape{2, 2048, 1024, 512},  Shape{1, 256, 4096, 1024},
                                   Shape{4, 1024, 512, 2048},  Shape{1, 4096, 4096, 1024},
                                   Shape{8, 128, 256, 512},    Shape{1, 768, 1536, 1024}};
constexpr std::array conv_shapes{Shape{1, 56, 56, 0},   Shape{2, 28, 28, 0}, Shape{4, 14, 14, 0},
                                 Shape{1, 112, 112, 0}, Shape{8, 7, 7, 0},   Shape{3, 40, 40, 0}};

// ---------------------------------------------------------------------------------- dnngraph

struct DgOptions {
  bool dynamic = false;
  bool overrides = false;
  bool cache_first = true;
  std::shared_ptr<dnngraph::KernelCache> cache;
};

dnngraph::Graph dg_matmul(const Shape& s, bool epilogue, const DgOptions& o) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(o.dynamic).set_override_shape_enabled(o.overrides);
  if (o.cache) {
    g.set_kernel_cache(o.cache).set_cache_first_plan_choice(o.cache_first);
  }
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({s.b, s.m, s.k}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({s.b, s.k, s.n}));
  auto c = g.matmul(a, b);
  if (!epilogue) {
    c->set_output(true).set_uid(3);
    return g;
  }
  auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim({1, 1, s.n}));
  auto d = g.pointwise(c, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd))
      ->set_output(true)
      .set_uid(3);
  return g;
}

dnngraph::Graph dg_conv(const Shape& s, const DgOptions& o) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(true).set_kernel_cache(o.cache).set_cache_first_plan_choice(
      o.cache_first);
  const Dims xd{s.b, 64, s.m, s.n}, wd{64, 64, 3, 3}, bd{1, 64, 1, 1};
  auto x = g.tensor(TensorAttributes().set_name("X").set_uid(1).set_dim(xd).set_stride(
      channels_last_strides(xd)));
  auto w = g.tensor(TensorAttributes().set_name("W").set_uid(2).set_dim(wd).set_stride(
      channels_last_strides(wd)));
  auto bias = g.tensor(TensorAttributes().set_name("bias").set_uid(4).set_dim(bd).set_stride(
      channels_last_strides(bd)));
  auto y = g.conv_fprop(x, w, ConvFpropAttributes().set_padding({1, 1}));
  auto d = g.pointwise(y, bias, PointwiseAttributes().set_mode(PointwiseMode::Add));
  g.pointwise(d, PointwiseAttributes().set_mode(PointwiseMode::ReluFwd))
      ->set_output(true)
      .set_uid(3);
  return g;
}

dnngraph::HeuristicMode dg_mode(std::string_view mode) {
  return mode == "A" ? dnngraph::HeuristicMode::A : dnngraph::HeuristicMode::Fallback;
}

// ---------------------------------------------------------------------------- cudnn-frontend

#if DNNGRAPH_WITH_CUDNN_FRONTEND
namespace fe = cudnn_frontend;

struct FeOptions {
  bool dynamic = false;
  bool overrides = false;
  std::shared_ptr<fe::KernelCache> cache;
};

std::unique_ptr<fe::graph::Graph> fe_matmul(const Shape& s, bool epilogue, const FeOptions& o) {
  auto g = std::make_unique<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  if (o.dynamic || o.overrides) {
    g->set_dynamic_shape_enabled(true);
  }
  if (o.overrides) {
    g->set_override_shape_enabled(true);
  }
  if (o.cache) {
    g->set_kernel_cache(o.cache);
  }
  const Dims ad{s.b, s.m, s.k}, bd{s.b, s.k, s.n};
  auto a = g->tensor(
      fe::graph::Tensor_attributes().set_name("A").set_uid(1).set_dim(ad).set_stride(packed(ad)));
  auto b = g->tensor(
      fe::graph::Tensor_attributes().set_name("B").set_uid(2).set_dim(bd).set_stride(packed(bd)));
  auto c =
      g->matmul(a, b, fe::graph::Matmul_attributes().set_compute_data_type(fe::DataType_t::FLOAT));
  if (!epilogue) {
    c->set_output(true).set_uid(3).set_data_type(fe::DataType_t::HALF);
    return g;
  }
  const Dims biasd{1, 1, s.n};
  auto bias = g->tensor(
      fe::graph::Tensor_attributes().set_name("bias").set_uid(4).set_dim(biasd).set_stride(
          packed(biasd)));
  auto d =
      g->pointwise(c, bias, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
  auto y =
      g->pointwise(d, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
  y->set_output(true).set_uid(3).set_data_type(fe::DataType_t::HALF);
  return g;
}

std::unique_ptr<fe::graph::Graph> fe_conv(const Shape& s, const FeOptions& o) {
  auto g = std::make_unique<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  g->set_dynamic_shape_enabled(true).set_kernel_cache(o.cache);
  const Dims xd{s.b, 64, s.m, s.n}, wd{64, 64, 3, 3}, bd{1, 64, 1, 1};
  auto x = g->tensor(fe::graph::Tensor_attributes().set_name("X").set_uid(1).set_dim(xd).set_stride(
      dnngraph::channels_last_strides(xd)));
  auto w = g->tensor(fe::graph::Tensor_attributes().set_name("W").set_uid(2).set_dim(wd).set_stride(
      dnngraph::channels_last_strides(wd)));
  auto bias =
      g->tensor(fe::graph::Tensor_attributes().set_name("bias").set_uid(4).set_dim(bd).set_stride(
          dnngraph::channels_last_strides(bd)));
  auto y = g->conv_fprop(
      x, w,
      fe::graph::Conv_fprop_attributes().set_padding({1, 1}).set_stride({1, 1}).set_dilation(
          {1, 1}));
  auto d =
      g->pointwise(y, bias, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
  auto out =
      g->pointwise(d, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
  out->set_output(true).set_uid(3).set_data_type(fe::DataType_t::HALF);
  return g;
}

fe::HeurMode_t fe_mode(std::string_view mode) {
  return mode == "A" ? fe::HeurMode_t::A : fe::HeurMode_t::FALLBACK;
}

bool fe_build(fe::graph::Graph& g, cudnnHandle_t handle, std::string_view mode,
              std::string* why = nullptr) {
  auto status = g.build(handle, {fe_mode(mode)});
  if (!status.is_good() && why != nullptr) {
    *why = status.get_message();
  }
  return status.is_good();
}
#endif

// ----------------------------------------------------------------------------------- floor

// Matmul (+ bias + ReLU) descriptors of one shape, an operation graph over them.
struct FloorGraph {
  std::vector<be::Tensor> tensors;
  std::vector<be::Descriptor*> keep;
  std::optional<be::Matmul> matmul;
  std::optional<be::OperationMatmul> op_matmul;
  std::optional<be::Pointwise> add, relu;
  std::optional<be::OperationPointwise> op_add, op_relu;
  std::optional<be::OperationGraph> graph;
};

template <class T>
T must(be::Expected<T> e, const char* what) {
  if (!e) {
    std::fprintf(stderr, "floor: %s: %s\n", what, e.error().to_string().c_str());
    std::exit(3);
  }
  return std::move(*e);
}
void must(be::Expected<void> e, const char* what) {
  if (!e) {
    std::fprintf(stderr, "floor: %s: %s\n", what, e.error().to_string().c_str());
    std::exit(3);
  }
}

be::Tensor floor_tensor(std::int64_t uid, const Dims& dims, bool is_virtual,
                        cudnnDataType_t type = CUDNN_DATA_HALF) {
  auto t = must(be::Tensor::create(), "tensor");
  must(t.set_data_type(type), "tensor type");
  must(t.set_dimensions(dims), "dims");
  must(t.set_strides(packed(dims)), "strides");
  must(t.set_unique_id(uid), "uid");
  must(t.set_byte_alignment(16), "alignment");
  must(t.set_is_virtual(is_virtual), "virtual");
  must(t.finalize(), "tensor finalize");
  return t;
}

std::unique_ptr<FloorGraph> floor_matmul(cudnnHandle_t handle, const Shape& s, bool epilogue,
                                         bool dynamic) {
  auto f = std::make_unique<FloorGraph>();
  f->tensors.reserve(6);
  f->tensors.push_back(floor_tensor(1, {s.b, s.m, s.k}, false));
  f->tensors.push_back(floor_tensor(2, {s.b, s.k, s.n}, false));
  f->tensors.push_back(epilogue ? floor_tensor(101, {s.b, s.m, s.n}, true, CUDNN_DATA_FLOAT)
                                : floor_tensor(3, {s.b, s.m, s.n}, false));
  f->matmul = must(be::Matmul::create(), "matmul");
  must(f->matmul->set_compute_type(CUDNN_DATA_FLOAT), "compute type");
  must(f->matmul->finalize(), "matmul finalize");
  f->op_matmul = must(be::OperationMatmul::create(), "op matmul");
  must(f->op_matmul->set_a(f->tensors[0]), "a");
  must(f->op_matmul->set_b(f->tensors[1]), "b");
  must(f->op_matmul->set_c(f->tensors[2]), "c");
  must(f->op_matmul->set_matmul(*f->matmul), "desc");
  must(f->op_matmul->finalize(), "op matmul finalize");
  std::vector<const be::Operation*> ops{&*f->op_matmul};
  if (epilogue) {
    f->tensors.push_back(floor_tensor(4, {1, 1, s.n}, false));
    f->tensors.push_back(floor_tensor(102, {s.b, s.m, s.n}, true, CUDNN_DATA_FLOAT));
    f->tensors.push_back(floor_tensor(3, {s.b, s.m, s.n}, false));
    const auto pointwise = [](cudnnPointwiseMode_t mode) {
      auto p = must(be::Pointwise::create(), "pointwise");
      must(p.set_mode(mode), "mode");
      must(p.set_math_precision(CUDNN_DATA_FLOAT), "precision");
      must(p.finalize(), "pointwise finalize");
      return p;
    };
    f->add = pointwise(CUDNN_POINTWISE_ADD);
    f->relu = pointwise(CUDNN_POINTWISE_RELU_FWD);
    f->op_add = must(be::OperationPointwise::create(), "op add");
    must(f->op_add->set_pointwise(*f->add), "add");
    must(f->op_add->set_x(f->tensors[2]), "x");
    must(f->op_add->set_b(f->tensors[3]), "b");
    must(f->op_add->set_y(f->tensors[4]), "y");
    must(f->op_add->finalize(), "op add finalize");
    f->op_relu = must(be::OperationPointwise::create(), "op relu");
    must(f->op_relu->set_pointwise(*f->relu), "relu");
    must(f->op_relu->set_x(f->tensors[4]), "x");
    must(f->op_relu->set_y(f->tensors[5]), "y");
    must(f->op_relu->finalize(), "op relu finalize");
    ops.push_back(&*f->op_add);
    ops.push_back(&*f->op_relu);
  }
  f->graph = must(be::OperationGraph::create(), "op graph");
  must(f->graph->set_handle(handle), "handle");
  must(f->graph->set_ops(ops), "ops");
  if (dynamic) {
    must(f->graph->set_dynamic_shape_enabled(true), "dynamic");
  }
  must(f->graph->finalize(), "op graph finalize");
  return f;
}

struct KnownConfig {
  std::int64_t engine = -1;
  std::vector<std::pair<cudnnBackendKnobType_t, std::int64_t>> knobs;
};

be::EngineConfig floor_config(const be::OperationGraph& g, const KnownConfig& known) {
  auto engine = must(be::Engine::create(), "engine");
  must(engine.set_operation_graph(g), "engine graph");
  must(engine.set_global_index(known.engine), "engine index");
  must(engine.finalize(), "engine finalize");
  std::vector<be::KnobChoice> knobs;
  for (const auto& [type, value] : known.knobs) {
    auto k = must(be::KnobChoice::create(), "knob");
    must(k.set_knob_type(type), "knob type");
    must(k.set_knob_value(value), "knob value");
    must(k.finalize(), "knob finalize");
    knobs.push_back(std::move(k));
  }
  auto config = must(be::EngineConfig::create(), "config");
  must(config.set_engine(engine), "config engine");
  if (!knobs.empty()) {
    must(config.set_knob_choices(knobs), "knobs");
  }
  must(config.finalize(), "config finalize");
  return config;
}

struct FloorPlan {
  std::unique_ptr<FloorGraph> graph;
  std::optional<be::ExecutionPlan> plan;
  KnownConfig known;
};

// The first heuristics config of `mode` that finalizes (the kernel cache attached when given).
FloorPlan floor_first_plan(cudnnHandle_t handle, std::unique_ptr<FloorGraph> g,
                           cudnnBackendHeurMode_t mode, const be::KernelCache* cache) {
  auto heur = must(be::EngineHeuristics::create(), "heuristics");
  must(heur.set_operation_graph(*g->graph), "heur graph");
  must(heur.set_mode(mode), "heur mode");
  must(heur.finalize(), "heur finalize");
  auto configs = must(heur.results(), "heur results");
  for (auto& config : configs) {
    auto plan = must(be::ExecutionPlan::create(), "plan");
    must(plan.set_handle(handle), "plan handle");
    must(plan.set_engine_config(config), "plan config");
    if (cache != nullptr) {
      must(plan.set_kernel_cache(*cache), "plan cache");
    }
    if (!plan.finalize()) {
      continue;
    }
    FloorPlan out{std::move(g), std::move(plan), {}};
    out.known.engine = must(must(config.engine(), "config engine").global_index(), "index");
    for (const auto& k : must(config.knob_choices(), "knobs")) {
      out.known.knobs.emplace_back(must(k.knob_type(), "knob type"), must(k.knob_value(), "v"));
    }
    return out;
  }
  std::fprintf(stderr, "floor: no plan finalized\n");
  std::exit(3);
}

be::ExecutionPlan floor_plan_from(cudnnHandle_t handle, const be::OperationGraph& g,
                                  const KnownConfig& known, const be::KernelCache& cache) {
  auto config = floor_config(g, known);
  auto plan = must(be::ExecutionPlan::create(), "plan");
  must(plan.set_handle(handle), "plan handle");
  must(plan.set_engine_config(config), "plan config");
  must(plan.set_kernel_cache(cache), "plan cache");
  must(plan.finalize(), "plan finalize");
  return plan;
}

be::KernelCache floor_cache(const be::OperationGraph& g) {
  auto cache = must(be::KernelCache::create(), "cache");
  must(cache.set_operation_graph(g), "cache graph");
  must(cache.finalize(), "cache finalize");
  return cache;
}

struct OverrideLists {
  std::vector<std::int64_t> uids{1, 2, 3};
  std::vector<Dims> shapes, strides;
  explicit OverrideLists(std::int64_t n) {
    for (int i = 0; i < 3; ++i) {
      shapes.push_back({1, n, n});
      strides.push_back(packed(shapes.back()));
    }
  }
};

be::VariantPack floor_pack(std::span<const std::int64_t> uids, std::span<void* const> ptrs,
                           void* workspace, const OverrideLists* o) {
  auto pack = must(be::VariantPack::create(), "pack");
  must(pack.set_unique_ids(uids), "uids");
  must(pack.set_data_pointers(ptrs), "pointers");
  must(pack.set_workspace(workspace), "workspace");
  if (o != nullptr) {
    must(pack.set_override_unique_ids(o->uids), "override uids");
    must(pack.set_override_shapes(o->shapes), "override shapes");
    must(pack.set_override_strides(o->strides), "override strides");
  }
  must(pack.finalize(), "pack finalize");
  return pack;
}

// --------------------------------------------------------------------------- execute host time

// Rounds of `per_round` calls per implementation, taking turns; the GPU is drained every 256
// calls, outside the timed region. Returns each implementation's median in microseconds.
std::map<std::string, double> execute_medians(
    const std::vector<std::pair<std::string, std::function<bool()>>>& impls, int rounds,
    int per_round) {
  std::map<std::string, std::vector<double>> samples;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& [name, call] : impls) {
      auto& us = samples[name];
      for (int i = 0; i < per_round; ++i) {
        const auto start = Clock::now();
        if (!call()) {
          std::printf("# %s failed at call %d\n", name.c_str(), i);
          return {};
        }
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        if (i % 256 == 255) {
          cudaDeviceSynchronize();
        }
      }
      cudaDeviceSynchronize();
    }
  }
  std::map<std::string, double> out;
  for (auto& [name, us] : samples) {
    out[name] = median(std::move(us));
  }
  return out;
}

void report_execute(std::string_view what, const std::map<std::string, double>& m, int calls) {
  for (const auto& [impl, us] : m) {
    emit(what, impl, num("median_us", us) + ", " + num("calls", calls));
  }
  const auto get = [&](const char* k) { return m.contains(k) ? m.at(k) : -1.0; };
  const double dg = get("dnngraph"), fe_us = get("frontend"), fl = get("floor");
  std::printf(
      "# %-34s dnngraph %7.2f us | frontend %7.2f us (dg/fe %.2fx) | floor %7.2f us "
      "(dg/floor %.2fx) | floor, pack per call %7.2f us\n",
      std::string(what).c_str(), dg, fe_us, fe_us > 0 ? dg / fe_us : 0.0, fl,
      fl > 0 ? dg / fl : 0.0, get("floor_pack_per_call"));
}

int execute_cases(cudnnHandle_t raw, const dnngraph::Handle& handle, int rounds, int per_round) {
  const Shape s{1, 1024, 1024, 1024};
  std::array<void*, 3> buffers{};
  for (void*& p : buffers) {
    if (cudaMalloc(&p, std::size_t{1024} * 1024 * 2) != cudaSuccess) {
      return 1;
    }
  }
  std::unordered_map<std::int64_t, void*> pack{{1, buffers[0]}, {2, buffers[1]}, {3, buffers[2]}};
  const std::array<std::int64_t, 3> uids{1, 2, 3};
  // dnngraph
  auto dg_plain = dg_matmul(s, false, {});
  auto dg_over = dg_matmul(s, false, {.overrides = true, .cache_first = true, .cache = nullptr});
  for (auto* g : {&dg_plain, &dg_over}) {
    if (auto built = g->build(handle, {dnngraph::HeuristicMode::A}); !built) {
      std::printf("# dnngraph build: %s\n", built.error().message.c_str());
      return 1;
    }
  }
  void* ws = nullptr;
  const std::int64_t ws_size =
      std::max<std::int64_t>(dg_plain.get_workspace_size().value_or(0), 1 << 20);
  if (cudaMalloc(&ws, static_cast<std::size_t>(ws_size)) != cudaSuccess) {
    return 1;
  }
  const OverrideLists s512(512), s256(256);
  // floor: static plan, heuristics A; dynamic plan with a kernel cache for the overrides
  auto floor_static =
      floor_first_plan(raw, floor_matmul(raw, s, false, false), CUDNN_HEUR_MODE_A, nullptr);
  auto floor_dyn_graph = floor_matmul(raw, s, false, true);
  auto floor_kc = floor_cache(*floor_dyn_graph->graph);
  auto floor_dyn = floor_first_plan(raw, std::move(floor_dyn_graph), CUDNN_HEUR_MODE_A, &floor_kc);
  auto floor_static_ws = must(floor_static.plan->workspace_size(), "ws");
  if (floor_static_ws > ws_size) {
    std::printf("# floor plan needs %lld B of workspace\n",
                static_cast<long long>(floor_static_ws));
    return 1;
  }
  const std::array<void*, 3> ptrs{buffers[0], buffers[1], buffers[2]};
  auto floor_pack_plain = floor_pack(uids, ptrs, ws, nullptr);
  auto floor_pack_512 = floor_pack(uids, ptrs, ws, &s512);
  auto floor_pack_256 = floor_pack(uids, ptrs, ws, &s256);
  const auto floor_exec = [&](const be::ExecutionPlan& plan, const be::VariantPack& p) {
    return cudnnBackendExecute(raw, plan.native(), p.native()) == CUDNN_STATUS_SUCCESS;
  };
#if DNNGRAPH_WITH_CUDNN_FRONTEND
  auto fe_kc = std::make_shared<fe::KernelCache>();
  auto fe_plain = fe_matmul(s, false, {});
  auto fe_over = fe_matmul(s, false, {.overrides = true, .cache = fe_kc});
  for (auto* g : {fe_plain.get(), fe_over.get()}) {
    std::string why;
    if (!fe_build(*g, raw, "A", &why)) {
      std::printf("# frontend build: %s\n", why.c_str());
      return 1;
    }
  }
#endif
  using Impls = std::vector<std::pair<std::string, std::function<bool()>>>;
  Impls plain{{"dnngraph", [&] { return dg_plain.execute(handle, pack, ws).has_value(); }},
              {"floor", [&] { return floor_exec(*floor_static.plan, floor_pack_plain); }},
              {"floor_pack_per_call", [&] {
                 auto p = floor_pack(uids, ptrs, ws, nullptr);
                 return floor_exec(*floor_static.plan, p);
               }}};
  Impls same{
      {"dnngraph",
       [&] {
         return dg_over.execute(handle, pack, ws, s512.uids, s512.shapes, s512.strides).has_value();
       }},
      {"floor", [&] { return floor_exec(*floor_dyn.plan, floor_pack_512); }},
      {"floor_pack_per_call", [&] {
         auto p = floor_pack(uids, ptrs, ws, &s512);
         return floor_exec(*floor_dyn.plan, p);
       }}};
  int turn = 0;
  Impls alternating{
      {"dnngraph",
       [&] {
         const OverrideLists& o = (++turn % 2 == 0) ? s512 : s256;
         return dg_over.execute(handle, pack, ws, o.uids, o.shapes, o.strides).has_value();
       }},
      {"floor",
       [&] {
         return floor_exec(*floor_dyn.plan, (++turn % 2 == 0) ? floor_pack_512 : floor_pack_256);
       }},
      {"floor_pack_per_call", [&] {
         auto p = floor_pack(uids, ptrs, ws, (++turn % 2 == 0) ? &s512 : &s256);
         return floor_exec(*floor_dyn.plan, p);
       }}};
#if DNNGRAPH_WITH_CUDNN_FRONTEND
  plain.emplace_back("frontend", [&] { return fe_plain->execute(raw, pack, ws).is_good(); });
  same.emplace_back("frontend", [&] {
    return fe_over->execute(raw, pack, ws, s512.uids, s512.shapes, s512.strides).is_good();
  });
  alternating.emplace_back("frontend", [&] {
    const OverrideLists& o = (++turn % 2 == 0) ? s512 : s256;
    return fe_over->execute(raw, pack, ws, o.uids, o.shapes, o.strides).is_good();
  });
#endif
  const int calls = rounds * per_round;
  std::printf(
      "# execute() host time, fp16 matmul 1024^3 built with heuristics A; overrides 512^3 "
      "/ 256^3; median of %d calls each, in %d rounds taking turns\n",
      calls, rounds);
  std::printf("# dnngraph plan: %s; override path: %s\n", dg_plain.plan_info()->describe().c_str(),
              dg_over.plan_info()->override_path.c_str());
  report_execute("execute_plain", execute_medians(plain, rounds, per_round), calls);
  report_execute("execute_overrides_same", execute_medians(same, rounds, per_round), calls);
  report_execute("execute_overrides_alternating", execute_medians(alternating, rounds, per_round),
                 calls);
  cudaDeviceSynchronize();
  for (void* p : buffers) {
    cudaFree(p);
  }
  cudaFree(ws);
  return 0;
}

// ------------------------------------------------------------------ warm build of a new shape

struct BuildSeries {
  explicit BuildSeries(std::string name) : impl(std::move(name)) {}
  std::string impl;
  double first_ms = -1;
  std::vector<double> warm_ms;
  int failed = 0;
};

void report_builds(std::string_view what, const std::vector<BuildSeries>& series) {
  std::printf("# %s (first build compiles; warm = every later build of a new graph)\n",
              std::string(what).c_str());
  double dg = -1;
  for (const auto& s : series) {
    const double m = median(s.warm_ms);
    if (s.impl.starts_with("dnngraph_cache_first")) {
      dg = m;
    }
    emit(what, s.impl,
         num("first_ms", s.first_ms) + ", " + num("warm_median_ms", m) + ", " +
             num("warm_max_ms", s.warm_ms.empty() ? -1 : *std::ranges::max_element(s.warm_ms)) +
             ", " + num("builds", static_cast<double>(s.warm_ms.size())) + ", " +
             num("failed", s.failed));
    std::printf("#   %-28s first %9.2f ms, warm median %8.3f ms (dnngraph/this %.2fx), %d failed\n",
                s.impl.c_str(), s.first_ms, m, m > 0 && dg > 0 ? dg / m : 0.0, s.failed);
  }
}

void warm_builds(cudnnHandle_t raw, const dnngraph::Handle& handle, bool conv, int rounds,
                 [[maybe_unused]] bool frontend_a) {
  const std::span<const Shape> list =
      conv ? std::span<const Shape>(conv_shapes) : std::span<const Shape>(matmul_shapes);
  using Builder = std::function<bool(const Shape&)>;
  std::vector<std::pair<BuildSeries, Builder>> impls;
  std::vector<dnngraph::Graph> dg_keep;
  for (const char* mode : {"A", "Fallback"}) {
    auto cache = std::make_shared<dnngraph::KernelCache>();
    impls.push_back({BuildSeries(std::string("dnngraph_cache_first_") + mode),
                     [&, cache, mode](const Shape& s) {
                       DgOptions o{.dynamic = true, .cache = cache};
                       auto g = conv ? dg_conv(s, o) : dg_matmul(s, true, o);
                       auto built = g.build(handle, {dg_mode(mode)});
                       if (!built) {
                         std::printf("# dnngraph: %s\n", built.error().message.c_str());
                       }
                       dg_keep.push_back(std::move(g));  // plans live on, as a server's would
                       return built.has_value();
                     }});
  }
#if DNNGRAPH_WITH_CUDNN_FRONTEND
  std::vector<std::unique_ptr<fe::graph::Graph>> fe_keep;
  for (const char* mode : {"Fallback", "A"}) {
    if (std::string_view(mode) == "A" && !frontend_a) {
      continue;
    }
    auto cache = std::make_shared<fe::KernelCache>();
    impls.push_back(
        {BuildSeries(std::string("frontend_") + mode), [&, cache, mode](const Shape& s) {
           FeOptions o{.dynamic = true, .cache = cache};
           auto g = conv ? fe_conv(s, o) : fe_matmul(s, true, o);
           std::string why;
           const bool ok = fe_build(*g, raw, mode, &why);
           if (!ok) {
             std::printf("# frontend: %s\n", why.c_str());
           }
           fe_keep.push_back(std::move(g));
           return ok;
         }});
  }
#endif
  // The floor (matmul only): heuristics once for the first shape, then the known config rebuilt
  // on each new operation graph with a kernel cache.
  std::optional<be::KernelCache> floor_kc;
  KnownConfig floor_known;
  std::vector<FloorPlan> floor_keep;
  if (!conv) {
    impls.push_back({BuildSeries("floor_known_config"), [&](const Shape& s) {
                       auto g = floor_matmul(raw, s, true, true);
                       if (!floor_kc) {
                         floor_kc = floor_cache(*g->graph);
                         auto first = floor_first_plan(raw, std::move(g), CUDNN_HEUR_MODE_FALLBACK,
                                                       &*floor_kc);
                         floor_known = first.known;
                         floor_keep.push_back(std::move(first));
                         return true;
                       }
                       auto plan = floor_plan_from(raw, *g->graph, floor_known, *floor_kc);
                       floor_keep.push_back({std::move(g), std::move(plan), floor_known});
                       return true;
                     }});
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      // Turns rotate per shape, so no implementation always meets a new config first.
      for (std::size_t j = 0; j < impls.size(); ++j) {
        auto& [series, build] = impls[(i + j) % impls.size()];
        if (r > 0 && series.impl == "frontend_A") {
          continue;  // A compiles most new matmul shapes: one round is enough
        }
        const auto start = Clock::now();
        const bool ok = build(list[i]);
        const double ms = ms_since(start);
        if (!ok) {
          ++series.failed;
        } else if (r == 0 && i == 0) {
          series.first_ms = ms;
        } else {
          series.warm_ms.push_back(ms);
        }
      }
    }
  }
  std::vector<BuildSeries> out;
  out.reserve(impls.size());
  for (auto& [series, build] : impls) {
    out.push_back(series);
  }
  report_builds(conv ? "warm_build_conv" : "warm_build_matmul", out);
}

// -------------------------------------------------------------------- threads on one cache

void thread_cases(bool quick) {
  const int per_thread = quick ? 2 : 4;
  for (int threads : {1, 2, 4, 8}) {
    std::vector<std::string> impls{"dnngraph"};
    if (with_frontend) {
      impls.emplace_back("frontend");
    }
    for (const auto& impl : impls) {
      std::vector<cudnnHandle_t> raws(static_cast<std::size_t>(threads));
      std::vector<dnngraph::Handle> handles;
      for (auto& h : raws) {
        cudnnCreate(&h);
      }
      for (int t = 0; t < threads; ++t) {
        auto h = dnngraph::Handle::create();
        if (h) {
          handles.push_back(std::move(*h));
        }
      }
      auto dg_cache = std::make_shared<dnngraph::KernelCache>();
#if DNNGRAPH_WITH_CUDNN_FRONTEND
      auto fe_cache = std::make_shared<fe::KernelCache>();
#endif
      std::atomic<int> failed{0}, done{0};
      const auto start = Clock::now();
      std::vector<std::thread> pool;
      pool.reserve(static_cast<std::size_t>(threads));
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          for (int i = 0; i < per_thread; ++i) {
            const Shape& s = matmul_shapes[static_cast<std::size_t>(t + i) % matmul_shapes.size()];
            bool ok = false;
            if (impl == "dnngraph") {
              auto g = dg_matmul(s, true, {.dynamic = true, .cache = dg_cache});
              ok =
                  g.build(handles[static_cast<std::size_t>(t)], {dnngraph::HeuristicMode::Fallback})
                      .has_value();
            }
#if DNNGRAPH_WITH_CUDNN_FRONTEND
            if (impl == "frontend") {
              auto g = fe_matmul(s, true, {.dynamic = true, .cache = fe_cache});
              ok = fe_build(*g, raws[static_cast<std::size_t>(t)], "Fallback");
            }
#endif
            (ok ? done : failed)++;
          }
        });
      }
      for (auto& th : pool) {
        th.join();
      }
      const double seconds = ms_since(start) / 1000;
      emit("threads_one_cache", impl,
           num("threads", threads) + ", " + num("builds", done.load()) + ", " +
               num("failed", failed.load()) + ", " + num("builds_per_s", done.load() / seconds));
      std::printf("#   threads %d %-9s %3d builds, %d failed, %8.1f builds/s (first compiles)\n",
                  threads, impl.c_str(), done.load(), failed.load(), done.load() / seconds);
      for (auto h : raws) {
        cudnnDestroy(h);
      }
    }
  }
}

// ----------------------------------------------- first build in a new process after loading

// One child: build shape 1 of the matmul topology and save the cache (save), or load the saved
// cache and build shape 2 (load, load-no-cache-first), or build shape 2 cold (cold).
int child(std::string_view step, std::string_view impl, const std::string& file) {
  cudnnHandle_t raw = nullptr;
  if (cudnnCreate(&raw) != CUDNN_STATUS_SUCCESS) {
    return 77;
  }
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    return 77;
  }
  const Shape first{1, 1024, 1024, 1024}, second{1, 2048, 512, 1024};
  const bool save = step == "save";
  const Shape& s = save ? first : second;
  std::string json;
  if (step.starts_with("load")) {
    std::ifstream in(file);
    json.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  double ms = -1;
  double load_ms = 0;
  double check_ms = 0;  // of load_ms: dnngraph's document check (measured again after the build)
  std::size_t bytes = 0;
  if (impl == "dnngraph") {
    auto kc = std::make_shared<dnngraph::KernelCache>();
    const auto load_start = Clock::now();
    if (!json.empty()) {
      if (auto loaded = kc->from_json(json); !loaded) {
        std::printf("# from_json: %s\n", loaded.error().message.c_str());
        return 1;
      }
    }
    load_ms = ms_since(load_start);
    auto g = dg_matmul(
        s, true, {.dynamic = true, .cache_first = step != "load-no-cache-first", .cache = kc});
    const auto start = Clock::now();
    if (auto built = g.build(*handle, {dnngraph::HeuristicMode::A}); !built) {
      std::printf("# build: %s\n", built.error().message.c_str());
      return 1;
    }
    ms = ms_since(start);
    if (!json.empty()) {
      // The check alone (no cuDNN), timed after the build so that it disturbs nothing measured:
      // from_json minus this is cuDNN's parse and finalize of the document.
      const auto check_start = Clock::now();
      const bool checked = dnngraph::detail::check_cache_document(json).has_value();
      check_ms = checked ? ms_since(check_start) : -1;
    }
    if (save) {
      auto out = kc->to_json();
      if (!out) {
        return 1;
      }
      bytes = out->size();
      std::ofstream(file) << *out;
    }
  }
#if DNNGRAPH_WITH_CUDNN_FRONTEND
  if (impl == "frontend") {
    auto kc = std::make_shared<fe::KernelCache>();
    const auto load_start = Clock::now();
    if (!json.empty() && !kc->from_json(json).is_good()) {
      std::printf("# frontend from_json failed\n");
      return 1;
    }
    load_ms = ms_since(load_start);
    auto g = fe_matmul(s, true, {.dynamic = true, .cache = kc});
    const auto start = Clock::now();
    std::string why;
    if (!fe_build(*g, raw, "A", &why)) {
      std::printf("# frontend build: %s\n", why.c_str());
      return 1;
    }
    ms = ms_since(start);
    if (save) {
      std::string out;
      if (!kc->to_json(out).is_good()) {
        return 1;
      }
      bytes = out.size();
      std::ofstream(file) << out;
    }
  }
#endif
  std::printf("RESULT ms=%.3f load_ms=%.3f bytes=%zu check_ms=%.3f\n", ms, load_ms, bytes,
              check_ms);
  cudnnDestroy(raw);
  return 0;
}

void persistence_cases(const char* self, int reps) {
  std::vector<std::string> impls{"dnngraph"};
  if (with_frontend) {
    impls.emplace_back("frontend");
  }
  double check_ms = 0;  // the last child's (dnngraph, load): its document check alone
  const auto run = [&](const std::string& step, const std::string& impl, double* ms,
                       double* load_ms, double* bytes) {
    const std::string file = "/tmp/dnngraph-side-by-side-" + impl + ".json";
    const std::string command =
        std::string(self) + " --child=" + step + " " + impl + " " + file + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    std::array<char, 4096> line{};
    *ms = -1;
    while (pipe && std::fgets(line.data(), line.size(), pipe.get()) != nullptr) {
      std::size_t b = 0;
      check_ms = 0;
      if (std::sscanf(line.data(), "RESULT ms=%lf load_ms=%lf bytes=%zu check_ms=%lf", ms, load_ms,
                      &b, &check_ms) == 4) {
        *bytes = static_cast<double>(b);
      } else {
        std::printf("#   %s %s: %s", impl.c_str(), step.c_str(), line.data());
      }
    }
  };
  std::printf(
      "# first build in a new process (matmul + bias + ReLU, heuristics A, a second "
      "shape), each a child process, taking turns\n");
  for (const auto& impl : impls) {
    double ms = -1, load_ms = 0, bytes = 0;
    run("save", impl, &ms, &load_ms, &bytes);
    emit("persist_save", impl, num("build_ms", ms) + ", " + num("json_bytes", bytes));
    std::printf("#   %-9s saved: first build %.1f ms, document %.0f B\n", impl.c_str(), ms, bytes);
  }
  std::vector<std::pair<std::string, std::string>> steps;
  for (const auto& impl : impls) {
    steps.emplace_back("load", impl);
    steps.emplace_back("cold", impl);
  }
  steps.emplace_back("load-no-cache-first", "dnngraph");
  std::map<std::string, std::vector<double>> build_ms, load_ms_all, check_ms_all, total_ms;
  const auto key_of = [](const std::string& impl, const std::string& step) {
    std::string key = impl;
    key += ' ';
    key += step;
    return key;
  };
  for (int r = 0; r < reps; ++r) {
    for (const auto& [step, impl] : steps) {
      double ms = -1, load_ms = 0, bytes = 0;
      run(step, impl, &ms, &load_ms, &bytes);
      const std::string key = key_of(impl, step);
      build_ms[key].push_back(ms);
      load_ms_all[key].push_back(load_ms);
      check_ms_all[key].push_back(check_ms);
      total_ms[key].push_back(ms + load_ms);
    }
  }
  // from_json + first build is what compares: cudnn-frontend's from_json only hands cuDNN the
  // text, and cuDNN parses and finalizes it in the first build; dnngraph's from_json has cuDNN
  // parse and finalize it (a document cuDNN refuses fails there), after dnngraph's check.
  for (const auto& [step, impl] : steps) {
    const std::string key = key_of(impl, step);
    const double m = median(build_ms[key]);
    std::string fields = num("build_ms", m);
    fields += ", ";
    fields += num("from_json_ms", median(load_ms_all[key]));
    fields += ", ";
    fields += num("check_ms", median(check_ms_all[key]));
    fields += ", ";
    fields += num("from_json_plus_build_ms", median(total_ms[key]));
    fields += ", ";
    fields += num("reps", reps);
    emit(std::string("first_build_after_").append(step), impl, fields);
    std::printf(
        "#   %-32s first build %8.2f ms (from_json %.2f ms, of it dnngraph's check %.2f ms; "
        "together %.2f ms), median of %d\n",
        key.c_str(), m, median(load_ms_all[key]), median(check_ms_all[key]), median(total_ms[key]),
        reps);
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  constexpr std::string_view child_flag = "--child=";
  if (argc == 4 && std::string_view(argv[1]).starts_with(child_flag)) {
    return child(std::string_view(argv[1]).substr(child_flag.size()), argv[2], argv[3]);
  }
  const bool quick = argc > 1 && std::string_view(argv[1]) == "--quick";
  cudnnHandle_t raw = nullptr;
  if (cudnnCreate(&raw) != CUDNN_STATUS_SUCCESS) {
    std::printf("# needs a CUDA device\n");
    return 77;
  }
  auto handle = dnngraph::Handle::create();
  if (!handle) {
    std::printf("# needs a CUDA device: %s\n", handle.error().message.c_str());
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# dnngraph side by side: cuDNN %s (compiled against %d), GPU %s, %s\n",
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str(),
              CUDNN_VERSION, prop.name,
              with_frontend ? "cudnn-frontend compiled in"
                            : "WITHOUT cudnn-frontend (set DNNGRAPH_CUDNN_FRONTEND_INCLUDE): "
                              "dnngraph and the floor only");
#if DNNGRAPH_WITH_CUDNN_FRONTEND
  std::printf("# cudnn-frontend %d\n", CUDNN_FRONTEND_VERSION);
  emit("meta", "frontend", num("version", CUDNN_FRONTEND_VERSION));
#endif
  emit("meta", "cudnn", num("version", static_cast<double>(dnngraph::cudnn_runtime_version())));
  if (int rc = execute_cases(raw, *handle, 5, quick ? 1000 : 4000); rc != 0) {
    return rc;
  }
  warm_builds(raw, *handle, false, quick ? 1 : 2, !quick);
  warm_builds(raw, *handle, true, quick ? 1 : 2, !quick);
  std::printf(
      "# threads on one kernel cache (unbuilt at the start), heuristics Fallback, own "
      "handle per thread\n");
  thread_cases(quick);
  persistence_cases(argv[0], quick ? 1 : 3);
  cudnnDestroy(raw);
  return 0;
}
