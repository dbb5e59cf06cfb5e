// backend::OperationPagedCacheLoad: CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, a K or V
// cache [b, h, s, d] (virtual Y) gathered from a container of pages [num_blocks, h, block_size, d]
// through a page table [b, 1, pages, 1] (Int32) up to each batch's sequence length ([b, 1, 1, 1]).
// cuDNN serves it inside the fused attention forward pattern only. Created where
// Feature::PagedCacheLoad is available; else too_old.
#pragma once

#include "backend/features.hpp"
#include "backend/operation.hpp"
#include "backend/tensor.hpp"

namespace dnngraph::backend {

class OperationPagedCacheLoad final : public Operation {
 public:
  [[nodiscard]] static Expected<OperationPagedCacheLoad> create() {
    if (!available(Feature::PagedCacheLoad)) {
      return std::unexpected(too_old(Feature::PagedCacheLoad));
    }
    return create_as<OperationPagedCacheLoad>(CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR);
  }

  [[nodiscard]] Expected<void> set_container(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_page_table(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC),
                          tensor);
  }
  // The sequence lengths: positions 0 .. length - 1 of each batch are loaded.
  [[nodiscard]] Expected<void> set_sequence(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC),
                          tensor);
  }
  [[nodiscard]] Expected<void> set_y(const Tensor& tensor) {
    return set_descriptor(DNNGRAPH_ATTRIBUTE(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC), tensor);
  }

 private:
  friend class Descriptor;  // create_as
  explicit OperationPagedCacheLoad(Descriptor&& d) noexcept : Operation(std::move(d)) {}
};

}  // namespace dnngraph::backend
