// Scaled dot-product attention node: checks, shape inference and the composite lowering.
#include "api/nodes/sdpa.hpp"

#include "api/cudnn_error.hpp"
#include "backend/matmul.hpp"
#include "backend/operation_matmul.hpp"
#include "backend/operation_pointwise.hpp"
#include "backend/operation_reduction.hpp"
#include "backend/pointwise.hpp"
#include "backend/reduction.hpp"

#include <array>
#include <cmath>
#include <utility>

namespace dnngraph::detail {

namespace {

void append_present(std::vector<TensorPtr>& list, std::initializer_list<TensorPtr> tensors) {
  for (const TensorPtr& t : tensors) {
    if (t) {
      list.push_back(t);
    }
  }
}

// cuDNN's fused attention engines on Hopper (cudnn-frontend 1.32's support surface for
// cuDNN 9.19): head dims a multiple of 8, at most 256.
constexpr std::int64_t max_head_dim = 256;
constexpr std::int64_t head_dim_multiple = 8;

// The backend operations of one node, appended in order; the first failure stops the rest and
// is what finish() returns.
class Operations {
 public:
  explicit Operations(std::string node) : node_(std::move(node)) {}

  void pointwise(const char* step, cudnnPointwiseMode_t mode, cudnnDataType_t math,
                 std::array<const backend::Tensor*, 3> in, const backend::Tensor* y,
                 std::optional<std::int64_t> axis = {}) {
    if (!ready(step, {in[0], y})) {
      return;
    }
    auto desc = backend::Pointwise::create();
    auto op = backend::OperationPointwise::create();
    if (!desc || !op) {
      return fail(step, !desc ? desc.error() : op.error());
    }
    auto ok = desc->set_mode(mode);
    if (ok) ok = desc->set_math_precision(math);
    if (ok && axis) ok = desc->set_axis(*axis);
    if (ok) ok = desc->finalize();
    if (ok) ok = op->set_pointwise(*desc);
    if (ok) ok = op->set_x(*in[0]);
    if (ok && in[1] != nullptr) ok = op->set_b(*in[1]);
    if (ok && in[2] != nullptr) ok = op->set_t(*in[2]);
    if (ok) ok = op->set_y(*y);
    if (ok) ok = op->finalize();
    if (!ok) {
      return fail(step, ok.error());
    }
    LoweredOperation lowered{std::move(*op), {}};
    lowered.parts.push_back(std::move(*desc));
    ops_.push_back(std::move(lowered));
  }

  void reduction(const char* step, cudnnReduceTensorOp_t mode, const backend::Tensor* x,
                 const backend::Tensor* y) {
    if (!ready(step, {x, y})) {
      return;
    }
    auto desc = backend::Reduction::create();
    auto op = backend::OperationReduction::create();
    if (!desc || !op) {
      return fail(step, !desc ? desc.error() : op.error());
    }
    auto ok = desc->set_operator(mode);
    if (ok) ok = desc->set_compute_type(CUDNN_DATA_FLOAT);
    if (ok) ok = desc->finalize();
    if (ok) ok = op->set_x(*x);
    if (ok) ok = op->set_y(*y);
    if (ok) ok = op->set_reduction(*desc);
    if (ok) ok = op->finalize();
    if (!ok) {
      return fail(step, ok.error());
    }
    LoweredOperation lowered{std::move(*op), {}};
    lowered.parts.push_back(std::move(*desc));
    ops_.push_back(std::move(lowered));
  }

  // C = A B with per-batch actual extents where given (null: the full extent).
  void matmul(const char* step, std::array<const backend::Tensor*, 3> abc,
              std::array<const backend::Tensor*, 3> mnk_overrides) {
    if (!ready(step, {abc[0], abc[1], abc[2]})) {
      return;
    }
    auto desc = backend::Matmul::create();
    auto op = backend::OperationMatmul::create();
    if (!desc || !op) {
      return fail(step, !desc ? desc.error() : op.error());
    }
    auto ok = desc->set_compute_type(CUDNN_DATA_FLOAT);
    if (ok) ok = desc->finalize();
    if (ok) ok = op->set_a(*abc[0]);
    if (ok) ok = op->set_b(*abc[1]);
    if (ok) ok = op->set_c(*abc[2]);
    if (ok) ok = op->set_matmul(*desc);
    if (ok && mnk_overrides[0] != nullptr) ok = op->set_m_override(*mnk_overrides[0]);
    if (ok && mnk_overrides[1] != nullptr) ok = op->set_n_override(*mnk_overrides[1]);
    if (ok && mnk_overrides[2] != nullptr) ok = op->set_k_override(*mnk_overrides[2]);
    if (ok) ok = op->finalize();
    if (!ok) {
      return fail(step, ok.error());
    }
    LoweredOperation lowered{std::move(*op), {}};
    lowered.parts.push_back(std::move(*desc));
    ops_.push_back(std::move(lowered));
  }

  // Keeps a descriptor the operations use alive with them (K^T).
  void keep(backend::Descriptor part) {
    if (!ops_.empty()) {
      ops_.back().parts.push_back(std::move(part));
    }
  }

  [[nodiscard]] Result<std::vector<LoweredOperation>> finish() && {
    if (error_) {
      return std::unexpected(std::move(*error_));
    }
    return std::move(ops_);
  }

 private:
  // No earlier failure, and every tensor the step needs was found (a missing one is reported
  // by the caller, which looked it up).
  bool ready(const char* step, std::initializer_list<const backend::Tensor*> needed) {
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

  void fail(const char* step, const backend::Status& status) {
    error_ = cudnn_error(status, "lower " + node_ + " (step " + step + ")");
  }

  std::string node_;
  std::vector<LoweredOperation> ops_;
  std::optional<Error> error_;
};

std::string type_name(const TensorAttributes& t) {
  const auto type = t.data_type();
  return type ? std::string(to_string(*type)) : "none";
}

}  // namespace

std::vector<TensorPtr> SdpaPorts::inputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {q, k, v, seq_len_q, seq_len_kv, scale, neg_inf});
  return list;
}

std::vector<TensorPtr> SdpaPorts::outputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {o, stats});
  return list;
}

std::vector<TensorPtr> SdpaPorts::internals() const {
  std::vector<TensorPtr> list;
  append_present(list, {scores,      scaled,     pad_row,         pad_col,
                        pad_row_in,  pad_col_in, pad_keep,        padded,
                        causal_row,  causal_col, causal_row_plus, causal_row_shifted,
                        causal_keep, causal,     row_max,         centered,
                        exps,        row_sum,    log_sum,         unused_stats,
                        probs});
  return list;
}

Result<void> SdpaNode::check_inputs() const {
  const std::array<std::pair<const char*, const TensorAttributes*>, 3> qkv{
      {{"Q", ports_.q.get()}, {"K", ports_.k.get()}, {"V", ports_.v.get()}}};
  for (const auto& [port, t] : qkv) {
    if (t->dim().size() != 4) {
      return make_error(ErrorCode::ShapeMismatch, describe() + ": " + port + " " + t->describe() +
                                                      " has dims " + to_string(t->dim()) +
                                                      "; Q, K and V are rank 4: [b, h, s, d]");
    }
    const auto type = t->data_type();
    if (!type || (*type != DataType::Half && *type != DataType::BFloat16)) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": " + port + " " + t->describe() + " has data type " +
                            type_name(*t) + "; attention takes Half or BFloat16");
    }
    if (type != ports_.q->data_type()) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": " + port + " " + t->describe() + " has data type " +
                            type_name(*t) + ", but Q has " + type_name(*ports_.q) +
                            "; Q, K and V share one type");
    }
    if (t->stride()[3] != 1) {
      return make_error(ErrorCode::InvalidAttribute,
                        describe() + ": " + port + " " + t->describe() + " has strides " +
                            to_string(t->stride()) +
                            "; the head dim (dim 3) must be innermost (stride 1): BHSD or BSHD");
    }
  }
  const auto& q = ports_.q->dim();
  const auto& k = ports_.k->dim();
  const auto& v = ports_.v->dim();
  const auto mismatch = [&](const std::string& what, std::int64_t expected, std::int64_t given) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": " + what + " is " + std::to_string(given) + ", expected " +
                          std::to_string(expected) + " (Q " + to_string(q) + ", K " + to_string(k) +
                          ", V " + to_string(v) + ")");
  };
  if (k[0] != q[0] || v[0] != q[0]) {
    return mismatch(k[0] != q[0] ? "the batch of K" : "the batch of V", q[0],
                    k[0] != q[0] ? k[0] : v[0]);
  }
  if (k[3] != q[3]) {
    return mismatch("the head dim of K (dim 3)", q[3], k[3]);
  }
  if (v[2] != k[2]) {
    return mismatch("the sequence length of V (dim 2)", k[2], v[2]);
  }
  for (const auto& [port, heads] : {std::pair{"K", k[1]}, std::pair{"V", v[1]}}) {
    if (heads <= 0 || q[1] % heads != 0) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": " + port + " has " + std::to_string(heads) +
                            " heads, which does not divide Q's " + std::to_string(q[1]) +
                            " (grouped-query attention: h_q is a multiple of h_k and h_v)");
    }
  }
  for (const auto& [port, d] : {std::pair{"Q and K", q[3]}, std::pair{"V", v[3]}}) {
    if (d % head_dim_multiple != 0 || d > max_head_dim) {
      return make_error(ErrorCode::InvalidAttribute,
                        describe() + ": the head dim of " + port + " is " + std::to_string(d) +
                            "; cuDNN's fused attention engines take multiples of 8 up to 256");
    }
  }
  return {};
}

Result<void> SdpaNode::check_masks() const {
  const std::int64_t b = ports_.q->dim()[0];
  const std::int64_t s_q = ports_.q->dim()[2];
  const std::int64_t s_kv = ports_.k->dim()[2];
  if (const auto scale = attributes_.attn_scale(); scale && !std::isfinite(*scale)) {
    return make_error(
        ErrorCode::InvalidAttribute,
        describe() + ": the attention scale is " + std::to_string(*scale) + "; it must be finite");
  }
  const bool has_lengths = ports_.seq_len_q || ports_.seq_len_kv;
  if (attributes_.padding_mask() && (!ports_.seq_len_q || !ports_.seq_len_kv)) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": the padding mask needs both set_seq_len_q and "
                          "set_seq_len_kv (Int32 [b, 1, 1, 1] tensors)");
  }
  if (!attributes_.padding_mask() && has_lengths) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": sequence length tensors are given without "
                          "set_padding_mask(true); set it, or drop them");
  }
  for (const auto& [port, t] : {std::pair{"seq_len_q", ports_.seq_len_q.get()},
                                std::pair{"seq_len_kv", ports_.seq_len_kv.get()}}) {
    if (t == nullptr) {
      continue;
    }
    const std::vector<std::int64_t> expected{b, 1, 1, 1};
    if (t->dim() != expected) {
      return make_error(ErrorCode::ShapeMismatch, describe() + ": " + port + " " + t->describe() +
                                                      " has dims " + to_string(t->dim()) +
                                                      ", expected " + to_string(expected) +
                                                      " (one length per batch)");
    }
    if (t->data_type() != DataType::Int32) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": " + port + " " + t->describe() + " has data type " +
                            type_name(*t) + "; sequence lengths are Int32");
    }
    if (t->is_pass_by_value()) {
      return make_error(ErrorCode::InvalidAttribute,
                        describe() + ": " + port + " " + t->describe() +
                            " is passed by value; sequence lengths live in device memory");
    }
  }
  // Without a padding mask the bottom-right diagonal is shifted by s_kv - s_q. Spelled as a
  // Float scalar added to the row index, cuDNN 9.19 and 9.27 ran it and returned wrong numbers
  // (H200, s_q 17, s_kv 33: O off by 0.37); cudnn-frontend adds Int32 by-value scalars, which
  // dnngraph's by-value tensors (Float) cannot carry yet. Square shapes need no shift.
  if (attributes_.causal() == DiagonalAlignment::BottomRight && !attributes_.padding_mask() &&
      s_q != s_kv) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": a bottom-right causal mask with s_q " + std::to_string(s_q) +
                          " != s_kv " + std::to_string(s_kv) +
                          " needs a padding mask (set_padding_mask with seq_len_q / seq_len_kv, "
                          "the full lengths will do); without one it is exact only for s_q == "
                          "s_kv");
  }
  return {};
}

void SdpaNode::settle_internals() {
  const auto& q = ports_.q->dim();
  const std::vector<std::int64_t> score_dims{q[0], q[1], q[2], ports_.k->dim()[2]};
  const std::vector<std::int64_t> row_dims{q[0], q[1], q[2], 1};
  const auto settle = [](const TensorPtr& t, const std::vector<std::int64_t>& dims, DataType type) {
    if (t) {
      t->set_dim(dims).set_stride(packed_strides(dims)).set_data_type(type);
    }
  };
  for (const TensorPtr& t :
       {ports_.scores, ports_.scaled, ports_.padded, ports_.causal, ports_.centered, ports_.exps}) {
    settle(t, score_dims, DataType::Float);
  }
  for (const TensorPtr& t : {ports_.pad_row, ports_.pad_col, ports_.causal_row, ports_.causal_col,
                             ports_.causal_row_plus}) {
    settle(t, score_dims, DataType::Int32);
  }
  for (const TensorPtr& t :
       {ports_.pad_row_in, ports_.pad_col_in, ports_.pad_keep, ports_.causal_keep}) {
    settle(t, score_dims, DataType::Boolean);
  }
  settle(ports_.causal_row_shifted, score_dims, DataType::Int32);  // row + seq_len_kv - seq_len_q
  for (const TensorPtr& t : {ports_.row_max, ports_.row_sum, ports_.log_sum, ports_.unused_stats}) {
    settle(t, row_dims, DataType::Float);
  }
  // The second matmul reads P in the io type (cuDNN's pattern: its A operand is Q's type).
  // check_inputs() made sure Q has one (Half or BFloat16).
  settle(ports_.probs, score_dims, ports_.q->data_type().value_or(DataType::Half));
}

Result<void> SdpaNode::infer(const GraphContext& context) {
  if (auto ok = check_known_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  if (const auto compute = attributes_.compute_data_type();
      compute && *compute != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType, describe() + ": compute data type " +
                                                          std::string(to_string(*compute)) +
                                                          "; attention accumulates in Float");
  }
  if (auto ok = check_inputs(); !ok) {
    return ok;
  }
  if (auto ok = check_masks(); !ok) {
    return ok;
  }
  if (auto ok = settle_scalar_inputs(4); !ok) {
    return ok;
  }
  const auto& q = ports_.q->dim();
  if (!ports_.o->data_type()) {
    ports_.o->set_data_type(ports_.q->data_type().value_or(DataType::Half));  // checked: set
  }
  if (auto ok = settle_output(*ports_.o, {q[0], q[1], q[2], ports_.v->dim()[3]}, context); !ok) {
    return ok;
  }
  if (ports_.o->data_type() != ports_.q->data_type() || ports_.o->stride()[3] != 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": O " + ports_.o->describe() + " has data type " +
                          type_name(*ports_.o) + " and strides " + to_string(ports_.o->stride()) +
                          "; O takes Q's type (" + type_name(*ports_.q) +
                          ") and an innermost head dim (stride 1)");
  }
  if (ports_.stats) {
    if (!ports_.stats->data_type()) {
      ports_.stats->set_data_type(DataType::Float);
    }
    if (ports_.stats->data_type() != DataType::Float) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": Stats " + ports_.stats->describe() + " has data type " +
                            type_name(*ports_.stats) + "; the statistics are Float");
    }
    if (auto ok = settle_output(*ports_.stats, {q[0], q[1], q[2], 1}, context); !ok) {
      return ok;
    }
  }
  settle_internals();
  return {};
}

Result<LoweredOperation> SdpaNode::lower(const TensorTable& /*tensors*/,
                                         const GraphContext& /*context*/) const {
  return make_error(ErrorCode::InvalidState,
                    describe() + ": a composite node lowers through lower_all()");
}

Result<std::vector<LoweredOperation>> SdpaNode::lower_all(const TensorTable& tensors,
                                                          const GraphContext& /*context*/) const {
  std::optional<Error> missing;
  const auto find = [&](const TensorPtr& t) -> const backend::Tensor* {
    if (!t || missing) {
      return nullptr;
    }
    auto found = lowered(tensors, *t);
    if (!found) {
      missing = found.error();
      return nullptr;
    }
    return *found;
  };
  const SdpaPorts& p = ports_;
  const backend::Tensor* q = find(p.q);
  const backend::Tensor* v = find(p.v);
  const backend::Tensor* seq_q = find(p.seq_len_q);
  const backend::Tensor* seq_kv = find(p.seq_len_kv);
  const backend::Tensor* neg_inf = find(p.neg_inf);
  if (missing) {
    return std::unexpected(std::move(*missing));
  }
  // K^T: K's uid with its last two dims and strides swapped (the first matmul's B operand).
  TensorAttributes k_transposed = *p.k;
  auto kt_dims = p.k->dim();
  auto kt_strides = p.k->stride();
  std::swap(kt_dims[2], kt_dims[3]);
  std::swap(kt_strides[2], kt_strides[3]);
  k_transposed.set_dim(kt_dims).set_stride(kt_strides);
  auto kt = lower_tensor(k_transposed);
  if (!kt) {
    return std::unexpected(kt.error());
  }

  Operations ops(describe());
  const backend::Tensor* scores = find(p.scores);
  ops.matmul("Q K^T", {q, &*kt, scores}, {seq_q, seq_kv, nullptr});
  ops.keep(std::move(*kt));
  const backend::Tensor* current = scores;
  if (p.scale) {
    const backend::Tensor* scaled = find(p.scaled);
    ops.pointwise("scale", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {current, find(p.scale), nullptr},
                  scaled);
    current = scaled;
  }
  if (attributes_.padding_mask()) {
    const backend::Tensor* row = find(p.pad_row);
    const backend::Tensor* col = find(p.pad_col);
    const backend::Tensor* row_in = find(p.pad_row_in);
    const backend::Tensor* col_in = find(p.pad_col_in);
    const backend::Tensor* keep = find(p.pad_keep);
    const backend::Tensor* padded = find(p.padded);
    ops.pointwise("padding row index", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                  {current, nullptr, nullptr}, row, 2);
    ops.pointwise("padding column index", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                  {current, nullptr, nullptr}, col, 3);
    ops.pointwise("row < seq_len_q", CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN,
                  {row, seq_q, nullptr}, row_in);
    ops.pointwise("column < seq_len_kv", CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN,
                  {col, seq_kv, nullptr}, col_in);
    ops.pointwise("padding keep", CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN,
                  {row_in, col_in, nullptr}, keep);
    ops.pointwise("padding select", CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT,
                  {current, neg_inf, keep}, padded);
    current = padded;
  }
  if (const auto causal = attributes_.causal()) {
    const backend::Tensor* row = find(p.causal_row);
    const backend::Tensor* col = find(p.causal_col);
    const backend::Tensor* keep = find(p.causal_keep);
    const backend::Tensor* masked = find(p.causal);
    ops.pointwise("causal row index", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                  {current, nullptr, nullptr}, row, 2);
    ops.pointwise("causal column index", CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32,
                  {current, nullptr, nullptr}, col, 3);
    if (*causal == DiagonalAlignment::BottomRight && p.causal_row_plus) {
      // Per-batch actual lengths: row + seq_len_kv - seq_len_q (Int32). Without padding only
      // s_q == s_kv passes infer(), where bottom-right is top-left.
      const backend::Tensor* shifted = find(p.causal_row_shifted);
      const backend::Tensor* plus = find(p.causal_row_plus);
      ops.pointwise("row + seq_len_kv", CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32,
                    {row, seq_kv, nullptr}, plus);
      ops.pointwise("row + seq_len_kv - seq_len_q", CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32,
                    {plus, seq_q, nullptr}, shifted);
      row = shifted;
    }
    ops.pointwise("causal keep", CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, {row, col, nullptr},
                  keep);
    ops.pointwise("causal select", CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT,
                  {current, neg_inf, keep}, masked);
    current = masked;
  }
  const backend::Tensor* row_max = find(p.row_max);
  const backend::Tensor* centered = find(p.centered);
  const backend::Tensor* exps = find(p.exps);
  const backend::Tensor* row_sum = find(p.row_sum);
  const backend::Tensor* probs = find(p.probs);
  const backend::Tensor* o = find(p.o);
  ops.reduction("row max", CUDNN_REDUCE_TENSOR_MAX, current, row_max);
  ops.pointwise("minus max", CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, {current, row_max, nullptr},
                centered);
  ops.pointwise("exp", CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, {centered, nullptr, nullptr}, exps);
  ops.reduction("row sum", CUDNN_REDUCE_TENSOR_ADD, exps, row_sum);
  const backend::Tensor* log_sum = find(p.log_sum);
  ops.pointwise("log sum", CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, {row_sum, nullptr, nullptr},
                log_sum);
  ops.pointwise("stats", CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, {row_max, log_sum, nullptr},
                find(p.stats ? p.stats : p.unused_stats));
  ops.pointwise("softmax", CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, {exps, row_sum, nullptr}, probs);
  ops.matmul("P V", {probs, v, o}, {seq_q, nullptr, seq_kv});
  if (missing) {
    return std::unexpected(std::move(*missing));
  }
  return std::move(ops).finish();
}

}  // namespace dnngraph::detail
