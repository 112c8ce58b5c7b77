#include "client/shared/master_queries.h"

#include "common/keys.h"

namespace kvpool::client {

const std::vector<std::string>& ValidKeys(const std::vector<std::string>& keys,
                                          std::vector<Status>& status, std::vector<size_t>& sent,
                                          std::vector<std::string>* copy) {
  status.assign(keys.size(), Status::Ok());
  sent.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    status[i] = ValidateKey(keys[i]);
    if (status[i].ok()) sent.push_back(i);
  }
  if (sent.size() == keys.size()) return keys;
  for (size_t i : sent) copy->push_back(keys[i]);
  return *copy;
}

void SpreadCodes(const Result<rpc::CodesReply>& reply, const std::vector<size_t>& sent,
                 std::vector<Status>& status, std::vector<int32_t>* raw) {
  if (reply.ok() && reply->codes_size() != static_cast<int>(sent.size())) {
    for (size_t i : sent) status[i] = Status(ErrorCode::INTERNAL_ERROR, "reply size mismatch");
    return;
  }
  for (size_t k = 0; k < sent.size(); ++k) {
    size_t i = sent[k];
    if (!reply.ok()) {
      status[i] = reply.status();
      continue;
    }
    int32_t code = reply->codes(static_cast<int>(k));
    if (raw != nullptr) (*raw)[i] = code;
    if (code < 0) {
      std::string msg = k < static_cast<size_t>(reply->messages_size())
                            ? reply->messages(static_cast<int>(k))
                            : std::string();
      status[i] = Status(ErrorCodeFromInt(code), msg);
    }
  }
}

std::vector<Result<bool>> AskExists(master::MasterClient& master,
                                    std::span<const std::string_view> keys, Deadline deadline) {
  std::vector<Status> status(keys.size(), Status::Ok());
  std::vector<size_t> sent;
  sent.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    status[i] = ValidateKey(keys[i]);
    if (status[i].ok()) sent.push_back(i);
  }
  std::vector<std::string_view> valid;  // only when some key is not: else `keys` goes as it is
  if (sent.size() != keys.size()) {
    valid.reserve(sent.size());
    for (size_t i : sent) valid.push_back(keys[i]);
  }
  std::vector<int32_t> raw(keys.size(), 0);
  if (!sent.empty()) {
    auto reply = master.Exists(sent.size() == keys.size() ? keys : valid, deadline);
    SpreadCodes(reply, sent, status, &raw);
  }
  std::vector<Result<bool>> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out.push_back(status[i].ok() ? Result<bool>(raw[i] == 1) : Result<bool>(status[i]));
  }
  return out;
}

rpc::ScanKeys ScanRequest(const std::string& prefix, const std::string& cursor, uint32_t limit) {
  rpc::ScanKeys req;
  req.set_prefix(prefix);
  req.set_cursor(cursor);
  req.set_limit(limit);
  return req;
}

Client::KeyScanPage PageOf(const rpc::ScanKeysReply& reply) {
  Client::KeyScanPage page;
  page.keys.assign(reply.keys().begin(), reply.keys().end());
  page.next_cursor = reply.next_cursor();
  return page;
}

Result<size_t> AskExistsPrefix(master::MasterClient& master, std::span<const std::string_view> keys,
                               Deadline deadline) {
  for (std::string_view k : keys) KVPOOL_RETURN_IF_ERROR(ValidateKey(k));
  if (keys.empty()) return size_t{0};
  auto r = master.ExistsPrefix(keys, deadline);
  if (!r.ok()) return r.status();
  return static_cast<size_t>(*r);
}

}  // namespace kvpool::client
