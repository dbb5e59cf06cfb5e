// How dnngraph finds libcudnn.so.9 at run time: each scenario in a child process of its own
// (tests/loader/cudnn_loader_child.cpp), since the library is found once per process.
#define BOOST_TEST_MODULE cudnn_loader
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include "api/dnngraph.hpp"
#include "support/child_process.hpp"

#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The child: beside this test's binary (a GPU bundle carries both), else where it was built.
std::string child_program() {
  std::error_code ec;
  const fs::path beside =
      fs::read_symlink("/proc/self/exe", ec).parent_path() / "cudnn_loader_child";
  return !ec && fs::exists(beside) ? beside.string() : std::string(DNNGRAPH_LOADER_CHILD);
}

// Runs the child with `args` and the environment of this process plus `env` (NAME=VALUE), less
// DNNGRAPH_CUDNN_LIB unless `env` sets it.
dnngraph::testing::ChildOutcome run_child(const std::vector<std::string>& args,
                                          const std::vector<std::string>& env) {
  std::vector<std::string> environment;
  for (std::string& e : dnngraph::testing::this_environment()) {
    if (!e.starts_with("DNNGRAPH_CUDNN_LIB=")) {
      environment.push_back(std::move(e));
    }
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<std::string> argv{child_program()};
  argv.insert(argv.end(), args.begin(), args.end());
  return dnngraph::testing::run_process(std::move(argv), std::move(environment));
}

void expect_ok(const dnngraph::testing::ChildOutcome& outcome) {
  BOOST_TEST(outcome.exit_status == 0, outcome.ended << ": " << outcome.output);
  BOOST_TEST(outcome.output.find("ok") != std::string::npos, outcome.output);
}

// The libcudnn.so.9 this process finds (the same search as the library's users get; on the GPU
// machine scripts/gpu-env names it with DNNGRAPH_CUDNN_LIB), the one the children are given.
fs::path found_library() {
  const std::string path = dnngraph::cudnn_library_path();
  BOOST_TEST_REQUIRE(!path.empty(), "no libcudnn.so.9: " << dnngraph::cudnn_library_source());
  return path;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_named_library_that_does_not_exist_gives_cudnn_not_found_errors_not_a_crash) {
  expect_ok(run_child({"missing"}, {"DNNGRAPH_CUDNN_LIB=/nonexistent/libcudnn.so.9"}));
}

BOOST_AUTO_TEST_CASE(dnngraph_cudnn_lib_may_name_the_folder_that_holds_libcudnn) {
  const std::string folder = found_library().parent_path().string();
  expect_ok(run_child({"env", folder}, {"DNNGRAPH_CUDNN_LIB=" + folder}));
}

BOOST_AUTO_TEST_CASE(set_cudnn_library_before_any_use_chooses_the_library) {
  expect_ok(run_child({"chosen", found_library().string()}, {}));
}

BOOST_AUTO_TEST_CASE(a_libcudnn_the_process_loaded_already_is_the_one_used) {
  expect_ok(run_child({"preloaded", found_library().string()}, {}));
}

BOOST_AUTO_TEST_CASE(a_second_libcudnn_beside_a_loaded_one_is_refused_naming_both) {
  // A copy of the shim is another file: loading it beside the first would mix sub-libraries.
  const fs::path folder =
      fs::temp_directory_path() / ("dnngraph-loader-" + std::to_string(getpid()));
  fs::create_directories(folder);
  const fs::path library = found_library();
  fs::copy_file(library, folder / "libcudnn.so.9", fs::copy_options::overwrite_existing);
  expect_ok(run_child({"conflict", library.string()},
                      {"DNNGRAPH_CUDNN_LIB=" + (folder / "libcudnn.so.9").string()}));
  fs::remove_all(folder);
}
