// Matmul node: checks, shape inference and lowering to OperationMatmul.
#include "detail/nodes/matmul.hpp"

#include "backend/matmul.hpp"
#include "backend/operation_matmul.hpp"
#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

#include <algorithm>
#include <array>

namespace dnngraph::detail {

namespace {

// Input types cuDNN's matmul engines take (cuDNN 9 backend docs, matmul operation).
constexpr std::array matmul_input_types{DataType::Half, DataType::BFloat16, DataType::Float,
                                        DataType::Int8, DataType::Fp8E4M3,  DataType::Fp8E5M2};

bool is_matmul_input_type(DataType type) {
  return std::ranges::find(matmul_input_types, type) != matmul_input_types.end();
}

}  // namespace

Result<std::vector<std::int64_t>> MatmulNode::output_dims(
    std::span<const ShapedTensor> inputs) const {
  const TensorAttributes& a = *inputs[0].tensor;
  const TensorAttributes& b = *inputs[1].tensor;
  const std::vector<std::int64_t>& a_dims = *inputs[0].dims;
  const std::vector<std::int64_t>& b_dims = *inputs[1].dims;
  const std::size_t rank = a_dims.size();
  if (rank < 3 || b_dims.size() != rank) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": A " + a.describe() + " has dims " + to_string(a_dims) +
                          " and B " + b.describe() + " has dims " + to_string(b_dims) +
                          "; both need the same rank, at least 3 ([batch..., M, K] and "
                          "[batch..., K, N])");
  }
  const std::int64_t k_a = a_dims[rank - 1];
  const std::int64_t k_b = b_dims[rank - 2];
  if (k_a != k_b) {
    return make_error(ErrorCode::ShapeMismatch,
                      describe() + ": K of A " + a.describe() + " (dim " +
                          std::to_string(rank - 1) + ") is " + std::to_string(k_a) +
                          ", but K of B " + b.describe() + " (dim " + std::to_string(rank - 2) +
                          ") is " + std::to_string(k_b));
  }
  std::vector<std::int64_t> c_dims(rank);
  for (std::size_t i = 0; i + 2 < rank; ++i) {
    const std::int64_t da = a_dims[i];
    const std::int64_t db = b_dims[i];
    if (da != db && da != 1 && db != 1) {
      return make_error(ErrorCode::ShapeMismatch,
                        describe() + ": batch dim " + std::to_string(i) + " of A " + a.describe() +
                            " is " + std::to_string(da) + " and of B " + b.describe() + " is " +
                            std::to_string(db) + "; they must be equal or one of them 1");
    }
    c_dims[i] = std::max(da, db);
  }
  c_dims[rank - 2] = a_dims[rank - 2];
  c_dims[rank - 1] = b_dims[rank - 1];
  return c_dims;
}

Result<void> MatmulNode::infer(const GraphContext& context) {
  if (auto ok = check_known_compute(attributes_.compute_data_type()); !ok) {
    return ok;
  }
  const TensorAttributes& a = *inputs()[0];
  const TensorAttributes& b = *inputs()[1];
  const std::array shaped{ShapedTensor{&a, &a.dim()}, ShapedTensor{&b, &b.dim()}};
  auto c_dims = output_dims(shaped);
  if (!c_dims) {
    return std::unexpected(c_dims.error());
  }
  for (const TensorAttributes* t : {&a, &b}) {
    const auto type = t->data_type();
    if (!type || !is_matmul_input_type(*type)) {
      return make_error(ErrorCode::UnsupportedDataType,
                        describe() + ": input " + t->describe() + " has data type " +
                            std::string(type ? to_string(*type) : "none") +
                            "; matmul takes Half, BFloat16, Float, Int8, Fp8E4M3 or Fp8E5M2");
    }
  }
  const DataType compute = compute_type(context);
  if (compute != DataType::Float && compute != DataType::Int32 && compute != DataType::Half) {
    return make_error(ErrorCode::UnsupportedDataType,
                      describe() + ": compute data type " + std::string(to_string(compute)) +
                          " is not supported; use Float (or Int32 for Int8 inputs)");
  }
  return settle_output(*outputs()[0], *c_dims, context);
}

Result<LoweredOperation> MatmulNode::lower(const TensorTable& tensors,
                                           const GraphContext& context) const {
  auto a = lowered(tensors, *inputs()[0]);
  auto b = lowered(tensors, *inputs()[1]);
  auto c = lowered(tensors, *outputs()[0]);
  if (!a || !b || !c) {
    return std::unexpected(!a ? a.error() : !b ? b.error() : c.error());
  }
  auto desc = backend::Matmul::create();
  auto op = backend::OperationMatmul::create();
  if (!desc || !op) {
    return std::unexpected(cudnn_error(!desc ? desc.error() : op.error(), "lower " + describe()));
  }
  auto ok = in_order([&] { return desc->set_compute_type(to_cudnn(compute_type(context))); },
                     [&] { return desc->finalize(); }, [&] { return op->set_a(**a); },
                     [&] { return op->set_b(**b); }, [&] { return op->set_c(**c); },
                     [&] { return op->set_matmul(*desc); }, [&] { return op->finalize(); });
  if (!ok) {
    return std::unexpected(cudnn_error(ok.error(), "lower " + describe()));
  }
  LoweredOperation lowered_op{std::move(*op), {}};
  lowered_op.parts.push_back(std::move(*desc));
  return lowered_op;
}

}  // namespace dnngraph::detail
