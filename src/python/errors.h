// The one table between kvpool's ErrorCode and the integers Python callers see, this thread's
// last error message, and kvpool.KVPoolError for the few calls that raise instead of returning a
// code (allocation, bad sizes in helpers).
//
// Return conventions of the Mooncake-compatible API: 0 (or a byte count, or a count) on success,
// the negative code on failure. The numbers are Mooncake Store's where the meaning matches, so a
// caller's own table keeps working.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kvpool/status.h"

namespace kvpool::python {

// The integer Python sees for `code`.
int ToPyCode(ErrorCode code);
// 0 for OK; otherwise records `status` as this thread's last error and returns its code.
int ToPyCode(const Status& status);
// The byte count for a value, the negative code (recorded as last error) for an error.
int64_t ToPyResult(const Result<uint64_t>& result);
std::vector<int> ToPyCodes(const std::vector<Status>& statuses);
std::vector<int64_t> ToPyResults(const std::vector<Result<uint64_t>>& results);

// The message of the most recent failure on this thread ("OBJECT_NOT_FOUND: key=a not found"),
// "" when there was none. Thread-local: safe to read after a call made with the GIL released.
void SetLastError(const Status& status);
const std::string& LastError();

// `text` as a Python str: UTF-8 decoded, each byte that is not valid UTF-8 as \\xNN (Python's
// errors="backslashreplace"). Messages quote keys, which are any bytes: never raises
// UnicodeDecodeError. REQUIRES: the GIL is held.
pybind11::str TextToPy(std::string_view text);

// Raises kvpool.KVPoolError (a RuntimeError) with .code (int) and .name set from `status`.
[[noreturn]] void ThrowStatus(const Status& status);

// Logs `message` through Python's logging module (logger "kvpool") at WARNING.
// REQUIRES: the GIL is held.
void LogWarning(const std::string& message);

// Exposes error_table(), error_name(), last_error() and KVPoolError on `m`.
void BindErrors(pybind11::module_& m);

}  // namespace kvpool::python
