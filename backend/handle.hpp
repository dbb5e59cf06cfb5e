// backend::Handle: move-only RAII owner of a cudnnHandle_t (cudnnCreate/cudnnDestroy).
#pragma once

#include "backend/status.hpp"

#include <cudnn.h>

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

  [[nodiscard]] cudnnHandle_t native() const noexcept { return raw_; }
  [[nodiscard]] Expected<void> set_stream(cudaStream_t stream);

 private:
  explicit Handle(cudnnHandle_t raw) noexcept : raw_(raw) {}
  void reset() noexcept;
  cudnnHandle_t raw_ = nullptr;
};

}  // namespace dnngraph::backend
