// DeviceBuffer: move-only owner of one cudaMalloc allocation for GPU tests. Every fallible call
// returns a value that carries the CUDA error text; nothing here throws on a CUDA failure.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dnngraph::test {

// Empty on success, else "what: cudaErrorX (text)".
using CudaResult = std::expected<void, std::string>;

[[nodiscard]] inline CudaResult cuda_check(cudaError_t status, std::string_view what) {
  if (status == cudaSuccess) {
    return {};
  }
  return std::unexpected(std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                         cudaGetErrorString(status) + ")");
}

class DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  // Frees what this buffer held before taking over the other one.
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  // Zero bytes gives an empty buffer (null pointer) without calling CUDA.
  [[nodiscard]] static std::expected<DeviceBuffer, std::string> allocate(std::size_t bytes) {
    DeviceBuffer buffer;
    if (bytes == 0) {
      return buffer;
    }
    if (auto ok = cuda_check(cudaMalloc(&buffer.data_, bytes),
                             "cudaMalloc(" + std::to_string(bytes) + " bytes)");
        !ok) {
      buffer.data_ = nullptr;
      return std::unexpected(std::move(ok.error()));
    }
    buffer.bytes_ = bytes;
    return buffer;
  }

  // A buffer of exactly host.size_bytes() holding a copy of host.
  template <class T>
  [[nodiscard]] static std::expected<DeviceBuffer, std::string> copy_of(std::span<const T> host) {
    auto buffer = allocate(host.size_bytes());
    if (!buffer) {
      return buffer;
    }
    if (auto ok = buffer->upload(host); !ok) {
      return std::unexpected(std::move(ok.error()));
    }
    return buffer;
  }
  template <class T>
  [[nodiscard]] static std::expected<DeviceBuffer, std::string> copy_of(
      const std::vector<T>& host) {
    return copy_of(std::span<const T>(host));
  }

  // Copies host to the start of the buffer; fails without copying if it does not fit.
  template <class T>
  [[nodiscard]] CudaResult upload(std::span<const T> host) {
    if (host.size_bytes() > bytes_) {
      return std::unexpected("upload: " + std::to_string(host.size_bytes()) +
                             " bytes do not fit a buffer of " + std::to_string(bytes_));
    }
    if (host.empty()) {
      return {};
    }
    return cuda_check(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice),
                      "cudaMemcpy host to device");
  }

  // Fills host from the start of the buffer; fails without copying if the buffer is smaller.
  // cudaMemcpy waits for work on the legacy default stream, not for other streams.
  template <class T>
  [[nodiscard]] CudaResult download(std::span<T> host) const {
    if (host.size_bytes() > bytes_) {
      return std::unexpected("download: " + std::to_string(host.size_bytes()) +
                             " bytes wanted from a buffer of " + std::to_string(bytes_));
    }
    if (host.empty()) {
      return {};
    }
    return cuda_check(cudaMemcpy(host.data(), data_, host.size_bytes(), cudaMemcpyDeviceToHost),
                      "cudaMemcpy device to host");
  }

  // Sets every byte to value (0xFF makes every fp16, bf16 and fp32 element a NaN).
  [[nodiscard]] CudaResult fill_bytes(unsigned char value) {
    if (bytes_ == 0) {
      return {};
    }
    return cuda_check(cudaMemset(data_, value, bytes_), "cudaMemset");
  }

  [[nodiscard]] void* get() const noexcept { return data_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return bytes_; }
  [[nodiscard]] bool empty() const noexcept { return data_ == nullptr; }

 private:
  void release() noexcept {
    if (data_ != nullptr) {
      // Nothing useful to do with an error here; a sticky error shows up at the next checked call.
      static_cast<void>(cudaFree(data_));
      data_ = nullptr;
      bytes_ = 0;
    }
  }

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace dnngraph::test
