// CUDA events through the driver API, loaded at run time: see gpu_timer.hpp.
#include "detail/plan/gpu_timer.hpp"

#include "detail/common/cuda_driver.hpp"

#include <gsl/util>

#include <string>
#include <utility>

namespace dnngraph::detail {

namespace {

constexpr unsigned int event_default = 0;

Error driver_error(CuResult status, const char* call) {
  return cuda_driver_error("autotune timing", status, call);
}

// Events created here, destroyed on every path.
class Events {
 public:
  explicit Events(const CudaDriver& d) : d_(d) {}
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
        return std::unexpected(driver_error(s, "cuEventCreate"));
      }
      events_.push_back(e);
    }
    return {};
  }
  [[nodiscard]] CuEvent operator[](std::size_t i) const { return events_[i]; }

 private:
  const CudaDriver& d_;
  std::vector<CuEvent> events_;
};

}  // namespace

Result<std::vector<double>> gpu_times_ms(CUstream_st* stream, std::int64_t warmup,
                                         std::int64_t iterations,
                                         const std::function<Result<void>()>& work) {
  const CudaDriver& d = cuda_driver();
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
      return std::unexpected(driver_error(s, "cuEventRecord"));
    }
    if (auto ran = work(); !ran) {
      return std::unexpected(ran.error());
    }
    if (const CuResult s = d.event_record(events[2 * i + 1], stream); s != cuda_success) {
      return std::unexpected(driver_error(s, "cuEventRecord"));
    }
  }
  std::vector<double> times;
  if (n == 0) {
    return times;
  }
  if (const CuResult s = d.event_synchronize(events[2 * n - 1]); s != cuda_success) {
    return std::unexpected(driver_error(s, "cuEventSynchronize"));
  }
  times.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    float ms = 0;
    if (const CuResult s = d.event_elapsed(&ms, events[2 * i], events[2 * i + 1]);
        s != cuda_success) {
      return std::unexpected(driver_error(s, "cuEventElapsedTime"));
    }
    times.push_back(ms);
  }
  return times;
}

}  // namespace dnngraph::detail
