// Layouts: packed and channels-last strides, element counts, and the one rule for what dims and
// strides may describe (validate() and execute-time overrides both use it). Public names first,
// then what api/ uses inside.
#pragma once

#include "api/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dnngraph {

class TensorAttributes;

// Packed row-major strides for dims: the last dimension is contiguous. Needs dims whose
// element_count() fits in int64.
[[nodiscard]] std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims);

// Packed channels-last strides for dims [N, C, spatial...] (NHWC, NDHWC): C is contiguous, then
// the spatial dims from last to first, then N. Fewer than 3 dims: packed_strides(dims). Needs
// dims whose element_count() fits in int64.
[[nodiscard]] std::vector<std::int64_t> channels_last_strides(
    const std::vector<std::int64_t>& dims);

// The product of dims, or nullopt where a dim is not positive or the product does not fit in
// int64.
[[nodiscard]] std::optional<std::int64_t> element_count(const std::vector<std::int64_t>& dims);

// The most dims a tensor may have: cuDNN's CUDNN_DIM_MAX (8 in cuDNN 9.19's cudnn_graph.h).
inline constexpr std::size_t max_rank = 8;

// "[2, 3, 4]" for error messages.
[[nodiscard]] std::string to_string(const std::vector<std::int64_t>& values);

namespace detail {

// The dims whose extent is not 1, ordered from outermost to innermost by stride (ties in index
// order): the memory order check_layout judges nesting in, and overrides must keep.
[[nodiscard]] std::vector<std::size_t> stride_order(std::span<const std::int64_t> dims,
                                                    std::span<const std::int64_t> strides);

// The one rule for what dims and strides may describe, for the shapes validate() checks and
// for execute-time overrides alike: rank 1 to max_rank; positive dims whose element count fits
// in int64; and, with strides, one positive stride per dim, each stride and the extent (the
// span from the first element to one past the last) in bytes within int64, and strides that
// nest (ordered by stride, each dim's stride covers all of the dims inside it), so no two
// elements share memory. Empty strides: the dims alone are checked (their packed strides are
// then legal). The message has no subject: callers put the tensor or the override in front.
[[nodiscard]] Result<void> check_layout(std::span<const std::int64_t> dims,
                                        std::span<const std::int64_t> strides,
                                        std::int64_t element_size);

// Packed strides for dims in the memory order of `like` (same rank, strides set): what a virtual
// tensor between two nodes has when the shapes change, or a statistics tensor [N, 1, ...] of a
// normalization has next to its input.
[[nodiscard]] std::vector<std::int64_t> strides_like(const std::vector<std::int64_t>& dims,
                                                     const TensorAttributes& like);

// t's channel dim is its fastest-moving one (NHWC, NDHWC). t has [N, C, spatial...] dims and
// strides. See the definition for how C = 1 and spatial dims of 1 are decided.
[[nodiscard]] bool is_channels_last(const TensorAttributes& t);

}  // namespace detail

}  // namespace dnngraph
