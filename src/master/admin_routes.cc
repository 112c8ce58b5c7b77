#include "master/admin_routes.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/keys.h"
#include "common/metrics.h"
#include "common/tenant_key.h"
#include "master/status_page_html.h"

namespace kvpool::master {
namespace {

using nlohmann::json;

constexpr size_t kDefaultListLimit = 100;

std::string Dump(const json& j) {
  // Keys are opaque bytes: replace invalid UTF-8 rather than throw.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

AdminResponse Json(const json& j, int status = 200) {
  return {status, "application/json", Dump(j)};
}

AdminResponse Error(const Status& st) {
  int http = 400;
  if (st.code() == ErrorCode::OBJECT_NOT_FOUND || st.code() == ErrorCode::SEGMENT_NOT_FOUND) {
    http = 404;
  }
  // The message may quote a key (any bytes): escaped, so the JSON says exactly which key.
  return Json({{"code", ErrorCodeName(st.code())}, {"message", PrintableBytes(st.message())}},
              http);
}

const std::string* Param(const AdminRoutes::Params& params, const std::string& name) {
  auto it = params.find(name);
  return it == params.end() ? nullptr : &it->second;
}

bool Printable(std::string_view key) {
  for (unsigned char c : key) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Result<std::string> Unhex(std::string_view hex) {
  auto value = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int hi = value(hex[i]), lo = value(hex[i + 1]);
    if (hi < 0 || lo < 0) break;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  if (out.size() * 2 != hex.size()) {
    return Status(
        ErrorCode::INVALID_PARAMS,
        fmt::format("key_hex='{}' is not an even number of hex digits", hex.substr(0, 64)));
  }
  return out;
}

// The tenant and the user's key, separately (an internal key's prefix is not shown).
void AddKey(json& j, std::string_view internal_key) {
  std::string_view tenant = TenantOf(internal_key);
  std::string_view key = UserKeyOf(internal_key);
  j["tenant"] = tenant.empty() ? "default" : std::string(tenant);
  j["key"] = std::string(key);
  if (!Printable(key)) j["key_hex"] = Hex(key);
}

// INVALID_PARAMS naming the first parameter given more than once (?limit=1&limit=2 has no
// one meaning: refused rather than the first taken).
Status CheckNoRepeats(const AdminRoutes::Params& params) {
  for (auto it = params.begin(); it != params.end(); it = params.upper_bound(it->first)) {
    if (params.count(it->first) > 1) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("parameter '{}' is given {} times; give it once",
                                PrintableBytes(it->first.substr(0, 64)), params.count(it->first)));
    }
  }
  return Status::Ok();
}

AdminResponse MethodNotAllowed(std::string_view path, const char* allow) {
  AdminResponse r = Json(
      {{"code", "METHOD_NOT_ALLOWED"}, {"message", fmt::format("{} takes {} only", path, allow)}},
      405);
  r.allow = allow;
  return r;
}

// ?tenant=T (optional) scopes ?key / ?key_hex / ?prefix to tenant T's namespace.
std::string InTenant(const AdminRoutes::Params& params, std::string_view key) {
  const std::string* t = Param(params, "tenant");
  return t == nullptr ? std::string(key) : MakeTenantKey(*t, key);
}

}  // namespace

const std::vector<std::string_view>& AdminRoutes::Paths() {
  static const std::vector<std::string_view> paths = {"/health",  "/metrics",    "/segments",
                                                      "/objects", "/object",     "/clients",
                                                      "/tenants", "/status.json"};
  return paths;
}

AdminResponse AdminRoutes::Get(std::string_view path, const Params& params) const {
  if (path == "/drain") return MethodNotAllowed(path, "POST");
  if (Status st = CheckNoRepeats(params); !st.ok()) return Error(st);
  if (path == "/health") {
    if (!ha_view_) return {200, "text/plain", "OK"};
    HaView v = ha_view_();
    return {200, "text/plain",
            fmt::format("OK role={} epoch={} leader={} cluster={}\n", v.role, v.epoch,
                        v.leader.empty() ? "none" : v.leader, v.cluster)};
  }
  if (path == "/metrics") return Metrics();
  if (path == "/segments") return Segments();
  if (path == "/objects") return ObjectList(params);
  if (path == "/object") return ObjectDetail(params);
  if (path == "/clients") return Clients();
  if (path == "/tenants") return Tenants();
  if (path == "/") return StatusPage();
  if (path == "/status.json") return StatusJson();
  return {404, "text/plain",
          fmt::format("no such endpoint; try one of /health /metrics "
                      "/segments /objects /object /clients /tenants\n")};
}

AdminResponse AdminRoutes::Post(std::string_view path, const Params& params) const {
  if (path != "/drain") {
    for (std::string_view p : Paths()) {
      if (p == path) return MethodNotAllowed(path, "GET");
    }
    return {404, "text/plain", "no such endpoint; POST serves /drain\n"};
  }
  if (Status st = CheckNoRepeats(params); !st.ok()) return Error(st);
  auto seg = params.find("segment");
  if (seg == params.end() || seg->second.empty()) {
    return Error(Status(ErrorCode::INVALID_PARAMS, "pass ?segment=NAME"));
  }
  bool draining = true;
  if (auto undo = params.find("undo"); undo != params.end()) {
    const std::string& v = undo->second;
    if (v == "1" || v == "true" || v == "yes") {
      draining = false;
    } else if (!(v == "0" || v == "false" || v == "no")) {
      return Error(Status(ErrorCode::INVALID_PARAMS,
                          fmt::format("undo={} is not one of true/false/yes/no/1/0", v)));
    }
  }
  Status st = core_->SetDraining(seg->second, draining);
  if (!st.ok()) return Error(st);
  return Json({{"segment", seg->second}, {"accepting", !draining}});
}

AdminResponse AdminRoutes::Metrics() const {
  PoolGauges pool;
  pool.stat = core_->Stat();
  pool.evicted_bytes_total = core_->evicted_bytes_total();
  pool.demoted_total = core_->demoted_total();
  pool.promoted_total = core_->promoted_total();
  pool.pending_objects = core_->PendingObjects();
  pool.start_unix_seconds = start_unix_seconds_;
  pool.tenants = TenantGauges(*core_);
  std::string text = metrics_->Render(pool);
  if (ha_view_) {
    HaView v = ha_view_();
    metrics::TextWriter w;
    w.Family("kvpool_master_ha_role", "gauge",
             "Constant 1, labelled with this master's role (leader, restoring, standby, lost), "
             "the leader it knows and the cluster.");
    w.Sample("kvpool_master_ha_role",
             {{"role", v.role}, {"leader", v.leader}, {"cluster", v.cluster}}, uint64_t{1});
    w.WriteGauge("kvpool_master_ha_epoch",
                 "Leadership epoch of the leader this master knows (its own while leading).",
                 static_cast<double>(v.epoch));
    w.WriteGauge("kvpool_master_ha_leader", "1 while this master leads and serves, else 0.",
                 v.role == "leader" ? 1.0 : 0.0);
    text += w.Take();
  }
  if (extra_metrics_) text += extra_metrics_();
  return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(text)};
}

namespace {

// Every mounted segment, as /segments and /status.json list them.
json SegmentsJson(const rpc::StatReply& s) {
  json segments = json::array();
  for (const rpc::SegmentInfo& seg : s.segments()) {
    segments.push_back({{"name", seg.segment_name()},
                        {"endpoint", seg.endpoint()},
                        {"client_id", seg.client_id()},
                        {"tier", seg.tier() == kTierDram ? "DRAM" : "DISK"},
                        {"capacity_bytes", seg.size()},
                        {"used_bytes", seg.used()},
                        {"objects", seg.object_count()},
                        {"accepting", !seg.draining()},
                        {"suspect", seg.suspect()},
                        {"unreachable_reports", seg.unreachable_reports()},
                        {"last_unreachable_by", seg.last_unreachable_by()},
                        {"last_unreachable_unix_ms", seg.last_unreachable_unix_ms()}});
  }
  return segments;
}

}  // namespace

AdminResponse AdminRoutes::Segments() const {
  rpc::StatReply s = core_->Stat();
  return Json({{"segments", SegmentsJson(s)},
               {"capacity_bytes", s.capacity()},
               {"used_bytes", s.used()},
               {"objects", s.object_count()},
               {"clients", s.client_count()},
               {"evicted_objects", s.evicted_total()},
               {"master_epoch", fmt::format("{:016x}", s.master_epoch())}});
}

AdminResponse AdminRoutes::ObjectList(const Params& params) const {
  size_t limit = kDefaultListLimit;
  if (const std::string* l = Param(params, "limit")) {
    const char* end = l->data() + l->size();
    auto [p, ec] = std::from_chars(l->data(), end, limit);
    if (l->empty() || ec != std::errc() || p != end) {
      return Error(Status(ErrorCode::INVALID_PARAMS,
                          fmt::format("limit='{}' is not a number; use 1..{}", l->substr(0, 32),
                                      MasterCore::kMaxListLimit)));
    }
  }
  const std::string* prefix = Param(params, "prefix");
  const std::string* cursor = Param(params, "cursor");
  std::string scoped = InTenant(params, prefix ? *prefix : "");
  auto listing = core_->ListObjects(scoped, limit, cursor ? *cursor : "");
  if (!listing.ok()) return Error(listing.status());
  json objects = json::array();
  for (const ObjectListing::Entry& e : listing->objects) {
    json o;
    AddKey(o, e.key);
    o["size"] = e.size;
    o["state"] = e.pending ? "pending" : "complete";
    objects.push_back(std::move(o));
  }
  return Json({{"objects", std::move(objects)}, {"next_cursor", listing->next_cursor}});
}

AdminResponse AdminRoutes::ObjectDetail(const Params& params) const {
  std::string key;
  if (Param(params, "key") != nullptr && Param(params, "key_hex") != nullptr) {
    return Error(Status(ErrorCode::INVALID_PARAMS, "pass ?key=KEY or ?key_hex=HEX, not both"));
  }
  if (const std::string* k = Param(params, "key")) {
    key = *k;
  } else if (const std::string* h = Param(params, "key_hex")) {
    auto bytes = Unhex(*h);
    if (!bytes.ok()) return Error(bytes.status());
    key = std::move(bytes).value();
  } else {
    return Error(Status(ErrorCode::INVALID_PARAMS, "pass ?key=KEY or ?key_hex=HEX"));
  }
  auto info = core_->InspectObject(InTenant(params, key), clock_());
  if (!info.ok()) return Error(info.status());
  json j;
  AddKey(j, info->key);
  j["size"] = info->size;
  j["state"] = info->pending ? "pending" : "complete";
  j["lease_remaining_ms"] = info->lease_remaining_ms;
  if (info->pending) j["pending_age_ms"] = info->pending_age_ms;
  j["idle_ms"] = info->idle_ms;
  j["soft_pinned"] = info->soft_pinned;
  j["hard_pinned"] = info->hard_pinned;
  if (!info->writer.empty()) j["writer"] = info->writer;
  json replicas = json::array();
  for (const ObjectInfo::Replica& r : info->replicas) {
    replicas.push_back({{"segment", r.segment_name},
                        {"endpoint", r.endpoint},
                        {"segment_id", r.segment_id},
                        {"offset", r.offset}});
  }
  j["replicas"] = std::move(replicas);
  return Json(j);
}

AdminResponse AdminRoutes::Tenants() const {
  json tenants = json::array();
  for (const TenantGauge& t : TenantGauges(*core_)) {
    json j = {{"tenant", t.tenant}, {"used_bytes", t.used_bytes}, {"objects", t.objects}};
    if (t.quota_bytes) j["quota_bytes"] = *t.quota_bytes;
    tenants.push_back(std::move(j));
  }
  return Json({{"tenants", std::move(tenants)}});
}

AdminResponse AdminRoutes::Clients() const {
  json clients = json::array();
  for (const ClientInfo& c : core_->ListClients(clock_())) {
    clients.push_back({{"client_id", c.client_id},
                       {"known", c.known},
                       {"last_seen_ms_ago", c.last_seen_ms_ago},
                       {"segments", c.segments}});
  }
  return Json({{"clients", std::move(clients)}});
}

// The status page (docs/operations.md, "Status page"): compiled in from status_page.html.
AdminResponse AdminRoutes::StatusPage() const {
  AdminResponse r{200, "text/html; charset=utf-8", std::string(kStatusPageHtml)};
  return r;
}

AdminResponse AdminRoutes::StatusJson() const {
  rpc::StatReply s = core_->Stat();
  HaView ha = ha_view_ ? ha_view_() : HaView{"single", 0, "", ""};
  auto method = [this](MetricMethod m) {
    return json{{"requests", metrics_->requests(m)},
                {"keys", metrics_->keys(m)},
                {"found", metrics_->found(m)}};
  };
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  json j = {
      {"time", now},
      {"start_time", start_unix_seconds_},
      // Hex, as the logs show it (a JSON number loses a 64-bit epoch's low digits in JS).
      {"master_epoch", fmt::format("{:016x}", s.master_epoch())},
      {"ha",
       {{"role", ha.role}, {"epoch", ha.epoch}, {"leader", ha.leader}, {"cluster", ha.cluster}}},
      {"capacity_bytes", s.capacity()},
      {"used_bytes", s.used()},
      {"disk_capacity_bytes", s.disk_capacity()},
      {"disk_used_bytes", s.disk_used()},
      {"objects", s.object_count()},
      {"clients", s.client_count()},
      {"leases_held", s.leases_held()},
      {"bytes_leased", s.bytes_leased()},
      {"evicted_objects", s.evicted_total()},
      {"refused",
       {{"leased_or_pinned", s.refused_leased_or_pinned()},
        {"tenant_quota", s.refused_tenant_quota()},
        {"no_segment", s.refused_no_segment()},
        {"offload_pending", s.refused_offload_pending()}}},
      // put: keys given space at put start; get: keys located (found) by get_replica_list.
      {"put", method(MetricMethod::kPutStart)},
      {"get", method(MetricMethod::kGetReplicaList)},
      {"exists", method(MetricMethod::kExists)},
      {"remove", method(MetricMethod::kRemove)},
      {"segments", SegmentsJson(s)},
  };
  return Json(j);
}

}  // namespace kvpool::master
