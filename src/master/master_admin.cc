// MasterCore's admin views: object listing and inspection, clients, pending puts. Read-only;
// each takes one shard lock at a time and holds it for one pass over that shard at most.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <queue>

#include "common/keys.h"
#include "master/master_core.h"

namespace kvpool::master {
namespace {

constexpr char kHex[] = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<shard>/<key bytes in hex>": where the next page starts (after that key in that shard).
std::string MakeCursor(size_t shard, std::string_view after) {
  std::string c = std::to_string(shard) + "/";
  for (unsigned char b : after) {
    c += kHex[b >> 4];
    c += kHex[b & 15];
  }
  return c;
}

bool ParseCursor(std::string_view cursor, size_t* shard, std::string* after) {
  size_t slash = cursor.find('/');
  if (slash == std::string_view::npos || slash == 0) return false;
  auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + slash, *shard);
  if (ec != std::errc() || end != cursor.data() + slash || *shard >= ObjectTable::kShards) {
    return false;
  }
  std::string_view hex = cursor.substr(slash + 1);
  if (hex.size() % 2 != 0 || hex.size() / 2 > kMaxKeyBytes) return false;
  after->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = HexValue(hex[i]), lo = HexValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    after->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

int64_t MillisOf(int64_t ns) { return ns / 1'000'000; }

}  // namespace

Result<ObjectListing> MasterCore::ListObjects(std::string_view prefix, size_t limit,
                                              std::string_view cursor) {
  if (limit == 0 || limit > kMaxListLimit) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("limit={} is out of range: 1..{}", limit, kMaxListLimit));
  }
  size_t shard = 0;
  std::string after;
  if (!cursor.empty() && !ParseCursor(cursor, &shard, &after)) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("cursor='{}' is not one this master returned; start again without "
                              "a cursor",
                              cursor.substr(0, 64)));
  }
  ObjectListing listing;
  size_t scanned = 0;
  for (; shard < ObjectTable::kShards; ++shard) {
    scanned += ListShard(shard, prefix, limit, after, &listing);
    after.clear();
    if (listing.objects.size() == limit) {
      listing.next_cursor = MakeCursor(shard, listing.objects.back().key);
      break;
    }
    if (scanned >= kListScanBudget && shard + 1 < ObjectTable::kShards) {
      listing.next_cursor = MakeCursor(shard + 1, "");
      break;
    }
  }
  return listing;
}

size_t MasterCore::ListShard(size_t index, std::string_view prefix, size_t limit,
                             std::string_view after, ObjectListing* listing) {
  const size_t want = limit - listing->objects.size();
  // A max-heap by key of the `want` smallest keys seen so far.
  auto by_key = [](const Object* a, const Object* b) { return a->key() < b->key(); };
  std::priority_queue<const Object*, std::vector<const Object*>, decltype(by_key)> best(by_key);
  auto shard = table_.LockIndex(index);
  shard->ForEach([&](const Object& o) {
    std::string_view k = o.key();
    if (k <= after || !k.starts_with(prefix)) return;  // keys are never empty
    if (best.size() < want) {
      best.push(&o);
    } else if (k < best.top()->key()) {
      best.pop();
      best.push(&o);
    }
  });
  std::vector<const Object*> picked;
  picked.reserve(best.size());
  for (; !best.empty(); best.pop()) picked.push_back(best.top());
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
    listing->objects.push_back({std::string((*it)->key()), (*it)->size, (*it)->pending()});
  }
  return shard->size();
}

Result<ObjectInfo> MasterCore::InspectObject(std::string_view key, TimePoint now) {
  KVPOOL_RETURN_IF_ERROR(ValidateKey(key));
  const int64_t now_ns = ToNanos(now);
  ObjectInfo info;
  uint32_t writer = 0;
  {
    auto shard = table_.Lock(key);
    const Object* obj = shard->Find(key);
    if (obj == nullptr) {
      return Status(ErrorCode::OBJECT_NOT_FOUND, fmt::format("key={} not found", key));
    }
    info.key = std::string(key);
    info.size = obj->size;
    info.pending = obj->pending();
    if (obj->pending()) {
      info.pending_age_ms = MillisOf(now_ns - obj->put_start_ns());
      writer = obj->writer;
    } else if (obj->leased(now_ns)) {
      info.lease_remaining_ms = MillisOf(obj->lease_until_ns() - now_ns);
    }
    info.idle_ms = std::max<int64_t>(0, MillisOf(now_ns - obj->last_access_ns));
    info.soft_pinned = obj->soft_pinned();
    info.hard_pinned = obj->hard_pinned();
    for (const ReplicaRef& r : obj->replicas()) {
      ObjectInfo::Replica out;
      out.segment_id = r.segment_id;
      out.offset = r.offset;
      registry_.Describe(r.segment_id, &out.segment_name, &out.endpoint);
      info.replicas.push_back(std::move(out));
    }
  }
  if (writer != 0) {
    for (const auto& c : clients_.List()) {
      if (c.handle == writer) info.writer = c.client_id;
    }
  }
  return info;
}

std::vector<ClientInfo> MasterCore::ListClients(TimePoint now) const {
  std::map<std::string, std::vector<std::string>> segments;
  for (const SegmentStats& s : registry_.Stats()) segments[s.client_id].push_back(s.name);
  std::vector<ClientInfo> out;
  for (const auto& c : clients_.List()) {
    ClientInfo info;
    info.client_id = c.client_id;
    info.known = c.known;
    info.last_seen_ms_ago = std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(now - c.last_seen).count());
    if (auto it = segments.find(c.client_id); it != segments.end()) info.segments = it->second;
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const ClientInfo& a, const ClientInfo& b) { return a.client_id < b.client_id; });
  return out;
}

size_t MasterCore::PendingObjects() {
  size_t n = 0;
  for (size_t i = 0; i < ObjectTable::kShards; ++i) n += table_.LockIndex(i)->pending().size();
  return n;
}

}  // namespace kvpool::master
