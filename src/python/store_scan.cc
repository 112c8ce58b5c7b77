// remove_by_regex and list_keys: the master scans this client's tenant one bounded page per
// request (master/master_scan.cc); these calls follow the pages with the GIL released.
#include <fmt/format.h>

#include "python/errors.h"
#include "python/store.h"

namespace py = pybind11;

namespace kvpool::python {
namespace {

// Pages one call follows at most: a scan that keeps finding more keys (a writer racing it)
// still ends. 1 Mi pages of up to 10000 keys is far beyond any pool.
constexpr size_t kMaxScanPages = 1 << 20;

}  // namespace

int64_t Store::RemoveByRegex(const std::string& pattern, bool force) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  uint64_t removed = 0;
  Status failed;
  {
    py::gil_scoped_release nogil;
    std::string cursor;
    for (size_t page = 0; page < kMaxScanPages; ++page) {
      auto r = (*c)->ScanKeys(pattern, cursor, 0, /*remove=*/true, force);
      if (!r.ok()) {
        failed = r.status();
        break;
      }
      removed += r->removed;
      cursor = std::move(r->next_cursor);
      if (cursor.empty()) break;
    }
  }
  // A failure on the first page (a bad pattern) is the call's result; later ones would hide
  // removals already done, so the count stands and the failure is only recorded.
  if (!failed.ok()) {
    if (removed == 0) return ToPyCode(failed);
    SetLastError(failed);
  }
  return static_cast<int64_t>(removed);
}

py::object Store::ListKeys(const std::string& pattern, uint64_t max_keys, uint32_t page_size) {
  auto c = client();
  if (!c.ok()) return py::int_(ToPyCode(c.status()));
  std::vector<std::string> keys;
  Status failed;
  {
    py::gil_scoped_release nogil;
    std::string cursor;
    for (size_t page = 0; page < kMaxScanPages; ++page) {
      auto r = (*c)->ScanKeys(pattern, cursor, page_size, /*remove=*/false, false);
      if (!r.ok()) {
        failed = r.status();
        break;
      }
      for (auto& k : r->keys) {
        if (max_keys != 0 && keys.size() >= max_keys) break;
        keys.push_back(std::move(k));
      }
      cursor = std::move(r->next_cursor);
      if (cursor.empty() || (max_keys != 0 && keys.size() >= max_keys)) break;
    }
  }
  if (!failed.ok()) return py::int_(ToPyCode(failed));
  py::list out;
  for (const std::string& k : keys) {
    // Keys need not be UTF-8: undecodable bytes come back as surrogates (os.fsdecode style).
    PyObject* s =
        PyUnicode_DecodeUTF8(k.data(), static_cast<Py_ssize_t>(k.size()), "surrogateescape");
    if (s == nullptr) throw py::error_already_set();
    out.append(py::reinterpret_steal<py::object>(s));
  }
  return out;
}

}  // namespace kvpool::python
