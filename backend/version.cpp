// Version queries.
#include "backend/version.hpp"

namespace dnngraph::backend {

std::int64_t runtime_version() noexcept { return static_cast<std::int64_t>(cudnnGetVersion()); }

std::string version_string(std::int64_t version) {
  // cuDNN 9 encodes MAJOR * 10000 + MINOR * 100 + PATCH.
  return std::to_string(version / 10000) + "." + std::to_string((version / 100) % 100) + "." +
         std::to_string(version % 100);
}

}  // namespace dnngraph::backend
