// backend::Handle implementation.
#include "backend/handle.hpp"

#include "backend/library.hpp"

#include <utility>

namespace dnngraph::backend {

Expected<Handle> Handle::create() {
  cudnnHandle_t raw = nullptr;
  auto ok = call("cudnnCreate", [&] { return lib::cudnnCreate(&raw); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return Handle(raw);
}

Handle::Handle(Handle&& other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    raw_ = std::exchange(other.raw_, nullptr);
  }
  return *this;
}

Handle::~Handle() { reset(); }

void Handle::reset() noexcept {
  if (raw_ != nullptr) {
    // A destroy failure leaves nothing to recover; the handle is gone either way.
    [[maybe_unused]] auto destroyed = call("cudnnDestroy", [&] { return lib::cudnnDestroy(raw_); });
    raw_ = nullptr;
  }
}

Expected<void> Handle::set_stream(cudaStream_t stream) { return backend::set_stream(raw_, stream); }

Expected<void> set_stream(cudnnHandle_t handle, cudaStream_t stream) {
  return call("cudnnSetStream", [&] { return lib::cudnnSetStream(handle, stream); });
}

Expected<cudaStream_t> get_stream(cudnnHandle_t handle) {
  cudaStream_t stream = nullptr;
  auto ok = call("cudnnGetStream", [&] { return lib::cudnnGetStream(handle, &stream); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return stream;
}

}  // namespace dnngraph::backend
