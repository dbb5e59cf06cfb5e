// dnngraph::Handle implementation.
#include "api/handle.hpp"

#include "api/cudnn_error.hpp"

namespace dnngraph {

Result<Handle> Handle::create() {
  auto handle = backend::Handle::create();
  if (!handle) {
    return std::unexpected(detail::cudnn_error(handle.error(), "create a cuDNN handle"));
  }
  return Handle(std::move(*handle));
}

Result<void> Handle::set_stream(cudaStream_t stream) {
  if (empty()) {
    return make_error(ErrorCode::InvalidHandle, "set_stream on an empty Handle");
  }
  return detail::lift(handle_.set_stream(stream), "set the handle's stream");
}

}  // namespace dnngraph
