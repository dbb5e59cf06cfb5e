// Log sites inside the library (internal to api/): log_info / log_debug take a callable that
// makes the line, called only when the level is on, so a site costs one relaxed atomic load and
// no text when logging is off.
#pragma once

#include "api/error.hpp"
#include "api/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace dnngraph::detail {

// The LogLevel in force, as its integer; set from DNNGRAPH_LOG when the library is loaded.
extern std::atomic<std::uint8_t> log_threshold;

[[nodiscard]] inline bool log_enabled(LogLevel level) noexcept {
  return log_threshold.load(std::memory_order_relaxed) >= static_cast<std::uint8_t>(level);
}

// Hands the line to the sink (the callback, else the file); the slow path, out of line.
void emit(LogLevel level, const std::string& line);

template <class MakeLine>
void log_at(LogLevel level, MakeLine&& make_line) {
  if (log_enabled(level)) [[unlikely]] {
    emit(level, std::forward<MakeLine>(make_line)());
  }
}

template <class MakeLine>
void log_info(MakeLine&& make_line) {
  log_at(LogLevel::Info, std::forward<MakeLine>(make_line));
}

template <class MakeLine>
void log_debug(MakeLine&& make_line) {
  log_at(LogLevel::Debug, std::forward<MakeLine>(make_line));
}

// Runs call() (a Result<void>); at Info, one line after it: head(), then ": " and success() or
// ": failed, CODE: message", then the time it took. Without Info only the call runs.
template <class Call, class Head, class Success>
Result<void> logged_call(Call&& call, Head&& head, Success&& success) {
  if (!log_enabled(LogLevel::Info)) {
    return std::forward<Call>(call)();
  }
  const auto started = std::chrono::steady_clock::now();
  Result<void> result = std::forward<Call>(call)();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  emit(LogLevel::Info, std::forward<Head>(head)() +
                           (result ? ": " + std::forward<Success>(success)()
                                   : ": failed, " + std::string(to_string(result.error().code)) +
                                         ": " + result.error().message) +
                           "; " + std::to_string(ms) + " ms");
  return result;
}

}  // namespace dnngraph::detail
