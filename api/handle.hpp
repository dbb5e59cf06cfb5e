// dnngraph::Handle: the cuDNN handle a graph is built and executed with (optionally on a stream).
// Move-only; owns the cudnnHandle_t it created. Needs no cuDNN or CUDA header: the two handle
// types are declared below as cuDNN and CUDA declare them.
#pragma once

#include "api/error.hpp"

#include <memory>

// cudnn_graph.h: typedef struct cudnnContext *cudnnHandle_t;
// driver_types.h: typedef struct CUstream_st *cudaStream_t;
// So native() is a cudnnHandle_t and set_stream takes a cudaStream_t, with or without those
// headers included.
struct cudnnContext;
struct CUstream_st;

namespace dnngraph {

class Handle {
 public:
  // Fails with CudnnFailure where there is no driver or CUDA device.
  [[nodiscard]] static Result<Handle> create();

  Handle() noexcept = default;  // empty; build/execute with it return InvalidHandle
  [[nodiscard]] Result<void> set_stream(CUstream_st* stream);
  // The cudnnHandle_t; read on every execute, so inline.
  [[nodiscard]] cudnnContext* native() const noexcept { return native_.get(); }
  [[nodiscard]] bool empty() const noexcept { return native_ == nullptr; }

 private:
  // cudnnDestroy, through backend::Handle (handle.cpp).
  struct Destroy {
    void operator()(cudnnContext* handle) const noexcept;
  };
  explicit Handle(cudnnContext* handle) noexcept : native_(handle) {}
  std::unique_ptr<cudnnContext, Destroy> native_;
};

}  // namespace dnngraph
