// The installed entry point: `#include <dnngraph/dnngraph.hpp>` gives the whole public API (the
// headers of api/, installed under include/dnngraph/api/), for code that does not import modules.
#pragma once

#include "api/dnngraph.hpp"
