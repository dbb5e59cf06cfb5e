// Lowering support implementation.
#include "detail/nodes/lowering.hpp"

#include "detail/common/in_order.hpp"
#include "detail/cudnn/cudnn_error.hpp"

namespace dnngraph::detail {

namespace {

backend::Expected<backend::Tensor> make_tensor(const TensorAttributes& t,
                                               const backend::Tensor* ragged_offset) {
  auto tensor = backend::Tensor::create();
  if (!tensor) {
    return tensor;
  }
  // cuDNN wants 16-byte aligned device buffers for vectorized loads; cudaMalloc gives 256.
  constexpr std::int64_t alignment = 16;
  // Each step runs only if the one before succeeded; the first failure is reported.
  const auto type = t.data_type();
  const auto uid = t.uid();
  if (!type || !uid) {  // validate() settles both before anything is lowered
    return std::unexpected(backend::Status{CUDNN_STATUS_BAD_PARAM,
                                           "lower tensor without a uid "
                                           "or data type (not validated)",
                                           ""});
  }
  auto ok = in_order(
      [&] { return tensor->set_data_type(to_cudnn(*type)); },
      [&] { return tensor->set_dimensions(t.dim()); },
      [&] { return tensor->set_strides(t.stride()); }, [&] { return tensor->set_unique_id(*uid); },
      [&] { return tensor->set_byte_alignment(alignment); },
      [&] { return tensor->set_is_virtual(t.is_virtual()); },
      when(t.is_pass_by_value(), [&] { return tensor->set_is_by_value(true); }),
      when(ragged_offset != nullptr, [&] { return tensor->set_ragged_offset(*ragged_offset); }),
      [&] { return tensor->finalize(); });
  if (!ok) {
    return std::unexpected(std::move(ok.error()));
  }
  return tensor;
}

}  // namespace

Result<backend::Tensor> lower_tensor(const TensorAttributes& t,
                                     const backend::Tensor* ragged_offset) {
  auto tensor = make_tensor(t, ragged_offset);
  if (!tensor) {
    return std::unexpected(cudnn_error(tensor.error(), "lower tensor " + t.describe()));
  }
  return std::move(*tensor);
}

Result<void> TensorTable::add(const TensorAttributes& t) {
  if (find(t.uid().value_or(-1)) != nullptr) {
    // Already lowered as a ragged tensor's offsets: that descriptor stays (the ragged tensor's
    // descriptor was finalized with it).
    return {};
  }
  const backend::Tensor* ragged_offset = nullptr;
  if (const auto offsets = t.ragged_offset()) {
    // validate() checked that the offsets are an ordinary graph input with a uid.
    ragged_offset = find(offsets->uid().value_or(-1));
    if (ragged_offset == nullptr) {
      if (auto ok = add(*offsets); !ok) {
        return ok;
      }
      ragged_offset = find(offsets->uid().value_or(-1));
    }
  }
  auto tensor = make_tensor(t, ragged_offset);
  if (!tensor) {
    return std::unexpected(cudnn_error(tensor.error(), "lower tensor " + t.describe()));
  }
  tensors_.insert_or_assign(t.uid().value_or(-1), std::move(*tensor));  // make_tensor checked it
  return {};
}

const backend::Tensor* TensorTable::find(std::int64_t uid) const {
  auto it = tensors_.find(uid);
  return it == tensors_.end() ? nullptr : &it->second;
}

bool TensorTable::all_finalized() const noexcept {
  for (const auto& [uid, tensor] : tensors_) {
    if (!tensor.is_finalized()) {
      return false;
    }
  }
  return true;
}

}  // namespace dnngraph::detail
