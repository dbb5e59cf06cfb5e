// Dropout in attention on the GPU against a CPU reference in double that uses the mask cuDNN drew:
// odd lengths (s_q 33, s_kv 47), head dim 64, BFloat16 and Half, dropout 0.1 to 0.3, without and
// with a top-left causal mask. Seed and offset are Int64 [1, 1, 1, 1] in device memory, changed
// between runs without rebuilding.
// - Forward with the mask written out (set_dropout_mask_output, cudnn-frontend's RNG_DUMP): the
//   mask is 0 or 1 with a kept fraction within 6 standard deviations of 1 - p; O equals
//   (softmax(scale Q K^T) * mask / (1 - p)) V; Stats the log-sum-exp without dropout; the same key
//   gives the same O and mask bit for bit, another offset another mask (and O matches it).
// - Forward without the mask output: V is the identity (d >= s_kv), so O's row i is
//   P_i * mask_i / (1 - p) itself: every element is 0 or P / (1 - p), which reads the mask back
//   out of O. The same checks of the mask follow.
// - Backward: the mask is read from the forward without a mask output (as above) under the same
//   seed and offset; the backward draws it again itself, and dQ, dK, dV and D are compared with
//   the reference of that mask: D = (1 - p) rowsum(dO O), dV = (P M / (1 - p))^T dO,
//   dS = P (dO V^T M / (1 - p) - rowsum(dO O)) scale, dQ = dS K, dK = dS^T Q.
// A graph cuDNN has no engine for is a finding (skipped with the Error), never a pass.
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/dnngraph.hpp"

#include "support/built_cases.hpp"
#include "support/device_buffer.hpp"
#include "support/host_tensor.hpp"
#include "support/pointwise_reference.hpp"
#include "support/reference.hpp"

namespace {

using dnngraph::DataType;
using dnngraph::Graph;
using dnngraph::SdpaAttributes;
using dnngraph::SdpaBackwardAttributes;
using dnngraph::TensorAttributes;
using dnngraph::test::describe;
using dnngraph::test::DeviceBuffer;
using dnngraph::test::HostTensor;
using dnngraph::test::require_cuda;
using dnngraph::test::Tolerance;
using Dims = std::vector<std::int64_t>;

enum : std::int64_t {
  uid_q = 1,
  uid_k,
  uid_v,
  uid_o,
  uid_stats,
  uid_seed,
  uid_offset,
  uid_mask,
  uid_d_o,
  uid_dq = 10,
  uid_dk,
  uid_dv,
  uid_d_sum
};

// The key of the runs; another_offset is far from it (whatever unit cuDNN counts the offset in).
constexpr std::int64_t key_seed = 123456, key_offset = 789, another_offset = 1'000'789;

std::size_t n(std::int64_t x) { return static_cast<std::size_t>(x); }

struct DropoutCase {
  std::string name;
  DataType type;
  std::int64_t b, h, s_q, s_kv, d;
  double p;     // the dropout probability
  bool causal;  // top-left
  std::uint32_t seed = 1;

  [[nodiscard]] double keep() const { return 1.0 - p; }
  [[nodiscard]] double scale() const { return 1.0 / std::sqrt(static_cast<double>(d)); }
  [[nodiscard]] std::string text() const {
    return name + " (" + std::string(dnngraph::to_string(type)) + ", b " + std::to_string(b) +
           " h " + std::to_string(h) + " s_q " + std::to_string(s_q) + " s_kv " +
           std::to_string(s_kv) + " d " + std::to_string(d) + ", dropout " + std::to_string(p) +
           (causal ? ", causal" : "") + ")";
  }
  [[nodiscard]] Dims q_dims() const { return {b, h, s_q, d}; }
  [[nodiscard]] Dims kv_dims() const { return {b, h, s_kv, d}; }
  [[nodiscard]] std::size_t rows() const { return n(b * h * s_q); }
  [[nodiscard]] std::size_t scores() const { return rows() * n(s_kv); }
  // The io type's unit roundoff (half an ulp at 1).
  [[nodiscard]] double u() const { return type == DataType::BFloat16 ? 1.0 / 256 : 1.0 / 2048; }
};

// seed (uid 6) and offset (uid 7): Int64 [1, 1, 1, 1] graph inputs.
std::array<std::shared_ptr<TensorAttributes>, 2> key_tensors(Graph& g) {
  const auto key = [&](const char* name, std::int64_t uid) {
    return g.tensor(TensorAttributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({1, 1, 1, 1})
                        .set_data_type(DataType::Int64));
  };
  return {key("seed", uid_seed), key("offset", uid_offset)};
}

Graph make_graph_base(const DropoutCase& c, const char* suffix) {
  Graph g;
  g.set_name(c.name + suffix).set_io_data_type(c.type).set_compute_data_type(DataType::Float);
  return g;
}

// Training forward (O and Stats) with dropout; with dump, the mask is an output too (uid 8).
Graph make_forward(const DropoutCase& c, bool dump) {
  Graph g = make_graph_base(c, dump ? " forward, mask written" : " forward");
  auto q = g.tensor(TensorAttributes().set_name("Q").set_uid(uid_q).set_dim(c.q_dims()));
  auto k = g.tensor(TensorAttributes().set_name("K").set_uid(uid_k).set_dim(c.kv_dims()));
  auto v = g.tensor(TensorAttributes().set_name("V").set_uid(uid_v).set_dim(c.kv_dims()));
  const auto [seed, offset] = key_tensors(g);
  SdpaAttributes a;
  a.set_name("attn")
      .set_attn_scale(static_cast<float>(c.scale()))
      .set_generate_stats(true)
      .set_causal_mask(c.causal)
      .set_dropout(c.p, seed, offset)
      .set_dropout_mask_output(dump);
  auto [o, stats] = g.sdpa(q, k, v, a);
  o->set_name("O").set_uid(uid_o).set_output(true);
  stats->set_name("Stats").set_uid(uid_stats).set_output(true);
  if (dump) {
    g.dropout_mask(o)->set_name("mask").set_uid(uid_mask).set_output(true);
  }
  return g;
}

Graph make_backward(const DropoutCase& c) {
  Graph g = make_graph_base(c, " backward");
  const auto input = [&](const char* name, std::int64_t uid, const Dims& dims) {
    return g.tensor(TensorAttributes().set_name(name).set_uid(uid).set_dim(dims));
  };
  auto q = input("Q", uid_q, c.q_dims());
  auto k = input("K", uid_k, c.kv_dims());
  auto v = input("V", uid_v, c.kv_dims());
  auto o = input("O", uid_o, c.q_dims());
  auto d_o = input("dO", uid_d_o, c.q_dims());
  auto stats = g.tensor(TensorAttributes()
                            .set_name("Stats")
                            .set_uid(uid_stats)
                            .set_dim({c.b, c.h, c.s_q, 1})
                            .set_data_type(DataType::Float));
  const auto [seed, offset] = key_tensors(g);
  SdpaBackwardAttributes a;
  a.set_name("attn_bwd")
      .set_attn_scale(static_cast<float>(c.scale()))
      .set_causal_mask(c.causal)
      .set_dropout(c.p, seed, offset);
  auto [dq, dk, dv, d_sum] = g.sdpa_backward(q, k, v, o, d_o, stats, a);
  dq->set_name("dQ").set_uid(uid_dq).set_output(true);
  dk->set_name("dK").set_uid(uid_dk).set_output(true);
  dv->set_name("dV").set_uid(uid_dv).set_output(true);
  d_sum->set_name("D").set_uid(uid_d_sum).set_output(true);
  return g;
}

// softmax(scale Q K^T + causal mask) of row (bi, h, i) and its log-sum-exp, in double.
void probabilities(const DropoutCase& c, std::span<const float> q, std::span<const float> k,
                   std::size_t row, std::vector<double>& p, double& lse) {
  const std::size_t kv_base = (row / n(c.s_q)) * n(c.s_kv * c.d);  // the same head of K
  const auto i = static_cast<std::int64_t>(row % n(c.s_q));
  double max = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < c.s_kv; ++j) {
    double dot = 0;
    for (std::int64_t x = 0; x < c.d; ++x) {
      dot += static_cast<double>(q[row * n(c.d) + n(x)]) * k[kv_base + n(j * c.d + x)];
    }
    p[n(j)] = (!c.causal || j <= i) ? dot * c.scale() : -std::numeric_limits<double>::infinity();
    max = std::max(max, p[n(j)]);
  }
  double sum = 0;
  for (double& s : p) {
    s = std::exp(s - max);
    sum += s;
  }
  for (double& s : p) {
    s /= sum;
  }
  lse = max + std::log(sum);
}

// Every row's probabilities [rows, s_kv] and log-sum-exp (every row keeps key 0: all valid).
struct Softmax {
  std::vector<double> p, lse;
};
Softmax softmax(const DropoutCase& c, std::span<const float> q, std::span<const float> k) {
  Softmax s{std::vector<double>(c.scores()), std::vector<double>(c.rows())};
  std::vector<double> row_p(n(c.s_kv));
  for (std::size_t row = 0; row < c.rows(); ++row) {
    probabilities(c, q, k, row, row_p, s.lse[row]);
    std::ranges::copy(row_p, s.p.begin() + static_cast<std::ptrdiff_t>(row * n(c.s_kv)));
  }
  return s;
}

// O = (P * mask / keep) V.
std::vector<double> forward_o(const DropoutCase& c, const Softmax& s, std::span<const float> mask,
                              std::span<const float> v) {
  std::vector<double> o(c.rows() * n(c.d), 0.0);
  for (std::size_t row = 0; row < c.rows(); ++row) {
    const std::size_t kv_base = (row / n(c.s_q)) * n(c.s_kv * c.d);
    for (std::int64_t j = 0; j < c.s_kv; ++j) {
      const std::size_t at = row * n(c.s_kv) + n(j);
      const double m = std::isnan(mask[at]) ? 1.0 : mask[at];  // see backward_reference
      const double weight = s.p[at] * m / c.keep();
      for (std::int64_t x = 0; x < c.d; ++x) {
        o[row * n(c.d) + n(x)] += weight * v[kv_base + n(j * c.d + x)];
      }
    }
  }
  return o;
}

// Device buffers by uid: inputs uploaded once, outputs (and the workspace) filled with NaN bytes
// before every run, so an element the kernel never writes fails.
class Buffers {
 public:
  void input(std::int64_t uid, std::span<const std::byte> bytes, const std::string& what) {
    buffers_[uid] = require_cuda(DeviceBuffer::copy_of(bytes), what);
    pack_[uid] = buffers_[uid].get();
  }
  void key(std::int64_t uid, std::int64_t value) {
    const std::vector<std::int64_t> values{value};
    const auto bytes = std::as_bytes(std::span<const std::int64_t>(values));
    if (buffers_.contains(uid)) {
      require_cuda(buffers_[uid].upload(bytes), "key upload");
    } else {
      input(uid, bytes, "key");
    }
  }
  void output(std::int64_t uid, std::size_t bytes, const std::string& what) {
    buffers_[uid] = require_cuda(DeviceBuffer::allocate(bytes), what);
    pack_[uid] = buffers_[uid].get();
    outputs_.push_back(uid);
  }
  // Runs the built graph once at this key.
  void run(const dnngraph::test::BuiltCase& b, std::int64_t seed, std::int64_t offset,
           const std::string& what) {
    key(uid_seed, seed);
    key(uid_offset, offset);
    for (const std::int64_t uid : outputs_) {
      require_cuda(buffers_[uid].fill_bytes(0xFF), what + ": fill an output with NaN");
    }
    const auto size = b.graph.get_workspace_size();
    BOOST_REQUIRE_MESSAGE(size.has_value(), what << ": workspace: " << describe(size));
    if (workspace_.size_bytes() < static_cast<std::size_t>(*size)) {
      workspace_ = require_cuda(DeviceBuffer::allocate(n(*size)), what + ": workspace");
    }
    require_cuda(workspace_.fill_bytes(0xFF), what + ": fill the workspace with NaN");
    const auto ran = b.graph.execute(*b.handle, pack_, workspace_.get());
    BOOST_REQUIRE_MESSAGE(ran.has_value(), what << ": execute failed: " << describe(ran));
    require_cuda(dnngraph::test::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"),
                 what + " after execute");
  }
  // An output as floats (type: how it is stored).
  [[nodiscard]] std::vector<float> floats(std::int64_t uid, DataType type) const {
    std::vector<std::byte> bytes(buffers_.at(uid).size_bytes());
    require_cuda(buffers_.at(uid).download(std::span<std::byte>(bytes)), "download");
    return dnngraph::test::decode(type, bytes);
  }

 private:
  std::map<std::int64_t, DeviceBuffer> buffers_;
  std::unordered_map<std::int64_t, void*> pack_;
  std::vector<std::int64_t> outputs_;
  DeviceBuffer workspace_;
};

std::size_t differing(std::span<const float> a, std::span<const float> b) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    count += a[i] != b[i] ? 1 : 0;  // NaN never equals: an unwritten element counts
  }
  return count;
}

// The mask holds only 0 and 1 (ambiguous elements, which say nothing, are NaN and skipped), and
// the kept fraction of n Bernoulli(keep) draws lies within 6 standard deviations of keep
// (sqrt(keep p / n)) but for a chance below 2e-9.
void check_mask(const DropoutCase& c, const std::string& what, std::span<const float> mask) {
  std::size_t kept = 0, dropped = 0, other = 0;
  for (const float m : mask) {
    kept += m == 1.0F ? 1 : 0;
    dropped += m == 0.0F ? 1 : 0;
    other += (m != 1.0F && m != 0.0F && !std::isnan(m)) ? 1 : 0;
  }
  BOOST_CHECK_MESSAGE(other == 0, what << ": " << other << " mask elements are neither 0 nor 1");
  const std::size_t drawn = kept + dropped;
  // A causal mask leaves about a third of the elements readable from O (s_q 33, s_kv 47).
  BOOST_REQUIRE_MESSAGE(drawn > mask.size() / 4,
                        what << ": only " << drawn << " of " << mask.size() << " elements read");
  const double fraction = static_cast<double>(kept) / static_cast<double>(drawn);
  const double bound = 6.0 * std::sqrt(c.keep() * c.p / static_cast<double>(drawn));
  BOOST_TEST_MESSAGE(what << ": kept " << kept << " of " << drawn << " (" << fraction
                          << ", expected " << c.keep() << " +- " << bound << ")");
  BOOST_CHECK_MESSAGE(std::abs(fraction - c.keep()) <= bound, what << ": kept fraction " << fraction
                                                                   << " is not within " << bound
                                                                   << " of " << c.keep());
}

// Two masks of independent keys differ in a fraction 2 p (1 - p) of places; half of that is
// beyond 6 standard deviations at these sizes. The same mask (a key cuDNN ignored) differs in none.
void check_other_key(const DropoutCase& c, const std::string& what, std::span<const float> a,
                     std::span<const float> b) {
  std::size_t compared = 0, differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isnan(a[i]) && !std::isnan(b[i])) {
      compared += 1;
      differ += a[i] != b[i] ? 1 : 0;
    }
  }
  const double expected = 2.0 * c.p * c.keep() * static_cast<double>(compared);
  BOOST_TEST_MESSAGE(what << ": " << differ << " of " << compared << " differ (independent: ~"
                          << expected << ")");
  BOOST_CHECK_MESSAGE(static_cast<double>(differ) > 0.5 * expected,
                      what << ": only " << differ << " of " << compared << " mask elements differ");
}

struct ForwardOut {
  std::vector<float> o, stats, mask;
};

// Random Q, K (and V unless identity) of c, uniform in [-1, 1] and exact in the io type.
struct Inputs {
  HostTensor q, k, v;
};
Inputs make_inputs(const DropoutCase& c, bool identity_v) {
  std::mt19937 rng(c.seed);
  const auto count = [](const Dims& d) { return dnngraph::test::element_count(d); };
  Inputs in{dnngraph::test::random_tensor(c.type, count(c.q_dims()), rng),
            dnngraph::test::random_tensor(c.type, count(c.kv_dims()), rng),
            dnngraph::test::random_tensor(c.type, count(c.kv_dims()), rng)};
  if (identity_v) {
    // V[j][x] = 1 where x == j: O's row i is then P_i * mask_i / keep, column for column.
    std::vector<float> eye(count(c.kv_dims()), 0.0F);
    for (std::size_t head = 0; head < n(c.b * c.h); ++head) {
      for (std::int64_t j = 0; j < c.s_kv; ++j) {
        eye[head * n(c.s_kv * c.d) + n(j * c.d + j)] = 1.0F;
      }
    }
    in.v = dnngraph::test::encode(c.type, eye);
  }
  return in;
}

// Uploads the inputs and allocates the forward's outputs.
void prepare_forward(const DropoutCase& c, const Inputs& in, bool dump, Buffers& buffers) {
  buffers.input(uid_q, in.q.bytes, "Q");
  buffers.input(uid_k, in.k.bytes, "K");
  buffers.input(uid_v, in.v.bytes, "V");
  buffers.output(uid_o, c.rows() * n(c.d) * n(dnngraph::size_of(c.type)), "O");
  buffers.output(uid_stats, c.rows() * sizeof(float), "Stats");
  if (dump) {
    buffers.output(uid_mask, c.scores() * sizeof(float), "mask");
  }
}

ForwardOut forward_at(const DropoutCase& c, const dnngraph::test::BuiltCase& b, Buffers& buffers,
                      bool dump, std::int64_t offset) {
  buffers.run(b, key_seed, offset, c.text() + " offset " + std::to_string(offset));
  ForwardOut out{buffers.floats(uid_o, c.type), buffers.floats(uid_stats, DataType::Float), {}};
  if (dump) {
    out.mask = buffers.floats(uid_mask, DataType::Float);
  }
  return out;
}

// Tolerances of O. Inputs are exact in the io type and the matmuls accumulate in Float, so what
// counts is two roundings to the io type (u: 2^-8 BFloat16, 2^-11 Half): P * mask / keep before
// P V (each term p_j m_j v_j / keep off by at most u |p_j v_j| / keep, and sum p_j = 1 with
// |v_j| <= 1: at most u / keep in all) and O itself (u |O|). The tolerance doubles both:
// abs 2u / keep, rel 2u. A wrong mask element moves O by p_j |v_j| / keep, about 1 / (keep s_kv)
// here, which a Half case sees; a mask the kernel did not apply moves O far more. Stats (Float
// log-sum-exp, no dropout in it) as in sdpa_test: 1e-3 abs, 1e-4 rel leaves > 100x.
Tolerance o_tolerance(const DropoutCase& c) {
  return {.abs = 2 * c.u() / c.keep(), .rel = 2 * c.u()};
}
constexpr Tolerance stats_tolerance{.abs = 1e-3, .rel = 1e-4};

void check_o(const DropoutCase& c, const std::string& what, const Inputs& in, const Softmax& s,
             const ForwardOut& out) {
  const std::vector<double> want = forward_o(c, s, out.mask, in.v.values);
  const auto o = dnngraph::test::compare(out.o, want, o_tolerance(c));
  BOOST_TEST_MESSAGE(what << ": O " << o.describe());
  BOOST_CHECK_MESSAGE(o.passed(), what << ": O " << o.describe());
}

// The dumped mask: Bernoulli, O and Stats against the reference of it, the same key the same
// run, another offset another mask (and O still its reference).
void check_forward_dumped(const DropoutCase& c) {
  const auto taken = dnngraph::test::take_built_case(c.text() + " mask written",
                                                     [c] { return make_forward(c, true); });
  const Inputs in = make_inputs(c, false);
  const Softmax s = softmax(c, in.q.values, in.k.values);
  Buffers buffers;
  prepare_forward(c, in, true, buffers);
  const ForwardOut first = forward_at(c, *taken.built, buffers, true, key_offset);
  // Every element of the written mask was written (it started as NaN bytes).
  BOOST_CHECK_MESSAGE(std::ranges::none_of(first.mask, [](float m) { return std::isnan(m); }),
                      c.text() << ": the mask output has unwritten (NaN) elements");
  check_mask(c, c.text() + ": mask", first.mask);
  check_o(c, c.text(), in, s, first);
  const auto stats = dnngraph::test::compare(first.stats, s.lse, stats_tolerance);
  BOOST_TEST_MESSAGE(c.text() << ": Stats " << stats.describe());
  BOOST_CHECK_MESSAGE(stats.passed(), c.text() << ": Stats " << stats.describe());

  const ForwardOut again = forward_at(c, *taken.built, buffers, true, key_offset);
  BOOST_CHECK_MESSAGE(differing(first.mask, again.mask) == 0 && differing(first.o, again.o) == 0,
                      c.text() << ": the same seed and offset gave another mask ("
                               << differing(first.mask, again.mask) << " elements) or O ("
                               << differing(first.o, again.o) << ")");
  const ForwardOut other = forward_at(c, *taken.built, buffers, true, another_offset);
  check_other_key(c,
                  c.text() + ": offset " + std::to_string(key_offset) + " against " +
                      std::to_string(another_offset),
                  first.mask, other.mask);
  check_mask(c, c.text() + ": mask at another offset", other.mask);
  check_o(c, c.text() + " at another offset", in, s, other);
}

// The mask read back from O of a forward with V the identity: element (i, j) of O is
// P_ij * m_ij / keep, one io-type rounding (u relative) from P_ij / keep when kept and exactly 0
// when dropped. Where P_ij / keep is below 1e-4 (a causal zero, or a probability too small for
// the rounding to tell) the element is ambiguous: NaN in the mask. Columns past s_kv are 0.
// Fails the case on an element that is neither.
std::vector<float> mask_from_identity(const DropoutCase& c, const Softmax& s,
                                      std::span<const float> o, const std::string& what) {
  std::vector<float> mask(c.scores(), std::numeric_limits<float>::quiet_NaN());
  std::size_t wrong = 0;
  double worst = 0;
  for (std::size_t row = 0; row < c.rows(); ++row) {
    for (std::int64_t x = 0; x < c.d; ++x) {
      const float got = o[row * n(c.d) + n(x)];
      if (x >= c.s_kv) {
        wrong += got == 0.0F ? 0 : 1;
        continue;
      }
      const std::size_t at = row * n(c.s_kv) + n(x);
      const double kept = s.p[at] / c.keep();
      if (kept < 1e-4) {
        continue;
      }
      const double error = std::abs(static_cast<double>(got) - kept);
      if (got == 0.0F) {
        mask[at] = 0.0F;
      } else if (error <= 2 * c.u() * kept) {
        mask[at] = 1.0F;
        worst = std::max(worst, error / kept);
      } else {
        wrong += 1;
      }
    }
  }
  BOOST_TEST_MESSAGE(what << ": max relative error of kept elements " << worst);
  BOOST_CHECK_MESSAGE(wrong == 0,
                      what << ": " << wrong << " elements of O are neither 0 nor P / keep");
  return mask;
}

void check_forward_identity(const DropoutCase& c) {
  const auto taken =
      dnngraph::test::take_built_case(c.text(), [c] { return make_forward(c, false); });
  const Inputs in = make_inputs(c, true);
  const Softmax s = softmax(c, in.q.values, in.k.values);
  Buffers buffers;
  prepare_forward(c, in, false, buffers);
  const ForwardOut first = forward_at(c, *taken.built, buffers, false, key_offset);
  const std::vector<float> mask = mask_from_identity(c, s, first.o, c.text());
  check_mask(c, c.text() + ": mask read from O", mask);
  const auto stats = dnngraph::test::compare(first.stats, s.lse, stats_tolerance);
  BOOST_CHECK_MESSAGE(stats.passed(), c.text() << ": Stats " << stats.describe());
  const ForwardOut again = forward_at(c, *taken.built, buffers, false, key_offset);
  BOOST_CHECK_MESSAGE(differing(first.o, again.o) == 0,
                      c.text() << ": the same seed and offset gave another O ("
                               << differing(first.o, again.o) << " elements differ)");
  const ForwardOut other = forward_at(c, *taken.built, buffers, false, another_offset);
  const std::vector<float> other_mask =
      mask_from_identity(c, s, other.o, c.text() + " at another offset");
  check_other_key(c,
                  c.text() + ": offset " + std::to_string(key_offset) + " against " +
                      std::to_string(another_offset),
                  mask, other_mask);
}

// The backward's reference, given the mask (NaN: ambiguous, where P is too small to matter; read
// as kept).
struct Gradients {
  std::vector<double> dq, dk, dv, d_sum;
};
Gradients backward_reference(const DropoutCase& c, const Inputs& in, const Softmax& s,
                             std::span<const float> mask, std::span<const float> o,
                             std::span<const float> d_o) {
  Gradients g{std::vector<double>(c.rows() * n(c.d)), std::vector<double>(in.k.values.size()),
              std::vector<double>(in.v.values.size()), std::vector<double>(c.rows())};
  const auto& q = in.q.values;
  const auto& k = in.k.values;
  const auto& v = in.v.values;
  for (std::size_t row = 0; row < c.rows(); ++row) {
    const std::size_t qi = row * n(c.d);
    const std::size_t kv_base = (row / n(c.s_q)) * n(c.s_kv * c.d);
    double rowsum = 0;  // rowsum(dO O) = rowsum(P dP) with dP = dO V^T M / keep
    for (std::int64_t x = 0; x < c.d; ++x) {
      rowsum += static_cast<double>(d_o[qi + n(x)]) * o[qi + n(x)];
    }
    g.d_sum[row] = c.keep() * rowsum;  // the frontend's D: times Dropout_scale_inv
    for (std::int64_t j = 0; j < c.s_kv; ++j) {
      const std::size_t at = row * n(c.s_kv) + n(j);
      const double p = s.p[at];
      if (p == 0) {
        continue;
      }
      const double m = std::isnan(mask[at]) ? 1.0 : mask[at];
      const std::size_t kj = kv_base + n(j * c.d);
      double dp = 0;
      for (std::int64_t x = 0; x < c.d; ++x) {
        dp += static_cast<double>(d_o[qi + n(x)]) * v[kj + n(x)];
      }
      const double ds = p * (dp * m / c.keep() - rowsum) * c.scale();
      for (std::int64_t x = 0; x < c.d; ++x) {
        g.dq[qi + n(x)] += ds * k[kj + n(x)];
        g.dk[kj + n(x)] += ds * q[qi + n(x)];
        g.dv[kj + n(x)] += p * m / c.keep() * d_o[qi + n(x)];
      }
    }
  }
  return g;
}

// Tolerances of the gradients: sdpa_backward_test's (abs 8 u max|reference|, rel 8 u: the
// io-type roundings of P^T, dS^T and the gradients, each u relative, in sums whose magnitudes the
// gradient's largest bounds up to a small factor) divided by keep: the kept terms are 1 / keep
// larger while the gradient (their sum with the dropped ones left out) is not, so the sum of
// magnitudes can exceed max|gradient| by that much more. D: Float sums of io-type products, as
// there.
Tolerance gradient_tolerance(const DropoutCase& c, const std::vector<double>& reference) {
  double max = 0;
  for (const double x : reference) {
    max = std::max(max, std::fabs(x));
  }
  return {.abs = 8 * c.u() / c.keep() * max, .rel = 8 * c.u() / c.keep()};
}

std::vector<float> rounded(DataType type, const std::vector<double>& values) {
  std::vector<float> out;
  out.reserve(values.size());
  for (const double x : values) {
    out.push_back(dnngraph::test::round_to(type, x));
  }
  return out;
}

void check_backward(const DropoutCase& c) {
  // The mask: from O of the forward with V the identity, at the key the backward runs with.
  const auto source =
      dnngraph::test::take_built_case(c.text(), [c] { return make_forward(c, false); });
  const Inputs eye = make_inputs(c, true);
  const Softmax s = softmax(c, eye.q.values, eye.k.values);
  std::vector<float> mask;
  {
    Buffers buffers;
    prepare_forward(c, eye, false, buffers);
    const ForwardOut out = forward_at(c, *source.built, buffers, false, key_offset);
    mask = mask_from_identity(c, s, out.o, c.text() + ": forward for the mask");
  }
  const auto taken =
      dnngraph::test::take_built_case(c.text() + " backward", [c] { return make_backward(c); });
  const Inputs in = make_inputs(c, false);  // the same Q and K (same stream), a random V
  std::mt19937 rng(c.seed + 1000);
  const HostTensor d_o =
      dnngraph::test::random_tensor(c.type, dnngraph::test::element_count(c.q_dims()), rng);
  // O as a forward pass hands it over: the reference's, rounded to the io type.
  const HostTensor o =
      dnngraph::test::encode(c.type, rounded(c.type, forward_o(c, s, mask, in.v.values)));
  const std::vector<float> stats(s.lse.begin(), s.lse.end());
  const Gradients want = backward_reference(c, in, s, mask, o.values, d_o.values);

  Buffers buffers;
  buffers.input(uid_q, in.q.bytes, "Q");
  buffers.input(uid_k, in.k.bytes, "K");
  buffers.input(uid_v, in.v.bytes, "V");
  buffers.input(uid_o, o.bytes, "O");
  buffers.input(uid_d_o, d_o.bytes, "dO");
  buffers.input(uid_stats, std::as_bytes(std::span<const float>(stats)), "Stats");
  const std::size_t io = n(dnngraph::size_of(c.type));
  buffers.output(uid_dq, in.q.values.size() * io, "dQ");
  buffers.output(uid_dk, in.k.values.size() * io, "dK");
  buffers.output(uid_dv, in.v.values.size() * io, "dV");
  buffers.output(uid_d_sum, c.rows() * sizeof(float), "D");
  buffers.run(*taken.built, key_seed, key_offset, c.text() + " backward");
  const auto check = [&](const char* what, std::int64_t uid, DataType type,
                         const std::vector<double>& reference, Tolerance tolerance) {
    const auto e = dnngraph::test::compare(buffers.floats(uid, type), reference, tolerance);
    BOOST_TEST_MESSAGE(c.text() << ": " << what << " " << e.describe());
    BOOST_CHECK_MESSAGE(e.passed(), c.text() << ": " << what << " " << e.describe());
  };
  check("dQ", uid_dq, c.type, want.dq, gradient_tolerance(c, want.dq));
  check("dK", uid_dk, c.type, want.dk, gradient_tolerance(c, want.dk));
  check("dV", uid_dv, c.type, want.dv, gradient_tolerance(c, want.dv));
  check("D", uid_d_sum, DataType::Float, want.d_sum, Tolerance{.abs = 1e-4, .rel = 1e-5});
}

boost::unit_test::precondition builds_dumped(const DropoutCase& c) {
  return dnngraph::test::builds_or_skips(c.text() + " mask written",
                                         [c] { return make_forward(c, true); });
}
boost::unit_test::precondition builds_forward(const DropoutCase& c) {
  return dnngraph::test::builds_or_skips(c.text(), [c] { return make_forward(c, false); });
}
boost::unit_test::precondition builds_backward(const DropoutCase& c) {
  return dnngraph::test::builds_or_skips(c.text() + " backward", [c] { return make_backward(c); });
}

namespace cases {
const auto bf16 = DataType::BFloat16;
const auto half = DataType::Half;
const DropoutCase bf16_plain{"dropout", bf16, 2, 2, 33, 47, 64, 0.2, false, 3101};
const DropoutCase half_causal{"dropout, causal top-left", half, 2, 2, 33, 47, 64, 0.3, true, 3102};
const DropoutCase half_plain{"dropout", half, 2, 2, 33, 47, 64, 0.1, false, 3103};
const DropoutCase bf16_causal{"dropout, causal top-left", bf16, 2, 2, 33, 47, 64, 0.2, true, 3104};
}  // namespace cases

}  // namespace

BOOST_AUTO_TEST_SUITE(sdpa_dropout_forward)
BOOST_AUTO_TEST_CASE(bfloat16_written_mask_matches_o_and_is_keyed,
                     *builds_dumped(cases::bf16_plain)) {
  check_forward_dumped(cases::bf16_plain);
}
BOOST_AUTO_TEST_CASE(half_causal_written_mask_matches_o_and_is_keyed,
                     *builds_dumped(cases::half_causal)) {
  check_forward_dumped(cases::half_causal);
}
BOOST_AUTO_TEST_CASE(bfloat16_without_mask_output_drops_probabilities_of_o,
                     *builds_forward(cases::bf16_plain)) {
  check_forward_identity(cases::bf16_plain);
}
BOOST_AUTO_TEST_CASE(half_causal_without_mask_output_drops_probabilities_of_o,
                     *builds_forward(cases::half_causal)) {
  check_forward_identity(cases::half_causal);
}
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sdpa_dropout_backward)
BOOST_AUTO_TEST_CASE(half_gradients_match_reference_with_the_forward_mask,
                     *builds_forward(cases::half_plain) * builds_backward(cases::half_plain)) {
  check_backward(cases::half_plain);
}
BOOST_AUTO_TEST_CASE(bfloat16_causal_gradients_match_reference_with_the_forward_mask,
                     *builds_forward(cases::bf16_causal) * builds_backward(cases::bf16_causal)) {
  check_backward(cases::bf16_causal);
}
BOOST_AUTO_TEST_SUITE_END()
