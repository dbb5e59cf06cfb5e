// An exact one-sided rank test (Mann-Whitney) for benches that time two steps several times each
// in new processes: whether the first step's runs are measurably slower than the second's, where
// a build's spread from one process to the next is larger than the difference asked about.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace dnngraph_bench {

// U of `a` over `b`: the pairs (a_i, b_j) with a_i > b_j, a tie counting a half.
inline double rank_u(std::span<const double> a, std::span<const double> b) {
  double u = 0;
  for (const double x : a) {
    for (const double y : b) {
      u += x > y ? 1.0 : x == y ? 0.5 : 0.0;
    }
  }
  return u;
}

// P(U >= rank_u(a, b)) when all the runs come from one distribution: the share of the
// arrangements of a's n runs among the n + m by rank whose U is at least the one observed,
// counted exactly (c(n, m, u) = c(n - 1, m, u - m) + c(n, m - 1, u): the largest run is a's, and
// beats all m of b's, or b's). The counts assume no ties; an observed U with a tie's half is
// compared with the next whole count above it, so a tie makes the p-value smaller: it errs
// towards "slower". 1 when either sample is empty.
inline double rank_p_greater(std::span<const double> a, std::span<const double> b) {
  const std::size_t n = a.size(), m = b.size();
  if (n == 0 || m == 0) {
    return 1.0;
  }
  // counts[i][j][u]: arrangements of i a-runs and j b-runs with U = u (u up to i * j).
  std::vector<std::vector<std::vector<double>>> counts(n + 1,
                                                       std::vector<std::vector<double>>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) {
    for (std::size_t j = 0; j <= m; ++j) {
      auto& here = counts[i][j];
      here.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        here[0] = 1.0;
        continue;
      }
      const auto& a_last = counts[i - 1][j];  // the largest run is a's: it beats all j b-runs
      for (std::size_t u = 0; u < a_last.size(); ++u) here[u + j] += a_last[u];
      const auto& b_last = counts[i][j - 1];
      for (std::size_t u = 0; u < b_last.size(); ++u) here[u] += b_last[u];
    }
  }
  const auto& all = counts[n][m];
  const double observed = rank_u(a, b);
  double at_least = 0, total = 0;
  for (std::size_t u = 0; u < all.size(); ++u) {
    total += all[u];
    if (static_cast<double>(u) >= observed) at_least += all[u];
  }
  return at_least / total;
}

}  // namespace dnngraph_bench
