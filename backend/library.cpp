// Finding, opening and calling the libcudnn.so.9 of this process (the order is in library.hpp).
#include "backend/library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph::backend {

namespace {

// cudnnGetExecutionPlanWorkspaceSize, which headers before 9.23 do not declare.
using WorkspaceSizeFn = cudnnStatus_t (*)(cudnnHandle_t, cudnnBackendDescriptor_t,
                                          cudnnBackendDescriptor_t, std::size_t*);

// The functions of one opened library; every member but workspace_size is non-null.
struct Api {
  decltype(&::cudnnGetVersion) get_version = nullptr;
  decltype(&::cudnnGetErrorString) get_error_string = nullptr;
  decltype(&::cudnnGetLastErrorString) get_last_error_string = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnDestroy) destroy = nullptr;
  decltype(&::cudnnSetStream) set_stream = nullptr;
  decltype(&::cudnnGetStream) get_stream = nullptr;
  decltype(&::cudnnBackendCreateDescriptor) create_descriptor = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) destroy_descriptor = nullptr;
  decltype(&::cudnnBackendFinalize) finalize = nullptr;
  decltype(&::cudnnBackendSetAttribute) set_attribute = nullptr;
  decltype(&::cudnnBackendGetAttribute) get_attribute = nullptr;
  decltype(&::cudnnBackendExecute) execute = nullptr;
  WorkspaceSizeFn workspace_size = nullptr;  // cuDNN >= 9.23
};

struct Candidate {
  std::string path;
  std::string reason;
};

// What was decided, once. Guarded by `mutex` until `api` is published; read-only afterwards.
struct State {
  std::mutex mutex;
  bool attempted = false;                // guarded by mutex
  std::optional<std::string> chosen;     // guarded by mutex: choose_library()
  std::vector<Candidate> candidates;     // guarded by mutex: add_library_candidate()
  Api functions;                         // written once, before `api` is published
  LibraryChoice choice;                  // written once, before `api` is published
  std::string failure;                   // guarded by mutex: why none loaded
  std::atomic<const Api*> api{nullptr};  // the hot path reads only this
};

State& state() {
  // Never destroyed: handles and descriptors owned by other static objects may call into cuDNN
  // while the program exits.
  static State* const s = new State();  // NOLINT(cppcoreguidelines-owning-memory): see above
  return *s;
}

constexpr std::string_view soname = "libcudnn.so.9";

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : std::string("no reason given");
}

bool names_libcudnn(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return file.starts_with("libcudnn.so");
}

// Every libcudnn the process has loaded already. More than one happens: torch, run with
// LD_LIBRARY_PATH at another cuDNN, binds its calls to that one while its loader also maps the
// wheel's (measured on the H200 with torch 2.11).
std::vector<std::string> already_loaded() {
  std::vector<std::string> found;
  dl_iterate_phdr(
      [](dl_phdr_info* object, std::size_t /*size*/, void* out) -> int {
        if (object->dlpi_name != nullptr && names_libcudnn(object->dlpi_name)) {
          static_cast<std::vector<std::string>*>(out)->emplace_back(object->dlpi_name);
        }
        return 0;
      },
      &found);
  return found;
}

// Of the loaded ones, the library the process's own calls reach (cudnnGetVersion as the global
// scope resolves it), else the first loaded.
std::string the_loaded_one(const std::vector<std::string>& loaded) {
  Dl_info info{};
  // NOLINTNEXTLINE(bugprone-casting-through-void): dlsym hands back a void*
  if (void* symbol = dlsym(RTLD_DEFAULT, "cudnnGetVersion");
      symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr &&
      names_libcudnn(info.dli_fname)) {
    return info.dli_fname;
  }
  return loaded.empty() ? std::string() : loaded.front();
}

bool is_directory(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa{};
  struct stat sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

template <class F>
bool resolve(void* library, const char* name, F& out, std::string& missing) {
  // NOLINTNEXTLINE(bugprone-casting-through-void): dlsym hands back a void*
  out = reinterpret_cast<F>(dlsym(library, name));
  if (out == nullptr) {
    missing += missing.empty() ? name : std::string(", ") + name;
    return false;
  }
  return true;
}

// Resolves the functions of an opened library into `api`; "" on success, else what is missing.
std::string resolve_all(void* library, Api& api) {
  std::string missing;
  resolve(library, "cudnnGetVersion", api.get_version, missing);
  resolve(library, "cudnnGetErrorString", api.get_error_string, missing);
  resolve(library, "cudnnGetLastErrorString", api.get_last_error_string, missing);
  resolve(library, "cudnnCreate", api.create, missing);
  resolve(library, "cudnnDestroy", api.destroy, missing);
  resolve(library, "cudnnSetStream", api.set_stream, missing);
  resolve(library, "cudnnGetStream", api.get_stream, missing);
  resolve(library, "cudnnBackendCreateDescriptor", api.create_descriptor, missing);
  resolve(library, "cudnnBackendDestroyDescriptor", api.destroy_descriptor, missing);
  resolve(library, "cudnnBackendFinalize", api.finalize, missing);
  resolve(library, "cudnnBackendSetAttribute", api.set_attribute, missing);
  resolve(library, "cudnnBackendGetAttribute", api.get_attribute, missing);
  resolve(library, "cudnnBackendExecute", api.execute, missing);
  std::string optional;
  resolve(library, "cudnnGetExecutionPlanWorkspaceSize", api.workspace_size, optional);
  return missing;
}

// Opens `file` (flags as dlopen's) and, where it is a usable cuDNN 9, fills the state's choice.
// Returns "" on success, else why not.
std::string try_open(State& s, const std::string& file, int flags, std::string reason) {
  dlerror();
  void* library = dlopen(file.c_str(), flags);
  if (library == nullptr) {
    return dl_error();
  }
  Api api;
  if (std::string missing = resolve_all(library, api); !missing.empty()) {
    dlclose(library);
    return "opened, but it lacks " + missing + " (not a cuDNN 9 library)";
  }
  const auto version = static_cast<std::int64_t>(api.get_version());
  if (version / 10000 != 9) {
    dlclose(library);
    return "opened, but cudnnGetVersion() is " + std::to_string(version) +
           " (dnngraph needs cuDNN 9)";
  }
  std::string path = file;
  link_map* map = nullptr;
  if (dlinfo(library, RTLD_DI_LINKMAP, static_cast<void*>(&map)) == 0 && map != nullptr &&
      map->l_name != nullptr && map->l_name[0] != '\0') {
    path = map->l_name;
  }
  s.functions = api;
  s.choice = LibraryChoice{std::move(path), std::move(reason), version};
  s.api.store(&s.functions, std::memory_order_release);
  return {};
}

// The search of library.hpp, under the state's lock; leaves `api` published or `failure` set.
void load(State& s) {
  constexpr int flags = RTLD_NOW | RTLD_LOCAL;
  std::string looked;
  const auto note = [&looked](std::string_view where, std::string_view why) {
    looked += looked.empty() ? "" : "; ";
    looked += where;
    looked += ": ";
    looked += why;
  };
  const std::vector<std::string> loaded = already_loaded();
  std::optional<std::pair<std::string, std::string>> explicit_choice;
  if (s.chosen) {
    explicit_choice.emplace(*s.chosen, "chosen by set_cudnn_library()");
  } else if (const char* env = std::getenv("DNNGRAPH_CUDNN_LIB"); env != nullptr && *env != 0) {
    explicit_choice.emplace(env, "DNNGRAPH_CUDNN_LIB");
  }
  if (explicit_choice) {
    std::string file = explicit_choice->first;
    if (is_directory(file)) {
      file += "/";
      file += soname;
    }
    const bool among_loaded =
        std::ranges::any_of(loaded, [&file](const std::string& l) { return same_file(l, file); });
    if (!loaded.empty() && !among_loaded) {
      s.failure = std::string(explicit_choice->second) + " names " + file + ", but " +
                  the_loaded_one(loaded) +
                  " is already loaded in this process; two cuDNNs in one process would mix "
                  "their sub-libraries: choose the loaded one, or choose before it is loaded";
      return;
    }
    if (std::string why = try_open(s, file, flags, explicit_choice->second); !why.empty()) {
      s.failure = std::string(explicit_choice->second) + " names " + file + ": " + why;
    }
    return;
  }
  note("DNNGRAPH_CUDNN_LIB", "not set");
  if (!loaded.empty()) {
    const std::string one = the_loaded_one(loaded);
    if (std::string why = try_open(s, one, flags | RTLD_NOLOAD, "already loaded in this process");
        why.empty()) {
      return;
    } else {
      note(one + " (already loaded)", why);
    }
  } else {
    note("a libcudnn already loaded in this process", "none");
  }
  for (const Candidate& c : s.candidates) {
    if (std::string why = try_open(s, c.path, flags, c.reason); why.empty()) {
      return;
    } else {
      note(c.path + " (" + c.reason + ")", why);
    }
  }
  if (std::string why = try_open(s, std::string(soname), flags,
                                 "the system's dynamic loader (LD_LIBRARY_PATH, ld.so.cache)");
      why.empty()) {
    return;
  } else {
    note(std::string(soname) + " through the system's dynamic loader", why);
  }
  s.failure = "no usable libcudnn.so.9 found; looked at: " + looked +
              ". Install cuDNN 9 (e.g. pip install nvidia-cudnn-cu13) or name it with "
              "DNNGRAPH_CUDNN_LIB";
}

const Api* api() {
  State& s = state();
  if (const Api* a = s.api.load(std::memory_order_acquire); a != nullptr) {
    return a;
  }
  const std::scoped_lock lock(s.mutex);
  if (!s.attempted) {
    s.attempted = true;
    load(s);
  }
  return s.api.load(std::memory_order_acquire);
}

Status not_loaded_status() {
  State& s = state();
  const std::scoped_lock lock(s.mutex);
  return Status{CUDNN_STATUS_NOT_INITIALIZED, "load libcudnn.so.9", s.failure};
}

}  // namespace

Expected<const LibraryChoice*> library() {
  if (api() == nullptr) {
    return std::unexpected(not_loaded_status());
  }
  return &state().choice;
}

bool library_loaded() noexcept { return state().api.load(std::memory_order_acquire) != nullptr; }

Expected<void> choose_library(const std::string& path) {
  State& s = state();
  {
    const std::scoped_lock lock(s.mutex);
    if (!s.attempted) {
      s.chosen = path;
      return {};
    }
  }
  auto loaded = library();
  if (loaded) {
    std::string file = path;
    if (is_directory(file)) {
      file += "/";
      file += soname;
    }
    if (same_file((*loaded)->path, file)) {
      return {};
    }
  }
  return std::unexpected(
      Status{CUDNN_STATUS_NOT_SUPPORTED, "set_cudnn_library(" + path + ")",
             loaded ? "cuDNN is loaded already, from " + (*loaded)->path + " (" +
                          (*loaded)->reason + "); choose before the first call that needs cuDNN"
                    : "the search for cuDNN ran already and failed: " + loaded.error().last_error});
}

void add_library_candidate(std::string path, std::string reason) {
  State& s = state();
  const std::scoped_lock lock(s.mutex);
  if (!s.attempted) {
    s.candidates.push_back(Candidate{std::move(path), std::move(reason)});
  }
}

namespace lib {

std::size_t cudnnGetVersion() {
  const Api* a = api();
  return a != nullptr ? a->get_version() : 0;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  const Api* a = api();
  if (a != nullptr) {
    return a->get_error_string(status);
  }
  return status == CUDNN_STATUS_NOT_INITIALIZED ? "CUDNN_STATUS_NOT_INITIALIZED"
                                                : "CUDNN_STATUS (no cuDNN loaded to name it)";
}

void cudnnGetLastErrorString(char* message, std::size_t max_size) {
  if (const Api* a = api(); a != nullptr) {
    a->get_last_error_string(message, max_size);
    return;
  }
  if (max_size == 0) {
    return;
  }
  const Status status = not_loaded_status();
  const std::size_t n = std::min(max_size - 1, status.last_error.size());
  std::memcpy(message, status.last_error.data(), n);
  message[n] = '\0';
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  const Api* a = api();
  return a != nullptr ? a->create(handle) : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  const Api* a = api();
  return a != nullptr ? a->destroy(handle) : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  const Api* a = api();
  return a != nullptr ? a->set_stream(handle, stream) : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  const Api* a = api();
  return a != nullptr ? a->get_stream(handle, stream) : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t* out) {
  const Api* a = api();
  return a != nullptr ? a->create_descriptor(type, out) : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d) {
  const Api* a = api();
  return a != nullptr ? a->destroy_descriptor(d) : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d) {
  const Api* a = api();
  return a != nullptr ? a->finalize(d) : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, std::int64_t count,
                                       const void* values) {
  const Api* a = api();
  return a != nullptr ? a->set_attribute(d, name, type, count, values)
                      : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, std::int64_t requested,
                                       std::int64_t* count, void* values) {
  const Api* a = api();
  return a != nullptr ? a->get_attribute(d, name, type, requested, count, values)
                      : CUDNN_STATUS_NOT_INITIALIZED;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variant_pack) {
  const Api* a = api();
  return a != nullptr ? a->execute(handle, plan, variant_pack) : CUDNN_STATUS_NOT_INITIALIZED;
}

bool has_cudnnGetExecutionPlanWorkspaceSize() {
  const Api* a = api();
  return a != nullptr && a->workspace_size != nullptr;
}

cudnnStatus_t cudnnGetExecutionPlanWorkspaceSize(cudnnHandle_t handle,
                                                 cudnnBackendDescriptor_t plan,
                                                 cudnnBackendDescriptor_t variant_pack,
                                                 std::size_t* bytes) {
  const Api* a = api();
  if (a == nullptr) {
    return CUDNN_STATUS_NOT_INITIALIZED;
  }
  return a->workspace_size != nullptr ? a->workspace_size(handle, plan, variant_pack, bytes)
                                      : CUDNN_STATUS_NOT_SUPPORTED;
}

}  // namespace lib

}  // namespace dnngraph::backend
