// backend library: the libcudnn.so.9 this process uses, opened at run time (dlopen), never linked,
// so that one dnngraph binary serves every cuDNN 9 it supports at that version's capabilities.
// Found once, on first use, in this order:
//   1. an explicit choice: choose_library() before first use, else DNNGRAPH_CUDNN_LIB (a file, or
//      a folder holding libcudnn.so.9); a choice that does not open is a failure, never skipped;
//   2. a libcudnn already loaded in the process (torch's, say): two cuDNNs in one process would
//      share sub-libraries by soname, so a loaded one is always the one used;
//   3. candidates an embedding registered (the Python package: the nvidia-cudnn-cu13/-cu12 wheel
//      of the running Python);
//   4. the system's dynamic loader (LD_LIBRARY_PATH, ld.so.cache, the default folders).
// Without one, every function below answers CUDNN_STATUS_NOT_INITIALIZED and
// cudnnGetLastErrorString says where it looked. Functions newer cuDNN added are looked up and may
// be absent (has_*).
#pragma once

#include "backend/status.hpp"

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace dnngraph::backend {

struct LibraryChoice {
  std::string path;      // the file the dynamic loader opened
  std::string reason;    // "already loaded in this process", "DNNGRAPH_CUDNN_LIB", ...
  std::int64_t version;  // cudnnGetVersion(), e.g. 91900
};

// The library, loading it on the first call (thread-safe); the Status names every place looked
// at where none opened (code CUDNN_STATUS_NOT_INITIALIZED, context "load libcudnn.so.9").
[[nodiscard]] Expected<const LibraryChoice*> library();
// Whether a library is loaded now; never loads one.
[[nodiscard]] bool library_loaded() noexcept;

// Step 1: use `path` (a libcudnn file, or a folder holding libcudnn.so.9). Before the first load
// only; afterwards a success when it names the loaded file, else CUDNN_STATUS_NOT_SUPPORTED.
[[nodiscard]] Expected<void> choose_library(const std::string& path);
// Step 3: a candidate file tried after an already-loaded library; ignored after the first load.
void add_library_candidate(std::string path, std::string reason);

// The cuDNN functions dnngraph calls, through the loaded library. Same names and arguments as
// cudnn.h's, so a reader can set the cuDNN docs beside a call. Not noexcept: cuDNN is C++ inside,
// and backend::call turns an exception that escapes its C API into a Status.
namespace lib {
[[nodiscard]] std::size_t cudnnGetVersion();  // 0 where none is loaded
[[nodiscard]] const char* cudnnGetErrorString(cudnnStatus_t status);
void cudnnGetLastErrorString(char* message, std::size_t max_size);
[[nodiscard]] cudnnStatus_t cudnnCreate(cudnnHandle_t* handle);
[[nodiscard]] cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
[[nodiscard]] cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream);
[[nodiscard]] cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream);
[[nodiscard]] cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                         cudnnBackendDescriptor_t* out);
[[nodiscard]] cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d);
[[nodiscard]] cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d);
[[nodiscard]] cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d,
                                                     cudnnBackendAttributeName_t name,
                                                     cudnnBackendAttributeType_t type,
                                                     std::int64_t count, const void* values);
[[nodiscard]] cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t d,
                                                     cudnnBackendAttributeName_t name,
                                                     cudnnBackendAttributeType_t type,
                                                     std::int64_t requested, std::int64_t* count,
                                                     void* values);
[[nodiscard]] cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                                cudnnBackendDescriptor_t variant_pack);
// cuDNN >= 9.23; absent from older libraries (and headers).
[[nodiscard]] bool has_cudnnGetExecutionPlanWorkspaceSize();
[[nodiscard]] cudnnStatus_t cudnnGetExecutionPlanWorkspaceSize(
    cudnnHandle_t handle, cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t variant_pack,
    std::size_t* bytes);
}  // namespace lib

}  // namespace dnngraph::backend
