// The two halves of the kernel cache schema check (internal to detail/cache/): an operation graph
// (kernel_cache_schema.cpp) and a kernel_cache entry (kernel_cache_entry_schema.cpp). Each
// refusal is InvalidJson naming the JSON path under `path`.
#pragma once

#include "api/error.hpp"

#include <boost/json/fwd.hpp>

#include <string>

namespace dnngraph::detail::cache_schema {

// An operationGraph: its finalize mode, its tensors (unique uids) and its nodes, every member of
// each and the tensors they name.
[[nodiscard]] Result<void> check_operation_graph(const boost::json::value& value,
                                                 const std::string& path);

// One element of kernel_cache: its key (an operation graph among its members) and its value,
// the compiled kernels, checked for their shape only.
[[nodiscard]] Result<void> check_entry(const boost::json::value& value, const std::string& path);

}  // namespace dnngraph::detail::cache_schema
