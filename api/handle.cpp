// dnngraph::Handle: creation, destruction and the stream through backend::Handle.
#include "api/handle.hpp"

#include "backend/features.hpp"
#include "backend/handle.hpp"
#include "backend/library.hpp"
#include "backend/version.hpp"
#include "detail/common/logging.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/cudnn/version_check.hpp"

namespace dnngraph {

Result<Handle> Handle::create() {
  // No library, or one older than dnngraph supports: say so before cuDNN fails somewhere less
  // clear.
  auto library = backend::library();
  if (!library) {
    Error error = detail::cudnn_error(library.error(), "create a cuDNN handle");
    detail::log_info([&] { return error.message; });
    return std::unexpected(std::move(error));
  }
  if (auto ok = detail::check_loaded_cudnn(backend::minimum_supported_version, (*library)->version,
                                           (*library)->path, (*library)->reason);
      !ok) {
    detail::log_info([&] { return ok.error().message; });
    return std::unexpected(ok.error());
  }
  auto handle = backend::Handle::create();
  if (!handle) {
    detail::log_info([&] { return "create a cuDNN handle failed: " + handle.error().to_string(); });
    return std::unexpected(detail::cudnn_error(handle.error(), "create a cuDNN handle"));
  }
  return Handle(handle->release());
}

void Handle::Destroy::operator()(cudnnContext* handle) const noexcept {
  // Taken back by the backend owner, whose destructor calls cudnnDestroy.
  const backend::Handle owner = backend::Handle::adopt(handle);
}

Result<void> Handle::set_stream(CUstream_st* stream) {
  if (empty()) {
    return make_error(ErrorCode::InvalidHandle, "set_stream on an empty Handle");
  }
  return detail::lift(backend::set_stream(native_.get(), stream), "set the handle's stream");
}

}  // namespace dnngraph
