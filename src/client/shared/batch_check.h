// The checks a batch passes once, before any request is sent for it: by Client::Put / Get for
// a caller's batch, and by the node's attach service for a batch a standalone client sent
// (which the node does not take on trust). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kvpool/batch.h"
#include "kvpool/client.h"

namespace kvpool::client {

// What a put of `objects` objects asks of its placement: INVALID_PARAMS when replica_num is 0,
// or group_ids is neither empty nor one non-empty id per object.
Status CheckPlacement(const ReplicateConfig& config, size_t objects);

// Sets results[i] (OK on entry) of each object of `batch` that cannot be put: INVALID_KEY (empty
// or too long a key), INVALID_PARAMS (0 bytes). REQUIRES: results.size() == batch.size().
void CheckPutObjects(const ObjectBatch& batch, std::vector<Status>& results);

// Sets results[i] (OK on entry) of each key that is not valid (INVALID_KEY).
void CheckGetKeys(const std::vector<std::string>& keys, std::vector<Result<uint64_t>>& results);

}  // namespace kvpool::client
