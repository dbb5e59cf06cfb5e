// The CPU reference of attention (sdpa) in double that the GPU tests share: a case (types,
// shapes, masks, per-batch lengths, a bias, a sliding window), softmax(scale Q K^T + bias +
// masks) V with its log-sum-exp, the
// rows that have a defined output, the tolerances argued for them, and the packing of
// variable-length batches token after token (THD). Include after
// support/dnngraph.hpp.
#pragma once

#include "support/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dnngraph::test {

// The score modifiers of a case (SdpaCase, the backward test's case): a bias of bias_heads heads
// (0: none), a sliding window, ALiBi.
template <class Case>
[[nodiscard]] Case with_modifiers(Case c, std::int64_t bias_heads,
                                  std::optional<std::int64_t> window, bool alibi = false) {
  c.bias_heads = bias_heads;
  c.window = window;
  c.alibi = alibi;
  return c;
}
// What ALiBi adds to the score of query head h, row i, key j: slope_h (j - i), slopes the
// library's alibi_slopes(h_q) (tests/cpu/sdpa_masks_test.cpp checks their formula).
template <class Case>
[[nodiscard]] double alibi_term(const Case& c, const std::vector<float>& slopes, std::int64_t h,
                                std::int64_t i, std::int64_t j) {
  return c.alibi
             ? static_cast<double>(slopes[static_cast<std::size_t>(h)]) * static_cast<double>(j - i)
             : 0.0;
}
template <class Case>
[[nodiscard]] std::vector<std::int64_t> bias_dims(const Case& c) {
  return {1, c.bias_heads, c.s_q, c.s_kv};
}
// The bias element of query head h, row i, key j.
template <class Case>
[[nodiscard]] std::size_t bias_at(const Case& c, std::int64_t h, std::int64_t i, std::int64_t j) {
  return static_cast<std::size_t>(((c.bias_heads == 1 ? 0 : h) * c.s_q + i) * c.s_kv + j);
}
template <class Case>
[[nodiscard]] std::string modifiers_text(const Case& c) {
  return (c.bias_heads != 0 ? ", bias " + dnngraph::to_string(bias_dims(c)) : std::string()) +
         (c.window ? ", window " + std::to_string(*c.window) : std::string()) +
         (c.alibi ? ", ALiBi" : "");
}

struct SdpaCase {
  std::string name;
  DataType type;
  std::int64_t b, h_q, h_k, s_q, s_kv, d;
  std::optional<DiagonalAlignment> causal;
  bool stats = false;
  std::vector<std::int32_t> len_q, len_kv;  // per batch; empty: no padding mask
  std::uint32_t seed = 1;
  std::int64_t bias_heads = 0;  // 0: no bias; else a bias [1, bias_heads, s_q, s_kv] (h_q or 1)
  std::optional<std::int64_t> window = std::nullopt;  // sliding window length (top-left causal)
  bool alibi = false;                                 // ALiBi with the standard slopes

  [[nodiscard]] bool padded() const { return !len_q.empty(); }
  [[nodiscard]] float scale() const { return 1.0F / std::sqrt(static_cast<float>(d)); }
  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) + ", b " + std::to_string(b) +
           " h_q " + std::to_string(h_q) + " h_k " + std::to_string(h_k) + " s_q " +
           std::to_string(s_q) + " s_kv " + std::to_string(s_kv) + " d " + std::to_string(d) +
           modifiers_text(*this) + ")";
  }
  [[nodiscard]] std::vector<std::int64_t> q_dims() const { return {b, h_q, s_q, d}; }
  [[nodiscard]] std::vector<std::int64_t> kv_dims() const { return {b, h_k, s_kv, d}; }
};

// c's masks on the attributes `a` of any attention node: the causal mask of c's alignment, and
// with per-batch lengths the padding mask, its Int32 [b, 1, 1, 1] length tensors added to g with
// uids uid_len_q and uid_len_kv. Case: an SdpaCase, or a case with its causal, b and padded().
template <class Case, class A>
void set_masks(const Case& c, Graph& g, A& a, std::int64_t uid_len_q, std::int64_t uid_len_kv) {
  if (c.causal == DiagonalAlignment::TopLeft) {
    a.set_causal_mask(true);
  } else if (c.causal == DiagonalAlignment::BottomRight) {
    a.set_causal_mask_bottom_right(true);
  }
  if (!c.padded()) {
    return;
  }
  const auto length = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({c.b, 1, 1, 1})
                        .set_data_type(DataType::Int32));
  };
  a.set_padding_mask(true)
      .set_seq_len_q(length("seq_len_q", uid_len_q))
      .set_seq_len_kv(length("seq_len_kv", uid_len_kv));
}

// Tolerances. Inputs are uniform in [-1, 1] and exact in their type; Q K^T and P V accumulate
// in Float (products of Half/BFloat16 values are exact in Float), so the errors that count are
// two roundings to the io type: P (each probability to 2^-9 relative in BFloat16, 2^-12 in
// Half; O = sum p_j v_j with sum p_j = 1 and |v_j| <= 1 moves by at most that) and O itself (the
// same relative step). Bound: 2 * 2^-9 = 3.9e-3 (BFloat16), 2 * 2^-12 = 4.9e-4 (Half); the
// tolerances leave ~2.5x (BFloat16 1e-2) and ~4x (Half 2e-3). A wrong mask or head mapping errs
// by O(0.1). Stats (Float log-sum-exp, |Stats| < 6 here) carry only Float rounding and the
// engine's exp/log approximations (~1e-6 relative): 1e-3 absolute leaves > 100x.
inline Tolerance o_tolerance(DataType type) {
  return type == DataType::BFloat16 ? Tolerance{.abs = 1e-2, .rel = 1e-2}
                                    : Tolerance{.abs = 2e-3, .rel = 2e-3};
}
inline constexpr Tolerance stats_tolerance{.abs = 1e-3, .rel = 1e-4};

struct SdpaExpected {
  std::vector<double> o;        // [b, h_q, s_q, d], packed
  std::vector<double> stats;    // [b, h_q, s_q]
  std::vector<bool> row_valid;  // [b, h_q, s_q]: a query row inside its batch's length
  std::vector<double> p_max;  // [b, h_q, s_q]: the row's largest probability, 1 / sum exp(s - max)
};

// Softmax(scale Q K^T + bias + masks) V in double. Query head h reads K/V head h / (h_q / h_k);
// `bias` holds c.bias_dims() values where c has a bias.
inline SdpaExpected sdpa_reference(const SdpaCase& c, const std::vector<float>& q,
                                   const std::vector<float>& k, const std::vector<float>& v,
                                   std::span<const float> bias = {}) {
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  const std::size_t rows = n(c.b * c.h_q * c.s_q);
  SdpaExpected e{std::vector<double>(rows * n(c.d), 0.0), std::vector<double>(rows, 0.0),
                 std::vector<bool>(rows, false), std::vector<double>(rows, 0.0)};
  const std::int64_t group = c.h_q / c.h_k;
  const std::vector<float> slopes = alibi_slopes(c.h_q);
  std::vector<double> score(n(c.s_kv));
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    const std::int64_t lq = c.padded() ? c.len_q[n(bi)] : c.s_q;
    const std::int64_t lkv = c.padded() ? c.len_kv[n(bi)] : c.s_kv;
    for (std::int64_t h = 0; h < c.h_q; ++h) {
      const std::int64_t hk = h / group;
      for (std::int64_t i = 0; i < lq; ++i) {
        const std::size_t row = n((bi * c.h_q + h) * c.s_q + i);
        double max = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < c.s_kv; ++j) {
          bool keep = j < lkv;
          if (c.causal == DiagonalAlignment::TopLeft) {
            keep = keep && j <= i;
          } else if (c.causal == DiagonalAlignment::BottomRight) {
            keep = keep && j <= i + lkv - lq;
          }
          if (c.window) {  // the left bound: i - W < j
            keep = keep && j > i - *c.window;
          }
          double dot = 0;
          for (std::int64_t x = 0; x < c.d; ++x) {
            dot += static_cast<double>(q[row * n(c.d) + n(x)]) *
                   k[n(((bi * c.h_k + hk) * c.s_kv + j) * c.d + x)];
          }
          const double added = (c.bias_heads != 0 ? bias[bias_at(c, h, i, j)] : 0.0) +
                               alibi_term(c, slopes, h, i, j);
          score[n(j)] = keep ? dot * c.scale() + added : -std::numeric_limits<double>::infinity();
          max = std::max(max, score[n(j)]);
        }
        if (!std::isfinite(max)) {
          continue;  // every key masked: no defined output
        }
        double sum = 0;
        for (double& s : score) {
          s = std::exp(s - max);
          sum += s;
        }
        e.row_valid[row] = true;
        e.stats[row] = max + std::log(sum);
        e.p_max[row] = 1.0 / sum;
        for (std::int64_t j = 0; j < c.s_kv; ++j) {
          const double p = score[n(j)] / sum;
          for (std::int64_t x = 0; x < c.d; ++x) {
            e.o[row * n(c.d) + n(x)] += p * v[n(((bi * c.h_k + hk) * c.s_kv + j) * c.d + x)];
          }
        }
      }
    }
  }
  return e;
}

// Keeps the elements of valid rows only (padding rows have no defined output).
template <class T>
[[nodiscard]] std::vector<T> valid_rows(std::span<const T> values,
                                        const std::vector<bool>& row_valid, std::size_t per_row) {
  std::vector<T> kept;
  for (std::size_t r = 0; r < row_valid.size(); ++r) {
    if (row_valid[r]) {
      kept.insert(kept.end(), values.begin() + static_cast<std::ptrdiff_t>(r * per_row),
                  values.begin() + static_cast<std::ptrdiff_t>((r + 1) * per_row));
    }
  }
  return kept;
}

// Variable-length batches packed token after token (THD, ragged).

// Token-major ("THD") strides of [b, h, s, d]: token t of a batch at t * h * d, head at d.
[[nodiscard]] inline std::vector<std::int64_t> token_major(const std::vector<std::int64_t>& d) {
  return {d[2] * d[1] * d[3], d[3], d[1] * d[3], 1};
}

// Where each batch starts, in tokens: the exclusive prefix sum of the lengths, then the total.
[[nodiscard]] inline std::vector<std::int64_t> starts(const std::vector<std::int32_t>& lengths) {
  std::vector<std::int64_t> first{0};
  for (const std::int32_t l : lengths) {
    first.push_back(first.back() + l);
  }
  return first;
}

// Packs [b, h, s_max, d] (BHSD, padded) rows of valid tokens token after token, or back.
inline void repack(const SdpaCase& c, std::int64_t h, std::int64_t s_max,
                   const std::vector<std::int32_t>& lengths, bool to_packed,
                   std::span<const float> from, std::span<float> to) {
  const auto first = starts(lengths);
  for (std::int64_t bi = 0; bi < c.b; ++bi) {
    for (std::int64_t t = 0; t < lengths[static_cast<std::size_t>(bi)]; ++t) {
      for (std::int64_t hi = 0; hi < h; ++hi) {
        for (std::int64_t x = 0; x < c.d; ++x) {
          const auto padded = static_cast<std::size_t>(((bi * h + hi) * s_max + t) * c.d + x);
          const auto packed = static_cast<std::size_t>(
              ((first[static_cast<std::size_t>(bi)] + t) * h + hi) * c.d + x);
          if (to_packed) {
            to[packed] = from[padded];
          } else {
            to[padded] = from[packed];
          }
        }
      }
    }
  }
}

}  // namespace dnngraph::test
