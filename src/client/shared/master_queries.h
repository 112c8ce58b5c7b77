// Metadata queries asked of the master, shared by the embedded client (query_path.cc) and a
// standalone client that asks the master itself (standalone_client.cc, when its node says the
// pool needs no credential): key validation, one request, the reply's codes spread back over
// the caller's batch.
//
// Threading: as MasterClient (thread-safe). Errors: per key, INVALID_PARAMS for a key that is
// not valid (common/keys.h, never sent) or the request's error (RPC_FAIL, RPC_TIMEOUT, ...) for
// every key sent; the master's own per-key codes otherwise.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "kvpool/client.h"
#include "kvpool/status.h"
#include "master_client/master_client.h"

namespace kvpool::client {

// Validates keys into `status` and records the valid ones' batch indexes in `sent`. Returns the
// keys to send: `keys` itself when all are valid (no copy), else `*copy` filled with the valid
// ones.
const std::vector<std::string>& ValidKeys(const std::vector<std::string>& keys,
                                          std::vector<Status>& status, std::vector<size_t>& sent,
                                          std::vector<std::string>* copy);

// Spreads a CodesReply over the batch: codes <= 0 become statuses (0 = OK), 1 stays OK. `raw`
// (when not null, one per batch key) receives each sent key's code.
void SpreadCodes(const Result<rpc::CodesReply>& reply, const std::vector<size_t>& sent,
                 std::vector<Status>& status, std::vector<int32_t>* raw);

// Whether each key exists (in DRAM or on a disk tier). The views need only outlive the call.
std::vector<Result<bool>> AskExists(master::MasterClient& master,
                                    std::span<const std::string_view> keys, Deadline deadline);

// A scan request, and the page its reply makes (Client::ScanKeys), for the master and the node.
rpc::ScanKeys ScanRequest(const std::string& prefix, const std::string& cursor, uint32_t limit);
Client::KeyScanPage PageOf(const rpc::ScanKeysReply& reply);

// How many leading keys exist. Errors: INVALID_PARAMS for an invalid key, or the request's.
Result<size_t> AskExistsPrefix(master::MasterClient& master, std::span<const std::string_view> keys,
                               Deadline deadline);

}  // namespace kvpool::client
