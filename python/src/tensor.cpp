// dnngraph.TensorAttributes: a tensor of a graph, as Graph.tensor() and the node functions return
// it. The graph and Python share the C++ object (std::shared_ptr), so a setter called here is what
// the graph validates; setters return the tensor itself, so they chain like the C++ ones.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "api/dnngraph.hpp"
#include "bindings.hpp"
#include "errors.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace dnngraph::python {

namespace {

// The C++ stride helpers need dims whose element count fits in int64 (they multiply unchecked).
void check_dims(const std::vector<std::int64_t>& dims) {
  if (!element_count(dims)) {
    raise(ErrorCode::InvalidAttribute, "strides of " + to_string(dims) +
                                           ": every dim must be positive and their product fit "
                                           "in int64");
  }
}

}  // namespace

void bind_tensor(nb::module_& m) {
  using T = TensorAttributes;
  // Returning the tensor itself: nanobind finds the Python object that already wraps it.
  constexpr auto self = nb::rv_policy::reference;
  nb::class_<T>(m, "TensorAttributes",
                "A tensor of a graph (made by Graph.tensor() or returned by a node). Mistakes in\n"
                "its attributes surface as dnngraph.Error from validate()/build().")
      .def("set_name", &T::set_name, "name"_a, self)
      .def("set_uid", &T::set_uid, "uid"_a, self, "The key of this tensor in execute()'s dict.")
      .def("set_dim", &T::set_dim, "dim"_a, self)
      .def("set_stride", &T::set_stride, "stride"_a, self)
      .def("set_data_type", &T::set_data_type, "data_type"_a, self)
      .def("set_is_virtual", &T::set_is_virtual, "is_virtual"_a, self,
           "A virtual tensor lives only inside the fused kernel: it has no device memory.")
      .def("set_output", &T::set_output, "is_output"_a, self,
           "An output is a non-virtual node result the caller reads back.")
      .def("set_value", &T::set_value, "value"_a, self,
           "Makes this a Float scalar passed by value (not in execute()'s dict).")
      .def("set_ragged_offset", &T::set_ragged_offset, "offsets"_a, self,
           "A packed variable-length (THD) tensor: dims [b, h, s_max, d] with token-major\n"
           "strides; batch i starts at element offsets[i] (an Int32/Int64 [b + 1, 1, 1, 1] graph\n"
           "tensor). Attention nodes only, with their padding mask. Its buffer is checked for\n"
           "type only (it holds the tokens: [T, h, d]).")
      .def_prop_ro("name", &T::name)
      .def_prop_ro("uid", &T::uid, "None until set or assigned by validate().")
      .def_prop_ro("dim", &T::dim)
      .def_prop_ro("stride", &T::stride)
      .def_prop_ro("data_type", &T::data_type)
      .def_prop_ro("is_virtual", &T::is_virtual)
      .def_prop_ro("value", &T::value)
      .def_prop_ro("is_pass_by_value", &T::is_pass_by_value)
      .def_prop_ro("ragged_offset", &T::ragged_offset, "The offsets tensor, or None.")
      .def("describe", &T::describe, "\"'A' (uid 1)\", as error messages name the tensor.")
      .def("__repr__",
           [](const T& t) { return "<dnngraph.TensorAttributes " + t.describe() + ">"; });

  m.def(
      "packed_strides",
      [](const std::vector<std::int64_t>& dim) {
        check_dims(dim);
        return packed_strides(dim);
      },
      "dim"_a, "Packed row-major strides for dim (the last dimension contiguous).");
  m.def(
      "channels_last_strides",
      [](const std::vector<std::int64_t>& dim) {
        check_dims(dim);
        return channels_last_strides(dim);
      },
      "dim"_a, "Packed channels-last strides for [N, C, spatial...] (NHWC, NDHWC).");
  m.attr("max_rank") = max_rank;
}

}  // namespace dnngraph::python
