#include "ha/etcd_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "ha/base64.h"

namespace kvpool::ha {
namespace {

using json = nlohmann::json;

Status Malformed(std::string_view what, std::string_view why, const json& j) {
  return Status(ErrorCode::ETCD_OPERATION_ERROR,
                fmt::format("etcd {}: {} in {}", what, why, j.dump().substr(0, 200)));
}

// The gateway prints int64 fields as JSON strings ("123"); absent (or null) means 0. Anything
// else (another type, text that is not a whole decimal int64) is an error naming `name`.
Result<int64_t> Int64Field(const json& j, const char* name, std::string_view what) {
  if (!j.is_object()) return Malformed(what, fmt::format("no object around {}", name), j);
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return int64_t{0};
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() <= INT64_MAX) return static_cast<int64_t>(it->get<uint64_t>());
  } else if (it->is_number_integer()) {
    return it->get<int64_t>();
  }
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) return v;
  }
  return Malformed(what, fmt::format("{} is not an int64", name), j);
}

// A field that must be positive when present (ids, revisions).
Result<int64_t> PositiveField(const json& j, const char* name, std::string_view what) {
  auto v = Int64Field(j, name, what);
  if (v.ok() && *v <= 0) return Malformed(what, fmt::format("no positive {}", name), j);
  return v;
}

Result<json> ParseJson(const std::string& body, std::string_view what) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(
        ErrorCode::ETCD_OPERATION_ERROR,
        fmt::format("etcd {}: answer is not a JSON object: {}", what, body.substr(0, 200)));
  }
  return j;
}

// One kv of a range answer: an object whose value (absent: empty) is base64, of a key that
// exists (create_revision > 0: it becomes a leadership epoch), lease 0 (none) or positive.
Result<EtcdKeyValue> KeyValueOf(const json& kv, std::string_view what) {
  if (!kv.is_object()) return Malformed(what, "a kv is not an object", kv);
  EtcdKeyValue out;
  if (auto it = kv.find("value"); it != kv.end()) {
    std::optional<std::string> value;
    if (it->is_string()) value = Base64Decode(it->get_ref<const std::string&>());
    if (!value) return Malformed(what, "a value is not base64", kv);
    out.value = std::move(*value);
  }
  auto revision = PositiveField(kv, "create_revision", what);
  if (!revision.ok()) return revision.status();
  auto lease = Int64Field(kv, "lease", what);
  if (!lease.ok()) return lease.status();
  if (*lease < 0) return Malformed(what, "a negative lease", kv);
  out.create_revision = *revision;
  out.lease = *lease;
  return out;
}

// The first kv of a range answer; nullopt when there is none.
Result<std::optional<EtcdKeyValue>> FirstKv(const json& range, std::string_view what) {
  if (!range.is_object()) return Malformed(what, "the range answer is not an object", range);
  auto it = range.find("kvs");
  if (it == range.end() || it->is_null()) return std::optional<EtcdKeyValue>();
  if (!it->is_array()) return Malformed(what, "kvs is not an array", range);
  if (it->empty()) return std::optional<EtcdKeyValue>();
  auto kv = KeyValueOf((*it)[0], what);
  if (!kv.ok()) return kv.status();
  return std::optional<EtcdKeyValue>(std::move(kv).value());
}

// What an HTTP failure means for an operator reading the message.
std::string Describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection refused or unreachable";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out";
    case httplib::Error::Read:
      return "no answer in time (read failed or timed out)";
    case httplib::Error::Write:
      return "sending the request failed";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace

EtcdClient::EtcdClient(std::vector<rpc::Endpoint> members) : members_(std::move(members)) {}

std::string EtcdClient::MembersString() const {
  std::string out;
  for (const rpc::Endpoint& m : members_) {
    if (!out.empty()) out += ';';
    out += m.ToString();
  }
  return out;
}

Result<std::string> EtcdClient::Post(std::string_view path, const std::string& body,
                                     Deadline deadline) {
  std::string errors;
  const size_t n = members_.size();
  const size_t first = preferred_.load(std::memory_order_relaxed) % n;
  for (size_t k = 0; k < n; ++k) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) break;
    // A dead member costs at most its share of the time left (the last one gets all of it).
    auto share = std::max<Clock::duration>(left / static_cast<int64_t>(n - k),
                                           std::min<Clock::duration>(left, Millis(100)));
    const size_t i = (first + k) % n;
    const rpc::Endpoint& m = members_[i];
    httplib::Client client(m.host, m.port);
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(share);
    client.set_connection_timeout(us);
    client.set_read_timeout(us);
    client.set_write_timeout(us);
    client.set_keep_alive(false);
    httplib::Request req;
    req.method = "POST";
    req.path = std::string(path);
    req.body = body;
    req.set_header("Content-Type", "application/json");
    // The read timeout bounds each read only: the whole answer must also come by the try's
    // deadline (a member trickling bytes would hold the call), and within kMaxAnswerBytes.
    const Deadline try_deadline = Clock::now() + share;
    std::string answer;
    const char* cut = nullptr;
    req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
      if (answer.size() + len > kMaxAnswerBytes) {
        cut = "answer larger than the limit";
      } else if (Clock::now() >= try_deadline) {
        cut = "answer not complete in time";
      } else {
        answer.append(data, len);
        return true;
      }
      return false;
    };
    auto res = client.send(req);
    if (!res || cut != nullptr) {
      errors += fmt::format("{}{}: {}", errors.empty() ? "" : "; ", m.ToString(),
                            cut != nullptr ? fmt::format("{} ({} bytes)", cut, kMaxAnswerBytes)
                                           : Describe(res.error()));
      continue;
    }
    if (res->status != 200) {
      // etcd's own refusal (e.g. "requested lease not found"): another member would say the same.
      std::string message = answer.substr(0, 300);
      auto j = json::parse(answer, nullptr, false);
      if (j.is_object() && j.contains("message") && j["message"].is_string()) {
        message = j["message"].get<std::string>();
      }
      return Status(
          ErrorCode::ETCD_OPERATION_ERROR,
          fmt::format("etcd {} at {}: HTTP {}: {}", path, m.ToString(), res->status, message));
    }
    preferred_.store(i, std::memory_order_relaxed);
    return answer;
  }
  if (errors.empty()) {
    return Status(ErrorCode::RPC_TIMEOUT,
                  fmt::format("etcd {} at {}: deadline passed", path, MembersString()));
  }
  return Status(ErrorCode::ETCD_OPERATION_ERROR,
                fmt::format("etcd {} unreachable: {}", path, errors));
}

Result<int64_t> EtcdClient::GrantLease(std::chrono::seconds ttl, Deadline deadline) {
  auto body = Post("/v3/lease/grant", json{{"TTL", ttl.count()}}.dump(), deadline);
  if (!body.ok()) return body.status();
  auto j = ParseJson(*body, "lease grant");
  if (!j.ok()) return j.status();
  return PositiveField(*j, "ID", "lease grant");  // absent (0) is no lease either
}

Result<int64_t> EtcdClient::KeepAlive(int64_t id, Deadline deadline) {
  // The gateway streams one JSON object per renewal, wrapped in {"result": ...}; one request
  // body renews once and ends the stream.
  auto body = Post("/v3/lease/keepalive", json{{"ID", std::to_string(id)}}.dump(), deadline);
  if (!body.ok()) return body.status();
  std::string first = body->substr(0, body->find('\n'));
  auto j = ParseJson(first, "lease keepalive");
  if (!j.ok()) return j.status();
  if (j->contains("error")) {
    return Status(ErrorCode::ETCD_OPERATION_ERROR,
                  fmt::format("etcd lease keepalive: {}", first.substr(0, 200)));
  }
  auto result = j->find("result");
  return Int64Field(result != j->end() ? *result : *j, "TTL", "lease keepalive");
}

Status EtcdClient::RevokeLease(int64_t id, Deadline deadline) {
  auto body = Post("/v3/lease/revoke", json{{"ID", std::to_string(id)}}.dump(), deadline);
  return body.ok() ? Status::Ok() : body.status();
}

Result<std::optional<EtcdKeyValue>> EtcdClient::Get(std::string_view key, Deadline deadline) {
  auto body = Post("/v3/kv/range", json{{"key", Base64Encode(key)}}.dump(), deadline);
  if (!body.ok()) return body.status();
  auto j = ParseJson(*body, "range");
  if (!j.ok()) return j.status();
  return FirstKv(*j, "range");
}

Result<EtcdClient::CreateResult> EtcdClient::CreateIfAbsent(std::string_view key,
                                                            std::string_view value, int64_t lease,
                                                            Deadline deadline) {
  const std::string k = Base64Encode(key);
  json txn = {
      {"compare", json::array({{{"target", "CREATE"}, {"key", k}, {"createRevision", "0"}}})},
      {"success",
       json::array(
           {{{"requestPut",
              {{"key", k}, {"value", Base64Encode(value)}, {"lease", std::to_string(lease)}}}}})},
      {"failure", json::array({{{"requestRange", {{"key", k}}}}})}};
  auto body = Post("/v3/kv/txn", txn.dump(), deadline);
  if (!body.ok()) return body.status();
  auto j = ParseJson(*body, "txn");
  if (!j.ok()) return j.status();
  CreateResult out;
  auto succeeded = j->find("succeeded");  // absent: false (the gateway omits false)
  if (succeeded != j->end() && !succeeded->is_boolean()) {
    return Malformed("txn", "succeeded is not a boolean", *j);
  }
  out.created = succeeded != j->end() && succeeded->get<bool>();
  if (out.created) {
    // The put's revision is the key's creation revision: the new leadership epoch.
    auto header = j->find("header");
    if (header == j->end()) return Malformed("txn", "no header", *j);
    auto revision = PositiveField(*header, "revision", "txn");
    if (!revision.ok()) return revision.status();
    out.current = {std::string(value), *revision, lease};
    return out;
  }
  auto responses = j->find("responses");
  if (responses == j->end() || !responses->is_array() || responses->empty() ||
      !(*responses)[0].is_object() || !(*responses)[0].contains("response_range")) {
    return Malformed("txn", "no range answer", *j);
  }
  auto kv = FirstKv((*responses)[0]["response_range"], "txn");
  if (!kv.ok()) return kv.status();
  if (*kv) out.current = std::move(**kv);  // else: it vanished in between; the caller retries
  return out;
}

}  // namespace kvpool::ha
