// The parts of the dnngraph Python module, one function per concept; module.cpp calls them in
// dependency order (errors and enums first: the classes' signatures name them).
#pragma once

#include <nanobind/nanobind.h>

namespace dnngraph::python {

void bind_enums(nanobind::module_& m);
void bind_tensor(nanobind::module_& m);
void bind_runtime(nanobind::module_& m);  // Handle, KernelCache, PlanInfo, LoweringSummary
void bind_graph(nanobind::module_& m);
void bind_store(nanobind::module_& m);  // KernelCacheStore, the log level

}  // namespace dnngraph::python
