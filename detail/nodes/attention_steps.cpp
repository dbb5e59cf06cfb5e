// The attention nodes' step builder (AttentionSteps, detail/nodes/sdpa_common.hpp): a composite
// node's backend operations appended in order, the masks among them, the first failure kept.
#include "detail/nodes/sdpa_common.hpp"

#include <cmath>
#include <utility>
#include "api/layout.hpp"
#include "backend/matmul.hpp"
#include "backend/operation_matmul.hpp"
#include "backend/operation_paged_cache_load.hpp"
#include "backend/operation_pointwise.hpp"
#include "backend/operation_reduction.hpp"
#include "backend/operation_reshape.hpp"
#include "backend/pointwise.hpp"
#include "backend/reduction.hpp"
#include "detail/common/checked.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/nodes/rng.hpp"

#include <utility>

namespace dnngraph::detail {

Result<backend::Tensor> lower_transposed(const TensorAttributes& t,
                                         const backend::Tensor* ragged_offset) {
  TensorAttributes transposed = t;
  auto dims = t.dim();
  auto strides = t.stride();
  std::swap(dims[2], dims[3]);
  std::swap(strides[2], strides[3]);
  transposed.set_dim(dims).set_stride(strides);
  return lower_tensor(transposed, ragged_offset);
}

const backend::Tensor* AttentionSteps::tensor(const TensorPtr& t) {
  if (!t || error_) {
    return nullptr;
  }
  auto found = lookup_(*t);
  if (!found) {
    error_ = found.error();
    return nullptr;
  }
  return *found;
}

void AttentionSteps::add(backend::Operation op, std::optional<backend::Descriptor> part) {
  LoweredOperation lowered{std::move(op), {}};
  if (part) {
    lowered.parts.push_back(std::move(*part));
  }
  ops_.push_back(std::move(lowered));
}

void AttentionSteps::pointwise(const char* step, cudnnPointwiseMode_t mode, cudnnDataType_t math,
                               std::array<const backend::Tensor*, 3> in, const backend::Tensor* y,
                               std::optional<std::int64_t> axis) {
  if (!ready(step, {in[0], y})) {
    return;
  }
  auto desc = backend::Pointwise::create();
  auto op = backend::OperationPointwise::create();
  if (!desc || !op) {
    return fail(step, !desc ? desc.error() : op.error());
  }
  auto ok =
      in_order([&] { return desc->set_mode(mode); }, [&] { return desc->set_math_precision(math); },
               when(axis, [&] { return desc->set_axis(*axis); }), [&] { return desc->finalize(); },
               [&] { return op->set_pointwise(*desc); }, [&] { return op->set_x(*in[0]); },
               when(in[1] != nullptr, [&] { return op->set_b(*in[1]); }),
               when(in[2] != nullptr, [&] { return op->set_t(*in[2]); }),
               [&] { return op->set_y(*y); }, [&] { return op->finalize(); });
  if (!ok) {
    return fail(step, ok.error());
  }
  add(std::move(*op), std::move(*desc));
}

void AttentionSteps::reduction(const char* step, cudnnReduceTensorOp_t mode,
                               const backend::Tensor* x, const backend::Tensor* y) {
  if (!ready(step, {x, y})) {
    return;
  }
  auto desc = backend::Reduction::create();
  auto op = backend::OperationReduction::create();
  if (!desc || !op) {
    return fail(step, !desc ? desc.error() : op.error());
  }
  auto ok = in_order([&] { return desc->set_operator(mode); },
                     [&] { return desc->set_compute_type(CUDNN_DATA_FLOAT); },
                     [&] { return desc->finalize(); }, [&] { return op->set_x(*x); },
                     [&] { return op->set_y(*y); }, [&] { return op->set_reduction(*desc); },
                     [&] { return op->finalize(); });
  if (!ok) {
    return fail(step, ok.error());
  }
  add(std::move(*op), std::move(*desc));
}

void AttentionSteps::matmul(const char* step, std::array<const backend::Tensor*, 3> abc,
                            std::array<const backend::Tensor*, 3> mnk_overrides) {
  if (!ready(step, {abc[0], abc[1], abc[2]})) {
    return;
  }
  auto desc = backend::Matmul::create();
  auto op = backend::OperationMatmul::create();
  if (!desc || !op) {
    return fail(step, !desc ? desc.error() : op.error());
  }
  auto ok = in_order(
      [&] { return desc->set_compute_type(CUDNN_DATA_FLOAT); }, [&] { return desc->finalize(); },
      [&] { return op->set_a(*abc[0]); }, [&] { return op->set_b(*abc[1]); },
      [&] { return op->set_c(*abc[2]); }, [&] { return op->set_matmul(*desc); },
      when(mnk_overrides[0] != nullptr, [&] { return op->set_m_override(*mnk_overrides[0]); }),
      when(mnk_overrides[1] != nullptr, [&] { return op->set_n_override(*mnk_overrides[1]); }),
      when(mnk_overrides[2] != nullptr, [&] { return op->set_k_override(*mnk_overrides[2]); }),
      [&] { return op->finalize(); });
  if (!ok) {
    return fail(step, ok.error());
  }
  add(std::move(*op), std::move(*desc));
}

void AttentionSteps::reshape(const char* step, const backend::Tensor* x, const backend::Tensor* y) {
  if (!ready(step, {x, y})) {
    return;
  }
  auto op = backend::OperationReshape::create();
  if (!op) {
    return fail(step, op.error());
  }
  auto ok = in_order([&] { return op->set_x(*x); }, [&] { return op->set_y(*y); },
                     [&] { return op->finalize(); });
  if (!ok) {
    return fail(step, ok.error());
  }
  add(std::move(*op), std::nullopt);
}

void AttentionSteps::rng(const char* step, double keep, const backend::Tensor* seed,
                         const backend::Tensor* offset, const backend::Tensor* y) {
  if (!ready(step, {seed, offset, y})) {
    return;
  }
  auto op = lower_bernoulli(keep, *seed, *offset, *y);
  if (!op) {
    return fail(step, op.error());
  }
  ops_.push_back(std::move(*op));
}

void AttentionSteps::paged_cache_load(const char* step, const backend::Tensor* container,
                                      const backend::Tensor* page_table,
                                      const backend::Tensor* seq_len, const backend::Tensor* y) {
  if (!ready(step, {container, page_table, seq_len, y})) {
    return;
  }
  auto op = backend::OperationPagedCacheLoad::create();
  if (!op) {
    return fail(step, op.error());
  }
  auto ok = in_order([&] { return op->set_container(*container); },
                     [&] { return op->set_page_table(*page_table); },
                     [&] { return op->set_sequence(*seq_len); }, [&] { return op->set_y(*y); },
                     [&] { return op->finalize(); });
  if (!ok) {
    return fail(step, ok.error());
  }
  add(std::move(*op), std::nullopt);
}

void AttentionSteps::keep(backend::Descriptor part) {
  if (!ops_.empty()) {
    ops_.back().parts.push_back(std::move(part));
  }
}

const backend::Tensor* AttentionSteps::scores(const Scores& s) {
  auto kt = lower_transposed(s.k, tensor(s.k.ragged_offset()));
  if (!kt) {
    if (!error_) {
      error_ = kt.error();
    }
    return nullptr;
  }
  if (s.k_pages) {
    // cudnn-frontend 1.32's composite SDPA: the load writes K^T ([b, h_k, d, s_kv], s_kv
    // innermost-but-one), which the matmul reads.
    paged_cache_load("K from pages", s.k_pages->container, s.k_pages->page_table, s.seq_kv, &*kt);
  }
  const backend::Tensor* current = tensor(s.scores);
  matmul("Q K^T", {s.q, &*kt, current}, {s.seq_q, s.seq_kv, nullptr});
  keep(std::move(*kt));
  if (s.scale != nullptr) {
    const backend::Tensor* scaled = tensor(s.scaled);
    pointwise("scale", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {current, s.scale, nullptr}, scaled);
    current = scaled;
  }
  for (const Factor& factor : s.factors) {
    const backend::Tensor* out = tensor(factor.out);
    pointwise(factor.step, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {current, factor.by, nullptr},
              out);
    current = out;
  }
  if (s.bias != nullptr) {
    const backend::Tensor* biased = tensor(s.biased);
    pointwise("bias", CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, {current, s.bias, nullptr}, biased);
    current = biased;
  }
  if (s.alibi_slopes != nullptr && s.alibi_ports != nullptr) {
    current = alibi(*s.alibi_ports, current, s.alibi_slopes);
  }
  if (s.padding != nullptr) {
    current = padding_mask(*s.padding, current, s.seq_q, s.seq_kv, s.neg_inf);
  }
  return current;
}

void AttentionSteps::gradient(const char* step, const backend::Tensor* a, const backend::Tensor* b,
                              const TensorPtr& heads, const backend::Tensor* grad,
                              std::array<const backend::Tensor*, 2> m_k_overrides) {
  const backend::Tensor* per_head = heads ? tensor(heads) : grad;
  matmul(step, {a, b, per_head}, {m_k_overrides[0], nullptr, m_k_overrides[1]});
  if (heads) {
    reduction("sum over each group of query heads", CUDNN_REDUCE_TENSOR_ADD, per_head, grad);
  }
}

AttentionSteps::Indices AttentionSteps::indices(const char* mask, const TensorPtr& row_port,
                                                const TensorPtr& col_port,
                                                const backend::Tensor* scores) {
  const Indices found{tensor(row_port), tensor(col_port)};
  const std::string name(mask);
  pointwise((name + " row index").c_str(), CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
            {scores, nullptr, nullptr}, found.row, 2);
  pointwise((name + " column index").c_str(), CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
            {scores, nullptr, nullptr}, found.col, 3);
  return found;
}

const backend::Tensor* AttentionSteps::keep_where(
    const char* mask, cudnnPointwiseMode_t compare, std::array<const backend::Tensor*, 2> operands,
    std::array<TensorPtr, 2> keep_and_masked,
    std::array<const backend::Tensor*, 2> scores_neg_inf) {
  const backend::Tensor* keep = tensor(keep_and_masked[0]);
  const backend::Tensor* masked = tensor(keep_and_masked[1]);
  const std::string name(mask);
  pointwise((name + " keep").c_str(), compare, CUDNN_DATA_BOOLEAN,
            {operands[0], operands[1], nullptr}, keep);
  pointwise((name + " select").c_str(), CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT,
            {scores_neg_inf[0], scores_neg_inf[1], keep}, masked);
  return masked;
}

const backend::Tensor* AttentionSteps::padding_mask(const AttentionMaskPorts& p,
                                                    const backend::Tensor* scores,
                                                    const backend::Tensor* seq_q,
                                                    const backend::Tensor* seq_kv,
                                                    const backend::Tensor* neg_inf) {
  const auto [row, col] = indices("padding", p.pad_row, p.pad_col, scores);
  const backend::Tensor* row_in = tensor(p.pad_row_in);
  const backend::Tensor* col_in = tensor(p.pad_col_in);
  pointwise("row < seq_len_q", CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, {row, seq_q, nullptr},
            row_in);
  pointwise("column < seq_len_kv", CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN,
            {col, seq_kv, nullptr}, col_in);
  return keep_where("padding", CUDNN_POINTWISE_LOGICAL_AND, {row_in, col_in},
                    {p.pad_keep, p.padded}, {scores, neg_inf});
}

const backend::Tensor* AttentionSteps::causal_mask(
    const AttentionMaskPorts& p, DiagonalAlignment alignment, const backend::Tensor* scores,
    const backend::Tensor* seq_q, const backend::Tensor* seq_kv, const backend::Tensor* neg_inf) {
  auto [row, col] = indices("causal", p.causal_row, p.causal_col, scores);
  if (alignment == DiagonalAlignment::BottomRight && p.causal_row_plus) {
    // Per-batch actual lengths: row + seq_len_kv - seq_len_q (Int32). Without padding only
    // s_q == s_kv passes the checks, where bottom-right is top-left.
    const backend::Tensor* plus = tensor(p.causal_row_plus);
    const backend::Tensor* shifted = tensor(p.causal_row_shifted);
    pointwise("row + seq_len_kv", CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, {row, seq_kv, nullptr},
              plus);
    pointwise("row + seq_len_kv - seq_len_q", CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32,
              {plus, seq_q, nullptr}, shifted);
    row = shifted;
  }
  return keep_where("causal", CUDNN_POINTWISE_CMP_GE, {row, col}, {p.causal_keep, p.causal},
                    {scores, neg_inf});
}

const backend::Tensor* AttentionSteps::alibi(const AttentionMaskPorts& p,
                                             const backend::Tensor* scores,
                                             const backend::Tensor* slopes) {
  const auto [row, col] = indices("alibi", p.alibi_row, p.alibi_col, scores);
  const backend::Tensor* distance = tensor(p.alibi_distance);
  const backend::Tensor* bias = tensor(p.alibi_bias);
  const backend::Tensor* added = tensor(p.alibi_added);
  pointwise("column - row", CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, {col, row, nullptr}, distance);
  pointwise("(column - row) * slope", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
            {distance, slopes, nullptr}, bias);
  pointwise("plus ALiBi", CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, {scores, bias, nullptr}, added);
  return added;
}

const backend::Tensor* AttentionSteps::sliding_window(const AttentionMaskPorts& p,
                                                      const backend::Tensor* scores,
                                                      const backend::Tensor* length,
                                                      const backend::Tensor* neg_inf) {
  const auto [row, col] = indices("window", p.window_row, p.window_col, scores);
  const backend::Tensor* col_plus = tensor(p.window_col_plus);
  // cudnn-frontend's composite diagonal band gives this addition axis 3 and the length's type.
  pointwise("column + window", CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, {col, length, nullptr},
            col_plus, 3);
  return keep_where("window", CUDNN_POINTWISE_CMP_GT, {col_plus, row}, {p.window_keep, p.windowed},
                    {scores, neg_inf});
}

const backend::Tensor* AttentionSteps::softmax(const SoftmaxPorts& p, const backend::Tensor* scores,
                                               const TensorPtr& stats) {
  const backend::Tensor* row_max = tensor(p.row_max);
  const backend::Tensor* centered = tensor(p.centered);
  const backend::Tensor* exps = tensor(p.exps);
  const backend::Tensor* row_sum = tensor(p.row_sum);
  const backend::Tensor* log_sum = tensor(p.log_sum);
  const backend::Tensor* lse = tensor(stats);
  const backend::Tensor* probs = tensor(p.probs);
  reduction("row max", CUDNN_REDUCE_TENSOR_MAX, scores, row_max);
  pointwise("minus max", CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, {scores, row_max, nullptr},
            centered);
  pointwise("exp", CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, {centered, nullptr, nullptr}, exps);
  reduction("row sum", CUDNN_REDUCE_TENSOR_ADD, exps, row_sum);
  pointwise("log sum", CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, {row_sum, nullptr, nullptr}, log_sum);
  pointwise("stats", CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, {row_max, log_sum, nullptr}, lse);
  pointwise("softmax", CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, {exps, row_sum, nullptr}, probs);
  return probs;
}

Result<std::vector<LoweredOperation>> AttentionSteps::finish() && {
  if (error_) {
    return std::unexpected(std::move(*error_));
  }
  return std::move(ops_);
}

bool AttentionSteps::ready(const char* step, std::initializer_list<const backend::Tensor*> needed) {
  if (error_) {
    return false;
  }
  for (const backend::Tensor* t : needed) {
    if (t == nullptr) {
      error_ = Error{ErrorCode::InvalidState,
                     "lower " + node_ + " (step " + step + "): a tensor was not lowered"};
      return false;
    }
  }
  return true;
}

void AttentionSteps::fail(const char* step, const backend::Status& status) {
  error_ = cudnn_error(status, "lower " + node_ + " (step " + step + ")");
}

}  // namespace dnngraph::detail
