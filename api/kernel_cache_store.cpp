// dnngraph::KernelCacheStore: file names from keys, load with damage set aside, save when the
// revision moved. The file operations themselves are detail/cache/store_files, the merged save
// of a key's file detail/cache/merged_save.
#include "api/kernel_cache_store.hpp"

#include "api/version.hpp"
#include "backend/features.hpp"
#include "detail/cache/kernel_cache_json.hpp"
#include "detail/cache/merged_save.hpp"
#include "detail/cache/store_files.hpp"
#include "detail/common/checked.hpp"
#include "detail/common/logging.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <system_error>
#include <utility>

namespace dnngraph {

namespace {

constexpr std::size_t max_name_length = 128;
// A file name has at most 255 bytes (NAME_MAX of Linux file systems), and the store's
// temporaries add ".tmp.<pid>.<n>" (at most 26) to a key's: longer names could not be written.
constexpr std::size_t max_file_name_length = 255 - 26;
// The most a load reads of a file: the largest document from_json takes (an entry is about
// 50 KB, docs/kernel-cache.md). A larger file can be no document: read_file refuses it by its
// size before reading a byte, and the load sets it aside, so no later load reads it again.
constexpr std::size_t max_document_bytes = KernelCache::max_json_bytes;
constexpr std::string_view separator = "--";
constexpr std::string_view cudnn_prefix = "cudnn-";

// Empty when `name` can be part of a file name; otherwise why not.
std::string name_problem(std::string_view name) {
  if (name.empty()) {
    return "is empty";
  }
  if (name.size() > max_name_length) {
    return "has " + std::to_string(name.size()) + " characters, more than " +
           std::to_string(max_name_length);
  }
  if (name.front() == '.') {
    return "starts with '.'";
  }
  if (name.find(separator) != std::string_view::npos) {
    return "contains \"--\" (the file name's separator)";
  }
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return std::string("contains '") + c + "' (letters, digits, '.', '_' and '-' only)";
    }
  }
  return {};
}

// "9.27.0" -> 92700; nullopt for anything else, and for a major version whose encoding does not
// fit in int64 (a wrapped one once listed a file of a huge version as a 9.19 cache).
std::optional<std::int64_t> parse_version(std::string_view text) {
  const char* at = text.data();
  const char* const end = at + text.size();
  std::array<std::int64_t, 3> parts{};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (at == end || *at < '0' || *at > '9') {  // from_chars would take a '-'
      return std::nullopt;
    }
    auto [next, ec] = std::from_chars(at, end, parts.at(i));
    if (ec != std::errc() || (i > 0 && parts.at(i) > 99)) {
      return std::nullopt;
    }
    at = next;
    if (i + 1 < parts.size()) {
      if (at == end || *at != '.') {
        return std::nullopt;
      }
      ++at;
    }
  }
  if (at != end) {
    return std::nullopt;
  }
  return detail::checked_mul_add(parts[0], 10000, parts[1] * 100 + parts[2]);
}

std::int64_t resolved_version(const KernelCacheKey& key) {
  return key.cudnn_version != 0 ? key.cudnn_version : backend::loaded_version();
}

// The checks from_json makes before cuDNN parses a document (its size, then the schema), so the
// store never writes what the next load would set aside as damaged.
Result<void> check_loadable(std::string_view json) {
  if (json.size() > KernelCache::max_json_bytes) {
    return make_error(ErrorCode::InvalidJson, "kernel cache store: a document of " +
                                                  std::to_string(json.size()) +
                                                  " bytes is larger than from_json takes");
  }
  if (auto checked = detail::check_cache_document(json); !checked) {
    return std::unexpected(checked.error());
  }
  return {};
}

}  // namespace

KernelCacheStore::KernelCacheStore(std::filesystem::path folder,
                                   std::chrono::milliseconds lock_patience)
    : folder_(std::move(folder)), lock_patience_(lock_patience) {}

KernelCacheStore::~KernelCacheStore() = default;

Result<std::filesystem::path> KernelCacheStore::default_folder() {
  const auto variable = [](const char* name) -> std::optional<std::filesystem::path> {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == 0) {
      return std::nullopt;
    }
    return std::filesystem::path(value);
  };
  if (auto given = variable("DNNGRAPH_CACHE_DIR")) {
    return *given;
  }
  if (auto xdg = variable("XDG_CACHE_HOME")) {
    return *xdg / "dnngraph";
  }
  if (auto home = variable("HOME")) {
    return *home / ".cache" / "dnngraph";
  }
  return make_error(ErrorCode::InvalidState,
                    "KernelCacheStore::default_folder: none of DNNGRAPH_CACHE_DIR, "
                    "XDG_CACHE_HOME and HOME is set: give the store a folder");
}

Result<std::string> KernelCacheStore::file_name(const KernelCacheKey& key) {
  for (const auto& [what, name] :
       {std::pair<std::string_view, const std::string&>{"topology", key.topology},
        {"gpu_architecture", key.gpu_architecture}}) {
    if (auto problem = name_problem(name); !problem.empty()) {
      std::string message = "kernel cache store: the key's ";
      message += what;
      message += " \"";
      message += name;
      message += "\" ";
      message += problem;
      message += "; it names a file";
      return make_error(ErrorCode::InvalidAttribute, std::move(message));
    }
  }
  const std::int64_t version = resolved_version(key);
  if (version <= 0) {
    return make_error(ErrorCode::InvalidAttribute,
                      "kernel cache store: the key's cudnn_version " + std::to_string(version) +
                          " is not a cuDNN version (e.g. 92700 for 9.27.0; 0 for the loaded one)");
  }
  std::string name = key.topology + std::string(separator) + std::string(cudnn_prefix) +
                     cudnn_version_string(version) + std::string(separator) + key.gpu_architecture +
                     std::string(file_suffix);
  if (name.size() > max_file_name_length) {
    return make_error(ErrorCode::InvalidAttribute,
                      "kernel cache store: the key's file name \"" + name + "\" has " +
                          std::to_string(name.size()) + " characters, more than " +
                          std::to_string(max_file_name_length) +
                          " (a file name's 255 less the store's temporary suffix); shorten the "
                          "topology or the gpu_architecture");
  }
  return name;
}

std::optional<KernelCacheKey> KernelCacheStore::key_of(std::string_view file_name) {
  // <topology>--cudnn-<version>--<arch>.json. Neither name holds "--", so the first "--cudnn-" is
  // the one after the topology (which may end in '-') and the first "--" after the version's
  // digits and dots is the one before the architecture (which may start with '-').
  std::string_view rest = file_name;
  if (!rest.ends_with(file_suffix)) {
    return std::nullopt;
  }
  rest.remove_suffix(file_suffix.size());
  const std::string version_mark = std::string(separator) + std::string(cudnn_prefix);
  const auto topology_end = rest.find(version_mark);
  if (topology_end == std::string_view::npos) {
    return std::nullopt;
  }
  KernelCacheKey key;
  key.topology = std::string(rest.substr(0, topology_end));
  rest.remove_prefix(topology_end + version_mark.size());
  const auto version_end = rest.find(separator);
  if (version_end == std::string_view::npos) {
    return std::nullopt;
  }
  const auto version = parse_version(rest.substr(0, version_end));
  if (!version) {
    return std::nullopt;
  }
  key.cudnn_version = *version;
  key.gpu_architecture = std::string(rest.substr(version_end + separator.size()));
  // Only the one name file_name() makes for the key: no other spelling ("9.019.0"), no name it
  // refuses; so key_of and file_name are inverse to each other.
  const auto canonical = KernelCacheStore::file_name(key);
  if (!canonical || *canonical != file_name) {
    return std::nullopt;
  }
  return key;
}

Result<void> KernelCacheStore::make_folder() const {
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec) {
    return make_error(ErrorCode::IoFailure, "kernel cache store: make the folder " +
                                                folder_.string() + ": " + ec.message());
  }
  return {};
}

std::string KernelCacheStore::set_aside(const std::filesystem::path& path, std::string_view seen,
                                        const Error& why) const {
  std::string warning = "kernel cache store: " + path.string() + " is damaged (" +
                        std::string(to_string(why.code)) + ": " + why.message + ")";
  auto lock = detail::FolderLock::acquire(folder_, lock_patience_);
  if (!lock) {
    return warning + "; left in place (" + lock.error().message + "); starting with an empty cache";
  }
  // Another process may have replaced it with a good document since it was read.
  auto now = detail::read_file(path, max_document_bytes);
  if (now && *now != seen) {
    return warning +
           "; left in place (another writer replaced it meanwhile); starting with an "
           "empty cache";
  }
  std::filesystem::path aside = path;
  aside += damaged_suffix;
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  if (ec) {
    return warning + "; could not set it aside (" + ec.message() +
           "); starting with an empty cache";
  }
  return warning + "; set aside as " + aside.string() + "; starting with an empty cache";
}

Result<StoredKernelCache> KernelCacheStore::load_or_create(const KernelCacheKey& key) {
  auto name = file_name(key);
  if (!name) {
    return std::unexpected(name.error());
  }
  if (auto made = make_folder(); !made) {
    return std::unexpected(made.error());
  }
  detail::remove_orphan_temporaries_if_unlocked(folder_);
  StoredKernelCache stored{std::make_shared<KernelCache>(), folder_ / *name, false, {}};
  std::error_code ec;
  // symlink_status: a link is an entry of its own (read_file refuses it), even a dangling one.
  if (std::filesystem::exists(std::filesystem::symlink_status(stored.path, ec))) {
    auto text = detail::read_file(stored.path, max_document_bytes);
    if (!text && text.error().code == ErrorCode::InvalidJson) {  // no document can be there
      stored.warning = set_aside(stored.path, {}, text.error());
    } else if (!text) {
      stored.warning = text.error().message + "; starting with an empty cache";
    } else if (auto loaded = stored.cache->from_json(*text); loaded) {
      stored.loaded = true;
    } else if (loaded.error().code == ErrorCode::InvalidJson) {
      stored.warning = set_aside(stored.path, *text, loaded.error());
    } else {  // not the file's fault (e.g. cuDNN could not make a descriptor): leave it
      stored.warning = "kernel cache store: " + stored.path.string() + " could not be loaded (" +
                       std::string(to_string(loaded.error().code)) + ": " + loaded.error().message +
                       "); starting with an empty cache";
    }
  }
  detail::log_info([&] {
    return stored.loaded ? "kernel cache store: loaded " + stored.path.string()
           : stored.warning.empty()
               ? "kernel cache store: no " + stored.path.string() + " yet; a new cache"
               : stored.warning;
  });
  KernelCacheKey resolved = key;
  resolved.cudnn_version = resolved_version(key);
  std::scoped_lock lock(mutex_);
  std::erase_if(handed_, [](const Handed& h) { return h.cache.expired(); });
  handed_.push_back(Handed{stored.cache, stored.cache.get(), std::move(resolved),
                           stored.loaded ? std::optional<std::int64_t>(0) : std::nullopt});
  return stored;
}

Result<bool> KernelCacheStore::save_if_changed(const KernelCache& cache) {
  std::scoped_lock lock(mutex_);
  auto handed = std::ranges::find_if(
      handed_, [&](const Handed& h) { return h.address == &cache && !h.cache.expired(); });
  if (handed == handed_.end()) {
    return make_error(ErrorCode::InvalidState,
                      "kernel cache store: save_if_changed of a cache this store did not hand "
                      "out (take caches from load_or_create)");
  }
  if (!cache.is_built()) {
    return false;  // no build used it: nothing new to save
  }
  auto revision = cache.revision();
  if (!revision) {
    return std::unexpected(revision.error());
  }
  if (handed->saved_revision == *revision) {
    detail::log_debug([&] {
      return "kernel cache store: revision " + std::to_string(*revision) +
             " unchanged since the last load or save; not written";
    });
    return false;
  }
  auto json = cache.to_json();
  if (!json) {
    return std::unexpected(json.error());
  }
  auto name = file_name(handed->key);
  if (!name) {
    return std::unexpected(name.error());
  }
  if (auto loadable = check_loadable(*json); !loadable) {
    return make_error(ErrorCode::InvalidJson,
                      "kernel cache store: not saved: from_json would refuse the document cuDNN "
                      "wrote for this cache, and the next load would set the file aside (" +
                          loadable.error().message + "); " + (folder_ / *name).string() +
                          " is left as it was");
  }
  if (auto made = make_folder(); !made) {
    return std::unexpected(made.error());
  }
  auto kept = detail::replace_merged(folder_, lock_patience_, *name, *json, max_document_bytes);
  if (!kept) {
    return std::unexpected(kept.error());
  }
  detail::log_info([&] {
    return "kernel cache store: saved " + (folder_ / *name).string() + " (revision " +
           (handed->saved_revision ? std::to_string(*handed->saved_revision) : std::string("new")) +
           " -> " + std::to_string(*revision) + ", " + std::to_string(json->size()) + " bytes, " +
           std::to_string(*kept) + " entries another save had written kept)";
  });
  handed->saved_revision = *revision;
  return true;
}

Result<void> KernelCacheStore::write(const KernelCacheKey& key, std::string_view json) {
  auto name = file_name(key);
  if (!name) {
    return std::unexpected(name.error());
  }
  if (auto loadable = check_loadable(json); !loadable) {
    return loadable;
  }
  return replace_locked(*name, json);
}

Result<void> KernelCacheStore::replace_locked(const std::string& name,
                                              std::string_view text) const {
  if (auto made = make_folder(); !made) {
    return made;
  }
  auto folder_lock = detail::FolderLock::acquire(folder_, lock_patience_);
  if (!folder_lock) {
    return std::unexpected(folder_lock.error());
  }
  detail::remove_orphan_temporaries(folder_);
  return detail::replace_file(folder_ / name, text);
}

Result<std::vector<StoredFile>> KernelCacheStore::list() const {
  std::error_code ec;
  std::filesystem::directory_iterator it(folder_, ec);
  if (ec) {
    return make_error(ErrorCode::IoFailure,
                      "kernel cache store: list " + folder_.string() + ": " + ec.message());
  }
  std::vector<StoredFile> files;
  // increment(ec), not a range-for: its operator++ throws.
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    if (!it->is_regular_file(entry_ec) || it->is_symlink(entry_ec)) {  // what a load would read
      continue;
    }
    auto key = key_of(it->path().filename().string());
    if (!key) {
      continue;
    }
    files.push_back(StoredFile{it->path(), std::move(*key), it->file_size(entry_ec)});
  }
  if (ec) {
    return make_error(ErrorCode::IoFailure,
                      "kernel cache store: list " + folder_.string() + ": " + ec.message());
  }
  std::ranges::sort(files, {}, [](const StoredFile& f) { return f.path.filename().string(); });
  return files;
}

}  // namespace dnngraph
