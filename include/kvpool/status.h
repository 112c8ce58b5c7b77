// kvpool's one error type. Every fallible call in the project returns a Status or a Result<T>.
//
// Error numbers match Mooncake Store's where the meaning matches, so callers (and the Python
// binding) can keep their tables. Each code's retry meaning is written beside it:
//   [retry]      the same call may succeed later (transient).
//   [redo]       redo the whole operation (e.g. a put from put_start) after a short back-off.
//   [no-retry]   the request itself is wrong or the answer is final; retrying cannot help.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kvpool {

enum class ErrorCode : int32_t {
  OK = 0,
  INTERNAL_ERROR = -1,              // [no-retry] a bug or broken invariant; see the log.
  BUFFER_OVERFLOW = -10,            // [no-retry] destination buffer smaller than the object.
  SHARD_INDEX_OUT_OF_RANGE = -100,  // [no-retry]
  SEGMENT_NOT_FOUND = -101,         // [redo] the segment was unmounted (its node left).
  SEGMENT_ALREADY_EXISTS = -102,    // [no-retry] a segment with that name is mounted.
  CLIENT_NOT_FOUND = -103,          // [redo] master does not know the client (expired/restarted).
  NO_AVAILABLE_HANDLE = -200,       // [retry] no space, nothing evictable right now.
  INVALID_VERSION = -300,           // [no-retry] protocol version mismatch between peers.
  INVALID_KEY = -400,               // [no-retry] empty or over-long key.
  WRITE_FAIL = -500,                // [redo]
  INVALID_PARAMS = -600,            // [no-retry] bad argument; the message names it.
  ILLEGAL_CLIENT = -601,            // [no-retry] caller may not do this (e.g. not the writer).
  INVALID_WRITE = -700,             // [no-retry] write outside a segment or registered region.
  INVALID_READ = -701,              // [no-retry] read outside a segment or registered region.
  INVALID_REPLICA = -702,           // [redo]
  REPLICA_IS_NOT_READY = -703,      // [retry] object is still being written.
  OBJECT_NOT_FOUND = -704,          // [no-retry] no such key (or not complete).
  OBJECT_ALREADY_EXISTS = -705,     // [no-retry]
  OBJECT_HAS_LEASE = -706,          // [retry] object is leased by a reader; use force or wait.
  LEASE_EXPIRED = -707,             // [redo] the transfer outlived its read lease.
  // [retry] Mooncake's refusal of a remove or upsert while a copy, move, promotion or started
  // offload task runs on the object. kvpool runs no such tasks (its disk offload never blocks a
  // remove or upsert), so it never returns it; defined so the number keeps its meaning.
  OBJECT_HAS_REPLICATION_TASK = -708,
  REPLICA_NOT_FOUND = -710,  // [redo]
  REPLICA_IS_GONE = -712,    // [redo]
  // [retry] an upsert of an object a reader's transfer holds (its read lease); goes through once
  // the read ends. Mooncake's number for the same refusal (a remove says OBJECT_HAS_LEASE).
  OBJECT_REPLICA_BUSY = -714,
  TRANSFER_FAIL = -800,      // [redo] the byte transfer with a node failed.
  CHECKSUM_MISMATCH = -801,  // [redo] bytes read do not match the object's checksum.
  RPC_FAIL = -900,           // [retry] peer unreachable or connection broken.
  RPC_TIMEOUT = -901,        // [retry] the call's deadline passed.
  // [retry] etcd (master high availability) unreachable or its answer unusable; the message
  // names the endpoints tried. Mooncake's number.
  ETCD_OPERATION_ERROR = -1000,
  UNAVAILABLE_IN_CURRENT_STATUS = -1010,  // [retry] e.g. client not set up, node draining.
  UNAVAILABLE_IN_CURRENT_MODE = -1011,    // [no-retry]
  NOT_SUPPORTED = -1012,                  // [no-retry]
  // [retry after re-resolving] the master asked is not the pool's leader now (a standby, a
  // leader that lost its etcd lease, or an answer from an older leadership epoch): ask etcd who
  // leads and send the request there. A client given an etcd:// address does that itself
  // within the call's deadline (docs/failure-model.md, "Master high availability").
  NOT_LEADER = -1050,
  FILE_NOT_FOUND = -1100,   // [no-retry]
  FILE_OPEN_FAIL = -1101,   // [no-retry]
  FILE_READ_FAIL = -1102,   // [no-retry]
  FILE_WRITE_FAIL = -1103,  // [no-retry]
  // [no-retry] query_task of a task id the pool does not know (kvpool runs no replica tasks,
  // so every id is unknown). Mooncake's number.
  TASK_NOT_FOUND = -1400,
  // [no-retry] a put or upsert asked for a DFS replica (dfs_replica_num 1) and the pool has no
  // DFS backend (kvpool has none). Mooncake's number.
  DFS_SERVICE_UNAVAILABLE = -1601,
  TENANT_QUOTA_EXCEEDED = -1700,  // [retry]
};

// The enum's name ("OBJECT_NOT_FOUND"); "UNKNOWN_ERROR(<n>)" for a number not in the enum.
std::string ErrorCodeName(ErrorCode code);
// Maps a number received from a peer to the enum; numbers kvpool does not know map to
// INTERNAL_ERROR so a newer peer cannot smuggle an undefined enum value into a switch.
ErrorCode ErrorCodeFromInt(int32_t value);

// A code plus a message with context (which key, segment, address). Cheap to move; OK carries
// no message. Thread-compatible.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::OK; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OBJECT_NOT_FOUND: key=abc not found" (or "OK").
  std::string ToString() const;

  bool operator==(ErrorCode c) const { return code_ == c; }

 private:
  ErrorCode code_ = ErrorCode::OK;
  std::string message_;
};

// Either a value or a non-OK Status.
// REQUIRES: value() only when ok(); status() may always be called (OK when a value is held).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)
  Result(ErrorCode code, std::string message) : v_(Status(code, std::move(message))) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  ErrorCode code() const { return ok() ? ErrorCode::OK : std::get<Status>(v_).code(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kvpool

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define KVPOOL_RETURN_IF_ERROR(expr)  \
  do {                                \
    ::kvpool::Status _kv_st = (expr); \
    if (!_kv_st.ok()) return _kv_st;  \
  } while (0)
