// remove_by_regex and list_keys: the master lists this client's tenant one bounded page per
// request (master/master_scan.cc, narrowed to a literal prefix when the pattern starts with
// one); the pattern is matched here, with the GIL released, so an expensive regular expression
// costs the caller's thread and never the master's request path. Removal is a batch remove of
// each page's matches, so it follows remove's rules (leased objects only with force).
#include <fmt/format.h>

#include <regex>

#include "python/errors.h"
#include "python/store.h"

namespace py = pybind11;

namespace kvpool::python {
namespace {

// Pages one call follows at most: a scan that keeps finding more keys (a writer racing it)
// still ends. 1 Mi pages of up to 10000 keys is far beyond any pool.
constexpr size_t kMaxScanPages = 1 << 20;

// The literal prefix every match of an ECMAScript `pattern` starts with ("" when unknown): the
// characters after a leading '^' up to the first one with a special meaning. A quantifier or
// an alternation after them gives them up (it may apply to the last one or to all).
std::string LiteralPrefix(const std::string& pattern) {
  if (pattern.empty() || pattern[0] != '^') return "";
  std::string prefix;
  for (size_t i = 1; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '|') return "";  // ^a|b: b need not start the key
    if (std::string_view("*+?{").find(c) != std::string_view::npos) {
      if (!prefix.empty() && c != '+') prefix.pop_back();  // the last char may be absent
      break;
    }
    if (std::string_view(".[]()\\^$").find(c) != std::string_view::npos) break;
    prefix.push_back(c);
  }
  if (pattern.find('|') != std::string::npos) return "";
  return prefix;
}

Result<std::regex> Compile(const std::string& pattern, const char* call) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{}: pattern '{}' does not compile: {}", call, pattern, e.what()));
  }
}

// Calls `page(keys matching re)` for every page of the scan; stops at the first failure.
template <typename F>
Status ForEachMatchingPage(Client& c, const std::string& pattern, const std::regex& re,
                           uint32_t page_size, F&& page) {
  const std::string prefix = LiteralPrefix(pattern);
  std::string cursor;
  for (size_t n = 0; n < kMaxScanPages; ++n) {
    auto r = c.ScanKeys(prefix, cursor, page_size);
    if (!r.ok()) return r.status();
    std::vector<std::string> matching;
    for (auto& k : r->keys) {
      if (std::regex_search(k, re)) matching.push_back(std::move(k));
    }
    if (!matching.empty() && !page(std::move(matching))) return Status::Ok();
    cursor = std::move(r->next_cursor);
    if (cursor.empty()) return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace

int64_t Store::RemoveByRegex(const std::string& pattern, bool force) {
  auto c = client();
  if (!c.ok()) return ToPyCode(c.status());
  auto re = Compile(pattern, "remove_by_regex");
  if (!re.ok()) return ToPyCode(re.status());
  uint64_t removed = 0;
  Status failed;
  {
    py::gil_scoped_release nogil;
    failed = ForEachMatchingPage(**c, pattern, *re, 0, [&](const std::vector<std::string>& keys) {
      // Leased (without force), pending or meanwhile removed keys are skipped, as Mooncake's.
      for (const Status& st : (*c)->BatchRemove(keys, force)) removed += st.ok() ? 1 : 0;
      return true;
    });
  }
  // A failure on the first page is the call's result; later ones would hide removals already
  // done, so the count stands and the failure is only recorded for last_error().
  if (!failed.ok()) {
    if (removed == 0) return ToPyCode(failed);
    SetLastError(failed);
  }
  return static_cast<int64_t>(removed);
}

py::object Store::ListKeys(const std::string& pattern, uint64_t max_keys, uint32_t page_size) {
  auto c = client();
  if (!c.ok()) return py::int_(ToPyCode(c.status()));
  auto re = Compile(pattern, "list_keys");
  if (!re.ok()) return py::int_(ToPyCode(re.status()));
  std::vector<std::string> keys;
  Status failed;
  {
    py::gil_scoped_release nogil;
    failed = ForEachMatchingPage(**c, pattern, *re, page_size, [&](std::vector<std::string> page) {
      for (auto& k : page) {
        if (max_keys != 0 && keys.size() >= max_keys) return false;
        keys.push_back(std::move(k));
      }
      return max_keys == 0 || keys.size() < max_keys;
    });
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
