// Diagnostic: prints what cuDNN's kernel cache serializes, and when (after build, execute,
// synchronize, plan destruction), for one dynamic fp16 matmul + bias + ReLU topology. Used to
// learn the cache's behaviour on each cuDNN version; see docs/kernel-cache.md.
import dnngraph;

#include <cuda_runtime_api.h>
#include <boost/json.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace {

struct Shape {
  std::int64_t b, m, n, k;
};

// Set from the command line: the io type and whether the graph has the bias + ReLU epilogue.
dnngraph::DataType io_type = dnngraph::DataType::Half;
bool epilogue = true;

dnngraph::Graph make_graph(const Shape& s, const std::shared_ptr<dnngraph::KernelCache>& kc) {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(io_type).set_compute_data_type(DataType::Float);
  g.set_dynamic_shape_enabled(true).set_kernel_cache(kc);
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

void report(const char* step, const dnngraph::KernelCache& kc) {
  auto json = kc.to_json();
  if (!json) {
    std::printf("%-34s to_json: %s\n", step, json.error().message.c_str());
    return;
  }
  boost::system::error_code ec;
  auto doc = boost::json::parse(*json, ec);
  std::string keys;
  std::size_t entries = 0;
  if (!ec && doc.is_object()) {
    for (const auto& kv : doc.as_object()) {
      keys += std::string(kv.key()) + " ";
    }
    if (const auto* list = doc.as_object().if_contains("kernel_cache"); list && list->is_array()) {
      entries = list->as_array().size();
    }
  }
  std::printf("%-34s %7zu bytes, %zu entries, revision %lld, size %lld; top-level keys: %s\n", step,
              json->size(), entries, static_cast<long long>(kc.revision().value_or(-1)),
              static_cast<long long>(kc.size().value_or(-1)), keys.c_str());
}

bool execute(const dnngraph::Graph& g, const dnngraph::Handle& h, const Shape& s) {
  void* p[5] = {};
  const auto n2 = [](std::int64_t n) { return static_cast<std::size_t>(n) * 2; };
  const std::int64_t ws = g.get_workspace_size().value_or(0);
  if (cudaMalloc(&p[0], n2(s.b * s.m * s.k)) || cudaMalloc(&p[1], n2(s.b * s.k * s.n)) ||
      cudaMalloc(&p[2], n2(s.n)) || cudaMalloc(&p[3], n2(s.b * s.m * s.n)) ||
      (ws > 0 && cudaMalloc(&p[4], static_cast<std::size_t>(ws)))) {
    return false;
  }
  std::unordered_map<std::int64_t, void*> pack{{1, p[0]}, {2, p[1]}, {3, p[3]}};
  if (epilogue) {
    pack[4] = p[2];
  }
  auto ran = g.execute(h, pack, p[4]);
  cudaDeviceSynchronize();
  for (void* q : p) {
    cudaFree(q);
  }
  return ran.has_value();
}

}  // namespace

int main(int argc, char* argv[]) {
  // kernel_cache_probe [half|bf16] [epilogue|plain] [json=FILE]
  std::string json_file;  // the whole document after the first build, for comparing with others
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "bf16") io_type = dnngraph::DataType::BFloat16;
    if (arg == "plain") epilogue = false;
    if (arg.starts_with("json=")) json_file = arg.substr(5);
  }
  auto h = dnngraph::Handle::create();
  if (!h) {
    std::printf("needs a CUDA device: %s\n", h.error().message.c_str());
    return 77;
  }
  std::printf("cuDNN %s, introspection path %s\n",
              dnngraph::cudnn_version_string(dnngraph::cudnn_runtime_version()).c_str(),
              std::string(dnngraph::KernelCache::introspection_path()).c_str());
  auto kc = std::make_shared<dnngraph::KernelCache>();
  const Shape s1{1, 1024, 1024, 1024};
  const Shape s2{2, 512, 768, 1024};
  std::optional<dnngraph::Graph> g1 = make_graph(s1, kc);
  if (auto b = g1->build(*h, {dnngraph::HeuristicMode::A}); !b) {
    std::printf("build: %s\n", b.error().message.c_str());
    return 1;
  }
  std::printf("g1: %s\n", g1->plan_info()->describe().c_str());
  report("after build of shape 1", *kc);
  if (!json_file.empty()) {
    if (auto json = kc->to_json(); json) {
      std::ofstream(json_file, std::ios::binary) << *json;
    }
  }
  std::printf("execute g1: %s\n", execute(*g1, *h, s1) ? "ok" : "FAILED");
  report("after execute + sync of shape 1", *kc);
  g1.reset();
  report("after shape 1's plan is destroyed", *kc);
  auto g2 = make_graph(s2, kc);
  if (auto b = g2.build(*h, {dnngraph::HeuristicMode::A}); !b) {
    std::printf("build 2: %s\n", b.error().message.c_str());
    return 1;
  }
  std::printf("g2: %s\n", g2.plan_info()->describe().c_str());
  report("after build of shape 2", *kc);
  std::printf("execute g2: %s\n", execute(g2, *h, s2) ? "ok" : "FAILED");
  report("after execute of shape 2", *kc);
  // A new shape with heuristics A and without cache-first (likely another kernel config).
  auto g3 = make_graph({1, 4096, 4096, 1024}, kc);
  g3.set_cache_first_plan_choice(false);
  if (auto b = g3.build(*h, {dnngraph::HeuristicMode::A}); !b) {
    std::printf("build 3: %s\n", b.error().message.c_str());
    return 1;
  }
  std::printf("g3: %s\n", g3.plan_info()->describe().c_str());
  report("after build of shape 3 (A, no cache-first)", *kc);
  auto json = kc->to_json();
  if (json) {
    std::printf("--- full JSON (first 3000 bytes) ---\n%s\n", json->substr(0, 3000).c_str());
  }
  return 0;
}
