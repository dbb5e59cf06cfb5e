// Version queries.
#include "backend/version.hpp"

#include <dlfcn.h>
#include <link.h>

#include <string_view>

namespace dnngraph::backend {

std::int64_t runtime_version() noexcept { return static_cast<std::int64_t>(cudnnGetVersion()); }

namespace {

bool names_libcudnn(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return file.starts_with("libcudnn.so");
}

}  // namespace

std::string library_path() {
  Dl_info info{};
  // A non-PIE program may resolve the address to its own PLT entry: then the list below answers.
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): dladdr takes a code address
  if (dladdr(reinterpret_cast<const void*>(&cudnnGetVersion), &info) != 0 &&
      info.dli_fname != nullptr && names_libcudnn(info.dli_fname)) {
    return info.dli_fname;
  }
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* object, std::size_t /*size*/, void* out) -> int {
        if (object->dlpi_name != nullptr && names_libcudnn(object->dlpi_name)) {
          *static_cast<std::string*>(out) = object->dlpi_name;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

std::string version_string(std::int64_t version) {
  // cuDNN 9 encodes MAJOR * 10000 + MINOR * 100 + PATCH.
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

}  // namespace dnngraph::backend
