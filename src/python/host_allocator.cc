#include "python/host_allocator.h"

#include <fmt/format.h>

#include <memory>

#include "python/conversions.h"
#include "python/errors.h"
#include "python/standalone.h"

namespace py = pybind11;

namespace kvpool::python {

#if KVPOOL_PY_HAS_STANDALONE
namespace {

// One allocation owned by Python: freed when the HostBuffer goes, i.e. once no memoryview,
// numpy array or torch tensor made from it is left (they keep it alive through the buffer
// protocol).
class HostBuffer {
 public:
  HostBuffer(std::shared_ptr<HostMemAllocator> allocator, void* ptr, size_t size)
      : allocator_(std::move(allocator)), ptr_(ptr), size_(size) {}
  ~HostBuffer() { (void)allocator_->Free(ptr_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  void* ptr() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  std::shared_ptr<HostMemAllocator> allocator_;
  void* ptr_;
  size_t size_;
};

// The Python class: one C++ allocator shared with the buffers it made. Calls hold the GIL,
// which serialises them.
class PyHostAllocator {
 public:
  PyHostAllocator(bool huge_pages, bool prefault)
      : impl_(std::make_shared<HostMemAllocator>(HostAllocatorOptions{huge_pages, prefault})) {}

  uintptr_t Alloc(py::handle size_obj) {
    void* p = AllocRaw(size_obj).first;
    return reinterpret_cast<uintptr_t>(p);
  }

  int Free(uintptr_t ptr) { return ToPyCode(impl_->Free(AsPointer(ptr))); }

  std::unique_ptr<HostBuffer> AllocBuffer(py::handle size_obj) {
    auto [p, size] = AllocRaw(size_obj);
    return std::make_unique<HostBuffer>(impl_, p, size);
  }

 private:
  std::pair<void*, size_t> AllocRaw(py::handle size_obj) {
    auto size = SizeFromPy(size_obj, "size");
    if (!size.ok()) ThrowStatus(size.status());
    if (*size == 0) ThrowStatus(Status(ErrorCode::INVALID_PARAMS, "alloc: size is 0"));
    Result<void*> p = impl_->Alloc(*size);
    if (!p.ok()) ThrowStatus(p.status());
    return {*p, static_cast<size_t>(*size)};
  }

  std::shared_ptr<HostMemAllocator> impl_;
};

}  // namespace

void BindHostAllocator(py::module_& m) {
  py::class_<HostBuffer>(m, "HostBuffer", py::buffer_protocol(),
                         "Shared memory from HostMemAllocator.alloc_buffer(); writable through "
                         "the buffer protocol; freed when it and every view of it are gone.")
      .def_buffer([](HostBuffer& b) {
        return py::buffer_info(b.ptr(), 1, py::format_descriptor<uint8_t>::format(), 1, {b.size()},
                               {1});
      })
      .def_property_readonly(
          "ptr", [](const HostBuffer& b) { return reinterpret_cast<uintptr_t>(b.ptr()); })
      .def_property_readonly("size", &HostBuffer::size)
      .def("__len__", &HostBuffer::size);

  py::class_<PyHostAllocator> cls(
      m, "HostMemAllocator",
      "Shared memory (memfd + mmap) a standalone kvpool node can map: the memory to register "
      "with a store set up by setup_dummy().");
  cls.def(py::init<bool, bool>(), py::arg("huge_pages") = false, py::arg("prefault") = false)
      .def("alloc", &PyHostAllocator::Alloc,
           "The address of `size` fresh bytes (int). Raises KVPoolError when memory is short. "
           "Free it with free(); it is not freed otherwise.")
      .def("free", &PyHostAllocator::Free,
           "Frees an address alloc() returned: 0, or a negative code for any other address.")
      .def("alloc_buffer", &PyHostAllocator::AllocBuffer, py::arg("size"),
           "A HostBuffer of `size` bytes, freed automatically (for torch/numpy.frombuffer).");
  m.attr("MooncakeHostMemAllocator") = cls;
}

#else  // !KVPOOL_PY_HAS_STANDALONE

void BindHostAllocator(py::module_& m) {
  // Keeps `from kvpool import HostMemAllocator` working; constructing one says why it cannot.
  py::class_<Status> cls(m, "HostMemAllocator");
  cls.def(py::init([](bool, bool) -> Status* {
            ThrowStatus(Status(ErrorCode::NOT_SUPPORTED,
                               "HostMemAllocator: this kvpool build has no standalone mode"));
          }),
          py::arg("huge_pages") = false, py::arg("prefault") = false);
  m.attr("MooncakeHostMemAllocator") = cls;
}

#endif

}  // namespace kvpool::python
