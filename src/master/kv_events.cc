#include "master/kv_events.h"

#include <xxhash.h>

#include <algorithm>
#include <msgpack.hpp>

namespace kvpool::master {

std::string_view KvMediumName(KvMedium m) { return m == KvMedium::kDisk ? "DISK" : "DRAM"; }

std::string_view KvEventTopicSuffix(KvRemoval why) {
  switch (why) {
    case KvRemoval::kNone:
    case KvRemoval::kRemoved:
      return "";
    case KvRemoval::kEvictedWatermark:
      return ".evicted.watermark";
    case KvRemoval::kEvictedPut:
      return ".evicted.put";
    case KvRemoval::kEvictedTenantQuota:
      return ".evicted.tenant_quota";
    case KvRemoval::kEvictedDisk:
      return ".evicted.disk";
    case KvRemoval::kDropped:
      return ".dropped";
  }
  return "";
}

void KvEventQueue::Add(KvEventKind kind, KvMedium medium, KvRemoval why, std::string_view key) {
  {
    std::lock_guard lock(mu_);
    if (events_.size() < capacity_) {
      events_.push_back(KvEvent{kind, medium, why, std::string(key)});
      accepted_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
}

size_t KvEventQueue::Drain(std::vector<KvEvent>* out, size_t max) {
  std::lock_guard lock(mu_);
  size_t n = std::min(max, events_.size());
  for (size_t i = 0; i < n; ++i) {
    out->push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return n;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// 16 hex digits (64 bits) is the shortest run taken for a hash: shorter runs are too often
// ranks, layer numbers or dates.
constexpr size_t kMinHashDigits = 16;

}  // namespace

KvBlockHash KeyBlockHash(std::string_view key) {
  size_t best_pos = 0, best_len = 0;
  for (size_t i = 0; i < key.size();) {
    if (HexValue(key[i]) < 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < key.size() && HexValue(key[j]) >= 0) ++j;
    if (j - i >= kMinHashDigits && j - i >= best_len) {
      best_pos = i;
      best_len = j - i;
    }
    i = j;
  }
  if (best_len == 0) {
    return XXH3_64bits(key.data(), key.size()) & ~(uint64_t{1} << 63);
  }
  std::string_view hex = key.substr(best_pos + best_len % 2, best_len - best_len % 2);
  std::string bytes(hex.size() / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(HexValue(hex[2 * i]) * 16 + HexValue(hex[2 * i + 1]));
  }
  return bytes;
}

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void PackStr(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackHash(Packer& pk, std::string_view key) {
  KvBlockHash h = KeyBlockHash(key);
  if (const auto* bytes = std::get_if<std::string>(&h)) {
    pk.pack_bin(static_cast<uint32_t>(bytes->size()));
    pk.pack_bin_body(bytes->data(), static_cast<uint32_t>(bytes->size()));
  } else {
    pk.pack_uint64(std::get<uint64_t>(h));
  }
}

bool SameGroup(const KvEvent& a, const KvEvent& b) {
  return a.kind == b.kind && a.medium == b.medium && a.kind != KvEventKind::kCleared;
}

void PackGroup(Packer& pk, std::span<const KvEvent> group, uint32_t block_size) {
  const KvEvent& first = group.front();
  if (first.kind == KvEventKind::kCleared) {
    pk.pack_array(1);
    PackStr(pk, "AllBlocksCleared");
    return;
  }
  const bool stored = first.kind == KvEventKind::kStored;
  pk.pack_array(stored ? 8 : 3);
  PackStr(pk, stored ? "BlockStored" : "BlockRemoved");
  pk.pack_array(static_cast<uint32_t>(group.size()));
  for (const KvEvent& e : group) PackHash(pk, e.key);
  if (stored) {
    pk.pack_nil();               // parent_block_hash: kvpool does not know the chain
    pk.pack_array(0);            // token_ids: the master never sees tokens
    pk.pack_uint32(block_size);  // --kv_events_block_size
    pk.pack_nil();               // lora_id
    PackStr(pk, KvMediumName(first.medium));
    pk.pack_nil();  // lora_name
  } else {
    PackStr(pk, KvMediumName(first.medium));
  }
}

}  // namespace

std::string EncodeKvEventBatch(double ts, std::span<const KvEvent> events, uint32_t block_size) {
  std::vector<std::span<const KvEvent>> groups;
  for (size_t i = 0; i < events.size();) {
    size_t j = i + 1;
    while (j < events.size() && SameGroup(events[i], events[j])) ++j;
    groups.push_back(events.subspan(i, j - i));
    i = j;
  }
  msgpack::sbuffer buf;
  Packer pk(buf);
  pk.pack_array(2);
  pk.pack_double(ts);
  pk.pack_array(static_cast<uint32_t>(groups.size()));
  for (const auto& g : groups) PackGroup(pk, g, block_size);
  return std::string(buf.data(), buf.size());
}

}  // namespace kvpool::master
