// main() of every GPU test binary: without a CUDA device it says so and exits 77, which CTest
// reports as skipped (never as passed); with one it runs the Boost.Test suites.
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>

namespace {
#ifdef BOOST_TEST_DYN_LINK
bool init_tests() { return true; }
#else
boost::unit_test::test_suite* init_tests(int /*argc*/, char* /*argv*/[]) { return nullptr; }
#endif
}  // namespace

int main(int argc, char* argv[]) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA device (cudaGetDeviceCount: %s)\n",
                status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_tests, argc, argv);
}
