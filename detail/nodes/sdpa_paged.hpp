// The paged K/V cache of an sdpa node (SdpaAttributes::set_paged_attention): K and V are
// containers of pages that page tables map to each batch's key positions, as serving systems
// (vLLM) store them. cuDNN gathers the caches with a PAGED_CACHE_LOAD operation in front of each
// of the pattern's matmuls (cudnn-frontend 1.32's composite SDPA, read for the facts; see
// /docs/attention.md, "Paged KV cache"). Here: its tensors and its checks.
#pragma once

#include "api/error.hpp"
#include "api/node_attributes.hpp"
#include "detail/nodes/node.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dnngraph::detail {

// The tensors of a paged cache; all null (present() false) without one.
struct PagedCachePorts {
  TensorPtr page_table_k, page_table_v;  // the user's: inputs
  // The caches gathered from the pages, what the rest of the node reads for K and V: virtual,
  // K [b, h_k, s_kv, d] and V [b, h_v, s_kv, d_v] with s_kv = max_seq_len_kv, packed, in the
  // containers' type. K's is lowered transposed (K^T, as the Q K^T matmul reads it), the layout
  // cudnn-frontend gives the load's output.
  TensorPtr k_view, v_view;
  std::int64_t max_seq_len_kv = 0;

  // With a == set_paged_attention: the page tables, and the views from internal(port).
  [[nodiscard]] static PagedCachePorts make(const SdpaAttributes& a,
                                            const std::function<TensorPtr(const char*)>& internal);
  [[nodiscard]] bool present() const noexcept { return k_view != nullptr; }
  void append_inputs(std::vector<TensorPtr>& list) const;
  void append_internals(std::vector<TensorPtr>& list) const;

  // The checks before the attention's own (check_attention, which then reads the views): the
  // loaded cuDNN serves the load (Feature::PagedCacheLoad, else VersionTooOld); the padding
  // mask; max_seq_len_kv positive; each container rank 4 [num_blocks, h, block_size, d] in Q's
  // type (Half or BFloat16), head dim innermost, in memory, not ragged; each page table in
  // memory, Int32, [b, 1, ceil(max_seq_len_kv / block_size), 1] packed, not ragged. Then settles
  // the views, each one's extent in bytes within int64. A Q of another rank is left to
  // check_attention (the views stay unsettled).
  [[nodiscard]] Result<void> check_and_settle(const std::string& node, bool padding,
                                              const TensorAttributes& q, const TensorAttributes& k,
                                              const TensorAttributes& v) const;
};

}  // namespace dnngraph::detail
