// dnngraph::Handle: creation, destruction and the stream through backend::Handle.
#include "api/handle.hpp"

#include "api/cudnn_error.hpp"
#include "backend/handle.hpp"

namespace dnngraph {

Result<Handle> Handle::create() {
  auto handle = backend::Handle::create();
  if (!handle) {
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
