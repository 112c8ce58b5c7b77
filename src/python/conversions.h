// Conversions between Python objects and the C++ client's types, in one place: byte views of
// buffer-protocol objects, sizes given as ints or "4gb"-style strings, pointers given as ints.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvpool/batch.h"
#include "kvpool/status.h"

namespace kvpool::python {

// A Python int used as an address. The binding never dereferences it: the client checks it
// against the registered regions first (INVALID_PARAMS when outside all of them).
inline void* AsPointer(uintptr_t address) { return reinterpret_cast<void*>(address); }
std::vector<void*> AsPointers(const std::vector<uintptr_t>& addresses);
std::vector<const void*> AsConstPointers(const std::vector<uintptr_t>& addresses);
std::vector<std::vector<void*>> AsPointerLists(const std::vector<std::vector<uintptr_t>>& lists);
std::vector<std::vector<const void*>> AsConstPointerLists(
    const std::vector<std::vector<uintptr_t>>& lists);

// The batch of a call with one buffer per key, built where the call enters (the one form it
// keeps down to the transfer): object i is keys[i] (moved in) at addresses[i], sizes[i] bytes.
// Errors: INVALID_PARAMS naming the lengths when the lists differ.
Result<ObjectBatch> OneBufferBatch(std::vector<std::string> keys,
                                   const std::vector<uintptr_t>& addresses,
                                   const std::vector<uint64_t>& sizes);

// The bytes of a buffer-protocol object (bytes, bytearray, memoryview, numpy array, ...), held
// until destruction. C-contiguous only.
// Throws TypeError (via pybind11) when `obj` exports no contiguous buffer, or a read-only one
// when `writable`. REQUIRES: created and destroyed with the GIL held; data() may be used
// without it while the view lives.
class ByteView {
 public:
  ByteView(pybind11::handle obj, bool writable);
  ~ByteView();
  ByteView(ByteView&& other) noexcept;
  ByteView(const ByteView&) = delete;
  ByteView& operator=(const ByteView&) = delete;
  ByteView& operator=(ByteView&&) = delete;

  uint8_t* data() const { return static_cast<uint8_t*>(view_.buf); }
  size_t size() const { return static_cast<size_t>(view_.len); }
  std::span<const uint8_t> span() const { return {data(), size()}; }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// One view per element of `values`. An element may itself be a list/tuple of buffers (an
// object gathered from, or scattered into, several regions).
std::vector<std::vector<ByteView>> ByteViewLists(const pybind11::list& values, bool writable);

// A batch's keys as views into the caller's Python objects, for calls that only read the keys
// (the exists queries HiCache makes before every prefetch): no std::string per key. Takes what
// pybind11 takes for a List[str] argument: any sequence other than str/bytes itself, of str
// (as UTF-8), bytes or bytearray items. It holds a tuple of the items, so the views stay valid
// while the GIL is released even if the caller's list changes meanwhile; bytearray items (which
// may be resized) are copied.
// REQUIRES: loaded and destroyed with the GIL held; views() may be read without it.
class KeyViews {
 public:
  // false (no Python error set) when `src` is not such a sequence: pybind11 then tries the
  // next overload or raises TypeError, as for List[str].
  bool Load(pybind11::handle src);
  std::span<const std::string_view> views() const { return views_; }
  size_t size() const { return views_.size(); }

 private:
  pybind11::object items_;          // the tuple the views point into
  std::deque<std::string> copies_;  // bytearray items; a deque keeps their addresses
  std::vector<std::string_view> views_;
};

// A byte size given as a non-negative int or a string ParseSize accepts ("4gb", "512 MB").
// Errors: INVALID_PARAMS naming `what` (negative, bool, float, unparsable text, other types).
Result<uint64_t> SizeFromPy(pybind11::handle obj, std::string_view what);

}  // namespace kvpool::python

namespace pybind11::detail {
template <>
struct type_caster<kvpool::python::KeyViews> {
  PYBIND11_TYPE_CASTER(kvpool::python::KeyViews, const_name("List[str]"));
  bool load(handle src, bool /*convert*/) { return value.Load(src); }
};
}  // namespace pybind11::detail
