// dnngraph-cache: look after a KernelCacheStore folder from the shell.
//   dnngraph-cache list DIR      one line per stored cache: key, cuDNN version, entries, size
//   dnngraph-cache inspect PATH  a file (or every file of a folder): topology summary, entries
//   dnngraph-cache verify DIR    each file checked as from_json checks it and, when it is for the
//                                cuDNN loaded here, loaded into a KernelCache; exit 1 if any fails
//   dnngraph-cache prune DIR [--dry-run] [--keep-other-versions]
//                                removes damaged files, temporaries of writers that died and
//                                (unless kept) caches of another cuDNN than the one loaded here
// Exit status: 0 fine, 1 something failed or is damaged, 2 usage.
#include "api/dnngraph.hpp"
#include "detail/cache/kernel_cache_json.hpp"
#include "detail/cache/store_files.hpp"

#include <boost/json.hpp>

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using dnngraph::KernelCacheStore;

namespace {

constexpr int exit_usage = 2;

int usage() {
  std::cerr << "usage: dnngraph-cache list DIR\n"
               "       dnngraph-cache inspect FILE|DIR\n"
               "       dnngraph-cache verify DIR\n"
               "       dnngraph-cache prune DIR [--dry-run] [--keep-other-versions]\n";
  return exit_usage;
}

std::string version_text(std::int64_t version) { return dnngraph::cudnn_version_string(version); }

// The document as JSON, or why it is not.
struct Parsed {
  std::optional<json::value> document;
  std::string problem;
};

Parsed parse(const fs::path& path) {
  auto text = dnngraph::detail::read_file(path, dnngraph::KernelCache::max_json_bytes);
  if (!text) {
    return {std::nullopt, text.error().message};
  }
  boost::system::error_code ec;
  json::value value = json::parse(*text, ec);
  if (ec) {
    return {std::nullopt, "does not parse: " + ec.message()};
  }
  return {std::move(value), {}};
}

const json::value* member(const json::value& v, std::string_view name) {
  const json::object* object = v.if_object();
  return object == nullptr ? nullptr : object->if_contains(name);
}

std::int64_t entry_count(const json::value& document) {
  const json::value* entries = member(document, "kernel_cache");
  return entries != nullptr && entries->is_array()
             ? static_cast<std::int64_t>(entries->as_array().size())
             : -1;
}

// "MATMUL" for "CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR".
std::string short_operation(std::string_view name) {
  for (std::string_view prefix : {"CUDNN_BACKEND_OPERATION_"}) {
    if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
  }
  if (name.ends_with("_DESCRIPTOR")) name.remove_suffix(std::string_view("_DESCRIPTOR").size());
  return std::string(name);
}

std::string topology_summary(const json::value& document) {
  const json::value* graph = member(document, "operationGraph");
  if (graph == nullptr) {
    return "no operationGraph";
  }
  std::string text;
  if (const json::value* nodes = member(*graph, "nodes"); nodes != nullptr && nodes->is_array()) {
    for (const json::value& node : nodes->as_array()) {
      const json::value* operation = member(node, "operation");
      if (!text.empty()) text += " -> ";
      text += operation != nullptr && operation->is_string()
                  ? short_operation(operation->as_string())
                  : std::string("?");
      if (const json::value* mode = member(node, "pointwiseMode"); mode && mode->is_string()) {
        text += "(" + std::string(mode->as_string()) + ")";
      }
    }
  }
  if (const json::value* tensors = member(*graph, "tensors"); tensors && tensors->is_array()) {
    text += "; " + std::to_string(tensors->as_array().size()) + " tensors";
  }
  if (const json::value* dynamic = member(*graph, "isDynamicShapeEnabled");
      dynamic && dynamic->is_bool()) {
    text += dynamic->as_bool() ? ", dynamic shapes" : ", static shapes";
  }
  return text;
}

int list(const fs::path& folder) {
  KernelCacheStore store(folder);
  auto files = store.list();
  if (!files) {
    std::cerr << "dnngraph-cache: " << files.error().message << "\n";
    return 1;
  }
  std::printf("%-40s %-9s %-8s %7s %10s  %s\n", "topology", "cuDNN", "arch", "entries", "bytes",
              "file");
  for (const auto& f : *files) {
    const Parsed parsed = parse(f.path);
    const std::string entries =
        parsed.document ? std::to_string(entry_count(*parsed.document)) : std::string("damaged");
    std::printf("%-40s %-9s %-8s %7s %10ju  %s\n", f.key.topology.c_str(),
                version_text(f.key.cudnn_version).c_str(), f.key.gpu_architecture.c_str(),
                entries.c_str(), f.bytes, f.path.filename().c_str());
  }
  std::printf("%zu cache%s in %s\n", files->size(), files->size() == 1 ? "" : "s", folder.c_str());
  return 0;
}

int inspect_file(const fs::path& path) {
  const Parsed parsed = parse(path);
  std::cout << path.string() << "\n";
  if (!parsed.document) {
    std::cout << "  damaged: " << parsed.problem << "\n";
    return 1;
  }
  const json::value& d = *parsed.document;
  std::error_code ec;
  std::cout << "  bytes: " << fs::file_size(path, ec) << "\n";
  if (const json::value* v = member(d, "cudnnVersion"); v && v->is_int64()) {
    std::cout << "  written by cuDNN " << version_text(v->as_int64()) << "\n";
  }
  if (const json::value* v = member(d, "schemaVersion"); v && v->is_int64()) {
    std::cout << "  schema version " << v->as_int64() << "\n";
  }
  std::cout << "  topology: " << topology_summary(d) << "\n";
  std::cout << "  entries: " << entry_count(d) << "\n";
  if (const json::value* entries = member(d, "kernel_cache"); entries && entries->is_array()) {
    int i = 0;
    for (const json::value& entry : entries->as_array()) {
      const json::value* key = member(entry, "key");
      const json::value* engine = key ? member(*key, "engineId") : nullptr;
      const json::value* knobs = key ? member(*key, "knobChoices") : nullptr;
      const json::value* value = member(entry, "value");
      std::cout << "    [" << i++ << "] engine "
                << (engine ? json::serialize(*engine) : std::string("?")) << ", knobs "
                << (knobs ? json::serialize(*knobs) : std::string("?")) << ", "
                << (value && value->is_array() ? value->as_array().size() : 0)
                << " compiled kernel(s)\n";
    }
  }
  return 0;
}

std::vector<fs::path> store_files(const fs::path& folder, int& status) {
  KernelCacheStore store(folder);
  auto files = store.list();
  std::vector<fs::path> paths;
  if (!files) {
    std::cerr << "dnngraph-cache: " << files.error().message << "\n";
    status = 1;
    return paths;
  }
  for (const auto& f : *files) paths.push_back(f.path);
  return paths;
}

int inspect(const fs::path& path) {
  int status = 0;
  if (!fs::is_directory(path)) {
    return inspect_file(path);
  }
  for (const auto& file : store_files(path, status)) {
    status = inspect_file(file) != 0 ? 1 : status;
  }
  return status;
}

int verify(const fs::path& folder) {
  int status = 0;
  const std::int64_t loaded = dnngraph::cudnn_runtime_version();
  int good = 0;
  int bad = 0;
  for (const auto& file : store_files(folder, status)) {
    const auto key = KernelCacheStore::key_of(file.filename().string());
    auto text = dnngraph::detail::read_file(file, dnngraph::KernelCache::max_json_bytes);
    std::string verdict;
    if (!text) {
      verdict = "FAILED: " + text.error().message;
    } else if (auto checked = dnngraph::detail::check_cache_document(*text); !checked) {
      verdict = "DAMAGED: " + checked.error().message;
    } else if (key && key->cudnn_version != loaded) {
      verdict = "ok: checked (" + std::to_string(checked->entries) +
                " entries); not loaded: it is for cuDNN " + version_text(key->cudnn_version) +
                ", " + version_text(loaded) + " is loaded here";
    } else {
      dnngraph::KernelCache cache;
      auto from = cache.from_json(*text);
      verdict = from ? "ok: checked and loaded (" + std::to_string(checked->entries) + " entries)"
                     : "DAMAGED: " + from.error().message;
    }
    const bool ok = verdict.starts_with("ok");
    (ok ? good : bad) += 1;
    std::cout << file.filename().string() << ": " << verdict << "\n";
  }
  std::cout << good << " ok, " << bad << " damaged or unreadable\n";
  return bad > 0 ? 1 : status;
}

// A temporary "<file>.tmp.<pid>.<n>" whose writer is gone.
bool dead_temporary(const std::string& name) {
  const auto at = name.find(".tmp.");
  if (at == std::string::npos) {
    return false;
  }
  const std::string rest = name.substr(at + 5);
  const auto dot = rest.find('.');
  if (dot == std::string::npos) {
    return false;
  }
  const pid_t pid = static_cast<pid_t>(std::strtol(rest.substr(0, dot).c_str(), nullptr, 10));
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

int prune(const fs::path& folder, bool dry_run, bool keep_other_versions) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    std::cerr << "dnngraph-cache: " << folder.string() << " is not a folder\n";
    return 1;
  }
  auto lock = dnngraph::detail::FolderLock::acquire(folder, std::chrono::seconds(10));
  if (!lock) {
    std::cerr << "dnngraph-cache: " << lock.error().message << "\n";
    return 1;
  }
  const std::int64_t loaded = dnngraph::cudnn_runtime_version();
  int removed = 0;
  int status = 0;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    std::string why;
    if (name.ends_with(KernelCacheStore::damaged_suffix)) {
      why = "damaged";
    } else if (dead_temporary(name)) {
      why = "temporary of a writer that died";
    } else if (auto key = KernelCacheStore::key_of(name);
               key && !keep_other_versions && key->cudnn_version != loaded) {
      why = "for cuDNN " + version_text(key->cudnn_version) + ", " + version_text(loaded) +
            " is loaded";
    } else {
      continue;
    }
    std::error_code remove_ec;
    if (!dry_run) fs::remove(entry.path(), remove_ec);
    if (remove_ec) {
      std::cerr << "dnngraph-cache: remove " << name << ": " << remove_ec.message() << "\n";
      status = 1;
      continue;
    }
    ++removed;
    std::cout << (dry_run ? "would remove " : "removed ") << name << " (" << why << ")\n";
  }
  std::cout << removed << (dry_run ? " would be removed\n" : " removed\n");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 2) {
    return usage();
  }
  const std::string& command = args[0];
  const fs::path path = args[1];
  try {
    if (command == "list" && args.size() == 2) return list(path);
    if (command == "inspect" && args.size() == 2) return inspect(path);
    if (command == "verify" && args.size() == 2) return verify(path);
    if (command == "prune") {
      bool dry_run = false;
      bool keep = false;
      for (std::size_t i = 2; i < args.size(); ++i) {
        if (args[i] == "--dry-run")
          dry_run = true;
        else if (args[i] == "--keep-other-versions")
          keep = true;
        else
          return usage();
      }
      return prune(path, dry_run, keep);
    }
  } catch (const std::exception& e) {  // a filesystem call that throws: say so, never abort
    std::cerr << "dnngraph-cache: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
