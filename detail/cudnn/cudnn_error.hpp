// Conversion of a backend::Status into an api Error (internal to api/).
#pragma once

#include "api/error.hpp"
#include "backend/features.hpp"
#include "backend/library.hpp"
#include "backend/status.hpp"

#include <string_view>

namespace dnngraph::detail {

// CudnnNotFound where no libcudnn could be loaded (the status then says where it looked),
// CudnnFailure otherwise.
[[nodiscard]] inline Error cudnn_error(const backend::Status& status, std::string_view doing) {
  const bool not_found = status.code == CUDNN_STATUS_NOT_INITIALIZED && !backend::library_loaded();
  return Error{not_found ? ErrorCode::CudnnNotFound : ErrorCode::CudnnFailure,
               std::string(doing) + ": " + status.to_string()};
}

// VersionTooOld for a versioned capability the loaded cuDNN lacks: "<doing>:
// <backend::too_old_message>", naming the version needed and the one loaded.
[[nodiscard]] inline Error version_too_old(backend::Feature feature, std::string_view doing) {
  return Error{ErrorCode::VersionTooOld,
               std::string(doing) + ": " + backend::too_old_message(feature)};
}

// Expected<T> from backend → Result<T>, naming what the api was doing.
template <class T>
[[nodiscard]] Result<T> lift(backend::Expected<T>&& value, std::string_view doing) {
  if (!value) {
    return std::unexpected(cudnn_error(value.error(), doing));
  }
  if constexpr (std::is_void_v<T>) {
    return {};
  } else {
    return std::move(*value);
  }
}

}  // namespace dnngraph::detail
