#include "client/shared/batch_check.h"

#include <fmt/format.h>

#include "client/shared/replicate_config_proto.h"
#include "common/keys.h"

namespace kvpool::client {

Status CheckPlacement(const ReplicateConfig& config, size_t objects) {
  if (config.replica_num == 0) {
    return Status(ErrorCode::INVALID_PARAMS, "replica_num must be at least 1");
  }
  return CheckGroupIds(config, objects);
}

void CheckPutObjects(const ObjectBatch& batch, std::vector<Status>& results) {
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!results[i].ok()) continue;
    results[i] = ValidateKey(batch.key(i));
    if (results[i].ok() && batch.bytes(i) == 0) {
      results[i] =
          Status(ErrorCode::INVALID_PARAMS, fmt::format("key={}: size is 0", batch.key(i)));
    }
  }
}

void CheckGetKeys(const std::vector<std::string>& keys, std::vector<Result<uint64_t>>& results) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!results[i].ok()) continue;
    if (Status st = ValidateKey(keys[i]); !st.ok()) results[i] = st;
  }
}

}  // namespace kvpool::client
