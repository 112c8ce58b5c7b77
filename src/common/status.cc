#include "kvpool/status.h"

#include <fmt/format.h>

namespace kvpool {
namespace {

struct CodeName {
  ErrorCode code;
  const char* name;
};

#define KVPOOL_CODE(c) \
  { ErrorCode::c, #c }
constexpr CodeName kNames[] = {
    KVPOOL_CODE(OK),
    KVPOOL_CODE(INTERNAL_ERROR),
    KVPOOL_CODE(BUFFER_OVERFLOW),
    KVPOOL_CODE(SHARD_INDEX_OUT_OF_RANGE),
    KVPOOL_CODE(SEGMENT_NOT_FOUND),
    KVPOOL_CODE(SEGMENT_ALREADY_EXISTS),
    KVPOOL_CODE(CLIENT_NOT_FOUND),
    KVPOOL_CODE(NO_AVAILABLE_HANDLE),
    KVPOOL_CODE(INVALID_VERSION),
    KVPOOL_CODE(INVALID_KEY),
    KVPOOL_CODE(WRITE_FAIL),
    KVPOOL_CODE(INVALID_PARAMS),
    KVPOOL_CODE(ILLEGAL_CLIENT),
    KVPOOL_CODE(INVALID_WRITE),
    KVPOOL_CODE(INVALID_READ),
    KVPOOL_CODE(INVALID_REPLICA),
    KVPOOL_CODE(REPLICA_IS_NOT_READY),
    KVPOOL_CODE(OBJECT_NOT_FOUND),
    KVPOOL_CODE(OBJECT_ALREADY_EXISTS),
    KVPOOL_CODE(OBJECT_HAS_LEASE),
    KVPOOL_CODE(LEASE_EXPIRED),
    KVPOOL_CODE(OBJECT_HAS_REPLICATION_TASK),
    KVPOOL_CODE(REPLICA_NOT_FOUND),
    KVPOOL_CODE(REPLICA_IS_GONE),
    KVPOOL_CODE(OBJECT_REPLICA_BUSY),
    KVPOOL_CODE(TRANSFER_FAIL),
    KVPOOL_CODE(CHECKSUM_MISMATCH),
    KVPOOL_CODE(RPC_FAIL),
    KVPOOL_CODE(RPC_TIMEOUT),
    KVPOOL_CODE(ETCD_OPERATION_ERROR),
    KVPOOL_CODE(UNAVAILABLE_IN_CURRENT_STATUS),
    KVPOOL_CODE(UNAVAILABLE_IN_CURRENT_MODE),
    KVPOOL_CODE(NOT_SUPPORTED),
    KVPOOL_CODE(NOT_LEADER),
    KVPOOL_CODE(FILE_NOT_FOUND),
    KVPOOL_CODE(FILE_OPEN_FAIL),
    KVPOOL_CODE(FILE_READ_FAIL),
    KVPOOL_CODE(FILE_WRITE_FAIL),
    KVPOOL_CODE(TASK_NOT_FOUND),
    KVPOOL_CODE(DFS_SERVICE_UNAVAILABLE),
    KVPOOL_CODE(TENANT_QUOTA_EXCEEDED),
};
#undef KVPOOL_CODE

}  // namespace

std::string ErrorCodeName(ErrorCode code) {
  for (const auto& e : kNames) {
    if (e.code == code) return e.name;
  }
  return fmt::format("UNKNOWN_ERROR({})", static_cast<int32_t>(code));
}

ErrorCode ErrorCodeFromInt(int32_t value) {
  for (const auto& e : kNames) {
    if (static_cast<int32_t>(e.code) == value) return e.code;
  }
  return ErrorCode::INTERNAL_ERROR;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  if (message_.empty()) return ErrorCodeName(code_);
  return ErrorCodeName(code_) + ": " + message_;
}

}  // namespace kvpool
