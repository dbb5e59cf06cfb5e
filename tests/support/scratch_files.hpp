// Files for tests that write some: a fresh folder per case under the temporary space, and a
// file's bytes read back.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dnngraph::testing {

// <temp>/dnngraph-<suite>-<pid>-<name>, emptied.
inline std::filesystem::path scratch(const std::string& suite, const std::string& name) {
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() /
      ("dnngraph-" + suite + "-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(folder);
  return folder;
}

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace dnngraph::testing
