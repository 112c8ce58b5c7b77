#include "python/errors.h"

#include <utility>

namespace py = pybind11;

namespace kvpool::python {
namespace {

// Every code kvpool returns. Python ints are the enum's numbers, which equal Mooncake Store's
// (see include/kvpool/status.h); a test pins each number against the reference list.
constexpr ErrorCode kCodes[] = {
    ErrorCode::OK,
    ErrorCode::INTERNAL_ERROR,
    ErrorCode::BUFFER_OVERFLOW,
    ErrorCode::SHARD_INDEX_OUT_OF_RANGE,
    ErrorCode::SEGMENT_NOT_FOUND,
    ErrorCode::SEGMENT_ALREADY_EXISTS,
    ErrorCode::CLIENT_NOT_FOUND,
    ErrorCode::NO_AVAILABLE_HANDLE,
    ErrorCode::INVALID_VERSION,
    ErrorCode::INVALID_KEY,
    ErrorCode::WRITE_FAIL,
    ErrorCode::INVALID_PARAMS,
    ErrorCode::ILLEGAL_CLIENT,
    ErrorCode::INVALID_WRITE,
    ErrorCode::INVALID_READ,
    ErrorCode::INVALID_REPLICA,
    ErrorCode::REPLICA_IS_NOT_READY,
    ErrorCode::OBJECT_NOT_FOUND,
    ErrorCode::OBJECT_ALREADY_EXISTS,
    ErrorCode::OBJECT_HAS_LEASE,
    ErrorCode::LEASE_EXPIRED,
    ErrorCode::OBJECT_HAS_REPLICATION_TASK,
    ErrorCode::REPLICA_NOT_FOUND,
    ErrorCode::REPLICA_IS_GONE,
    ErrorCode::OBJECT_REPLICA_BUSY,
    ErrorCode::TRANSFER_FAIL,
    ErrorCode::CHECKSUM_MISMATCH,
    ErrorCode::RPC_FAIL,
    ErrorCode::RPC_TIMEOUT,
    ErrorCode::ETCD_OPERATION_ERROR,
    ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS,
    ErrorCode::UNAVAILABLE_IN_CURRENT_MODE,
    ErrorCode::NOT_SUPPORTED,
    ErrorCode::NOT_LEADER,
    ErrorCode::FILE_NOT_FOUND,
    ErrorCode::FILE_OPEN_FAIL,
    ErrorCode::FILE_READ_FAIL,
    ErrorCode::FILE_WRITE_FAIL,
    ErrorCode::TASK_NOT_FOUND,
    ErrorCode::DFS_SERVICE_UNAVAILABLE,
    ErrorCode::TENANT_QUOTA_EXCEEDED,
};

thread_local std::string t_last_error;

// kvpool._kvpool.KVPoolError; created once at import, lives as long as the interpreter.
PyObject* g_error_type = nullptr;

}  // namespace

int ToPyCode(ErrorCode code) { return static_cast<int>(code); }

int ToPyCode(const Status& status) {
  if (status.ok()) return 0;
  SetLastError(status);
  return ToPyCode(status.code());
}

int64_t ToPyResult(const Result<uint64_t>& result) {
  if (result.ok()) return static_cast<int64_t>(result.value());
  return ToPyCode(result.status());
}

std::vector<int> ToPyCodes(const std::vector<Status>& statuses) {
  std::vector<int> out;
  out.reserve(statuses.size());
  for (const auto& s : statuses) out.push_back(ToPyCode(s));
  return out;
}

std::vector<int64_t> ToPyResults(const std::vector<Result<uint64_t>>& results) {
  std::vector<int64_t> out;
  out.reserve(results.size());
  for (const auto& r : results) out.push_back(ToPyResult(r));
  return out;
}

py::str TextToPy(std::string_view text) {
  PyObject* s =
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "backslashreplace");
  if (s == nullptr) throw py::error_already_set();  // out of memory
  return py::reinterpret_steal<py::str>(s);
}

void SetLastError(const Status& status) { t_last_error = status.ToString(); }

const std::string& LastError() { return t_last_error; }

void ThrowStatus(const Status& status) {
  SetLastError(status);
  py::object type = py::reinterpret_borrow<py::object>(g_error_type);
  py::object exc = type(TextToPy(status.ToString()));
  exc.attr("code") = ToPyCode(status.code());
  exc.attr("name") = ErrorCodeName(status.code());
  PyErr_SetObject(g_error_type, exc.ptr());
  throw py::error_already_set();
}

void LogWarning(const std::string& message) {
  py::module_::import("logging").attr("getLogger")("kvpool").attr("warning")(TextToPy(message));
}

void BindErrors(py::module_& m) {
  g_error_type = PyErr_NewExceptionWithDoc(
      "kvpool._kvpool.KVPoolError",
      "A kvpool call failed. .code is the error number (negative), .name its name.",
      PyExc_RuntimeError, nullptr);
  m.attr("KVPoolError") = py::handle(g_error_type);

  m.def(
      "error_table",
      [] {
        std::vector<std::pair<std::string, int>> table;
        for (ErrorCode c : kCodes) table.emplace_back(ErrorCodeName(c), ToPyCode(c));
        return table;
      },
      "[(name, number)] for every error code kvpool returns (numbers match Mooncake Store's).");
  m.def(
      "error_name", [](int code) { return ErrorCodeName(static_cast<ErrorCode>(code)); },
      py::arg("code"),
      "The name of an error number (\"OBJECT_NOT_FOUND\"); \"UNKNOWN_ERROR(n)\" for others.");
  m.def(
      "_set_last_error",
      [](int code, const std::string& message) {
        SetLastError(Status(static_cast<ErrorCode>(code), message));
        return code;
      },
      py::arg("code"), py::arg("message"),
      "For kvpool's Python layer: records a failure as last_error() shows it; returns code.");
  m.def(
      "last_error", [] { return TextToPy(LastError()); },
      "The message of the most recent failed kvpool call on this thread (\"\" if none). Bytes "
      "of a key that are not valid UTF-8 appear as \\xNN (errors=\"backslashreplace\").");
}

}  // namespace kvpool::python
