// The whole public API of dnngraph for code that includes headers instead of `import dnngraph;`.
#pragma once

#include "api/error.hpp"
#include "api/graph.hpp"
#include "api/handle.hpp"
#include "api/kernel_cache.hpp"
#include "api/kernel_cache_store.hpp"
#include "api/log.hpp"
#include "api/node_attributes.hpp"
#include "api/plan.hpp"
#include "api/tensor_attributes.hpp"
#include "api/types.hpp"
#include "api/version.hpp"
