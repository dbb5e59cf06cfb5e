// backend::Handle: move-only RAII owner of a cudnnHandle_t (cudnnCreate/cudnnDestroy).
#pragma once

#include "backend/status.hpp"

#include <cudnn.h>

#include <utility>

namespace dnngraph::backend {

class Handle {
 public:
  // cudnnCreate: fails where there is no driver or no CUDA device.
  [[nodiscard]] static Expected<Handle> create();

  Handle() noexcept = default;  // empty: native() is null
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  ~Handle();

  // Ownership handed over and taken back (as std::unique_ptr's release and its constructor),
  // for an owner that cannot name this type in its header (dnngraph::Handle).
  [[nodiscard]] static Handle adopt(cudnnHandle_t raw) noexcept { return Handle(raw); }
  [[nodiscard]] cudnnHandle_t release() noexcept { return std::exchange(raw_, nullptr); }

  [[nodiscard]] cudnnHandle_t native() const noexcept { return raw_; }
  [[nodiscard]] Expected<void> set_stream(cudaStream_t stream);

 private:
  explicit Handle(cudnnHandle_t raw) noexcept : raw_(raw) {}
  void reset() noexcept;
  cudnnHandle_t raw_ = nullptr;
};

// cudnnSetStream on a handle owned elsewhere (as backend::execute takes one).
[[nodiscard]] Expected<void> set_stream(cudnnHandle_t handle, cudaStream_t stream);
// cudnnGetStream: the stream calls on `handle` run on.
[[nodiscard]] Expected<cudaStream_t> get_stream(cudnnHandle_t handle);

}  // namespace dnngraph::backend
