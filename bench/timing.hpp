// Timing helpers the bench programs share: a steady clock, milliseconds since a start, medians.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace dnngraph_bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The median of the samples (the upper one of an even count); -1 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) {
    return -1;
  }
  std::ranges::sort(v);
  return v[v.size() / 2];
}

}  // namespace dnngraph_bench
