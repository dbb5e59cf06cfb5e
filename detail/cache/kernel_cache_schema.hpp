// The schema of a kernel cache document as cuDNN 9.19 reads it (internal to api/): what
// from_json checks before cuDNN parses a document, so that cuDNN never sees a shape it
// crashes on.
#pragma once

#include "api/error.hpp"

namespace boost::json {
class value;
}  // namespace boost::json

namespace dnngraph::detail {

// Every member's presence and type, enum strings, integer ranges, array lengths, tensor names
// and the references to them; unknown members are refused except inside an entry's compiled
// kernels (see the file's notes). Refusals are InvalidJson naming the JSON path.
[[nodiscard]] Result<void> check_cache_schema(const boost::json::value& document);

}  // namespace dnngraph::detail
