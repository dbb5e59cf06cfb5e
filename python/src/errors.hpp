// dnngraph.Error: the one exception the Python face raises for a dnngraph::Error, carrying the
// ErrorCode as `.code` and the C++ message unchanged. unwrap() turns a Result<T> into T or a
// raised dnngraph.Error; call it with the GIL held.
#pragma once

#include <nanobind/nanobind.h>

#include "api/error.hpp"

#include <string>
#include <utility>

namespace dnngraph::python {

// Creates the exception type and adds it to the module as `Error`.
void bind_errors(nanobind::module_& m);

// Raises dnngraph.Error (as a nanobind::python_error that nanobind hands back to Python).
[[noreturn]] void raise(const Error& error);
[[noreturn]] void raise(ErrorCode code, std::string message);

template <class T>
T unwrap(Result<T>&& result) {
  if (!result) {
    raise(result.error());
  }
  return std::move(*result);
}

inline void unwrap(Result<void>&& result) {
  if (!result) {
    raise(result.error());
  }
}

}  // namespace dnngraph::python
