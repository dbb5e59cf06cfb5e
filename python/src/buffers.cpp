// Hot-path conversions for execute(): see buffers.hpp. Written against the CPython API where
// nanobind's generic casts would allocate or raise exceptions internally (attribute lookups that
// fail, temporary vectors): each execute() from Python pays for these on every call.
#include "buffers.hpp"

#include <nanobind/ndarray.h>

#include "errors.hpp"

#include <string>

namespace nb = nanobind;

namespace dnngraph::python {

struct CallBuffers::Storage {
  std::unordered_map<std::int64_t, void*> pack;
  std::vector<std::int64_t> uids;
  // Only the first `lists` elements of shapes and strides belong to the current call; the
  // rest keep their capacity for later calls.
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::vector<std::int64_t>> strides;
  bool in_use = false;
};

namespace {

thread_local CallBuffers::Storage thread_storage;

// Names looked up on every call, interned once (under the GIL).
struct Names {
  PyObject* is_cuda = PyUnicode_InternFromString("is_cuda");
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
  PyObject* device = PyUnicode_InternFromString("device");
  PyObject* cuda_array_interface = PyUnicode_InternFromString("__cuda_array_interface__");
  PyObject* dlpack = PyUnicode_InternFromString("__dlpack__");
};

const Names& names() {
  static const Names interned;
  return interned;
}

// Names an argument in errors ("variant_pack[3]", "override_shapes[1]"); the text is made only
// when an error is raised, so the hot path builds no strings.
struct Argument {
  const char* name;
  std::int64_t index = -1;  // shown as [index] when >= 0
  [[nodiscard]] std::string text() const {
    return index < 0 ? std::string(name) : std::string(name) + "[" + std::to_string(index) + "]";
  }
};

// device_pointer() for an argument named by `what`.
void* pointer_of(nb::handle object, const Argument& what);

[[noreturn]] void invalid(const Argument& what, const std::string& why) {
  raise(ErrorCode::InvalidAttribute, what.text() + ": " + why);
}

std::string type_name(PyObject* object) { return Py_TYPE(object)->tp_name; }

// torch.Tensor once torch has been imported (by anyone); null before. The reference is kept for
// the life of the process.
PyTypeObject* torch_tensor_type() {
  static PyTypeObject* type = nullptr;  // guarded by the GIL
  if (type != nullptr) {
    return type;
  }
  PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
  if (torch == nullptr) {
    return nullptr;
  }
  PyObject* tensor = PyObject_GetAttrString(torch, "Tensor");
  if (tensor == nullptr) {  // torch is still being imported
    PyErr_Clear();
    return nullptr;
  }
  if (PyType_Check(tensor) == 0) {
    Py_DECREF(tensor);
    return nullptr;
  }
  type = reinterpret_cast<PyTypeObject*>(tensor);
  return type;
}

void* pointer_from_int(PyObject* value, const Argument& what) {
  const unsigned long long address = PyLong_AsUnsignedLongLong(value);
  if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    invalid(what, "a device pointer must be an int in 0..2**64-1");
  }
  // Python hands device pointers over as ints; nothing else can make this pointer.
  return reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr)
      static_cast<std::uintptr_t>(address));
}

void* pointer_from_torch(PyObject* tensor, const Argument& what) {
  const nb::object is_cuda = nb::steal(PyObject_GetAttr(tensor, names().is_cuda));
  if (!is_cuda.is_valid()) {
    throw nb::python_error();
  }
  if (is_cuda.ptr() != Py_True) {
    const nb::object device = nb::steal(PyObject_GetAttr(tensor, names().device));
    const std::string where = device.is_valid() ? nb::str(device).c_str() : "the host";
    PyErr_Clear();
    invalid(what, "a torch tensor on " + where + "; execute() needs CUDA device memory");
  }
  const nb::object address = nb::steal(PyObject_CallMethodNoArgs(tensor, names().data_ptr));
  if (!address.is_valid()) {
    throw nb::python_error();
  }
  return pointer_from_int(address.ptr(), what);
}

// __cuda_array_interface__["data"][0], or nullopt-like false when the object has none.
bool pointer_from_cuda_array_interface(PyObject* object, const Argument& what, void*& out) {
  const nb::object interface = nb::steal(PyObject_GetAttr(object, names().cuda_array_interface));
  if (!interface.is_valid()) {
    PyErr_Clear();
    return false;
  }
  PyObject* data =
      PyDict_Check(interface.ptr()) != 0 ? PyDict_GetItemString(interface.ptr(), "data") : nullptr;
  if (data == nullptr || PyTuple_Check(data) == 0 || PyTuple_GET_SIZE(data) < 1) {
    invalid(what, "its __cuda_array_interface__ has no data tuple");
  }
  out = pointer_from_int(PyTuple_GET_ITEM(data, 0), what);
  return true;
}

bool pointer_from_dlpack(PyObject* object, const Argument& what, void*& out) {
  if (PyObject_HasAttr(object, names().dlpack) == 0) {
    return false;
  }
  nb::ndarray<> array;
  if (!nb::try_cast(nb::handle(object), array, false)) {
    invalid(what, "its __dlpack__ did not give a DLPack tensor (" + type_name(object) + ")");
  }
  const auto device = array.device_type();
  if (device != nb::device::cuda::value && device != nb::device::cuda_managed::value) {
    invalid(what, "a DLPack tensor on device type " + std::to_string(device) +
                      "; execute() needs CUDA device memory");
  }
  out = array.data();
  return true;
}

std::int64_t int64_from(PyObject* value, const Argument& what, std::size_t index) {
  if (PyLong_Check(value) == 0) {
    invalid(what,
            "element " + std::to_string(index) + " is a " + type_name(value) + ", expected an int");
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0) {
    invalid(what, "element " + std::to_string(index) + " does not fit in int64");
  }
  return v;
}

// A list or tuple (or any sequence) of ints into `out`; None is empty.
void fill_ints(nb::handle sequence, const Argument& what, std::vector<std::int64_t>& out) {
  out.clear();
  if (sequence.is_none()) {
    return;
  }
  const nb::object fast = nb::steal(PySequence_Fast(sequence.ptr(), ""));
  if (!fast.is_valid()) {
    PyErr_Clear();
    invalid(what, "expected a list of ints, given a " + type_name(sequence.ptr()));
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.ptr());
  PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
  out.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    out.push_back(int64_from(items[i], what, static_cast<std::size_t>(i)));
  }
}

// A list of lists of ints into the first elements of `out`; returns how many.
std::size_t fill_lists(nb::handle sequence, const Argument& what,
                       std::vector<std::vector<std::int64_t>>& out) {
  if (sequence.is_none()) {
    return 0;
  }
  const nb::object fast = nb::steal(PySequence_Fast(sequence.ptr(), ""));
  if (!fast.is_valid()) {
    PyErr_Clear();
    invalid(what, "expected a list of lists of ints, given a " + type_name(sequence.ptr()));
  }
  const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(fast.ptr()));
  PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
  if (out.size() < n) {
    out.resize(n);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Argument element{what.name, static_cast<std::int64_t>(i)};
    if (PyLong_Check(items[i]) != 0) {
      invalid(element, "expected a list of ints, given an int");
    }
    fill_ints(items[i], element, out[i]);
  }
  return n;
}

std::int64_t uid_from(PyObject* key) {
  if (PyLong_Check(key) == 0) {
    invalid({"variant_pack"}, "a key is a " + type_name(key) + ", expected an int uid");
  }
  int overflow = 0;
  const long long uid = PyLong_AsLongLongAndOverflow(key, &overflow);
  if (overflow != 0) {
    invalid({"variant_pack"}, "a uid does not fit in int64");
  }
  return uid;
}

// Writes each entry's pointer into `pack` when it holds exactly the dict's uids already (the
// steady state: the same graph run again); false otherwise (then nothing may be assumed).
bool update_in_place(PyObject* dict, std::unordered_map<std::int64_t, void*>& pack) {
  if (static_cast<std::size_t>(PyDict_Size(dict)) != pack.size()) {
    return false;
  }
  Py_ssize_t position = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  while (PyDict_Next(dict, &position, &key, &value) != 0) {
    const std::int64_t uid = uid_from(key);
    const auto found = pack.find(uid);
    if (found == pack.end()) {
      return false;
    }
    found->second = pointer_of(value, {"variant_pack", uid});
  }
  return true;
}

void* pointer_of(nb::handle object, const Argument& what) {
  PyObject* o = object.ptr();
  if (PyLong_CheckExact(o) != 0) {
    return pointer_from_int(o, what);
  }
  if (PyTypeObject* torch = torch_tensor_type(); torch != nullptr && PyObject_TypeCheck(o, torch)) {
    return pointer_from_torch(o, what);
  }
  void* address = nullptr;
  if (pointer_from_cuda_array_interface(o, what, address) ||
      pointer_from_dlpack(o, what, address)) {
    return address;
  }
  if (PyLong_Check(o) != 0 && PyBool_Check(o) == 0) {  // an int subclass
    return pointer_from_int(o, what);
  }
  invalid(what,
          "expected a device pointer (int), a CUDA torch tensor or an object with "
          "__cuda_array_interface__ or __dlpack__, given a " +
              type_name(o));
}

}  // namespace

void* device_pointer(nb::handle object, const char* what) { return pointer_of(object, {what}); }

void* optional_device_pointer(nb::handle object, const char* what) {
  return object.is_none() ? nullptr : device_pointer(object, what);
}

CallBuffers::CallBuffers()
    : own_(thread_storage.in_use ? std::make_unique<Storage>() : nullptr),
      storage_(own_ ? own_.get() : &thread_storage) {
  storage_->in_use = true;
}

CallBuffers::~CallBuffers() { storage_->in_use = false; }

const std::unordered_map<std::int64_t, void*>& CallBuffers::variant_pack(nb::handle mapping) {
  nb::object dict = nb::borrow(mapping);
  if (PyDict_Check(dict.ptr()) == 0) {
    dict = nb::steal(PyDict_New());
    if (PyDict_Merge(dict.ptr(), mapping.ptr(), 1) != 0) {
      PyErr_Clear();
      invalid({"variant_pack"},
              "expected a dict {uid: buffer}, given a " + type_name(mapping.ptr()));
    }
  }
  auto& pack = storage_->pack;
  if (update_in_place(dict.ptr(), pack)) {
    return pack;
  }
  pack.clear();
  Py_ssize_t position = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  while (PyDict_Next(dict.ptr(), &position, &key, &value) != 0) {
    const std::int64_t uid = uid_from(key);
    pack[uid] = pointer_of(value, {"variant_pack", uid});
  }
  return pack;
}

OverrideLists CallBuffers::overrides(nb::handle uids, nb::handle shapes, nb::handle strides) {
  fill_ints(uids, {"override_uids"}, storage_->uids);
  const std::size_t shape_count = fill_lists(shapes, {"override_shapes"}, storage_->shapes);
  const std::size_t stride_count = fill_lists(strides, {"override_strides"}, storage_->strides);
  return {storage_->uids,
          {storage_->shapes.data(), shape_count},
          {storage_->strides.data(), stride_count}};
}

}  // namespace dnngraph::python
