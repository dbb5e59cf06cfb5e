// The log's level and sink: DNNGRAPH_LOG / DNNGRAPH_LOG_FILE read once at load, the callback
// or the file written under one mutex, the callback called outside it.
#include "api/log.hpp"

#include "detail/common/logging.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

namespace dnngraph {

namespace {

std::uint8_t threshold_from_environment() noexcept {
  const char* value = std::getenv("DNNGRAPH_LOG");
  if (value == nullptr) {
    return static_cast<std::uint8_t>(LogLevel::Off);
  }
  const std::string_view text(value);
  if (text == "info") {
    return static_cast<std::uint8_t>(LogLevel::Info);
  }
  if (text == "debug") {
    return static_cast<std::uint8_t>(LogLevel::Debug);
  }
  if (!text.empty() && text != "off") {
    std::fprintf(stderr, "dnngraph: DNNGRAPH_LOG=%s is none of off, info, debug; logging is off\n",
                 value);
  }
  return static_cast<std::uint8_t>(LogLevel::Off);
}

// Where lines go. Made at the first line logged (DNNGRAPH_LOG_FILE read then).
struct CloseFile {
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): the unique_ptr below owns it
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

struct Sink {
  std::mutex mutex;
  std::shared_ptr<const LogSink> callback;       // guarded by mutex; null: the file
  std::FILE* file = stderr;                      // guarded by mutex: stderr, stdout or opened.get()
  std::unique_ptr<std::FILE, CloseFile> opened;  // DNNGRAPH_LOG_FILE=PATH

  Sink() {
    const char* target = std::getenv("DNNGRAPH_LOG_FILE");
    if (target == nullptr || std::string_view(target).empty() ||
        std::string_view(target) == "stderr") {
      return;
    }
    if (std::string_view(target) == "stdout") {
      file = stdout;
      return;
    }
    opened.reset(std::fopen(target, "a"));  // NOLINT(cppcoreguidelines-owning-memory): owned
    if (!opened) {
      std::fprintf(stderr, "dnngraph: cannot open DNNGRAPH_LOG_FILE=%s; logging to stderr\n",
                   target);
      return;
    }
    file = opened.get();
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
  Sink(Sink&&) = delete;
  Sink& operator=(Sink&&) = delete;
  ~Sink() = default;
};

Sink& sink() {
  static Sink instance;
  return instance;
}

}  // namespace

namespace detail {

std::atomic<std::uint8_t> log_threshold{threshold_from_environment()};

void emit(LogLevel level, const std::string& line) {
  Sink& s = sink();
  std::shared_ptr<const LogSink> callback;
  {
    std::scoped_lock lock(s.mutex);
    callback = s.callback;
    if (!callback) {
      const std::string text = "[dnngraph " + std::string(to_string(level)) + "] " + line + "\n";
      std::fputs(text.c_str(), s.file);
      std::fflush(s.file);
      return;
    }
  }
  (*callback)(level, line);  // user code: no lock held
}

}  // namespace detail

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::Off: return "off";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "Unknown";
}

void set_log_level(LogLevel level) noexcept {
  detail::log_threshold.store(static_cast<std::uint8_t>(level), std::memory_order_relaxed);
}

LogLevel log_level() noexcept {
  return static_cast<LogLevel>(detail::log_threshold.load(std::memory_order_relaxed));
}

void set_log_sink(LogSink sink_function) {
  Sink& s = sink();
  std::shared_ptr<const LogSink> next;
  if (sink_function) {
    next = std::make_shared<const LogSink>(std::move(sink_function));
  }
  std::scoped_lock lock(s.mutex);
  s.callback = std::move(next);
}

}  // namespace dnngraph
