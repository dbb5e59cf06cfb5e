// What execute() and get_workspace_size() take from Python, converted on the hot path: device
// pointers (ints, torch tensors, __cuda_array_interface__ or CUDA DLPack objects), the variant
// pack dict and the three override lists. Conversions reuse per-thread buffers, so a steady
// stream of calls with the same uids allocates nothing. Call with the GIL held; the results stay
// valid until the next conversion on the same thread.
#pragma once

#include <nanobind/nanobind.h>

#include "api/dnngraph.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnngraph::python {

// The device address `object` stands for: an int (a device pointer; 0 is null), a torch tensor on
// a CUDA device (its data_ptr()), an object with __cuda_array_interface__, or one with __dlpack__
// on a CUDA device. Anything else raises dnngraph.Error (InvalidAttribute) naming `what`.
[[nodiscard]] void* device_pointer(nanobind::handle object, const char* what);

// device_pointer(), or null for None.
[[nodiscard]] void* optional_device_pointer(nanobind::handle object, const char* what);

// What the buffer of one uid must be in execute(): the built graph's dims, strides and data type
// of that tensor (override lists replace dims and strides for the uids they list).
struct BufferLayout {
  std::int64_t uid = 0;
  std::string name;
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  DataType type = DataType::Float;
  // A packed variable-length tensor (ragged offsets): its buffer holds the tokens only ([T, h, d]
  // or flat), so only its type is checked.
  bool ragged = false;
};

// The layouts of a validated (built) graph's variant-pack tensors, sorted by uid.
[[nodiscard]] std::vector<BufferLayout> buffer_layouts(const Graph& graph);

// optional_device_pointer() of execute()'s workspace: a torch tensor of fewer than `needed` bytes
// raises InvalidAttribute (needed < 0: not known, not checked).
[[nodiscard]] void* workspace_pointer(nanobind::handle object, std::int64_t needed);

// The bytes a torch tensor holds; nullopt for any other buffer (None, an int pointer,
// __cuda_array_interface__, __dlpack__: their extent is not checked).
[[nodiscard]] std::optional<std::int64_t> torch_bytes(nanobind::handle object);

// The bytes a buffer object holds: a torch tensor's numel() * element_size(); raises
// InvalidAttribute naming `what` for anything else (give the size explicitly then).
[[nodiscard]] std::int64_t buffer_bytes(nanobind::handle object, const char* what);

// The override lists of one call, as the C++ API takes them.
struct OverrideLists {
  std::span<const std::int64_t> uids;
  std::span<const std::vector<std::int64_t>> shapes;
  std::span<const std::vector<std::int64_t>> strides;
};

// Converts one call's arguments into per-thread buffers. Several Python calls on one thread
// never overlap (a nested call, e.g. from a tensor's data_ptr(), gets buffers of its own).
class CallBuffers {
 public:
  CallBuffers();
  ~CallBuffers();
  CallBuffers(const CallBuffers&) = delete;
  CallBuffers& operator=(const CallBuffers&) = delete;
  CallBuffers(CallBuffers&&) = delete;
  CallBuffers& operator=(CallBuffers&&) = delete;

  // {uid: buffer} (a dict, or any mapping) as the C++ variant pack. A buffer that says what it
  // holds (a torch tensor, __cuda_array_interface__, __dlpack__) is checked against the layout
  // of its uid in `layouts` (with `overrides` for the uids they list): dims and strides (strides
  // of dims of size 1 are not compared) raise ShapeMismatch, the data type (torch, DLPack) or
  // element size (__cuda_array_interface__) InvalidAttribute. Int pointers are taken as given.
  [[nodiscard]] const std::unordered_map<std::int64_t, void*>& variant_pack(
      nanobind::handle mapping, std::span<const BufferLayout> layouts = {},
      const OverrideLists& overrides = {});
  // Lists of ints / lists of lists of ints (None is an empty list).
  [[nodiscard]] OverrideLists overrides(nanobind::handle uids, nanobind::handle shapes,
                                        nanobind::handle strides);

  struct Storage;

 private:
  std::unique_ptr<Storage> own_;  // only when this thread's storage is taken (a nested call)
  Storage* storage_;
};

}  // namespace dnngraph::python
