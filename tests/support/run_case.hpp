// The end of a reference case's body: run the built graph once on the caller's buffers (with a
// workspace of the plan's size), wait, read Y back and compare it with the reference, reporting
// the comparison. Include after support/dnngraph.hpp and <boost/test/unit_test.hpp>.
#pragma once

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnngraph::test {

// y holds expected.size() elements of `type`; `text` names the case in every message.
inline void run_and_compare(const TakenCase& taken, const std::string& text,
                            const std::unordered_map<std::int64_t, void*>& pack,
                            const DeviceBuffer& y, DataType type, std::span<const double> expected,
                            Tolerance tolerance) {
  const BuiltCase& b = *taken.built;
  DeviceBuffer workspace = require_cuda(
      DeviceBuffer::allocate(static_cast<std::size_t>(taken.workspace_size)), "workspace");
  BOOST_REQUIRE_MESSAGE(b.handle.has_value(), text << ": built without a handle");
  const auto ran = b.graph.execute(*b.handle, pack, workspace.get());
  BOOST_REQUIRE_MESSAGE(ran.has_value(), text << ": execute failed: " << describe(ran));
  require_cuda(cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
               text + " after execute");
  std::vector<std::byte> bytes(expected.size() * static_cast<std::size_t>(size_of(type)));
  require_cuda(y.download(std::span<std::byte>(bytes)), text + ": Y");
  const std::vector<float> got = decode(type, bytes);
  const auto comparison = compare(got, expected, tolerance);
  BOOST_TEST_MESSAGE(text << ": " << comparison.describe());
  BOOST_CHECK_MESSAGE(comparison.passed(), text << ": " << comparison.describe());
}

}  // namespace dnngraph::test
