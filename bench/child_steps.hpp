// What the benches whose steps run each in a child process of their own share
// (bench_kernel_cache_persist, bench_plan_serialize): a fresh folder for a step's
// CUDA_CACHE_PATH, a child's output echoed and kept, the numbers on its lines, comma-separated
// lists on the command line, numbers as text. Needs no dnngraph header.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
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

// A path under the system's temporary folder for a row's documents, unique to this process:
// two benches run at once (one per cuDNN version) must not read each other's files.
inline std::string scratch_path(std::string_view stem) {
  return (std::filesystem::temp_directory_path() /
          ("dnngraph-" + std::string(stem) + "-" + std::to_string(getpid())))
      .string();
}

// The driver's JIT cache (CUDA_CACHE_PATH) would make a "cold" process warm. Isolated: every step
// a new empty folder of its own, removed after it (what the library's own documents give). Kept
// (a deployed server's restarts): a step that saves starts from an empty folder and leaves it as
// its process left it; each restart step after it gets a copy of that folder, so no restart step
// sees what another restart step compiled (session 22: the cold step ran after the load step had
// put the new shape's kernel in a shared folder, and the row compared a warm "cold" with the load).
// Every folder is removed with this object or at the next step of the same kind.
class JitFolders {
 public:
  enum class Step : std::uint8_t { Save, Restart };

  JitFolders(bool isolated, std::string_view row) : isolated_(isolated), row_(row) {}
  JitFolders(const JitFolders&) = delete;
  JitFolders& operator=(const JitFolders&) = delete;
  ~JitFolders() {
    remove(saved_);
    remove(step_);
  }

  // The folder for the next step; empty when none could be made (or, for a kept restart, no save
  // step came before it).
  [[nodiscard]] std::string next(std::string_view step, Step kind) {
    remove(step_);
    step_.clear();
    if (isolated_) {
      step_ = empty_folder(step);
      return step_;
    }
    if (kind == Step::Save) {
      remove(saved_);
      saved_ = empty_folder(row_ + "-" + std::string(step));
      return saved_;
    }
    if (saved_.empty()) {
      return {};
    }
    step_ = empty_folder(row_ + "-" + std::string(step));
    std::error_code error;
    if (!step_.empty()) {
      std::filesystem::copy(saved_, step_, std::filesystem::copy_options::recursive, error);
    }
    if (error) {
      remove(step_);
      step_.clear();
    }
    return step_;
  }

 private:
  static void remove(const std::string& folder) {
    std::error_code ignored;
    if (!folder.empty()) {
      std::filesystem::remove_all(folder, ignored);
    }
  }

  bool isolated_;
  std::string row_;
  std::string saved_;  // kept: the last save step's folder, as its process left it
  std::string step_;   // the current step's own folder (isolated, or a kept restart's copy)
};

// The line a mode's table starts with.
inline void print_jit_mode(bool isolated) {
  std::printf("\ndriver JIT cache %s\n",
              isolated ? "isolated: an empty CUDA_CACHE_PATH for every step"
                       : "kept: a save step's CUDA_CACHE_PATH starts empty, each restart step "
                         "after it gets a copy of it as the save left it");
}

// One mode's table: the mode's line, run_row(row) for each row in turn (stopping at the first
// that finds no device: exit_no_device), then print(rows). 1 when a row failed (run_row said so,
// or failed(row)), else 0.
template <class Row, class RunRow, class Failed, class Print>
int run_table(const char* program, bool isolated, std::vector<Row> rows, RunRow run_row,
              Failed failed, Print print) {
  print_jit_mode(isolated);
  bool any_failed = false;
  for (Row& row : rows) {
    const int code = run_row(row);
    if (code == exit_no_device) {
      std::printf("%s: needs a CUDA device\n", program);
      return exit_no_device;
    }
    any_failed |= code != 0 || failed(row);
  }
  print(rows);
  return any_failed ? 1 : 0;
}

// table(isolated) for the isolated mode and then the kept one, or only for `only`; stops at the
// first that returns exit_no_device and returns it, else 1 when any table returned non-zero.
template <class Table>
int each_jit_mode(std::optional<bool> only, Table table) {
  int failed = 0;
  for (const bool isolated : {true, false}) {
    if (!only || *only == isolated) {
      const int code = table(isolated);
      if (code == exit_no_device) {
        return exit_no_device;
      }
      failed |= code != 0 ? 1 : 0;
    }
  }
  return failed;
}

// One JSON object on one line, members in the order added (values already JSON text).
class JsonLine {
 public:
  void add(std::string_view key, const std::string& value) {
    text_.append(text_.empty() ? "{\"" : ",\"").append(key).append("\":").append(value);
  }
  [[nodiscard]] std::string text() const { return text_ + "}"; }

  // true, false, or null for a value a failed step did not give.
  [[nodiscard]] static std::string flag(std::optional<bool> value) {
    return value ? std::string(*value ? "true" : "false") : std::string("null");
  }
  [[nodiscard]] static std::string quoted(std::string_view text) {
    return "\"" + std::string(text) + "\"";
  }

 private:
  std::string text_;
};

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
  // A crash prints nothing of its own here. The shell reports a signal N that ended the program
  // it ran as exit status 128 + N.
  const int ended_by = status == -1            ? 0
                       : WIFSIGNALED(status)   ? WTERMSIG(status)
                       : child.exit_code > 128 ? child.exit_code - 128
                                               : 0;
  if (ended_by != 0) {
    std::printf("  %.*s ended by signal %d\n", static_cast<int>(prefix.size()), prefix.data(),
                ended_by);
  }
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

// A list option of a table's command line, "--name a,b,c", and what reads its list (false for a
// bad one).
struct ListOption {
  std::string_view name;
  std::function<bool(std::string_view)> read;
};

// Reads a list option's items, each through `parse`, into `into`.
template <class T, class Parse>
std::function<bool(std::string_view)> list_into(std::vector<T>& into, Parse parse) {
  return [&into, parse](std::string_view text) {
    auto list = parse_list<T>(text, parse);
    if (list) {
      into = std::move(*list);
    }
    return list.has_value();
  };
}

// A table's command line: at most one mode word, isolated or kept (into `isolated`), and the
// list options, in any order; false for anything else.
inline bool parse_table_options(int argc, char* argv[], std::optional<bool>& isolated,
                                std::span<const ListOption> lists) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if ((arg == "isolated" || arg == "kept") && !isolated) {
      isolated = arg == "isolated";
      continue;
    }
    const auto option = std::ranges::find(lists, arg, &ListOption::name);
    if (option == lists.end() || i + 1 >= argc) {
      return false;
    }
    ++i;
    if (!option->read(argv[i])) {
      return false;
    }
  }
  return true;
}

inline std::string fixed(double value, const char* format = "%.3f") {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), format, value);
  return text.data();
}

}  // namespace dnngraph_bench
