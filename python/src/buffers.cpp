// Hot-path conversions for execute(): see buffers.hpp. Written against the CPython API where
// nanobind's generic casts would allocate or raise exceptions internally (attribute lookups that
// fail, temporary vectors): each execute() from Python pays for these on every call.
#include "buffers.hpp"

#include <nanobind/ndarray.h>

#include "errors.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <optional>
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
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* stride = PyUnicode_InternFromString("stride");
  PyObject* numel = PyUnicode_InternFromString("numel");
  PyObject* element_size = PyUnicode_InternFromString("element_size");
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

// What a buffer must be (BufferLayout, or an override's dims and strides in its place).
struct Want {
  const BufferLayout* layout;
  std::span<const std::int64_t> dims;
  std::span<const std::int64_t> strides;
};

// device_pointer() for an argument named by `what`; with `want`, a buffer that says what it
// holds is checked against it first.
void* pointer_of(nb::handle object, const Argument& what, const Want* want = nullptr);

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

std::int64_t int64_from(PyObject* value, const Argument& what, std::size_t index);

std::string dims_text(std::span<const std::int64_t> dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
  }
  return text + "]";
}

// The dims and strides of a buffer against want's: equal dims, and equal strides wherever the
// dim is not 1 (a dim of size 1 is never stepped over). ShapeMismatch naming both otherwise.
void check_dims(const Argument& what, const char* kind, std::span<const std::int64_t> dims,
                std::span<const std::int64_t> strides, const Want& want) {
  if (want.layout->ragged) {
    return;
  }
  bool same = dims.size() == want.dims.size() && strides.size() == want.strides.size() &&
              std::ranges::equal(dims, want.dims);
  for (std::size_t i = 0; same && i < dims.size(); ++i) {
    same = dims[i] == 1 || strides[i] == want.strides[i];
  }
  if (!same) {
    raise(ErrorCode::ShapeMismatch,
          what.text() + ": " + kind + " of dims " + dims_text(dims) + " and strides " +
              dims_text(strides) + ", where tensor '" + want.layout->name + "' (uid " +
              std::to_string(want.layout->uid) + ") has dims " + dims_text(want.dims) +
              " and strides " + dims_text(want.strides) +
              " in this call (a view of other strides needs .contiguous() or a graph tensor "
              "with those strides; an int device pointer is taken unchecked)");
  }
}

[[noreturn]] void wrong_type(const Argument& what, const std::string& given, const Want& want) {
  raise(ErrorCode::InvalidAttribute, what.text() + ": a buffer of " + given + ", where tensor '" +
                                         want.layout->name + "' (uid " +
                                         std::to_string(want.layout->uid) + ") is " +
                                         std::string(to_string(want.layout->type)));
}

// A tuple of ints (torch.Size, a stride tuple, a __cuda_array_interface__ entry) into `out`.
void ints_of(PyObject* tuple, const Argument& what, const char* field,
             std::vector<std::int64_t>& out) {
  out.clear();
  if (tuple == nullptr || PyTuple_Check(tuple) == 0) {
    PyErr_Clear();
    invalid(what, std::string("its ") + field + " is not a tuple of ints");
  }
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  for (Py_ssize_t i = 0; i < n; ++i) {
    out.push_back(int64_from(PyTuple_GET_ITEM(tuple, i), what, static_cast<std::size_t>(i)));
  }
}

// torch's dtype object for a data type (borrowed; null when this torch has none).
PyObject* torch_dtype(DataType type) {
  static std::array<PyObject*, 11> table{};  // guarded by the GIL; kept for the process
  static bool filled = false;
  if (!filled) {
    PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
    if (torch == nullptr) {
      return nullptr;
    }
    constexpr std::array<const char*, 11> names{"float16", "bfloat16",      "float32",    "float64",
                                                "int8",    "int32",         "int64",      "uint8",
                                                "bool",    "float8_e4m3fn", "float8_e5m2"};
    for (std::size_t i = 0; i < names.size(); ++i) {
      table[i] = PyObject_GetAttrString(torch, names[i]);
      if (table[i] == nullptr) {
        PyErr_Clear();
      }
    }
    filled = true;
  }
  const auto index = static_cast<std::size_t>(type);
  return index < table.size() ? table[index] : nullptr;
}

void check_torch(PyObject* tensor, const Argument& what, const Want& want) {
  const nb::object dtype = nb::steal(PyObject_GetAttr(tensor, names().dtype));
  if (!dtype.is_valid()) {
    throw nb::python_error();
  }
  if (PyObject* expected = torch_dtype(want.layout->type);
      expected != nullptr && dtype.ptr() != expected) {
    wrong_type(what, std::string("type ") + nb::str(dtype).c_str(), want);
  }
  thread_local std::vector<std::int64_t> dims;
  thread_local std::vector<std::int64_t> strides;
  const nb::object shape = nb::steal(PyObject_GetAttr(tensor, names().shape));
  ints_of(shape.ptr(), what, "shape", dims);
  const nb::object stride = nb::steal(PyObject_CallMethodNoArgs(tensor, names().stride));
  ints_of(stride.ptr(), what, "stride()", strides);
  check_dims(what, "a torch tensor", dims, strides, want);
}

// DLPack's (code, bits) of a data type; FP8 has no code in the DLPack nanobind reads, so only
// its width is compared.
bool same_dlpack_type(nb::dlpack::dtype given, DataType type) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(given.code);
  const auto bits = static_cast<std::int64_t>(given.bits);
  if (given.lanes != 1 || bits != 8 * size_of(type)) {
    return false;
  }
  switch (type) {
    case DataType::Half:
    case DataType::Float:
    case DataType::Double: return code == Code::Float;
    case DataType::BFloat16: return code == Code::Bfloat;
    case DataType::Int8:
    case DataType::Int32:
    case DataType::Int64: return code == Code::Int;
    case DataType::Uint8: return code == Code::UInt;
    case DataType::Boolean: return code == Code::Bool;
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2: return true;
  }
  return false;
}

void check_dlpack(const nb::ndarray<>& array, const Argument& what, const Want& want) {
  if (!same_dlpack_type(array.dtype(), want.layout->type)) {
    wrong_type(what,
               "DLPack type code " + std::to_string(array.dtype().code) + ", " +
                   std::to_string(array.dtype().bits) + " bits",
               want);
  }
  thread_local std::vector<std::int64_t> dims;
  thread_local std::vector<std::int64_t> strides;
  dims.clear();
  strides.clear();
  for (std::size_t i = 0; i < array.ndim(); ++i) {
    dims.push_back(static_cast<std::int64_t>(array.shape(i)));
    strides.push_back(array.stride(i));
  }
  check_dims(what, "a DLPack tensor", dims, strides, want);
}

// __cuda_array_interface__: shape, strides in bytes (None: C-contiguous), and the element
// size from typestr (its kind letters vary by producer, so only the size is compared).
void check_cuda_array_interface(PyObject* interface, const Argument& what, const Want& want) {
  PyObject* typestr = PyDict_GetItemString(interface, "typestr");  // borrowed
  const char* text = typestr != nullptr ? PyUnicode_AsUTF8(typestr) : nullptr;
  if (text == nullptr || std::char_traits<char>::length(text) < 3) {
    PyErr_Clear();
    invalid(what, "its __cuda_array_interface__ has no typestr");
  }
  const std::int64_t itemsize = std::strtoll(text + 2, nullptr, 10);
  if (itemsize != size_of(want.layout->type)) {
    wrong_type(what, "elements of " + std::to_string(itemsize) + " bytes (typestr " + text + ")",
               want);
  }
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  ints_of(PyDict_GetItemString(interface, "shape"), what, "__cuda_array_interface__ shape", dims);
  PyObject* given = PyDict_GetItemString(interface, "strides");
  if (given == nullptr || given == Py_None) {
    strides.assign(dims.size(), 1);
    for (std::size_t i = dims.size(); i > 1; --i) {
      strides[i - 2] = strides[i - 1] * dims[i - 1];
    }
  } else {
    ints_of(given, what, "__cuda_array_interface__ strides", strides);
    for (std::size_t i = 0; i < strides.size(); ++i) {
      if (strides[i] % itemsize != 0) {  // byte strides: whole elements only, never rounded
        invalid(what, "__cuda_array_interface__ stride " + std::to_string(i) + " is " +
                          std::to_string(strides[i]) + " bytes, not a multiple of the item size " +
                          std::to_string(itemsize));
      }
      strides[i] /= itemsize;
    }
  }
  check_dims(what, "a __cuda_array_interface__ buffer", dims, strides, want);
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

void* pointer_from_torch(PyObject* tensor, const Argument& what, const Want* want) {
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
  if (want != nullptr) {
    check_torch(tensor, what, *want);
  }
  const nb::object address = nb::steal(PyObject_CallMethodNoArgs(tensor, names().data_ptr));
  if (!address.is_valid()) {
    throw nb::python_error();
  }
  return pointer_from_int(address.ptr(), what);
}

// __cuda_array_interface__["data"][0], or nullopt-like false when the object has none.
bool pointer_from_cuda_array_interface(PyObject* object, const Argument& what, const Want* want,
                                       void*& out) {
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
  if (want != nullptr) {
    check_cuda_array_interface(interface.ptr(), what, *want);
  }
  out = pointer_from_int(PyTuple_GET_ITEM(data, 0), what);
  return true;
}

bool pointer_from_dlpack(PyObject* object, const Argument& what, const Want* want, void*& out) {
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
  if (want != nullptr) {
    check_dlpack(array, what, *want);
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

// What uid's buffer must be in this call (nullopt: the graph has no such tensor; the C++ call
// reports that).
std::optional<Want> want_of(std::int64_t uid, std::span<const BufferLayout> layouts,
                            const OverrideLists& overrides) {
  const auto found = std::ranges::lower_bound(layouts, uid, {}, &BufferLayout::uid);
  if (found == layouts.end() || found->uid != uid) {
    return std::nullopt;
  }
  Want want{&*found, found->dims, found->strides};
  for (std::size_t i = 0; i < overrides.uids.size(); ++i) {
    if (overrides.uids[i] == uid && i < overrides.shapes.size() && i < overrides.strides.size()) {
      want.dims = overrides.shapes[i];
      want.strides = overrides.strides[i];
      break;
    }
  }
  return want;
}

// The pointer of one entry, checked against its uid's layout.
void* entry_pointer(PyObject* value, std::int64_t uid, std::span<const BufferLayout> layouts,
                    const OverrideLists& overrides) {
  const std::optional<Want> want = want_of(uid, layouts, overrides);
  return pointer_of(value, {"variant_pack", uid}, want ? &*want : nullptr);
}

// Writes each entry's pointer into `pack` when it holds exactly the dict's uids already (the
// steady state: the same graph run again); false otherwise (then nothing may be assumed).
bool update_in_place(PyObject* dict, std::unordered_map<std::int64_t, void*>& pack,
                     std::span<const BufferLayout> layouts, const OverrideLists& overrides) {
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
    found->second = entry_pointer(value, uid, layouts, overrides);
  }
  return true;
}

void* pointer_of(nb::handle object, const Argument& what, const Want* want) {
  PyObject* o = object.ptr();
  if (PyLong_CheckExact(o) != 0) {
    return pointer_from_int(o, what);
  }
  if (PyTypeObject* torch = torch_tensor_type(); torch != nullptr && PyObject_TypeCheck(o, torch)) {
    return pointer_from_torch(o, what, want);
  }
  void* address = nullptr;
  if (pointer_from_cuda_array_interface(o, what, want, address) ||
      pointer_from_dlpack(o, what, want, address)) {
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

std::vector<BufferLayout> buffer_layouts(const Graph& graph) {
  std::vector<BufferLayout> layouts;
  auto io = graph.io_tensors();
  if (!io) {
    return layouts;  // not validated: execute() reports that itself
  }
  for (const auto& t : *io) {
    const std::optional<std::int64_t> uid = t->uid();
    const std::optional<DataType> type = t->data_type();
    if (uid && type) {
      layouts.push_back({*uid, t->name(), t->dim(), t->stride(), *type, t->is_ragged()});
    }
  }
  std::ranges::sort(layouts, {}, &BufferLayout::uid);
  return layouts;
}

void* optional_device_pointer(nb::handle object, const char* what) {
  return object.is_none() ? nullptr : device_pointer(object, what);
}

std::int64_t buffer_bytes(nb::handle object, const char* what) {
  PyTypeObject* torch = torch_tensor_type();
  if (torch == nullptr || PyObject_TypeCheck(object.ptr(), torch) == 0) {
    invalid({what}, "its size is known only for a torch tensor; give the size in bytes");
  }
  const nb::object numel = nb::steal(PyObject_CallMethodNoArgs(object.ptr(), names().numel));
  const nb::object size = nb::steal(PyObject_CallMethodNoArgs(object.ptr(), names().element_size));
  if (!numel.is_valid() || !size.is_valid()) {
    throw nb::python_error();
  }
  return int64_from(numel.ptr(), {what}, 0) * int64_from(size.ptr(), {what}, 0);
}

std::optional<std::int64_t> torch_bytes(nb::handle object) {
  PyTypeObject* torch = torch_tensor_type();
  if (object.is_none() || torch == nullptr || PyObject_TypeCheck(object.ptr(), torch) == 0) {
    return std::nullopt;
  }
  return buffer_bytes(object, "workspace");
}

void* workspace_pointer(nb::handle object, std::int64_t needed) {
  if (object.is_none()) {
    return nullptr;
  }
  void* address = device_pointer(object, "workspace");
  if (needed > 0) {
    if (const auto bytes = torch_bytes(object); bytes && *bytes < needed) {
      raise(ErrorCode::InvalidAttribute, "workspace: a torch tensor of " + std::to_string(*bytes) +
                                             " bytes, where the plan needs " +
                                             std::to_string(needed) + " (get_workspace_size())");
    }
  }
  return address;
}

CallBuffers::CallBuffers()
    : own_(thread_storage.in_use ? std::make_unique<Storage>() : nullptr),
      storage_(own_ ? own_.get() : &thread_storage) {
  storage_->in_use = true;
}

CallBuffers::~CallBuffers() { storage_->in_use = false; }

const std::unordered_map<std::int64_t, void*>& CallBuffers::variant_pack(
    nb::handle mapping, std::span<const BufferLayout> layouts, const OverrideLists& overrides) {
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
  if (update_in_place(dict.ptr(), pack, layouts, overrides)) {
    return pack;
  }
  pack.clear();
  Py_ssize_t position = 0;
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  while (PyDict_Next(dict.ptr(), &position, &key, &value) != 0) {
    const std::int64_t uid = uid_from(key);
    pack[uid] = entry_pointer(value, uid, layouts, overrides);
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
