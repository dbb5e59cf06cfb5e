// Helpers the GPU tests share: a Result or a CUDA outcome as text for messages, and a CUDA step
// the test cannot go on without. Include after support/dnngraph.hpp and
// <boost/test/unit_test.hpp>.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <expected>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace dnngraph::test {

// How many times a timing loop runs: `runs`, or at most `under_tool` under compute-sanitizer
// (scripts/gpu-sanitize sets DNNGRAPH_TEST_UNDER_SANITIZER=1). The tools check every launch of a
// kernel alike, and racecheck runs cuDNN's kernels thousands of times slower: session 25's
// plan_control cases that time every candidate 23 times ran past 1,500 s under it.
inline int timing_runs(int runs, int under_tool = 1) {
  const char* flag = std::getenv("DNNGRAPH_TEST_UNDER_SANITIZER");  // NOLINT(concurrency-mt-unsafe)
  return flag != nullptr && std::string_view(flag) == "1" ? std::min(runs, under_tool) : runs;
}

// "ok" or "CODE: message".
template <class T>
std::string describe(const Result<T>& result) {
  if (result) {
    return "ok";
  }
  return std::string(to_string(result.error().code)) + ": " + result.error().message;
}

// "ok" or the CUDA error text (see device_buffer.hpp).
template <class T>
std::string describe(const std::expected<T, std::string>& result) {
  return result ? std::string("ok") : result.error();
}

// The value of a CUDA step; stops the test case, naming the step, when it failed.
template <class T>
T require_cuda(std::expected<T, std::string> result, const std::string& what) {
  BOOST_REQUIRE_MESSAGE(result.has_value(), what << ": " << (result ? "" : result.error()));
  if constexpr (!std::is_void_v<T>) {
    return std::move(*result);
  }
}

}  // namespace dnngraph::test
