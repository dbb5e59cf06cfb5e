// What the kernel cache soaks share: one line of output at a time, the process's RSS, its heap
// in use, its GPU memory and the device's. Needs no dnngraph header.
#pragma once

#include <cuda_runtime_api.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <array>

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

// Bytes malloc has handed out and not had back, in MiB (glibc's mallinfo2: in-use arena chunks
// plus mmapped ones): what the process's heap holds, without the pages the allocator keeps free,
// so RSS growth with flat malloc use is the allocator's or a mapping's, not a leak of the heap.
inline std::int64_t malloc_in_use_bytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}
inline std::int64_t malloc_in_use_mib() { return malloc_in_use_bytes() >> 20; }

// This process's memory on its GPUs in MiB, as nvidia-smi lists the compute processes; -1 when
// nvidia-smi is missing or does not list this process (a container whose pids the driver does not
// see): then only the device-wide reading below is left, which counts every other process on the
// device too (session 24's 9.28.1 soak read a sanitizer job's memory as its own growth).
inline std::int64_t gpu_own_mib() {
  // NOLINTNEXTLINE(cert-env33-c): a fixed command line, no input of the user's in it
  FILE* pipe = popen(
      "nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null",
      "r");
  if (pipe == nullptr) {
    return -1;
  }
  std::int64_t own = -1;
  std::array<char, 256> line{};
  while (std::fgets(line.data(), static_cast<int>(line.size()), pipe) != nullptr) {
    long pid = 0;
    long long mib = 0;
    // NOLINTNEXTLINE(cert-err34-c): two numbers or not this process's line; both are checked
    if (std::sscanf(line.data(), "%ld, %lld", &pid, &mib) == 2 && pid == getpid()) {
      own = std::max<std::int64_t>(own, 0) + mib;
    }
  }
  pclose(pipe);
  return own;
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
