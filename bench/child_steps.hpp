// What the benches whose steps run each in a child process of their own share
// (bench_kernel_cache_persist, bench_plan_serialize): a fresh folder for a step's
// CUDA_CACHE_PATH, a child's output echoed and kept, the numbers on its lines, comma-separated
// lists on the command line, numbers as text. Needs no dnngraph header.
#pragma once

#include <sys/wait.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace dnngraph_bench {

// The exit code of a step (and of the program) that found no CUDA device.
constexpr int exit_no_device = 77;

// A new empty folder under the system's temporary folder (for a CUDA_CACHE_PATH); empty on error.
inline std::string empty_folder(std::string_view what) {
  std::string pattern =
      (std::filesystem::temp_directory_path() / ("dnngraph-jit-" + std::string(what) + "-XXXXXX"))
          .string();
  return mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
}

// The number after " key=" in a line; nullopt when it is not there.
inline std::optional<double> field(std::string_view line, std::string_view key) {
  const std::string needle = " " + std::string(key) + "=";
  const auto at = line.find(needle);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view rest = line.substr(at + needle.size());
  double value = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  return error == std::errc() ? std::optional(value) : std::nullopt;
}

struct ChildOutput {
  std::vector<std::string> lines;  // its standard output, a line each (newline kept)
  int exit_code = 1;               // 1 also when it did not start or did not exit by itself
};

// Runs `command` through the shell and waits for it, echoing each line of its standard output
// as "  <prefix> <line>" as it comes, so a long table shows its progress.
inline ChildOutput run_child(const std::string& command, std::string_view prefix) {
  ChildOutput child;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    std::printf("  %s: popen failed\n", command.c_str());
    return child;
  }
  std::array<char, 2048> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    std::printf("  %.*s %s", static_cast<int>(prefix.size()), prefix.data(), buffer.data());
    child.lines.emplace_back(buffer.data());
  }
  const int status = pclose(pipe);
  child.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return child;
}

// Comma-separated items, each through `parse`; nullopt when any is bad or none is given.
template <class T, class Parse>
std::optional<std::vector<T>> parse_list(std::string_view text, Parse parse) {
  std::vector<T> items;
  while (!text.empty()) {
    const auto comma = text.find(',');
    auto item = parse(text.substr(0, comma));
    if (!item) {
      return std::nullopt;
    }
    items.push_back(*item);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return items.empty() ? std::nullopt : std::optional(items);
}

inline std::string fixed(double value, const char* format = "%.3f") {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), format, value);
  return text.data();
}

}  // namespace dnngraph_bench
