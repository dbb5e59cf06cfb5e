// FP8 scaled dot-product attention backward: checks, shape inference and the composite lowering.
// The operation order is cudnn-frontend's SDPA FP8 backward node's (node/sdpa_fp8_bwd.h,
// expand_node, per-tensor scaling), each gradient as its FP8 matmul node (node/matmul_fp8.h):
// dO * O, its row sums, descale_dO, descale_O (D); Q K^T, attention scale, descale_q, descale_k,
// padding mask, causal mask, minus Stats, exp (P); scale_s into FP8, P^T, dV's FP8 matmul;
// dO V^T, descale_dO, descale_v, minus D, times P, attention scale (dS), amax of dS, scale_dP
// into FP8; K from K^T, dQ's FP8 matmul; dS^T, dK's FP8 matmul.
#include "detail/nodes/sdpa_fp8_backward.hpp"

#include "api/layout.hpp"
#include "backend/features.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <array>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dnngraph::detail {

namespace {

// What cuDNN's FP8 attention backward takes on Hopper: Q, K, V in Fp8E4M3 (what sdpa_fp8 reads)
// and head dims 128 exactly (cudnn-frontend's sdpa_fp8_bwd.h pre-validation on compute
// capability 9, and TransformerEngine's backend choice for FP8 training on Hopper).
constexpr AttentionInputRule fp8_backward_inputs{
    [](DataType t) { return t == DataType::Fp8E4M3; },
    "the FP8 attention backward takes Fp8E4M3 Q, K and V (what sdpa_fp8 reads)", 128, 128,
    "cuDNN's FP8 attention backward engines on Hopper"};

const std::vector<std::int64_t> one_value{1, 1, 1, 1};

bool is_fp8(std::optional<DataType> t) { return t == DataType::Fp8E4M3 || t == DataType::Fp8E5M2; }

}  // namespace

void Fp8MatmulPorts::append_to(std::vector<TensorPtr>& list) const {
  append_present(list, {product, summed, descaled_a, descaled});
}

void SdpaFp8BackwardPorts::make_internals(
    const AttentionSettings& settings, const std::function<TensorPtr(const char*, float)>& scalar,
    const std::function<TensorPtr(const char*)>& internal) {
  if (settings.scale) {
    scale = scalar("attn_scale", *settings.scale);
  }
  // Only with a mask: cuDNN 9.19 refuses a variant pack with a uid no operation reads (as sdpa).
  if (settings.padding || settings.causal) {
    neg_inf = scalar("neg_inf", -std::numeric_limits<float>::infinity());
  }
  // Grouped-query attention: dK~ and dV~ per query head, summed over each group. The head counts
  // are read here only to choose the tensors; infer() checks them.
  const auto heads = [](const TensorPtr& t) { return t->dim().size() == 4 ? t->dim()[1] : 0; };
  const auto matmul = [&](const char* product, const char* summed, bool grouped,
                          const char* descaled_a, const char* descaled) {
    return Fp8MatmulPorts{internal(product), grouped ? internal(summed) : nullptr,
                          internal(descaled_a), internal(descaled)};
  };
  // The tensors every graph of the node has, in lowering order around those only some have.
  using Member = TensorPtr SdpaFp8BackwardPorts::*;
  const auto make = [&](std::initializer_list<std::pair<Member, const char*>> members) {
    for (const auto& [member, port] : members) {
      this->*member = internal(port);
    }
  };
  make({{&SdpaFp8BackwardPorts::do_o, "dO_O"},
        {&SdpaFp8BackwardPorts::do_o_sum, "dO_O_sum"},
        {&SdpaFp8BackwardPorts::d_descaled, "dO_O_sum_descaled"},
        {&SdpaFp8BackwardPorts::d_sum, "D"},
        {&SdpaFp8BackwardPorts::scores, "scores"}});
  scaled = scale ? internal("scaled") : nullptr;
  make({{&SdpaFp8BackwardPorts::descaled_q, "descaled_q"},
        {&SdpaFp8BackwardPorts::descaled, "descaled"}});
  masks = AttentionMaskPorts::make(settings, internal);
  make({{&SdpaFp8BackwardPorts::centered, "centered"},
        {&SdpaFp8BackwardPorts::probs, "probs"},
        {&SdpaFp8BackwardPorts::probs_fp8, "probs_fp8"},
        {&SdpaFp8BackwardPorts::probs_t, "probs_t"}});
  dv_matmul = matmul("dV_product", "dV_summed", heads(v) != heads(q), "dV_descaled_s", "dV_float");
  make({{&SdpaFp8BackwardPorts::dp, "dP"},
        {&SdpaFp8BackwardPorts::dp_descaled_do, "dP_descaled_dO"},
        {&SdpaFp8BackwardPorts::dp_descaled, "dP_descaled"},
        {&SdpaFp8BackwardPorts::dp_centered, "dP_centered"},
        {&SdpaFp8BackwardPorts::ds_unscaled, "dS_unscaled"}});
  ds = scale ? internal("dS") : nullptr;
  make({{&SdpaFp8BackwardPorts::ds_fp8, "dS_fp8"}, {&SdpaFp8BackwardPorts::k_view, "K_view"}});
  dq_matmul = matmul("dQ_product", "dQ_summed", false, "dQ_descaled_dP", "dQ_float");
  ds_t = internal("dS_t");
  dk_matmul = matmul("dK_product", "dK_summed", heads(k) != heads(q), "dK_descaled_dP", "dK_float");
}

std::vector<TensorPtr> SdpaFp8BackwardPorts::inputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {q,          k,          v,         o,         d_o,        stats,
                        descale_q,  descale_k,  descale_v, descale_o, descale_do, descale_s,
                        descale_dp, scale_s,    scale_dq,  scale_dk,  scale_dv,   scale_dp,
                        seq_len_q,  seq_len_kv, scale,     neg_inf});
  return list;
}

std::vector<TensorPtr> SdpaFp8BackwardPorts::outputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {dq, dk, dv, amax_dq, amax_dk, amax_dv, amax_dp});
  return list;
}

std::vector<TensorPtr> SdpaFp8BackwardPorts::internals() const {
  std::vector<TensorPtr> list;
  append_present(list, {do_o, do_o_sum, d_descaled, d_sum, scores, scaled, descaled_q, descaled});
  masks.append_to(list);
  append_present(list, {centered, probs, probs_fp8, probs_t});
  dv_matmul.append_to(list);
  append_present(list,
                 {dp, dp_descaled_do, dp_descaled, dp_centered, ds_unscaled, ds, ds_fp8, k_view});
  dq_matmul.append_to(list);
  append_present(list, {ds_t});
  dk_matmul.append_to(list);
  return list;
}

Result<void> SdpaFp8BackwardNode::infer(const GraphContext& context) {
  if (!backend::available(backend::Feature::Fp8AttentionBackward)) {
    return std::unexpected(version_too_old(backend::Feature::Fp8AttentionBackward, describe()));
  }
  const SdpaFp8BackwardPorts& p = ports_;
  const std::array<NamedTensor, 9> everything{{{"Q", p.q.get()},
                                               {"K", p.k.get()},
                                               {"V", p.v.get()},
                                               {"O", p.o.get()},
                                               {"dO", p.d_o.get()},
                                               {"Stats", p.stats.get()},
                                               {"dQ", p.dq.get()},
                                               {"dK", p.dk.get()},
                                               {"dV", p.dv.get()}}};
  auto ok =
      in_order([&] { return check_known_compute(attributes_.compute_data_type()); },
               [&] {
                 return check_fp8_form(describe(), attributes_.causal(), everything,
                                       "cudnn-frontend refuses the FP8 backward of THD on Hopper");
               },
               [&] {
                 return check_attention(describe(), attributes_.compute_data_type(),
                                        AttentionSettings::of_scores(attributes_), *p.q, *p.k, *p.v,
                                        fp8_backward_inputs);
               },
               [&] { return check_forward_tensors(); },
               [&] { return check_fp8_factors_of(describe(), ports_); },
               [&] {
                 // dK~ and dV~ per query head, in Float.
                 return check_per_head_gradients(
                     describe(), *p.q,
                     {{p.dk_matmul.summed.get(), p.k.get()}, {p.dv_matmul.summed.get(), p.v.get()}},
                     size_of(DataType::Float));
               },
               [&] { return settle_scalar_inputs(4); }, [&] { return settle_gradients(context); },
               [&] { return settle_amax(context); });
  if (ok) {
    settle_internals();
  }
  return ok;
}

Result<void> SdpaFp8BackwardNode::check_forward_tensors() const {
  if (auto ok = check_forward_shapes(describe(), *ports_.q, *ports_.v, *ports_.o, *ports_.d_o,
                                     *ports_.stats);
      !ok) {
    return ok;
  }
  for (const auto& [port, t] :
       {std::pair{"O", ports_.o.get()}, std::pair{"dO", ports_.d_o.get()}}) {
    if (auto ok = check_head_dim_innermost(port, *t); !ok) {
      return ok;
    }
  }
  const TensorAttributes& o = *ports_.o;
  if (o.data_type() != DataType::Fp8E4M3) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": O " + o.describe() + " has data type " + type_name(o) +
                          "; O is the forward's output, Fp8E4M3 (what sdpa_fp8 writes on Hopper)");
  }
  const TensorAttributes& d_o = *ports_.d_o;
  if (!is_fp8(d_o.data_type())) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": dO " + d_o.describe() + " has data type " + type_name(d_o) +
                          "; the FP8 attention backward takes dO in Fp8E4M3 or Fp8E5M2");
  }
  return {};
}

Result<void> SdpaFp8BackwardNode::check_head_dim_innermost(const char* port,
                                                           const TensorAttributes& t) const {
  if (t.stride()[3] != 1) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": " + port + " " + t.describe() + " has strides " +
                          to_string(t.stride()) +
                          "; the head dim (dim 3) must be innermost (stride 1)");
  }
  return {};
}

Result<void> SdpaFp8BackwardNode::settle_gradients(const GraphContext& context) const {
  const SettleOutput settle = [&](TensorAttributes& t, const std::vector<std::int64_t>& dims) {
    return settle_output(t, dims, context);
  };
  return detail::settle_gradients(
      {ports_.dq.get(), ports_.dk.get(), ports_.dv.get(), ports_.q.get(), ports_.k.get(),
       ports_.v.get()},
      ports_.d_o->data_type().value_or(DataType::Fp8E4M3),  // checked: set
      settle, [&](const char* port, const TensorAttributes& grad) -> Result<void> {
        if (!is_fp8(grad.data_type())) {
          return make_error(ErrorCode::UnsupportedDataType,
                            describe() + ": " + port + " " + grad.describe() + " has data type " +
                                type_name(grad) +
                                "; on Hopper cuDNN's FP8 attention backward writes Fp8E4M3 or "
                                "Fp8E5M2 (a Half or BFloat16 gradient needs Blackwell and cuDNN "
                                "9.13, as cudnn-frontend's pre-validation says)");
        }
        return check_head_dim_innermost(port, grad);
      });
}

Result<void> SdpaFp8BackwardNode::settle_amax(const GraphContext& context) const {
  const SettleOutput settle = [&](TensorAttributes& t, const std::vector<std::int64_t>& dims) {
    return settle_output(t, dims, context);
  };
  const std::array<std::pair<const char*, TensorAttributes*>, 4> amax{
      {{"Amax_dQ", ports_.amax_dq.get()},
       {"Amax_dK", ports_.amax_dk.get()},
       {"Amax_dV", ports_.amax_dv.get()},
       {"Amax_dP", ports_.amax_dp.get()}}};
  for (const auto& [role, t] : amax) {
    if (auto ok = settle_float_output(describe(), role, *t, one_value, settle); !ok) {
      return ok;
    }
  }
  return {};
}

void SdpaFp8BackwardNode::settle_internals() const {
  const SdpaFp8BackwardPorts& p = ports_;
  const auto& q = p.q->dim();
  const std::int64_t b = q[0], h_q = q[1], s_q = q[2], d = q[3];
  const std::int64_t s_kv = p.k->dim()[2];
  const std::int64_t d_v = p.v->dim()[3];
  const DataType q_type = p.q->data_type().value_or(DataType::Fp8E4M3);      // checked: set
  const DataType d_o_type = p.d_o->data_type().value_or(DataType::Fp8E4M3);  // checked: set
  const std::vector<std::int64_t> score_dims{b, h_q, s_q, s_kv};
  const auto settle = [](const TensorPtr& t, const std::vector<std::int64_t>& dims, DataType type) {
    if (t) {
      t->set_dim(dims).set_stride(packed_strides(dims)).set_data_type(type);
    }
  };
  settle(p.do_o, {b, h_q, s_q, d_v}, DataType::Float);
  for (const TensorPtr& t : {p.do_o_sum, p.d_descaled, p.d_sum}) {
    settle(t, {b, h_q, s_q, 1}, DataType::Float);
  }
  for (const TensorPtr& t :
       {p.scores, p.scaled, p.descaled_q, p.descaled, p.centered, p.probs, p.dp, p.dp_descaled_do,
        p.dp_descaled, p.dp_centered, p.ds_unscaled, p.ds}) {
    settle(t, score_dims, DataType::Float);
  }
  p.masks.settle(score_dims);
  // cudnn-frontend's pattern: scale_s P in Q's FP8 type, scale_dP dS in dO's; their transposes
  // (views of the scores' memory order with the last two dims swapped) the A operands of the dV
  // and dK matmuls.
  settle(p.probs_fp8, score_dims, q_type);
  settle(p.ds_fp8, score_dims, d_o_type);
  const std::vector<std::int64_t> transposed_strides{h_q * s_q * s_kv, s_q * s_kv, 1, s_kv};
  p.probs_t->set_dim({b, h_q, s_kv, s_q}).set_stride(transposed_strides).set_data_type(q_type);
  p.ds_t->set_dim({b, h_q, s_kv, s_q}).set_stride(transposed_strides).set_data_type(d_o_type);
  // K from K^T by a reshape: K's dims and strides; Float, the intermediate type cudnn-frontend
  // gives this virtual tensor (as sdpa_backward's).
  p.k_view->set_dim(p.k->dim()).set_stride(p.k->stride()).set_data_type(DataType::Float);
  // Each FP8 matmul in Float: the product per query head, the rest of the gradient's dims.
  const auto settle_matmul = [&](const Fp8MatmulPorts& m, const std::vector<std::int64_t>& product,
                                 const std::vector<std::int64_t>& grad) {
    settle(m.product, product, DataType::Float);
    for (const TensorPtr& t : {m.summed, m.descaled_a, m.descaled}) {
      settle(t, grad, DataType::Float);
    }
  };
  settle_matmul(p.dv_matmul, {b, h_q, s_kv, d_v}, p.v->dim());
  settle_matmul(p.dq_matmul, q, q);
  settle_matmul(p.dk_matmul, {b, h_q, s_kv, d}, p.k->dim());
}

namespace {

// One gradient's FP8 matmul, cudnn-frontend's matmul_fp8: C = A B (per-batch M and K
// overrides), summed over each group of query heads where m.summed is given, times A's then B's
// descale, times the gradient's scale into `out`; the amax of the descaled product (before the
// scale) into `amax`.
struct Fp8Matmul {
  const char* step;
  std::array<const backend::Tensor*, 2> ab;
  std::array<const backend::Tensor*, 2> descales;
  const backend::Tensor *scale, *out, *amax;
  std::array<const backend::Tensor*, 2> m_k_overrides;
};

void fp8_matmul(AttentionSteps& ops, const Fp8MatmulPorts& m, const Fp8Matmul& f) {
  const backend::Tensor* product = ops.tensor(m.product);
  const backend::Tensor* summed = ops.tensor(m.summed);
  const backend::Tensor* descaled_a = ops.tensor(m.descaled_a);
  const backend::Tensor* descaled = ops.tensor(m.descaled);
  ops.matmul(f.step, {f.ab[0], f.ab[1], product},
             {f.m_k_overrides[0], nullptr, f.m_k_overrides[1]});
  if (m.summed) {
    ops.reduction("sum over each group of query heads", CUDNN_REDUCE_TENSOR_ADD, product, summed);
    product = summed;
  }
  ops.pointwise("descale A", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {product, f.descales[0], nullptr}, descaled_a);
  ops.pointwise("descale B", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {descaled_a, f.descales[1], nullptr}, descaled);
  ops.pointwise("scale C", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {descaled, f.scale, nullptr},
                f.out);
  ops.reduction("amax C", CUDNN_REDUCE_TENSOR_AMAX, descaled, f.amax);
}

// The inputs several steps read, looked up first and in this order (the first failed lookup is
// the error lowering returns).
struct Fp8BackwardOperands {
  const backend::Tensor *q, *d_o, *seq_q, *seq_kv, *descale_do, *descale_dp;
};

Fp8BackwardOperands look_up_operands(AttentionSteps& ops, const SdpaFp8BackwardPorts& p) {
  return {.q = ops.tensor(p.q),
          .d_o = ops.tensor(p.d_o),
          .seq_q = ops.tensor(p.seq_len_q),
          .seq_kv = ops.tensor(p.seq_len_kv),
          .descale_do = ops.tensor(p.descale_do),
          .descale_dp = ops.tensor(p.descale_dp)};
}

// D = descale_dO descale_O rowsum(dO * O), a virtual tensor. Returns D.
const backend::Tensor* lower_d(AttentionSteps& ops, const SdpaFp8BackwardPorts& p,
                               const Fp8BackwardOperands& in) {
  const backend::Tensor* do_o = ops.tensor(p.do_o);
  const backend::Tensor* do_o_sum = ops.tensor(p.do_o_sum);
  const backend::Tensor* d_descaled = ops.tensor(p.d_descaled);
  const backend::Tensor* d_sum = ops.tensor(p.d_sum);
  ops.pointwise("dO * O", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {in.d_o, ops.tensor(p.o), nullptr},
                do_o);
  ops.reduction("rowsum(dO * O)", CUDNN_REDUCE_TENSOR_ADD, do_o, do_o_sum);
  ops.pointwise("descale dO", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {do_o_sum, in.descale_do, nullptr}, d_descaled);
  ops.pointwise("D", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {d_descaled, ops.tensor(p.descale_o), nullptr}, d_sum);
  return d_sum;
}

// P = exp(masks(attn_scale descale_q descale_k Q K^T) - Stats), the masks before the subtraction
// as cudnn-frontend's FP8 backward orders them. Returns P.
const backend::Tensor* recompute_probabilities(AttentionSteps& ops, const SdpaFp8BackwardPorts& p,
                                               const SdpaFp8BackwardAttributes& attributes,
                                               const Fp8BackwardOperands& in) {
  const std::array<AttentionSteps::Factor, 2> descales{{
      {"descale Q", ops.tensor(p.descale_q), p.descaled_q},
      {"descale K", ops.tensor(p.descale_k), p.descaled},
  }};
  AttentionSteps::Scores scores = ops.scores_of(p, *p.k, in.q, attributes.padding_mask());
  scores.factors = descales;
  const backend::Tensor* current = ops.scores(scores);
  if (attributes.causal()) {  // top-left: check_fp8_form refused the other
    current = ops.causal_mask(p.masks, DiagonalAlignment::TopLeft, current, in.seq_q, in.seq_kv,
                              ops.tensor(p.neg_inf));
  }
  const backend::Tensor* centered = ops.tensor(p.centered);
  const backend::Tensor* probs = ops.tensor(p.probs);
  ops.pointwise("minus Stats", CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT,
                {current, ops.tensor(p.stats), nullptr}, centered);
  ops.pointwise("P", CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, {centered, nullptr, nullptr}, probs);
  return probs;
}

// dV = scale_dV descale_s descale_dO (FP8(scale_s P)^T dO), summed over each group.
void lower_dv(AttentionSteps& ops, const SdpaFp8BackwardPorts& p, const Fp8BackwardOperands& in,
              const backend::Tensor* probs) {
  const backend::Tensor* probs_fp8 = ops.tensor(p.probs_fp8);
  const backend::Tensor* probs_t = ops.tensor(p.probs_t);
  ops.pointwise("scale S", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {probs, ops.tensor(p.scale_s), nullptr}, probs_fp8);
  ops.reshape("P^T", probs_fp8, probs_t);
  fp8_matmul(ops, p.dv_matmul,
             {.step = "P^T dO",
              .ab = {probs_t, in.d_o},
              .descales = {ops.tensor(p.descale_s), in.descale_do},
              .scale = ops.tensor(p.scale_dv),
              .out = ops.tensor(p.dv),
              .amax = ops.tensor(p.amax_dv),
              .m_k_overrides = {in.seq_kv, in.seq_q}});
}

// dS = P (descale_dO descale_v dO V^T - D) attn_scale, its amax, then scale_dP dS in dO's FP8
// type. Returns the FP8 dS.
const backend::Tensor* lower_ds(AttentionSteps& ops, const SdpaFp8BackwardPorts& p,
                                const Fp8BackwardOperands& in, backend::Tensor vt,
                                std::array<const backend::Tensor*, 2> probs_d) {
  const backend::Tensor* dp = ops.tensor(p.dp);
  const backend::Tensor* dp_descaled_do = ops.tensor(p.dp_descaled_do);
  const backend::Tensor* dp_descaled = ops.tensor(p.dp_descaled);
  const backend::Tensor* dp_centered = ops.tensor(p.dp_centered);
  const backend::Tensor* ds = ops.tensor(p.ds_unscaled);
  const backend::Tensor* ds_fp8 = ops.tensor(p.ds_fp8);
  ops.matmul("dO V^T", {in.d_o, &vt, dp}, {in.seq_q, in.seq_kv, nullptr});
  ops.keep(std::move(vt));
  ops.pointwise("descale dO", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {dp, in.descale_do, nullptr},
                dp_descaled_do);
  ops.pointwise("descale V", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {dp_descaled_do, ops.tensor(p.descale_v), nullptr}, dp_descaled);
  ops.pointwise("dP - D", CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, {dp_descaled, probs_d[1], nullptr},
                dp_centered);
  ops.pointwise("(dP - D) * P", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {dp_centered, probs_d[0], nullptr}, ds);
  if (const backend::Tensor* scale = ops.tensor(p.scale); scale != nullptr) {
    const backend::Tensor* unscaled = ds;
    ds = ops.tensor(p.ds);
    ops.pointwise("dS", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, {unscaled, scale, nullptr}, ds);
  }
  ops.reduction("amax dP", CUDNN_REDUCE_TENSOR_AMAX, ds, ops.tensor(p.amax_dp));
  ops.pointwise("scale dP", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {ds, ops.tensor(p.scale_dp), nullptr}, ds_fp8);
  return ds_fp8;
}

// dQ = scale_dQ descale_dP descale_k (FP8(dS) K), K read back from K^T by a reshape.
Result<void> lower_dq(AttentionSteps& ops, const SdpaFp8BackwardPorts& p,
                      const Fp8BackwardOperands& in, const backend::Tensor* ds_fp8) {
  auto kt_again = lower_transposed(*p.k, nullptr);
  if (!kt_again) {
    return std::unexpected(kt_again.error());
  }
  const backend::Tensor* k_view = ops.tensor(p.k_view);
  ops.reshape("K from K^T", &*kt_again, k_view);
  ops.keep(std::move(*kt_again));
  fp8_matmul(ops, p.dq_matmul,
             {.step = "dS K",
              .ab = {ds_fp8, k_view},
              .descales = {in.descale_dp, ops.tensor(p.descale_k)},
              .scale = ops.tensor(p.scale_dq),
              .out = ops.tensor(p.dq),
              .amax = ops.tensor(p.amax_dq),
              .m_k_overrides = {in.seq_q, in.seq_kv}});
  return {};
}

// dK = scale_dK descale_dP descale_q (FP8(dS)^T Q), summed over each group.
void lower_dk(AttentionSteps& ops, const SdpaFp8BackwardPorts& p, const Fp8BackwardOperands& in,
              const backend::Tensor* ds_fp8) {
  const backend::Tensor* ds_t = ops.tensor(p.ds_t);
  ops.reshape("dS^T", ds_fp8, ds_t);
  fp8_matmul(ops, p.dk_matmul,
             {.step = "dS^T Q",
              .ab = {ds_t, in.q},
              .descales = {in.descale_dp, ops.tensor(p.descale_q)},
              .scale = ops.tensor(p.scale_dk),
              .out = ops.tensor(p.dk),
              .amax = ops.tensor(p.amax_dk),
              .m_k_overrides = {in.seq_kv, in.seq_q}});
}

}  // namespace

Result<std::vector<LoweredOperation>> SdpaFp8BackwardNode::lower_all(
    const TensorTable& tensors, const GraphContext& /*context*/) const {
  const SdpaFp8BackwardPorts& p = ports_;
  AttentionSteps ops(describe(), [&](const TensorAttributes& t) { return lowered(tensors, t); });
  const Fp8BackwardOperands in = look_up_operands(ops, p);
  // V^T: V's uid with its last two dims and strides swapped (K^T likewise, in scores()).
  auto vt = lower_transposed(*p.v, nullptr);
  if (!vt) {
    return std::unexpected(vt.error());
  }
  const backend::Tensor* d_sum = lower_d(ops, p, in);
  const backend::Tensor* probs = recompute_probabilities(ops, p, attributes_, in);
  lower_dv(ops, p, in, probs);
  const backend::Tensor* ds_fp8 = lower_ds(ops, p, in, std::move(*vt), {probs, d_sum});
  if (auto ok = lower_dq(ops, p, in, ds_fp8); !ok) {
    return std::unexpected(ok.error());
  }
  lower_dk(ops, p, in, ds_fp8);
  return std::move(ops).finish();
}

}  // namespace dnngraph::detail
