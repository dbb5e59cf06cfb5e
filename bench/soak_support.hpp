// What the kernel cache soaks share: one line of output at a time, the process's RSS and the
// device's used memory. Needs no dnngraph header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>

namespace dnngraph_bench {

// printf to stdout, one whole line at a time however many threads print.
__attribute__((format(printf, 1, 2))) inline void say(const char* format, ...) {
  static std::mutex print_mutex;  // guards stdout between threads
  const std::scoped_lock lock(print_mutex);
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::fflush(stdout);
}

// Resident set size of this process in KiB (/proc/self/statm counts 4 KiB pages); 0 if unread.
inline std::int64_t rss_kib() {
  long pages = 0;
  long resident = 0;
  std::ifstream statm("/proc/self/statm");
  if (!(statm >> pages >> resident)) {
    resident = 0;
  }
  return static_cast<std::int64_t>(resident) * 4;
}

// Memory in use on the current device, every process's (cudaMemGetInfo); -1 if unread.
inline std::int64_t gpu_used_mib() {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    return -1;
  }
  return static_cast<std::int64_t>((total - free_bytes) >> 20);
}

}  // namespace dnngraph_bench
