// One run of a built graph for the GPU tests: the variant pack with the device buffers it points
// to (inputs uploaded in their storage type, outputs filled with NaN bytes first, so an element
// the kernel never writes fails), the execute that waits for the device, and the download and
// comparison of an output with its reference. Include after support/dnngraph.hpp and
// <boost/test/unit_test.hpp>.
#pragma once

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reference.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnngraph::test {

struct PackRun {
  std::unordered_map<std::int64_t, void*> pack;
  std::deque<DeviceBuffer> buffers;  // a deque: output() hands out addresses that stay valid

  void upload(std::int64_t uid, DataType type, std::span<const float> values, const char* what) {
    copy(uid, std::span<const std::byte>(encode(type, values).bytes), what);
  }
  // Host data as it is to lie in device memory (bytes in their storage type, Int32 lengths).
  template <class T>
  void copy(std::int64_t uid, std::span<const T> host, const char* what) {
    buffers.push_back(require_cuda(DeviceBuffer::copy_of(host), what));
    pack.emplace(uid, buffers.back().get());
  }
  DeviceBuffer* output(std::int64_t uid, std::size_t bytes, const char* what) {
    buffers.push_back(require_cuda(DeviceBuffer::allocate(bytes), what));
    require_cuda(buffers.back().fill_bytes(0xFF), what);  // NaN: an unwritten element fails
    pack.emplace(uid, buffers.back().get());
    return &buffers.back();
  }
  // Runs the built graph on the pack with a workspace of its size and waits for the device.
  void execute(BuiltCase& b, std::int64_t workspace_size, const std::string& what) const {
    DeviceBuffer workspace = require_cuda(
        DeviceBuffer::allocate(static_cast<std::size_t>(std::max<std::int64_t>(workspace_size, 1))),
        "workspace");
    const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
    BOOST_REQUIRE_MESSAGE(ran.has_value(), what << ": execute failed: " << describe(ran));
    require_cuda(cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
                 what + " after execute");
  }
};

// The first n elements of `type` in the buffer, as floats.
[[nodiscard]] inline std::vector<float> download(DeviceBuffer& buffer, DataType type, std::size_t n,
                                                 const std::string& what) {
  std::vector<std::byte> bytes(n * static_cast<std::size_t>(size_of(type)));
  require_cuda(buffer.download(std::span<std::byte>(bytes)), what);
  return decode(type, bytes);
}

// Downloads expected.size() elements of `type` and checks them against the reference.
inline void check_output(const std::string& what, DeviceBuffer& buffer, DataType type,
                         const std::vector<double>& expected, Tolerance tolerance) {
  const auto comparison =
      compare(download(buffer, type, expected.size(), what), expected, tolerance);
  BOOST_TEST_MESSAGE(what << ": " << comparison.describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), what << ": " << comparison.describe());
}

}  // namespace dnngraph::test
