// One scenario of how dnngraph finds libcudnn.so.9, in a process of its own (the library is found
// once per process): run by tests/cpu/cudnn_loader_test.cpp with the environment each needs.
// Prints "ok" and exits 0 when every expectation holds, else prints what did not and exits 1.
//   cudnn_loader_child missing            (DNNGRAPH_CUDNN_LIB names a file that does not exist)
//   cudnn_loader_child env <folder>       (DNNGRAPH_CUDNN_LIB names the folder)
//   cudnn_loader_child chosen <file>      (set_cudnn_library before any use)
//   cudnn_loader_child preloaded <file>   (the program dlopens it first)
//   cudnn_loader_child conflict <file>    (dlopens <file>; DNNGRAPH_CUDNN_LIB names a copy)
#include "api/dnngraph.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace {

int failures = 0;

void expect(bool condition, std::string_view what, const std::string& detail = {}) {
  if (!condition) {
    ++failures;
    std::printf("FAILED: %.*s %s\n", static_cast<int>(what.size()), what.data(), detail.c_str());
  }
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// A small graph whose build needs cuDNN (descriptors); no GPU is needed to get that far.
dnngraph::Result<void> build_a_matmul() {
  using namespace dnngraph;
  Graph g;
  g.set_io_data_type(DataType::Half).set_compute_data_type(DataType::Float);
  auto a = g.tensor(TensorAttributes().set_name("A").set_uid(1).set_dim({1, 16, 16}));
  auto b = g.tensor(TensorAttributes().set_name("B").set_uid(2).set_dim({1, 16, 16}));
  auto c = g.matmul(a, b, MatmulAttributes());
  c->set_output(true).set_uid(3);
  auto lowered = g.lower();
  if (!lowered) {
    return std::unexpected(lowered.error());
  }
  return {};
}

void expect_no_library() {
  using dnngraph::ErrorCode;
  expect(dnngraph::cudnn_runtime_version() == 0, "no version without a library");
  expect(dnngraph::cudnn_library_path().empty(), "no path without a library");
  const std::string source = dnngraph::cudnn_library_source();
  expect(contains(source, "DNNGRAPH_CUDNN_LIB names /nonexistent/libcudnn.so.9"),
         "the source says what was looked at", source);
  expect(!dnngraph::cudnn_offers(dnngraph::CudnnCapability::ConcatOperation),
         "nothing is offered without a library");
  auto handle = dnngraph::Handle::create();
  expect(!handle && handle.error().code == ErrorCode::CudnnNotFound,
         "Handle::create: CudnnNotFound", handle ? "" : handle.error().message);
  if (!handle) {
    expect(contains(handle.error().message, "/nonexistent/libcudnn.so.9"),
           "the error names where it looked", handle.error().message);
  }
  auto built = build_a_matmul();
  expect(!built && built.error().code == ErrorCode::CudnnNotFound, "lowering: CudnnNotFound",
         built ? "" : built.error().message);
}

void expect_loaded(std::string_view reason, const std::string& where) {
  const std::string source = dnngraph::cudnn_library_source();
  expect(source == reason, "the source", source);
  const std::string path = dnngraph::cudnn_library_path();
  expect(contains(path, where), "the path", path + " (expected in " + where + ")");
  expect(dnngraph::cudnn_runtime_version() >= 90000, "a cuDNN 9 version");
  auto built = build_a_matmul();
  expect(built.has_value(), "a graph lowers", built ? "" : built.error().message);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  const std::string file = argc > 2 ? argv[2] : "";
  if (scenario == "missing") {
    expect_no_library();
  } else if (scenario == "env") {
    expect_loaded("DNNGRAPH_CUDNN_LIB", file);
  } else if (scenario == "chosen") {
    auto chosen = dnngraph::set_cudnn_library(file);
    expect(chosen.has_value(), "set_cudnn_library before use",
           chosen ? "" : chosen.error().message);
    expect_loaded("chosen by set_cudnn_library()", file);
  } else if (scenario == "preloaded" || scenario == "conflict") {
    void* preloaded = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
    expect(preloaded != nullptr, "the program's own dlopen", file);
    if (scenario == "preloaded") {
      expect_loaded("already loaded in this process", file);
    } else {
      expect(dnngraph::cudnn_runtime_version() == 0, "a second cuDNN is not loaded beside");
      const std::string source = dnngraph::cudnn_library_source();
      expect(contains(source, "is already loaded in this process"), "the conflict is named",
             source);
    }
  } else {
    std::printf("usage: cudnn_loader_child missing|env|chosen|preloaded|conflict [path]\n");
    return 2;
  }
  if (failures == 0) {
    std::printf("ok\n");
  }
  return failures == 0 ? 0 : 1;
}
