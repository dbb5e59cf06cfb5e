// Statistics node: X's rank and type, the statistics' dims, layout and type, and lowering to
// OperationGenStats (attribute names as cudnn-frontend 1.32's genstats node sets them, read for
// facts).
#include "api/nodes/gen_stats.hpp"

#include "api/cudnn_error.hpp"
#include "api/enums.hpp"
#include "backend/operation_gen_stats.hpp"

namespace dnngraph::detail {

namespace {

std::string type_name(const TensorAttributes& t) {
  const auto type = t.data_type();
  return type ? std::string(to_string(*type)) : std::string("none");
}

bool is_float_type(std::optional<DataType> type) {
  return type == DataType::Half || type == DataType::BFloat16 || type == DataType::Float;
}

}  // namespace

Result<void> GenStatsNode::infer(const GraphContext& context) {
  if (auto ok = check_float_compute(attributes_.compute_data_type(), context,
                                    "the statistics are summed in Float");
      !ok) {
    return ok;
  }
  const TensorAttributes& x = *inputs()[0];
  const std::size_t rank = x.dim().size();
  if (rank < 4 || rank > 5) {
    return make_error(ErrorCode::ShapeMismatch, describe() + ": input X " + x.describe() +
                                                    " has dims " + to_string(x.dim()) + " (rank " +
                                                    std::to_string(rank) +
                                                    "); it takes rank 4 to 5 ([N, C, (D,) H, W])");
  }
  if (!is_float_type(x.data_type())) {
    return make_error(ErrorCode::UnsupportedDataType, describe() + ": input X " + x.describe() +
                                                          " has data type " + type_name(x) +
                                                          "; it takes Half, BFloat16 or Float");
  }
  std::vector<std::int64_t> dims(rank, 1);
  dims[1] = x.dim()[1];
  for (const auto& [role, out] :
       {std::pair{"sum", outputs()[0]}, std::pair{"sq_sum", outputs()[1]}}) {
    if (auto ok = settle_statistic_output(role, *out, dims, x, context); !ok) {
      return ok;
    }
  }
  return {};
}

Result<LoweredOperation> GenStatsNode::lower(const TensorTable& tensors,
                                             const GraphContext& /*context*/) const {
  auto x = lowered(tensors, *inputs()[0]);
  auto sum = lowered(tensors, *outputs()[0]);
  auto sq_sum = lowered(tensors, *outputs()[1]);
  if (!x || !sum || !sq_sum) {
    return std::unexpected(!x ? x.error() : !sum ? sum.error() : sq_sum.error());
  }
  auto op = backend::OperationGenStats::create();
  if (!op) {
    return std::unexpected(cudnn_error(op.error(), "lower " + describe()));
  }
  // Math precision: X's data type, as cudnn-frontend 1.32 sets it (infer() checked it is one).
  auto ok = op->set_mode(CUDNN_GENSTATS_SUM_SQSUM);
  if (ok) ok = op->set_math_precision(to_cudnn(inputs()[0]->data_type().value_or(DataType::Float)));
  if (ok) ok = op->set_x(**x);
  if (ok) ok = op->set_sum(**sum);
  if (ok) ok = op->set_sq_sum(**sq_sum);
  if (ok) ok = op->finalize();
  if (!ok) {
    return std::unexpected(lowering_failed(ok.error()));
  }
  return LoweredOperation{std::move(*op), {}};
}

}  // namespace dnngraph::detail
