// Random-number node: the distribution's parameter, the seed and offset tensors, Y's dims, and
// lowering to OperationRng (the attribute order cudnn-frontend 1.32's RNG node uses, read for
// facts).
#include "detail/nodes/rng.hpp"

#include "backend/operation_rng.hpp"
#include "backend/rng.hpp"
#include "detail/common/in_order.hpp"

#include <cmath>

namespace dnngraph::detail {

namespace {

std::string type_name(const TensorAttributes& t) {
  const auto type = t.data_type();
  return type ? std::string(to_string(*type)) : std::string("none");
}

}  // namespace

Result<void> check_rng_key(const std::string& node, const char* role, const TensorAttributes& t) {
  if (element_count(t.dim()) != 1) {
    return make_error(ErrorCode::ShapeMismatch,
                      node + ": " + role + " " + t.describe() + " has dims " + to_string(t.dim()) +
                          "; it holds one value (dims of 1, e.g. [1, 1, 1, 1])");
  }
  const auto type = t.data_type();
  if (type != DataType::Int64 && type != DataType::Int32) {
    return make_error(ErrorCode::UnsupportedDataType, node + ": " + role + " " + t.describe() +
                                                          " has data type " + type_name(t) +
                                                          "; it takes Int64 or Int32");
  }
  return {};
}

backend::Expected<LoweredOperation> lower_bernoulli(double probability, const backend::Tensor& seed,
                                                    const backend::Tensor& offset,
                                                    const backend::Tensor& y) {
  auto rng = backend::Rng::create();
  if (!rng) {
    return std::unexpected(rng.error());
  }
  auto op = backend::OperationRng::create();
  if (!op) {
    return std::unexpected(op.error());
  }
  auto ok = in_order([&] { return rng->set_distribution(CUDNN_RNG_DISTRIBUTION_BERNOULLI); },
                     [&] { return rng->set_bernoulli_probability(probability); },
                     [&] { return rng->finalize(); }, [&] { return op->set_y(y); },
                     [&] { return op->set_rng(*rng); }, [&] { return op->set_seed(seed); },
                     [&] { return op->set_offset(offset); }, [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(ok.error());
  }
  LoweredOperation lowered_op{std::move(*op), {}};
  lowered_op.parts.push_back(std::move(*rng));
  return lowered_op;
}

Result<void> RngNode::infer(const GraphContext& context) {
  const auto probability = attributes_.bernoulli_probability();
  if (!probability) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() +
                          ": no distribution; set_bernoulli_probability(p) (the "
                          "probability of a 1; a dropout mask keeps with 1 - dropout)");
  }
  if (!(std::isfinite(*probability) && *probability >= 0.0 && *probability <= 1.0)) {
    return make_error(ErrorCode::InvalidAttribute, describe() + ": Bernoulli probability " +
                                                       std::to_string(*probability) +
                                                       " is outside [0, 1]");
  }
  if (auto ok = check_known_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  if (auto ok = check_rng_key(describe(), "seed", *inputs()[0]); !ok) {
    return ok;
  }
  if (auto ok = check_rng_key(describe(), "offset", *inputs()[1]); !ok) {
    return ok;
  }
  TensorAttributes& y = *outputs()[0];
  if (y.dim().empty()) {
    return make_error(ErrorCode::InvalidAttribute,
                      describe() + ": Y " + y.describe() +
                          " has no dims; set them on the returned tensor (the shape of the mask, "
                          "e.g. the dims of the tensor it multiplies)");
  }
  const std::vector<std::int64_t> dims = y.dim();
  if (auto ok = settle_output(y, dims, context); !ok) {
    return ok;
  }
  const auto y_type = y.data_type();
  if (y_type != DataType::Float && y_type != DataType::Half && y_type != DataType::BFloat16) {
    return make_error(ErrorCode::UnsupportedDataType, describe() + ": Y " + y.describe() +
                                                          " has data type " + type_name(y) +
                                                          "; it takes Float, Half or BFloat16");
  }
  return {};
}

Result<LoweredOperation> RngNode::lower(const TensorTable& tensors,
                                        const GraphContext& /*context*/) const {
  auto seed = lowered(tensors, *inputs()[0]);
  auto offset = lowered(tensors, *inputs()[1]);
  auto y = lowered(tensors, *outputs()[0]);
  if (!seed || !offset || !y) {
    return std::unexpected(!seed ? seed.error() : !offset ? offset.error() : y.error());
  }
  const auto probability = attributes_.bernoulli_probability();
  if (!probability) {  // infer() refused this graph already
    return make_error(ErrorCode::InvalidState, describe() + ": lowered without a distribution");
  }
  auto op = lower_bernoulli(*probability, **seed, **offset, **y);
  if (!op) {
    return std::unexpected(lowering_failed(op.error()));
  }
  return std::move(*op);
}

}  // namespace dnngraph::detail
