// CUDA events through the driver API, loaded at run time: see gpu_timer.hpp.
#include "detail/plan/gpu_timer.hpp"

#include <dlfcn.h>

#include <gsl/util>

#include <string>
#include <utility>

namespace dnngraph::detail {

namespace {

// The driver's types as cuda.h declares them, without the header (its macros rename the entry
// points by API version): CUresult is an int-sized enum, CUevent and CUstream opaque pointers.
using CuResult = int;
using CuEvent = void*;
constexpr CuResult cuda_success = 0;
constexpr unsigned int event_default = 0;

struct Driver {
  CuResult (*event_create)(CuEvent*, unsigned int) = nullptr;
  CuResult (*event_record)(CuEvent, CUstream_st*) = nullptr;
  CuResult (*event_synchronize)(CuEvent) = nullptr;
  CuResult (*event_elapsed)(float*, CuEvent, CuEvent) = nullptr;
  CuResult (*event_destroy)(CuEvent) = nullptr;
  CuResult (*error_string)(CuResult, const char**) = nullptr;
  std::string missing;  // why the driver cannot be used; empty when it can
};

template <class F>
bool load(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));  // NOLINT: dlsym hands back a void*
  return out != nullptr;
}

Driver load_driver() {
  Driver d;
  // Kept for the life of the process: the CUDA runtime cuDNN uses has it loaded anyway.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    d.missing = "the CUDA driver (libcuda.so.1) could not be loaded: " +
                std::string(why != nullptr ? why : "no reason given");
    return d;
  }
  // cuEventElapsedTime_v2 from CUDA 12.8 drivers; the first version has the same signature.
  const bool elapsed = load(library, "cuEventElapsedTime_v2", d.event_elapsed) ||
                       load(library, "cuEventElapsedTime", d.event_elapsed);
  const std::pair<const char*, bool> loaded[] = {
      {"cuEventCreate", load(library, "cuEventCreate", d.event_create)},
      {"cuEventRecord", load(library, "cuEventRecord", d.event_record)},
      {"cuEventSynchronize", load(library, "cuEventSynchronize", d.event_synchronize)},
      {"cuEventElapsedTime", elapsed},
      {"cuEventDestroy_v2", load(library, "cuEventDestroy_v2", d.event_destroy)},
      {"cuGetErrorString", load(library, "cuGetErrorString", d.error_string)},
  };
  for (const auto& [name, found] : loaded) {
    if (!found) {
      d.missing = "the CUDA driver has no " + std::string(name);
      return d;
    }
  }
  return d;
}

const Driver& driver() {
  static const Driver d = load_driver();  // thread-safe initialization
  return d;
}

Error driver_error(const Driver& d, CuResult status, const char* call) {
  const char* text = nullptr;
  if (d.error_string(status, &text) != cuda_success || text == nullptr) {
    text = "unknown error";
  }
  return Error{ErrorCode::CudaFailure, std::string("autotune timing: ") + call + " failed: " +
                                           text + " (CUresult " + std::to_string(status) + ")"};
}

// Events created here, destroyed on every path.
class Events {
 public:
  explicit Events(const Driver& d) : d_(d) {}
  ~Events() {
    for (CuEvent e : events_) {
      d_.event_destroy(e);
    }
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  Events(Events&&) = delete;
  Events& operator=(Events&&) = delete;

  Result<void> create(std::size_t count) {
    events_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      CuEvent e = nullptr;
      if (const CuResult s = d_.event_create(&e, event_default); s != cuda_success) {
        return std::unexpected(driver_error(d_, s, "cuEventCreate"));
      }
      events_.push_back(e);
    }
    return {};
  }
  [[nodiscard]] CuEvent operator[](std::size_t i) const { return events_[i]; }

 private:
  const Driver& d_;
  std::vector<CuEvent> events_;
};

}  // namespace

Result<std::vector<double>> gpu_times_ms(CUstream_st* stream, std::int64_t warmup,
                                         std::int64_t iterations,
                                         const std::function<Result<void>()>& work) {
  const Driver& d = driver();
  if (!d.missing.empty()) {
    return make_error(ErrorCode::CudaFailure, "autotune timing: " + d.missing);
  }
  // The warm-up runs first: they also make the CUDA runtime (inside cuDNN) bind this thread to
  // its context, which the driver's event calls need.
  for (std::int64_t i = 0; i < warmup; ++i) {
    if (auto ran = work(); !ran) {
      return std::unexpected(ran.error());
    }
  }
  const auto n = gsl::narrow_cast<std::size_t>(iterations);  // 1..100000: autotune checked it
  Events events(d);
  if (auto made = events.create(2 * n); !made) {
    return std::unexpected(made.error());
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (const CuResult s = d.event_record(events[2 * i], stream); s != cuda_success) {
      return std::unexpected(driver_error(d, s, "cuEventRecord"));
    }
    if (auto ran = work(); !ran) {
      return std::unexpected(ran.error());
    }
    if (const CuResult s = d.event_record(events[2 * i + 1], stream); s != cuda_success) {
      return std::unexpected(driver_error(d, s, "cuEventRecord"));
    }
  }
  std::vector<double> times;
  if (n == 0) {
    return times;
  }
  if (const CuResult s = d.event_synchronize(events[2 * n - 1]); s != cuda_success) {
    return std::unexpected(driver_error(d, s, "cuEventSynchronize"));
  }
  times.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    float ms = 0;
    if (const CuResult s = d.event_elapsed(&ms, events[2 * i], events[2 * i + 1]);
        s != cuda_success) {
      return std::unexpected(driver_error(d, s, "cuEventElapsedTime"));
    }
    times.push_back(ms);
  }
  return times;
}

}  // namespace dnngraph::detail
