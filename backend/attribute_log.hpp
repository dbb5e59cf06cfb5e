// backend::AttributeLog: while one records on a thread, every descriptor the thread creates and
// every attribute it sets is kept in order, descriptor handles replaced by their creation
// ordinals and pointer values (handles, device pointers) left out. Two runs that gave cuDNN the
// same descriptors with the same attributes leave equal logs, whatever the addresses; Graph::key()
// digests the log of a lowering.
#pragma once

#include <cudnn_backend.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnngraph::backend {

class AttributeLog {
 public:
  // One cudnnBackendSetAttribute, as given.
  struct Entry {
    std::int64_t descriptor = -1;  // creation ordinal of the descriptor set; -1: made before
    cudnnBackendDescriptorType_t descriptor_type{};
    cudnnBackendAttributeName_t attribute{};
    cudnnBackendAttributeType_t type{};
    std::int64_t count = 0;
    // The values' bytes; descriptor values as int64 creation ordinals (-1 for one made before);
    // empty for pointer values.
    std::vector<std::byte> values;
  };

  // Records on this thread until destroyed (a log made while another records takes over and
  // gives the thread back to it when destroyed).
  AttributeLog() noexcept;
  AttributeLog(const AttributeLog&) = delete;
  AttributeLog& operator=(const AttributeLog&) = delete;
  AttributeLog(AttributeLog&&) = delete;
  AttributeLog& operator=(AttributeLog&&) = delete;
  ~AttributeLog();

  [[nodiscard]] const std::vector<Entry>& entries() const noexcept { return entries_; }

  // The log recording on this thread, or null.
  [[nodiscard]] static AttributeLog* active() noexcept;

  // Called by Descriptor on each creation and each set while this log is active.
  void created(cudnnBackendDescriptor_t raw, cudnnBackendDescriptorType_t type);
  // element_bytes: the size of one value; 0 for pointer values, which are not kept.
  void set(cudnnBackendDescriptor_t raw, cudnnBackendDescriptorType_t descriptor_type,
           cudnnBackendAttributeName_t attribute, cudnnBackendAttributeType_t type,
           std::int64_t count, const void* values, std::size_t element_bytes);

 private:
  [[nodiscard]] std::int64_t ordinal_of(cudnnBackendDescriptor_t raw) const;

  AttributeLog* previous_;
  std::unordered_map<cudnnBackendDescriptor_t, std::int64_t> ordinals_;
  std::vector<Entry> entries_;
};

}  // namespace dnngraph::backend
