// dnngraph._C: the Python face of dnngraph's C++ API (api/ headers, not the C++ module), which the
// package dnngraph (python/dnngraph/__init__.py) re-exports. Each part is bound in its own file;
// see bindings.hpp.
#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "errors.hpp"

namespace nb = nanobind;

NB_MODULE(_C, m) {
  m.doc() =
      "dnngraph: fused cuDNN operation graphs. Describe a Graph, build it once with a Handle,\n"
      "execute it many times with torch tensors (or __cuda_array_interface__ / DLPack objects,\n"
      "or int device pointers). Every error raises dnngraph.Error, whose .code is an ErrorCode.";
  m.attr("__version__") = DNNGRAPH_VERSION;
  dnngraph::python::bind_errors(m);
  dnngraph::python::bind_enums(m);
  dnngraph::python::bind_tensor(m);
  dnngraph::python::bind_runtime(m);
  dnngraph::python::bind_graph(m);
  dnngraph::python::bind_store(m);
}
