// The paged K/V cache of an sdpa node: its tensors, and the checks cudnn-frontend 1.32 and
// cuDNN's documentation of PAGED_CACHE_LOAD state, made before cuDNN sees the graph.
#include "detail/nodes/sdpa_paged.hpp"

#include "api/layout.hpp"
#include "backend/features.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/nodes/sdpa_common.hpp"

#include <gsl/pointers>

#include <array>
#include <tuple>
#include <utility>

namespace dnngraph::detail {

PagedCachePorts PagedCachePorts::make(const SdpaAttributes& a,
                                      const std::function<TensorPtr(const char*)>& internal) {
  PagedCachePorts p;
  if (!a.paged_attention()) {
    return p;
  }
  p.page_table_k = a.page_table_k();
  p.page_table_v = a.page_table_v();
  p.k_view = internal("paged_K");
  p.v_view = internal("paged_V");
  p.max_seq_len_kv = a.max_seq_len_kv().value_or(0);
  return p;
}

void PagedCachePorts::append_inputs(std::vector<TensorPtr>& list) const {
  append_present(list, {page_table_k, page_table_v});
}

void PagedCachePorts::append_internals(std::vector<TensorPtr>& list) const {
  append_present(list, {k_view, v_view});
}

namespace {

// A container: [num_blocks, h, block_size, d] in memory, Q's type, head dim innermost.
Result<void> check_container(const std::string& node, const char* port, const TensorAttributes& t,
                             const TensorAttributes& q) {
  const std::string what = node + ": " + port + " container " + t.describe();
  if (t.dim().size() != 4) {
    return make_error(ErrorCode::ShapeMismatch,
                      what + " has dims " + to_string(t.dim()) +
                          "; a paged cache is [num_blocks, h, block_size, d]");
  }
  const auto type = t.data_type();
  if (!type || (*type != DataType::Half && *type != DataType::BFloat16) || type != q.data_type()) {
    return make_error(ErrorCode::UnsupportedDataType,
                      what + " has data type " + type_name(t) + ", Q has " + type_name(q) +
                          "; the caches take Q's type, Half or BFloat16");
  }
  if (t.stride()[3] != 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      what + " has strides " + to_string(t.stride()) +
                          "; the head dim (dim 3) must be innermost (stride 1)");
  }
  if (t.is_virtual() || t.is_pass_by_value() || t.is_ragged()) {
    return make_error(ErrorCode::InvalidAttribute,
                      what +
                          " must be a graph input in device memory (not virtual, not by value, "
                          "not ragged: the page table says where each batch's keys are)");
  }
  return {};
}

// A page table: Int32 [b, 1, ceil(max_seq_len_kv / block_size), 1], packed, in memory. cuDNN's
// PAGED_CACHE_LOAD documentation gives those dims; cudnn-frontend 1.32 refuses any other page
// count ("block table size must equal ceil(s_kv/block_size)"), except for its packed (ragged)
// page tables, which dnngraph does not offer.
Result<void> check_page_table(const std::string& node, const char* port, const TensorAttributes& t,
                              std::int64_t b, std::int64_t block_size,
                              std::int64_t max_seq_len_kv) {
  const std::string what = node + ": " + port + " " + t.describe();
  if (t.is_virtual() || t.is_pass_by_value() || t.is_ragged()) {
    return make_error(ErrorCode::InvalidAttribute,
                      what +
                          " must be a graph input in device memory (not virtual, not by "
                          "value, not ragged)");
  }
  if (t.data_type() != DataType::Int32) {
    return make_error(ErrorCode::UnsupportedDataType,
                      what + " has data type " + type_name(t) + "; page tables are Int32");
  }
  // ceil(max_seq_len_kv / block_size) without max_seq_len_kv + block_size - 1, which overflows
  // near INT64_MAX (both are positive here).
  const std::int64_t pages = max_seq_len_kv / block_size + (max_seq_len_kv % block_size != 0);
  const std::vector<std::int64_t> expected{b, 1, pages, 1};
  if (t.dim() != expected) {
    return make_error(ErrorCode::ShapeMismatch,
                      what + " has dims " + to_string(t.dim()) + ", expected " +
                          to_string(expected) + ": [b, 1, ceil(max_seq_len_kv " +
                          std::to_string(max_seq_len_kv) + " / block_size " +
                          std::to_string(block_size) + "), 1]");
  }
  if (t.stride() != packed_strides(expected)) {
    return make_error(ErrorCode::InvalidAttribute, what + " has strides " + to_string(t.stride()) +
                                                       "; page tables are packed " +
                                                       to_string(packed_strides(expected)));
  }
  return {};
}

}  // namespace

Result<void> PagedCachePorts::check_and_settle(const std::string& node, bool padding,
                                               const TensorAttributes& q, const TensorAttributes& k,
                                               const TensorAttributes& v) const {
  if (!present()) {
    return {};
  }
  if (!backend::available(backend::Feature::PagedCacheLoad)) {
    return std::unexpected(
        version_too_old(backend::Feature::PagedCacheLoad, node + ": K and V from a paged cache"));
  }
  if (!padding) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": a paged K/V cache needs the padding mask (set_padding_mask(true) "
                          "with set_seq_len_q and set_seq_len_kv): seq_len_kv says how many "
                          "positions of each batch's pages to read");
  }
  if (max_seq_len_kv <= 0) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": max_seq_len_kv is " + std::to_string(max_seq_len_kv) +
                          "; it is the longest key sequence the page tables hold (positive)");
  }
  if (auto ok = check_container(node, "K", k, q); !ok) {
    return ok;
  }
  if (auto ok = check_container(node, "V", v, q); !ok) {
    return ok;
  }
  // Measured on the H200 (session 10, cuDNN 9.19 and 9.27, tests/gpu/sdpa_paged_test.cpp): K in
  // blocks of 16 and V in blocks of 8 (BFloat16 inference) built and ran with success and left
  // every value of O NaN; every case with one block size ran exact. Not run through
  // cudnn-frontend, which accepts the pair: refused until measured right.
  if (k.dim()[2] != v.dim()[2]) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": K's pages hold " + std::to_string(k.dim()[2]) +
                          " positions (block size, dim 2 of " + k.describe() + "), V's " +
                          std::to_string(v.dim()[2]) +
                          "; give both caches one block size (known issue "
                          "paged-kv-two-block-sizes: with two, cuDNN 9.19 and 9.27 returned "
                          "success and an O of NaN on the H200)");
  }
  if (q.dim().size() != 4) {
    return {};  // check_attention names Q's rank
  }
  const std::int64_t b = q.dim()[0];
  using Table = std::tuple<const char*, gsl::not_null<const TensorPtr*>,
                           gsl::not_null<const TensorAttributes*>>;
  const std::array<Table, 2> tables{
      {{"page_table_k", &page_table_k, &k}, {"page_table_v", &page_table_v, &v}}};
  for (const auto& [port, table, container] : tables) {
    if (!*table) {
      return make_error(
          ErrorCode::InvalidAttribute,
          node + ": set_paged_attention needs both page tables; " + port + " is null");
    }
    if (auto ok = check_page_table(node, port, **table, b, container->dim()[2], max_seq_len_kv);
        !ok) {
      return ok;
    }
  }
  // The gathered caches are packed [b, h, max_seq_len_kv, d]: their strides exist only where
  // their extent in bytes fits in int64.
  for (const auto& [view, container] : {std::pair{&k_view, &k}, std::pair{&v_view, &v}}) {
    const std::vector<std::int64_t> dims{b, container->dim()[1], max_seq_len_kv,
                                         container->dim()[3]};
    const DataType type = container->data_type().value_or(DataType::Half);  // checked: set
    if (auto ok = check_layout(dims, {}, size_of(type)); !ok) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": the cache gathered from " + container->describe() +
                            " is [b, h, max_seq_len_kv, d]; with max_seq_len_kv " +
                            std::to_string(max_seq_len_kv) + " its " + ok.error().message +
                            "; give the longest key sequence the page tables hold");
    }
    (*view)->set_dim(dims).set_stride(packed_strides(dims)).set_data_type(type);
  }
  return {};
}

}  // namespace dnngraph::detail
