#include "ha/etcd_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ha/base64.h"

namespace kvpool::ha {
namespace {

using json = nlohmann::json;

// The gateway prints int64 fields as JSON strings ("123"); absent means 0.
int64_t Int64Field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (...) {
      return 0;
    }
  }
  return 0;
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

Result<EtcdKeyValue> KeyValueOf(const json& kv) {
  EtcdKeyValue out;
  auto value = Base64Decode(kv.value("value", std::string()));
  if (!value) return Status(ErrorCode::ETCD_OPERATION_ERROR, "etcd: a value is not base64");
  out.value = std::move(*value);
  out.create_revision = Int64Field(kv, "create_revision");
  out.lease = Int64Field(kv, "lease");
  return out;
}

// The first kv of a range answer; nullopt when there is none.
Result<std::optional<EtcdKeyValue>> FirstKv(const json& range) {
  auto it = range.find("kvs");
  if (it == range.end() || !it->is_array() || it->empty()) return std::optional<EtcdKeyValue>();
  auto kv = KeyValueOf((*it)[0]);
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
    auto res = client.Post(std::string(path), body, "application/json");
    if (!res) {
      errors +=
          fmt::format("{}{}: {}", errors.empty() ? "" : "; ", m.ToString(), Describe(res.error()));
      continue;
    }
    if (res->status != 200) {
      // etcd's own refusal (e.g. "requested lease not found"): another member would say the same.
      std::string message = res->body.substr(0, 300);
      auto j = json::parse(res->body, nullptr, false);
      if (j.is_object() && j.contains("message") && j["message"].is_string()) {
        message = j["message"].get<std::string>();
      }
      return Status(
          ErrorCode::ETCD_OPERATION_ERROR,
          fmt::format("etcd {} at {}: HTTP {}: {}", path, m.ToString(), res->status, message));
    }
    preferred_.store(i, std::memory_order_relaxed);
    return std::move(res->body);
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
  int64_t id = Int64Field(*j, "ID");
  if (id == 0) {
    return Status(ErrorCode::ETCD_OPERATION_ERROR,
                  fmt::format("etcd lease grant: no lease id in {}", body->substr(0, 200)));
  }
  return id;
}

Result<int64_t> EtcdClient::KeepAlive(int64_t id, Deadline deadline) {
  // The gateway streams one JSON object per renewal, wrapped in {"result": ...}; one request
  // body renews once and ends the stream.
  auto body = Post("/v3/lease/keepalive", json{{"ID", std::to_string(id)}}.dump(), deadline);
  if (!body.ok()) return body.status();
  std::string first = body->substr(0, body->find('\n'));
  auto j = ParseJson(first, "lease keepalive");
  if (!j.ok()) return j.status();
  const json& r = j->contains("result") ? (*j)["result"] : *j;
  if (j->contains("error")) {
    return Status(ErrorCode::ETCD_OPERATION_ERROR,
                  fmt::format("etcd lease keepalive: {}", first.substr(0, 200)));
  }
  return Int64Field(r, "TTL");
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
  return FirstKv(*j);
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
  out.created = j->value("succeeded", false);
  if (out.created) {
    // The put's revision is the key's creation revision.
    const json& header = (*j)["header"];
    out.current = {std::string(value), Int64Field(header, "revision"), lease};
    return out;
  }
  const json& responses = (*j)["responses"];
  if (!responses.is_array() || responses.empty() || !responses[0].contains("response_range")) {
    return Status(ErrorCode::ETCD_OPERATION_ERROR,
                  fmt::format("etcd txn: unexpected answer {}", body->substr(0, 200)));
  }
  auto kv = FirstKv(responses[0]["response_range"]);
  if (!kv.ok()) return kv.status();
  if (*kv) out.current = std::move(**kv);  // else: it vanished in between; the caller retries
  return out;
}

}  // namespace kvpool::ha
