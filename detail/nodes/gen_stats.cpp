// Statistics node: X's rank and type, the statistics' dims, layout and type, and lowering to
// OperationGenStats (attribute names as cudnn-frontend 1.32's genstats node sets them, read for
// facts).
#include "detail/nodes/gen_stats.hpp"

#include "backend/operation_gen_stats.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"
#include "detail/cudnn/enums.hpp"

namespace dnngraph::detail {

Result<void> GenStatsNode::infer(const GraphContext& context) {
  if (auto ok = check_float_compute(attributes_.compute_data_type(), context,
                                    "the statistics are summed in Float");
      !ok) {
    return ok;
  }
  const TensorAttributes& x = *inputs()[0];
  if (auto ok = check_image_input("input X", x); !ok) {
    return ok;
  }
  std::vector<std::int64_t> dims(x.dim().size(), 1);
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
  auto ok = in_order(
      [&] { return op->set_mode(CUDNN_GENSTATS_SUM_SQSUM); },
      [&] {
        return op->set_math_precision(to_cudnn(inputs()[0]->data_type().value_or(DataType::Float)));
      },
      [&] { return op->set_x(**x); }, [&] { return op->set_sum(**sum); },
      [&] { return op->set_sq_sum(**sq_sum); }, [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(lowering_failed(ok.error()));
  }
  return LoweredOperation{std::move(*op), {}};
}

}  // namespace dnngraph::detail
