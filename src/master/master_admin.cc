// MasterCore's admin views: object listing and inspection, clients, pending puts. Read-only;
// each takes one shard lock at a time, and the listing holds it for a piece of a shard only.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

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
  // A cursor this master made names a key of its own shard: one that names another shard
  // (made up, or out of range) is refused instead of quietly listing from elsewhere.
  return after->empty() || ObjectTable::ShardOf(*after) == *shard;
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
  if (!after.empty() && after.compare(0, prefix.size(), prefix) != 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("cursor='{}' is from a listing of another prefix; start again "
                              "without a cursor",
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

namespace {

// Keeps the `want` smallest keys offered, as a max-heap by key in `best`.
class SmallestKeys {
 public:
  SmallestKeys(size_t want, std::vector<ObjectListing::Entry>* best) : want_(want), best_(best) {}

  void Offer(const Object& o) {
    std::string_view k = o.key();
    if (best_->size() < want_) {
      best_->push_back({std::string(k), o.size, o.pending()});
      std::push_heap(best_->begin(), best_->end(), ByKey);
    } else if (!best_->empty() && k < best_->front().key) {
      std::pop_heap(best_->begin(), best_->end(), ByKey);
      best_->back() = {std::string(k), o.size, o.pending()};
      std::push_heap(best_->begin(), best_->end(), ByKey);
    }
  }

  static bool ByKey(const ObjectListing::Entry& a, const ObjectListing::Entry& b) {
    return a.key < b.key;
  }

 private:
  const size_t want_;
  std::vector<ObjectListing::Entry>* best_;
};

// Rehashes that may interrupt a shard's scan in pieces before it falls back to one lock hold.
constexpr int kListPieceAttempts = 3;

}  // namespace

size_t MasterCore::ListShard(size_t index, std::string_view prefix, size_t limit,
                             std::string_view after, ObjectListing* listing) {
  const size_t want = limit - listing->objects.size();
  std::vector<ObjectListing::Entry> best;
  size_t scanned = 0;
  bool done = false;
  for (int attempt = 0; attempt < kListPieceAttempts && !done; ++attempt) {
    best.clear();
    scanned = 0;
    done = ListShardInPieces(index, prefix, want, after, &best, &scanned);
  }
  if (!done) {
    // The shard kept growing under the scan: one pass under one lock hold.
    best.clear();
    SmallestKeys keys(want, &best);
    auto shard = table_.LockIndex(index);
    shard->ForEach([&](const Object& o) {
      if (o.key() > after && o.key().starts_with(prefix)) keys.Offer(o);
    });
    scanned = shard->size();
  }
  std::sort_heap(best.begin(), best.end(), SmallestKeys::ByKey);
  for (auto& e : best) listing->objects.push_back(std::move(e));
  return scanned;
}

bool MasterCore::ListShardInPieces(size_t index, std::string_view prefix, size_t want,
                                   std::string_view after, std::vector<ObjectListing::Entry>* best,
                                   size_t* scanned) {
  SmallestKeys keys(want, best);
  uint64_t layout = 0;
  for (size_t first = 0;; first += kListSlotsPerLock) {
    auto shard = table_.LockIndex(index);
    if (first == 0) {
      layout = shard->layout_version();
    } else if (shard->layout_version() != layout) {
      return false;  // rebuilt: objects moved between slots, the pieces no longer tile
    }
    if (first >= shard->slot_count()) return true;
    shard->ForEachInSlots(first, first + kListSlotsPerLock, [&](const Object& o) {
      ++*scanned;
      // Keys are never empty, so with `after` empty every key is after it.
      if (o.key() > after && o.key().starts_with(prefix)) keys.Offer(o);
    });
  }
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
    info.idle_ms = std::max<int64_t>(0, MillisOf(now_ns - obj->last_access_ns()));
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
