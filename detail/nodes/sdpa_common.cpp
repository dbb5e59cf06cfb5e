// What the attention nodes share: input, mask, bias, window, ALiBi and dropout checks, mask and
// dropout tensors (the step builder is in attention_steps.cpp).
#include "detail/nodes/sdpa_common.hpp"

#include "api/layout.hpp"
#include "backend/features.hpp"
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

#include <gsl/pointers>

#include <cmath>
#include <utility>

namespace dnngraph::detail {

void append_present(std::vector<TensorPtr>& list, std::initializer_list<TensorPtr> tensors) {
  for (const TensorPtr& t : tensors) {
    if (t) {
      list.push_back(t);
    }
  }
}

std::string type_name(const TensorAttributes& t) {
  const auto type = t.data_type();
  return type ? std::string(to_string(*type)) : "none";
}

AttentionMaskPorts AttentionMaskPorts::make(const AttentionSettings& settings,
                                            const std::function<TensorPtr(const char*)>& make) {
  const bool padding = settings.padding;
  const bool causal = settings.causal.has_value();
  const bool shifted = settings.causal == DiagonalAlignment::BottomRight && padding;
  const auto internal = [&](const char* port, bool wanted) {
    return wanted ? make(port) : nullptr;
  };
  AttentionMaskPorts p;
  p.pad_row = internal("pad_row", padding);
  p.pad_col = internal("pad_col", padding);
  p.pad_row_in = internal("pad_row_in", padding);
  p.pad_col_in = internal("pad_col_in", padding);
  p.pad_keep = internal("pad_keep", padding);
  p.padded = internal("padded", padding);
  p.causal_row = internal("causal_row", causal);
  p.causal_col = internal("causal_col", causal);
  p.causal_row_plus = internal("causal_row_plus", shifted);
  p.causal_row_shifted = internal("causal_row_shifted", shifted);
  p.causal_keep = internal("causal_keep", causal);
  p.causal = internal("causal", causal);
  const bool window = settings.window.has_value();
  p.window_row = internal("window_row", window);
  p.window_col = internal("window_col", window);
  p.window_col_plus = internal("window_col_plus", window);
  p.window_keep = internal("window_keep", window);
  p.windowed = internal("windowed", window);
  p.alibi_row = internal("alibi_row", settings.alibi);
  p.alibi_col = internal("alibi_col", settings.alibi);
  p.alibi_distance = internal("alibi_distance", settings.alibi);
  p.alibi_bias = internal("alibi_bias", settings.alibi);
  p.alibi_added = internal("alibi_added", settings.alibi);
  return p;
}

void AttentionMaskPorts::append_to(std::vector<TensorPtr>& list) const {
  append_present(list, {pad_row,     pad_col,    pad_row_in, pad_col_in,      pad_keep,
                        padded,      causal_row, causal_col, causal_row_plus, causal_row_shifted,
                        causal_keep, causal,     window_row, window_col,      window_col_plus,
                        window_keep, windowed,   alibi_row,  alibi_col,       alibi_distance,
                        alibi_bias,  alibi_added});
}

void AttentionMaskPorts::settle(const std::vector<std::int64_t>& score_dims) const {
  const auto settle = [&](const TensorPtr& t, DataType type) {
    if (t) {
      t->set_dim(score_dims).set_stride(packed_strides(score_dims)).set_data_type(type);
    }
  };
  // column + window length is Float: the length is a Float scalar, as cudnn-frontend gives it.
  for (const TensorPtr& t : {padded, causal, window_col_plus, windowed, alibi_bias, alibi_added}) {
    settle(t, DataType::Float);
  }
  // row + seq_len_kv - seq_len_q is an index too.
  for (const TensorPtr& t :
       {pad_row, pad_col, causal_row, causal_col, causal_row_plus, causal_row_shifted, window_row,
        window_col, alibi_row, alibi_col, alibi_distance}) {
    settle(t, DataType::Int32);
  }
  for (const TensorPtr& t : {pad_row_in, pad_col_in, pad_keep, causal_keep, window_keep}) {
    settle(t, DataType::Boolean);
  }
}

SoftmaxPorts SoftmaxPorts::make(bool stats_output,
                                const std::function<TensorPtr(const char*)>& internal) {
  SoftmaxPorts p;
  p.row_max = internal("row_max");
  p.centered = internal("centered");
  p.exps = internal("exps");
  p.row_sum = internal("row_sum");
  p.log_sum = internal("log_sum");
  p.unused_stats = stats_output ? nullptr : internal("unused_stats");
  p.probs = internal("probs");
  return p;
}

void SoftmaxPorts::append_to(std::vector<TensorPtr>& list) const {
  append_present(list, {row_max, centered, exps, row_sum, log_sum, unused_stats, probs});
}

void SoftmaxPorts::settle(const std::vector<std::int64_t>& score_dims, DataType probs_type) const {
  std::vector<std::int64_t> row_dims = score_dims;
  row_dims.back() = 1;
  const auto settle = [](const TensorPtr& t, const std::vector<std::int64_t>& dims, DataType type) {
    if (t) {
      t->set_dim(dims).set_stride(packed_strides(dims)).set_data_type(type);
    }
  };
  for (const TensorPtr& t : {centered, exps}) {
    settle(t, score_dims, DataType::Float);
  }
  for (const TensorPtr& t : {row_max, row_sum, log_sum, unused_stats}) {
    settle(t, row_dims, DataType::Float);
  }
  settle(probs, score_dims, probs_type);
}

bool SoftmaxPorts::is_row(const TensorAttributes* t) const {
  return t != nullptr && (t == row_max.get() || t == row_sum.get() || t == log_sum.get() ||
                          t == unused_stats.get());
}

DropoutPorts DropoutPorts::make(const AttentionSettings& settings,
                                const std::function<TensorPtr(const char*, float)>& scalar,
                                const std::function<TensorPtr(const char*)>& output,
                                const std::function<TensorPtr(const char*)>& internal) {
  DropoutPorts p;
  if (!settings.has_dropout()) {
    return p;
  }
  p.seed = settings.seed;
  p.offset = settings.offset;
  p.scale = scalar("dropout_scale", static_cast<float>(1.0 / settings.keep()));
  p.mask_is_output = settings.mask_output;
  p.mask = settings.mask_output ? output("dropout_mask") : internal("dropout_mask");
  return p;
}

Result<void> DropoutPorts::settle(const std::string& node,
                                  const std::vector<std::int64_t>& score_dims,
                                  const SettleOutput& settle_output) const {
  if (!mask) {
    return {};
  }
  if (!mask_is_output) {
    mask->set_dim(score_dims).set_stride(packed_strides(score_dims)).set_data_type(DataType::Float);
    return {};
  }
  if (!mask->data_type()) {
    mask->set_data_type(DataType::Float);
  }
  if (auto ok = settle_output(*mask, score_dims); !ok) {
    return ok;
  }
  if (mask->data_type() != DataType::Float || mask->stride() != packed_strides(score_dims)) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": the dropout mask " + mask->describe() + " has data type " +
                          type_name(*mask) + " and strides " + to_string(mask->stride()) +
                          "; it is written Float with packed strides " +
                          to_string(packed_strides(score_dims)) +
                          " (the backward regenerates it packed: other strides would be "
                          "another mask)");
  }
  return {};
}

namespace {

// "multiples of 16 up to 256", or "128 only" where the rule takes one head dim.
std::string head_dims_served(const AttentionInputRule& rule) {
  if (rule.head_dim_multiple == rule.max_head_dim) {
    return std::to_string(rule.max_head_dim) + " only";
  }
  return "multiples of " + std::to_string(rule.head_dim_multiple) + " up to " +
         std::to_string(rule.max_head_dim);
}

}  // namespace

Result<void> check_attention_inputs(const std::string& node, const TensorAttributes& q,
                                    const TensorAttributes& k, const TensorAttributes& v,
                                    const AttentionInputRule& rule) {
  const std::array<std::pair<const char*, gsl::not_null<const TensorAttributes*>>, 3> qkv{
      {{"Q", &q}, {"K", &k}, {"V", &v}}};
  for (const auto& [port, t] : qkv) {
    if (t->dim().size() != 4) {
      return make_error(ErrorCode::ShapeMismatch, node + ": " + port + " " + t->describe() +
                                                      " has dims " + to_string(t->dim()) +
                                                      "; Q, K and V are rank 4: [b, h, s, d]");
    }
    const auto type = t->data_type();
    if (!type || !rule.takes(*type)) {
      return make_error(ErrorCode::UnsupportedDataType, node + ": " + port + " " + t->describe() +
                                                            " has data type " + type_name(*t) +
                                                            "; " + rule.types);
    }
    if (type != q.data_type()) {
      return make_error(ErrorCode::UnsupportedDataType, node + ": " + port + " " + t->describe() +
                                                            " has data type " + type_name(*t) +
                                                            ", but Q has " + type_name(q) +
                                                            "; Q, K and V share one type");
    }
    if (t->stride()[3] != 1) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": " + port + " " + t->describe() + " has strides " +
                            to_string(t->stride()) +
                            "; the head dim (dim 3) must be innermost (stride 1): BHSD or BSHD");
    }
  }
  const auto& qd = q.dim();
  const auto& kd = k.dim();
  const auto& vd = v.dim();
  const auto mismatch = [&](const std::string& what, std::int64_t expected, std::int64_t given) {
    return make_error(ErrorCode::ShapeMismatch,
                      node + ": " + what + " is " + std::to_string(given) + ", expected " +
                          std::to_string(expected) + " (Q " + to_string(qd) + ", K " +
                          to_string(kd) + ", V " + to_string(vd) + ")");
  };
  if (kd[0] != qd[0] || vd[0] != qd[0]) {
    return mismatch(kd[0] != qd[0] ? "the batch of K" : "the batch of V", qd[0],
                    kd[0] != qd[0] ? kd[0] : vd[0]);
  }
  if (kd[3] != qd[3]) {
    return mismatch("the head dim of K (dim 3)", qd[3], kd[3]);
  }
  if (vd[2] != kd[2]) {
    return mismatch("the sequence length of V (dim 2)", kd[2], vd[2]);
  }
  for (const auto& [port, heads] : {std::pair{"K", kd[1]}, std::pair{"V", vd[1]}}) {
    if (heads <= 0 || qd[1] % heads != 0) {
      return make_error(ErrorCode::ShapeMismatch,
                        node + ": " + port + " has " + std::to_string(heads) +
                            " heads, which does not divide Q's " + std::to_string(qd[1]) +
                            " (grouped-query attention: h_q is a multiple of h_k and h_v)");
    }
  }
  for (const auto& [port, d] : {std::pair{"Q and K", qd[3]}, std::pair{"V", vd[3]}}) {
    if (d % rule.head_dim_multiple != 0 || d > rule.max_head_dim) {
      return make_error(ErrorCode::InvalidAttribute, node + ": the head dim of " + port + " is " +
                                                         std::to_string(d) + "; " + rule.engines +
                                                         " take " + head_dims_served(rule));
    }
  }
  return {};
}

Result<void> check_attention_scores(const std::string& node, const TensorAttributes& q,
                                    const TensorAttributes& k) {
  const std::vector<std::int64_t> dims{q.dim()[0], q.dim()[1], q.dim()[2], k.dim()[2]};
  const auto count = element_count(dims);
  if (count && checked_mul(*count, size_of(DataType::Float))) {
    return {};
  }
  return make_error(ErrorCode::InvalidAttribute,
                    node + ": the scores of Q " + q.describe() + " and K " + k.describe() +
                        " are Float [b, h_q, s_q, s_kv] = " + to_string(dims) +
                        ", more bytes than int64 counts; shorten s_q or s_kv, or split the batch");
}

Result<void> check_attention_masks(const std::string& node, const AttentionSettings& settings,
                                   const TensorAttributes& q, const TensorAttributes& k) {
  const std::int64_t b = q.dim()[0];
  const std::int64_t s_q = q.dim()[2];
  const std::int64_t s_kv = k.dim()[2];
  if (settings.scale && !std::isfinite(*settings.scale)) {
    return make_error(ErrorCode::InvalidAttribute, node + ": the attention scale is " +
                                                       std::to_string(*settings.scale) +
                                                       "; it must be finite");
  }
  const bool has_lengths = settings.seq_len_q || settings.seq_len_kv;
  if (settings.padding && (!settings.seq_len_q || !settings.seq_len_kv)) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": the padding mask needs both set_seq_len_q and "
                          "set_seq_len_kv (Int32 [b, 1, 1, 1] tensors)");
  }
  if (!settings.padding && has_lengths) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": sequence length tensors are given without "
                          "set_padding_mask(true); set it, or drop them");
  }
  for (const auto& [port, t] : {std::pair{"seq_len_q", settings.seq_len_q.get()},
                                std::pair{"seq_len_kv", settings.seq_len_kv.get()}}) {
    if (t == nullptr) {
      continue;
    }
    const std::vector<std::int64_t> expected{b, 1, 1, 1};
    if (t->dim() != expected) {
      return make_error(ErrorCode::ShapeMismatch, node + ": " + port + " " + t->describe() +
                                                      " has dims " + to_string(t->dim()) +
                                                      ", expected " + to_string(expected) +
                                                      " (one length per batch)");
    }
    if (t->data_type() != DataType::Int32) {
      return make_error(ErrorCode::UnsupportedDataType, node + ": " + port + " " + t->describe() +
                                                            " has data type " + type_name(*t) +
                                                            "; sequence lengths are Int32");
    }
    if (t->is_pass_by_value()) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": " + port + " " + t->describe() +
                            " is passed by value; sequence lengths live in device memory");
    }
  }
  // Without a padding mask the bottom-right diagonal is shifted by s_kv - s_q. Spelled as a
  // Float scalar added to the row index, cuDNN 9.19 and 9.27 ran it and returned wrong numbers
  // (H200, s_q 17, s_kv 33: O off by 0.37); cudnn-frontend adds Int32 by-value scalars, which
  // dnngraph's by-value tensors (Float) cannot carry yet. Square shapes need no shift.
  if (settings.causal == DiagonalAlignment::BottomRight && !settings.padding && s_q != s_kv) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": a bottom-right causal mask with s_q " + std::to_string(s_q) +
                          " != s_kv " + std::to_string(s_kv) +
                          " needs a padding mask (set_padding_mask with seq_len_q / seq_len_kv, "
                          "the full lengths will do); without one it is exact only for s_q == "
                          "s_kv");
  }
  return {};
}

namespace {

// The bias: rank 4, [b or 1, h_q or 1, s_q, s_kv], Q's type, innermost stride 1, and no
// bottom-right causal mask (cudnn-frontend refuses that combination for every implementation).
Result<void> check_attention_bias(const std::string& node, const AttentionSettings& settings,
                                  const TensorAttributes& q, const TensorAttributes& k) {
  if (!settings.bias) {
    return {};
  }
  const TensorAttributes& bias = *settings.bias;
  const auto& qd = q.dim();
  const std::string expected = "[" + std::to_string(qd[0]) + " or 1, " + std::to_string(qd[1]) +
                               " or 1, " + std::to_string(qd[2]) + ", " +
                               std::to_string(k.dim()[2]) + "] ([b or 1, h_q or 1, s_q, s_kv])";
  const auto& d = bias.dim();
  if (d.size() != 4 || (d[0] != qd[0] && d[0] != 1) || (d[1] != qd[1] && d[1] != 1) ||
      d[2] != qd[2] || d[3] != k.dim()[2]) {
    return make_error(ErrorCode::ShapeMismatch, node + ": bias " + bias.describe() + " has dims " +
                                                    to_string(d) + ", expected " + expected);
  }
  if (bias.data_type() != q.data_type() || bias.stride()[3] != 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": bias " + bias.describe() + " has data type " + type_name(bias) +
                          " and strides " + to_string(bias.stride()) +
                          "; the bias takes Q's type (" + type_name(q) +
                          ") and an innermost key dim (stride 1)");
  }
  // cudnn-frontend refuses it for every implementation ("Bottom right causal mask is only
  // supported with is_bias=False, ...").
  if (settings.causal == DiagonalAlignment::BottomRight) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": a bias with a bottom-right causal mask: cuDNN's fused attention "
                          "does not serve the combination (cudnn-frontend refuses it too)");
  }
  return {};
}

// ALiBi: the slopes, Float [1, h_q, 1, 1] packed, and the top-left causal mask (cudnn-frontend:
// "When alibi mask is used, diagonal_band_right_bound needs to be set to 0", and bottom-right
// refused with ALiBi).
Result<void> check_attention_alibi(const std::string& node, const AttentionSettings& settings,
                                   std::int64_t h_q) {
  if (!settings.alibi) {
    if (settings.alibi_slopes) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": ALiBi slopes are set, but set_alibi_mask(true) is not");
    }
    return {};
  }
  if (!settings.alibi_slopes) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": ALiBi needs its slopes: set_alibi_slopes(t), t Float [1, " +
                          std::to_string(h_q) + ", 1, 1] in device memory holding alibi_slopes(" +
                          std::to_string(h_q) + ")");
  }
  const TensorAttributes& slopes = *settings.alibi_slopes;
  const std::vector<std::int64_t> dims{1, h_q, 1, 1};
  if (slopes.dim() != dims || slopes.data_type() != DataType::Float ||
      slopes.stride() != packed_strides(dims)) {
    return make_error(ErrorCode::ShapeMismatch,
                      node + ": ALiBi slopes " + slopes.describe() + " are " + type_name(slopes) +
                          " " + to_string(slopes.dim()) + " strides " + to_string(slopes.stride()) +
                          "; expected Float " + to_string(dims) +
                          " packed (one slope per query head)");
  }
  if (settings.causal != DiagonalAlignment::TopLeft) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": ALiBi needs the top-left causal mask (set_causal_mask(true)); " +
                          "cuDNN's fused attention serves it with no other (cudnn-frontend refuses "
                          "the others too)");
  }
  return {};
}

// The sliding window: a length >= 1, with a top-left causal mask, s_q <= s_kv without a padding
// mask, and with a bias or dropout only where the loaded cuDNN serves that
// (Feature::SdpaSlidingWindowCombined).
Result<void> check_attention_window(const std::string& node, const AttentionSettings& settings,
                                    std::int64_t s_q, std::int64_t s_kv) {
  if (!settings.window) {  // nothing to check
    return {};
  }
  const std::int64_t length = *settings.window;
  if (length < 1) {
    return make_error(ErrorCode::InvalidAttribute, node + ": sliding window length " +
                                                       std::to_string(length) +
                                                       "; it counts the keys a query sees, >= 1");
  }
  if (settings.causal != DiagonalAlignment::TopLeft) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": a sliding window needs the top-left causal mask (set_causal_mask" +
                          "(true)); " +
                          (settings.causal ? "the bottom-right alignment is not offered"
                                           : "no causal mask is set"));
  }
  // cudnn-frontend: "Sliding window attention is only supported with max_s_q <= max_s_kv."
  if (!settings.padding && s_q > s_kv) {
    return make_error(ErrorCode::InvalidAttribute,
                      node + ": a sliding window without a padding mask needs s_q <= s_kv; s_q " +
                          std::to_string(s_q) + ", s_kv " + std::to_string(s_kv));
  }
  if ((settings.bias || settings.has_dropout()) &&
      !backend::available(backend::Feature::SdpaSlidingWindowCombined)) {
    return std::unexpected(version_too_old(backend::Feature::SdpaSlidingWindowCombined,
                                           node + ": a sliding window with a bias or dropout"));
  }
  return {};
}

}  // namespace

Result<void> check_attention_dropout(const std::string& node, const AttentionSettings& settings) {
  if (!settings.has_dropout()) {
    if (settings.mask_output) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": set_dropout_mask_output(true) asks for the dropout mask, but " +
                            (settings.dropout ? "the dropout probability is 0, which draws none"
                                              : "no dropout is set (set_dropout)"));
    }
    return {};
  }
  const double p = settings.dropout.value_or(0.0);
  if (!(std::isfinite(p) && p > 0.0 && p < 1.0)) {
    return make_error(
        ErrorCode::InvalidAttribute,
        node + ": dropout probability " + std::to_string(p) + " is outside [0, 1)" +
            (p == 1.0 ? "; 1 keeps nothing, and its scale 1 / (1 - p) is infinite" : ""));
  }
  if (!settings.seed || !settings.offset) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": dropout needs a seed and an offset tensor (set_dropout(p, seed, "
                          "offset): one Int64 or Int32 value each, in device memory)");
  }
  if (auto ok = check_rng_key(node, "dropout seed", *settings.seed); !ok) {
    return ok;
  }
  if (auto ok = check_rng_key(node, "dropout offset", *settings.offset); !ok) {
    return ok;
  }
  // cudnn-frontend 1.32 refuses it for every implementation ("Bottom right causal mask is only
  // supported with ... is_dropout=False").
  if (settings.causal == DiagonalAlignment::BottomRight) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": dropout with a bottom-right causal mask: cuDNN's fused attention "
                          "does not serve the combination (cudnn-frontend refuses it too); use a "
                          "top-left causal mask, or no dropout");
  }
  return {};
}

Result<void> check_attention(const std::string& node, std::optional<DataType> compute,
                             const AttentionSettings& settings, const TensorAttributes& q,
                             const TensorAttributes& k, const TensorAttributes& v,
                             const AttentionInputRule& rule) {
  if (compute && *compute != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType, node + ": compute data type " +
                                                          std::string(to_string(*compute)) +
                                                          "; attention accumulates in Float");
  }
  if (auto ok = check_attention_inputs(node, q, k, v, rule); !ok) {
    return ok;
  }
  if (auto ok = check_attention_scores(node, q, k); !ok) {
    return ok;
  }
  if (auto ok = check_attention_masks(node, settings, q, k); !ok) {
    return ok;
  }
  if (auto ok = check_attention_bias(node, settings, q, k); !ok) {
    return ok;
  }
  if (auto ok = check_attention_window(node, settings, q.dim()[2], k.dim()[2]); !ok) {
    return ok;
  }
  if (auto ok = check_attention_alibi(node, settings, q.dim()[1]); !ok) {
    return ok;
  }
  return check_attention_dropout(node, settings);
}

Result<void> check_forward_shapes(const std::string& node, const TensorAttributes& q,
                                  const TensorAttributes& v, const TensorAttributes& o,
                                  const TensorAttributes& d_o, const TensorAttributes& stats) {
  const auto& qd = q.dim();
  const std::vector<std::int64_t> o_dims{qd[0], qd[1], qd[2], v.dim()[3]};
  for (const auto& [port, t] : {std::pair{"O", &o}, std::pair{"dO", &d_o}}) {
    if (t->dim() != o_dims) {
      return make_error(ErrorCode::ShapeMismatch, node + ": " + port + " " + t->describe() +
                                                      " has dims " + to_string(t->dim()) +
                                                      ", expected " + to_string(o_dims) +
                                                      " (the forward's O: [b, h_q, s_q, d_v])");
    }
  }
  const std::vector<std::int64_t> stats_dims{qd[0], qd[1], qd[2], 1};
  if (stats.dim() != stats_dims) {
    return make_error(ErrorCode::ShapeMismatch, node + ": Stats " + stats.describe() +
                                                    " has dims " + to_string(stats.dim()) +
                                                    ", expected " + to_string(stats_dims) +
                                                    " (the forward's Stats: [b, h_q, s_q, 1])");
  }
  if (stats.data_type() != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType, node + ": Stats " + stats.describe() +
                                                          " has data type " + type_name(stats) +
                                                          "; the statistics are Float");
  }
  return {};
}

Result<void> check_per_head_gradients(const std::string& node, const TensorAttributes& q,
                                      std::initializer_list<PerHead> per_head,
                                      std::int64_t element) {
  for (const auto& [heads, of] : per_head) {
    if (heads == nullptr) {
      continue;
    }
    const std::vector<std::int64_t> dims{q.dim()[0], q.dim()[1], of->dim()[2], of->dim()[3]};
    if (auto ok = check_layout(dims, {}, element); !ok) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": the gradient of " + of->describe() +
                            " per query head is [b, h_q, s_kv, d]; its " + ok.error().message +
                            "; use fewer query heads or shorter sequences");
    }
  }
  return {};
}

Result<void> settle_gradients(const Gradients& g, DataType type, const SettleOutput& settle_output,
                              const GradientCheck& check) {
  const std::array<std::pair<const char*, std::pair<TensorAttributes*, const TensorAttributes*>>, 3>
      gradients{{{"dQ", {g.dq, g.q}}, {"dK", {g.dk, g.k}}, {"dV", {g.dv, g.v}}}};
  for (const auto& [port, pair] : gradients) {
    const auto& [grad, of] = pair;
    if (!grad->data_type()) {
      grad->set_data_type(type);
    }
    if (auto ok = settle_output(*grad, of->dim()); !ok) {
      return ok;
    }
    if (auto ok = check(port, *grad); !ok) {
      return ok;
    }
  }
  return {};
}

Result<void> check_fp8_form(const std::string& node, std::optional<DiagonalAlignment> causal,
                            std::span<const NamedTensor> tensors, std::string_view ragged_why) {
  if (causal == DiagonalAlignment::BottomRight) {
    return make_error(ErrorCode::InvalidAttribute,
                      node +
                          ": a bottom-right causal mask: cuDNN serves it in FP8 on Blackwell only "
                          "(cudnn-frontend's support surface: compute capability 10 and cuDNN "
                          "9.7), not on Hopper; use the top-left causal mask (set_causal_mask)");
  }
  for (const auto& [role, t] : tensors) {
    if (t != nullptr && t->is_ragged()) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": " + role + " " + t->describe() +
                            " is ragged (packed variable-length): FP8 attention takes BHSD or "
                            "BSHD strides only (" +
                            std::string(ragged_why) + "); give padded tensors and a padding mask");
    }
  }
  return {};
}

Result<void> check_fp8_factors(const std::string& node, std::span<const NamedTensor> factors) {
  const std::vector<std::int64_t> one_value{1, 1, 1, 1};
  for (const auto& [role, t] : factors) {
    if (t->dim() != one_value) {
      return make_error(ErrorCode::ShapeMismatch, node + ": " + role + " " + t->describe() +
                                                      " has dims " + to_string(t->dim()) +
                                                      ", expected " + to_string(one_value) +
                                                      " (one per-tensor factor)");
    }
    if (t->data_type() != DataType::Float) {
      return make_error(ErrorCode::UnsupportedDataType, node + ": " + role + " " + t->describe() +
                                                            " has data type " + type_name(*t) +
                                                            "; the factors are Float");
    }
    if (t->is_pass_by_value()) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": " + role + " " + t->describe() +
                            " is passed by value; the factors live in device memory and are read "
                            "at every execute (delayed scaling changes them between steps)");
    }
  }
  return {};
}

Result<void> settle_float_output(const std::string& node, const char* role, TensorAttributes& t,
                                 const std::vector<std::int64_t>& dims,
                                 const SettleOutput& settle_output) {
  if (!t.data_type()) {
    t.set_data_type(DataType::Float);
  }
  if (auto ok = settle_output(t, dims); !ok) {
    return ok;
  }
  if (t.data_type() != DataType::Float) {
    return make_error(ErrorCode::UnsupportedDataType, node + ": " + role + " " + t.describe() +
                                                          " has data type " + type_name(t) + "; " +
                                                          role + " is Float");
  }
  return {};
}

Result<void> check_ragged_needs_padding(const std::string& node, bool padding,
                                        std::initializer_list<const TensorAttributes*> tensors) {
  for (const TensorAttributes* t : tensors) {
    if (t != nullptr && t->is_ragged() && !padding) {
      return make_error(ErrorCode::InvalidAttribute,
                        node + ": " + t->describe() +
                            " is ragged (packed variable-length), which needs the padding mask: "
                            "set_padding_mask(true) with set_seq_len_q / set_seq_len_kv (each "
                            "batch's length)");
    }
  }
  return {};
}

}  // namespace dnngraph::detail
