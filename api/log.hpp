// dnngraph's log: what a build did and why (lowering, heuristics candidates and why each was
// skipped, the plan chosen, kernel-cache hits and inserts, times, errors). Off unless asked for:
// DNNGRAPH_LOG=off|info|debug and DNNGRAPH_LOG_FILE=stderr|stdout|PATH (default stderr), read
// once when the library is loaded; or set_log_level / set_log_sink from code. When off, each log
// site costs one relaxed atomic load and builds no text; execute() has sites on error paths only.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace dnngraph {

enum class LogLevel : std::uint8_t {
  Off,    // nothing
  Info,   // one line per build, plan chosen, cache loads/saves, errors
  Debug,  // also every heuristics candidate and why it was skipped, every kernel-cache lookup
};

[[nodiscard]] std::string_view to_string(LogLevel level) noexcept;

void set_log_level(LogLevel level) noexcept;
[[nodiscard]] LogLevel log_level() noexcept;

// Receives every line (without a trailing newline) instead of DNNGRAPH_LOG_FILE, on the thread
// that logged, with no dnngraph lock held; it must not throw. An empty function goes back to the
// file. Setting a sink does not change the level.
using LogSink = std::function<void(LogLevel level, std::string_view line)>;
void set_log_sink(LogSink sink);

}  // namespace dnngraph
