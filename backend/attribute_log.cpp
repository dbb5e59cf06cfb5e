#include "backend/attribute_log.hpp"

#include <cstring>
#include <span>

namespace dnngraph::backend {

namespace {
thread_local AttributeLog* recording = nullptr;  // the log of this thread, or null
}  // namespace

AttributeLog::AttributeLog() noexcept : previous_(recording) { recording = this; }

AttributeLog::~AttributeLog() { recording = previous_; }

AttributeLog* AttributeLog::active() noexcept { return recording; }

void AttributeLog::created(cudnnBackendDescriptor_t raw, cudnnBackendDescriptorType_t /*type*/) {
  ordinals_[raw] = static_cast<std::int64_t>(ordinals_.size());
}

std::int64_t AttributeLog::ordinal_of(cudnnBackendDescriptor_t raw) const {
  const auto found = ordinals_.find(raw);
  return found == ordinals_.end() ? -1 : found->second;
}

void AttributeLog::set(cudnnBackendDescriptor_t raw, cudnnBackendDescriptorType_t descriptor_type,
                       cudnnBackendAttributeName_t attribute, cudnnBackendAttributeType_t type,
                       std::int64_t count, const void* values, std::size_t element_bytes) {
  Entry entry{ordinal_of(raw), descriptor_type, attribute, type, count, {}};
  const auto n = static_cast<std::size_t>(count > 0 ? count : 0);
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR && values != nullptr) {
    const std::span<const cudnnBackendDescriptor_t> given(
        static_cast<const cudnnBackendDescriptor_t*>(values), n);
    entry.values.resize(n * sizeof(std::int64_t));
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t ordinal = ordinal_of(given[i]);
      std::memcpy(entry.values.data() + i * sizeof ordinal, &ordinal, sizeof ordinal);
    }
  } else if (element_bytes > 0 && values != nullptr) {
    entry.values.resize(n * element_bytes);
    std::memcpy(entry.values.data(), values, entry.values.size());
  }
  entries_.push_back(std::move(entry));
}

}  // namespace dnngraph::backend
