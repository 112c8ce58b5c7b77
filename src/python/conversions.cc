#include "python/conversions.h"

#include <fmt/format.h>

#include "common/units.h"

namespace py = pybind11;

namespace kvpool::python {

std::vector<void*> AsPointers(const std::vector<uintptr_t>& addresses) {
  std::vector<void*> out;
  out.reserve(addresses.size());
  for (uintptr_t a : addresses) out.push_back(AsPointer(a));
  return out;
}

std::vector<const void*> AsConstPointers(const std::vector<uintptr_t>& addresses) {
  std::vector<const void*> out;
  out.reserve(addresses.size());
  for (uintptr_t a : addresses) out.push_back(AsPointer(a));
  return out;
}

std::vector<std::vector<void*>> AsPointerLists(const std::vector<std::vector<uintptr_t>>& lists) {
  std::vector<std::vector<void*>> out;
  out.reserve(lists.size());
  for (const auto& l : lists) out.push_back(AsPointers(l));
  return out;
}

std::vector<std::vector<const void*>> AsConstPointerLists(
    const std::vector<std::vector<uintptr_t>>& lists) {
  std::vector<std::vector<const void*>> out;
  out.reserve(lists.size());
  for (const auto& l : lists) out.push_back(AsConstPointers(l));
  return out;
}

Result<ObjectBatch> OneBufferBatch(std::vector<std::string> keys,
                                   const std::vector<uintptr_t>& addresses,
                                   const std::vector<uint64_t>& sizes) {
  if (addresses.size() != keys.size() || sizes.size() != keys.size()) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("batch of {} keys came with {} buffer lists and {} size lists",
                              keys.size(), addresses.size(), sizes.size()));
  }
  ObjectBatch batch;
  batch.Reserve(keys.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    batch.Add(std::move(keys[i]), AsPointer(addresses[i]), sizes[i]);
  }
  return batch;
}

ByteView::ByteView(py::handle obj, bool writable) {
  int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) {
    // Replace the exporter's BufferError with a TypeError that says what is accepted.
    PyErr_Clear();
    throw py::type_error(fmt::format(
        "expected a C-contiguous{} buffer (bytes, bytearray, memoryview, numpy array), got {}",
        writable ? " writable" : "", std::string(py::str(py::type::of(obj).attr("__name__")))));
  }
  held_ = true;
}

ByteView::ByteView(ByteView&& other) noexcept : view_(other.view_), held_(other.held_) {
  other.held_ = false;
  other.view_ = Py_buffer{};
}

ByteView::~ByteView() {
  if (held_) PyBuffer_Release(&view_);
}

std::vector<std::vector<ByteView>> ByteViewLists(const py::list& values, bool writable) {
  std::vector<std::vector<ByteView>> out;
  out.reserve(values.size());
  for (py::handle v : values) {
    std::vector<ByteView> parts;
    if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
      for (py::handle p : v) parts.emplace_back(p, writable);
    } else {
      parts.emplace_back(v, writable);
    }
    out.push_back(std::move(parts));
  }
  return out;
}

Result<uint64_t> SizeFromPy(py::handle obj, std::string_view what) {
  if (py::isinstance<py::bool_>(obj)) {
    return Status(ErrorCode::INVALID_PARAMS, fmt::format("{} must be a size, not a bool", what));
  }
  if (py::isinstance<py::int_>(obj)) {
    // Python ints are unbounded: compare before converting.
    if (obj < py::int_(0)) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("{}={} is negative", what, std::string(py::str(obj))));
    }
    if (obj > py::int_(INT64_MAX)) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("{}={} is too large", what, std::string(py::str(obj))));
    }
    return obj.cast<uint64_t>();
  }
  if (py::isinstance<py::str>(obj)) return ParseSize(obj.cast<std::string>(), what);
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("{} must be an int or a string like \"4gb\", not {}", what,
                            std::string(py::str(py::type::of(obj).attr("__name__")))));
}

bool KeyViews::Load(py::handle src) {
  PyObject* obj = src.ptr();
  if (obj == nullptr || PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj) ||
      !PySequence_Check(obj)) {
    return false;
  }
  PyObject* tuple = PySequence_Tuple(obj);  // a tuple comes back as itself, a list is copied
  if (tuple == nullptr) {
    PyErr_Clear();
    return false;
  }
  items_ = py::reinterpret_steal<py::object>(tuple);
  const Py_ssize_t n = PyTuple_GET_SIZE(tuple);
  views_.clear();
  views_.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyTuple_GET_ITEM(tuple, i);
    if (PyUnicode_Check(item)) {
      Py_ssize_t len = 0;
      // ASCII str: its own bytes; others: UTF-8 the str object caches and owns.
      const char* p = PyUnicode_AsUTF8AndSize(item, &len);
      if (p == nullptr) {  // lone surrogates: not UTF-8, refused as pybind11 refuses them
        PyErr_Clear();
        return false;
      }
      views_.emplace_back(p, static_cast<size_t>(len));
    } else if (PyBytes_Check(item)) {
      views_.emplace_back(PyBytes_AS_STRING(item), static_cast<size_t>(PyBytes_GET_SIZE(item)));
    } else if (PyByteArray_Check(item)) {
      views_.emplace_back(copies_.emplace_back(PyByteArray_AS_STRING(item),
                                               static_cast<size_t>(PyByteArray_GET_SIZE(item))));
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace kvpool::python
