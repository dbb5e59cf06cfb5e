// Version queries over the loaded library.
#include "backend/version.hpp"

#include "backend/library.hpp"

namespace dnngraph::backend {

std::int64_t runtime_version() {
  auto loaded = library();
  return loaded ? (*loaded)->version : 0;
}

std::string library_path() {
  auto loaded = library();
  return loaded ? (*loaded)->path : std::string();
}

std::string library_source() {
  auto loaded = library();
  return loaded ? (*loaded)->reason : loaded.error().last_error;
}

std::string version_string(std::int64_t version) {
  // cuDNN 9 encodes MAJOR * 10000 + MINOR * 100 + PATCH.
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

}  // namespace dnngraph::backend
