// FP8 scaled dot-product attention forward: checks, shape inference and the composite lowering.
// The operation order is cudnn-frontend's SDPA FP8 forward node's (1.13 node/sdpa_fp8.h, and
// its composite SDPA node with node/matmul_fp8.h after it): Q K^T, attention scale, descale_q,
// descale_k, padding mask, causal mask, softmax with its statistics, amax of P, scale_s into
// FP8, P V, descale_s, descale_v, scale_o into O, amax of O before scale_o.
#include "detail/nodes/sdpa_fp8.hpp"

#include "api/layout.hpp"
#include "backend/features.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace dnngraph::detail {

namespace {

// What cuDNN's FP8 attention engines take on Hopper (cudnn-frontend's support surface,
// node/sdpa_support_surface.h: head dims multiples of 16 up to 256 below Blackwell). Fp8E5M2
// passes that surface too, but was not measured with this node.
constexpr AttentionInputRule fp8_inputs{
    [](DataType t) { return t == DataType::Fp8E4M3; },
    "FP8 attention takes Fp8E4M3 (cuDNN's FP8 engines also list Fp8E5M2, not measured here)", 16,
    256, "cuDNN's FP8 attention engines on Hopper"};

const std::vector<std::int64_t> one_value{1, 1, 1, 1};

}  // namespace

void SdpaFp8Ports::make_internals(const AttentionSettings& settings,
                                  const std::function<TensorPtr(const char*, float)>& scalar,
                                  const std::function<TensorPtr(const char*)>& internal) {
  if (settings.scale) {
    scale = scalar("attn_scale", *settings.scale);
  }
  // Only with a mask: cuDNN 9.19 refuses a variant pack with a uid no operation reads (as sdpa).
  if (settings.padding || settings.causal) {
    neg_inf = scalar("neg_inf", -std::numeric_limits<float>::infinity());
  }
  scores = internal("scores");
  scaled = scale ? internal("scaled") : nullptr;
  descaled_q = internal("descaled_q");
  descaled = internal("descaled");
  masks = AttentionMaskPorts::make(settings, internal);
  softmax = SoftmaxPorts::make(stats != nullptr, internal);
  probs_fp8 = internal("probs_fp8");
  pv = internal("pv");
  pv_descaled_s = internal("pv_descaled_s");
  o_float = internal("o_float");
}

std::vector<TensorPtr> SdpaFp8Ports::inputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s, scale_o,
                        seq_len_q, seq_len_kv, scale, neg_inf});
  return list;
}

std::vector<TensorPtr> SdpaFp8Ports::outputs() const {
  std::vector<TensorPtr> list;
  append_present(list, {o, stats, amax_s, amax_o});
  return list;
}

std::vector<TensorPtr> SdpaFp8Ports::internals() const {
  std::vector<TensorPtr> list;
  append_present(list, {scores, scaled, descaled_q, descaled});
  masks.append_to(list);
  softmax.append_to(list);
  append_present(list, {probs_fp8, pv, pv_descaled_s, o_float});
  return list;
}

Result<void> SdpaFp8Node::infer(const GraphContext& context) {
  if (!backend::available(backend::Feature::Fp8Attention)) {
    return std::unexpected(version_too_old(backend::Feature::Fp8Attention, describe()));
  }
  const auto settings = AttentionSettings::of_scores(attributes_);
  auto ok =
      in_order([&] { return check_known_compute(attributes_.compute_data_type()); },
               [&] { return check_fp8_form(); },
               [&] {
                 return check_attention(describe(), attributes_.compute_data_type(), settings,
                                        *ports_.q, *ports_.k, *ports_.v, fp8_inputs);
               },
               [&] { return check_fp8_factors_of(describe(), ports_); },
               [&] { return settle_scalar_inputs(4); }, [&] { return settle_outputs(context); });
  if (ok) {
    settle_internals();
  }
  return ok;
}

Result<void> SdpaFp8Node::check_fp8_form() const {
  const std::array<NamedTensor, 4> qkvo{
      {{"Q", ports_.q.get()}, {"K", ports_.k.get()}, {"V", ports_.v.get()}, {"O", ports_.o.get()}}};
  return detail::check_fp8_form(describe(), attributes_.causal(), qkvo,
                                "TransformerEngine serves FP8 THD from cuDNN 9.23, not measured "
                                "here");
}

Result<void> SdpaFp8Node::settle_outputs(const GraphContext& context) {
  const auto& q = ports_.q->dim();
  const SettleOutput settle = [&](TensorAttributes& t, const std::vector<std::int64_t>& dims) {
    return settle_output(t, dims, context);
  };
  TensorAttributes& o = *ports_.o;
  if (!o.data_type()) {
    o.set_data_type(DataType::Fp8E4M3);
  }
  if (auto ok = settle_output(o, {q[0], q[1], q[2], ports_.v->dim()[3]}, context); !ok) {
    return ok;
  }
  if (o.data_type() != DataType::Fp8E4M3) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": O " + o.describe() + " has data type " + type_name(o) +
                          "; on Hopper cuDNN's FP8 attention writes Fp8E4M3 (a Half or BFloat16 "
                          "O needs Blackwell and cuDNN 9.13, as cudnn-frontend's support "
                          "surface says)");
  }
  if (o.stride()[3] != 1) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": O " + o.describe() +
                                                       " has strides " + to_string(o.stride()) +
                                                       "; the head dim (dim 3) must be innermost");
  }
  if (ports_.stats) {
    if (auto ok =
            settle_float_output(describe(), "Stats", *ports_.stats, {q[0], q[1], q[2], 1}, settle);
        !ok) {
      return ok;
    }
  }
  if (auto ok = settle_float_output(describe(), "Amax_S", *ports_.amax_s, one_value, settle); !ok) {
    return ok;
  }
  return settle_float_output(describe(), "Amax_O", *ports_.amax_o, one_value, settle);
}

void SdpaFp8Node::settle_internals() const {
  const auto& q = ports_.q->dim();
  const std::vector<std::int64_t> score_dims{q[0], q[1], q[2], ports_.k->dim()[2]};
  const std::vector<std::int64_t> out_dims{q[0], q[1], q[2], ports_.v->dim()[3]};
  const auto settle = [](const TensorPtr& t, const std::vector<std::int64_t>& dims, DataType type) {
    if (t) {
      t->set_dim(dims).set_stride(packed_strides(dims)).set_data_type(type);
    }
  };
  for (const TensorPtr& t : {ports_.scores, ports_.scaled, ports_.descaled_q, ports_.descaled}) {
    settle(t, score_dims, DataType::Float);
  }
  ports_.masks.settle(score_dims);
  ports_.softmax.settle(score_dims, DataType::Float);
  // cuDNN's pattern: the second matmul's A operand (scale_s P) in the io type, Q's FP8 type.
  settle(ports_.probs_fp8, score_dims, DataType::Fp8E4M3);
  for (const TensorPtr& t : {ports_.pv, ports_.pv_descaled_s, ports_.o_float}) {
    settle(t, out_dims, DataType::Float);
  }
}

Result<std::vector<LoweredOperation>> SdpaFp8Node::lower_all(
    const TensorTable& tensors, const GraphContext& /*context*/) const {
  const SdpaFp8Ports& p = ports_;
  AttentionSteps ops(describe(), [&](const TensorAttributes& t) { return lowered(tensors, t); });
  const backend::Tensor* seq_q = ops.tensor(p.seq_len_q);
  const backend::Tensor* seq_kv = ops.tensor(p.seq_len_kv);
  const backend::Tensor* neg_inf = ops.tensor(p.neg_inf);
  const std::array<AttentionSteps::Factor, 2> descales{{
      {"descale Q", ops.tensor(p.descale_q), p.descaled_q},
      {"descale K", ops.tensor(p.descale_k), p.descaled},
  }};
  AttentionSteps::Scores scores =
      ops.scores_of(p, *p.k, ops.tensor(p.q), attributes_.padding_mask());
  scores.factors = descales;
  const backend::Tensor* current = ops.scores(scores);
  if (attributes_.causal()) {  // top-left: check_fp8_form refused the other
    current = ops.causal_mask(p.masks, DiagonalAlignment::TopLeft, current, seq_q, seq_kv, neg_inf);
  }
  const backend::Tensor* probs =
      ops.softmax(p.softmax, current, p.stats ? p.stats : p.softmax.unused_stats);
  const backend::Tensor* probs_fp8 = ops.tensor(p.probs_fp8);
  const backend::Tensor* pv = ops.tensor(p.pv);
  const backend::Tensor* pv_descaled_s = ops.tensor(p.pv_descaled_s);
  const backend::Tensor* o_float = ops.tensor(p.o_float);
  ops.reduction("amax S", CUDNN_REDUCE_TENSOR_AMAX, probs, ops.tensor(p.amax_s));
  ops.pointwise("scale S", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {probs, ops.tensor(p.scale_s), nullptr}, probs_fp8);
  ops.matmul("P V", {probs_fp8, ops.tensor(p.v), pv}, {seq_q, nullptr, seq_kv});
  ops.pointwise("descale S", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {pv, ops.tensor(p.descale_s), nullptr}, pv_descaled_s);
  ops.pointwise("descale V", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {pv_descaled_s, ops.tensor(p.descale_v), nullptr}, o_float);
  ops.pointwise("scale O", CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT,
                {o_float, ops.tensor(p.scale_o), nullptr}, ops.tensor(p.o));
  ops.reduction("amax O", CUDNN_REDUCE_TENSOR_AMAX, o_float, ops.tensor(p.amax_o));
  return std::move(ops).finish();
}

}  // namespace dnngraph::detail
