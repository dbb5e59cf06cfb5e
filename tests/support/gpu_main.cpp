// Start-up of every GPU test binary: without a CUDA device it says so and exits 77, which CTest
// reports as skipped (never as passed); with one it runs the Boost.Test suites.
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace {

bool have_cuda_device() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device (cudaGetDeviceCount: %s)\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return false;
  }
  return true;
}

}  // namespace

#ifdef BOOST_TEST_DYN_LINK
// The shared Boost.Test library has no main(): this is it.
namespace {
bool init_tests() { return true; }
}  // namespace

int main(int argc, char* argv[]) {
  if (!have_cuda_device()) {
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_tests, argc, argv);
}
#else
// The static Boost.Test library brings its own main(), which calls this first.
boost::unit_test::test_suite* init_unit_test_suite(int /*argc*/, char* /*argv*/[]) {
  if (!have_cuda_device()) {
    std::exit(77);
  }
  return nullptr;
}
#endif
