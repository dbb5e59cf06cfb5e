// dnngraph.Error: a subclass of Exception whose instances carry `.code` (dnngraph.ErrorCode) and
// `.message` (the C++ message); str(error) is "<code>: <message>".
#include "errors.hpp"

#include <string_view>

namespace nb = nanobind;

namespace dnngraph::python {

namespace {

// The exception type; created once at import and kept for the life of the process (a module
// object holds it too).
PyObject* error_type = nullptr;

}  // namespace

void bind_errors(nb::module_& m) {
  error_type = PyErr_NewExceptionWithDoc(
      "dnngraph.Error",
      "Raised for every dnngraph error. .code is a dnngraph.ErrorCode, .message the library's\n"
      "message (it names the tensor, the attribute, the expected and the given value).",
      PyExc_Exception, nullptr);
  if (error_type == nullptr) {
    throw nb::python_error();
  }
  m.attr("Error") = nb::handle(error_type);
}

void raise(const Error& error) {
  const nb::str message(error.message.data(), error.message.size());
  const nb::object code = nb::cast(error.code);
  const std::string_view name = to_string(error.code);
  const nb::str text = nb::str("{}: {}").format(nb::str(name.data(), name.size()), message);
  nb::object exception = nb::handle(error_type)(text);
  exception.attr("code") = code;
  exception.attr("message") = message;
  PyErr_SetObject(error_type, exception.ptr());
  throw nb::python_error();
}

void raise(ErrorCode code, std::string message) { raise(Error{code, std::move(message)}); }

}  // namespace dnngraph::python
