// dnngraph::Handle: the cuDNN handle a graph is built and executed with (optionally on a stream).
#pragma once

#include "api/error.hpp"
#include "backend/handle.hpp"

namespace dnngraph {

class Handle {
 public:
  // Fails with CudnnFailure where there is no driver or CUDA device.
  [[nodiscard]] static Result<Handle> create();

  Handle() noexcept = default;  // empty; build/execute with it return InvalidHandle
  [[nodiscard]] Result<void> set_stream(cudaStream_t stream);
  [[nodiscard]] cudnnHandle_t native() const noexcept { return handle_.native(); }
  [[nodiscard]] bool empty() const noexcept { return handle_.native() == nullptr; }

 private:
  explicit Handle(backend::Handle handle) noexcept : handle_(std::move(handle)) {}
  backend::Handle handle_;
};

}  // namespace dnngraph
