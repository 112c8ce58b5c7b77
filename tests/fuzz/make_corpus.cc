// Writes the fuzz targets' seed corpus: small, well-formed inputs of every kind each target
// understands (the fuzzer mutates from there). Run after changing an input format or the wire
// schema:  make_fuzz_corpus tests/fuzz/corpus   (prom_text's seeds are /metrics captures).
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/keys.h"
#include "rpc/kvpool.pb.h"

using namespace kvpool;

namespace {

std::string g_root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  std::string dir = g_root + "/" + target;
  mkdir(g_root.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

std::string U16(uint16_t v) {
  return std::string{static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
}
std::string U32(uint32_t v) { return U16(v & 0xffff) + U16(v >> 16); }
std::string U64(uint64_t v) { return U32(v & 0xffffffff) + U32(v >> 32); }

// ---- frame_header: 32 header bytes, then optional limits (u64 meta, u64 payload) ----
std::string Header(uint16_t method, uint32_t meta_len, int32_t status, uint64_t payload_len,
                   uint32_t magic = 0x4C50564B) {
  return U32(magic) + U16(1) + U16(method) + U64(42) + U32(meta_len) +
         U32(static_cast<uint32_t>(status)) + U64(payload_len);
}

void FrameHeaderSeeds() {
  Write("frame_header", "request", Header(10, 12, 0, 0));
  Write("frame_header", "response_error", Header(0x8000 | 23, 40, -704, 0));
  Write("frame_header", "write_with_payload", Header(40, 30, 0, 1 << 20));
  Write("frame_header", "bad_magic", Header(10, 0, 0, 0, 0x50545448));
  Write("frame_header", "tight_limits", Header(41, 4096, 0, 65536) + U64(1024) + U64(4096));
}

// ---- parsers: [parser u8][text] ----
void ParserSeeds() {
  int i = 0;
  for (const char* s : {"4GB", "1.5 MiB", "1048576", "512mb", "0.5k", "16 TiB", "64"}) {
    Write("parsers", "size_" + std::to_string(i++), std::string(1, '\0') + s);
  }
  i = 0;
  for (const char* s : {"127.0.0.1:50051", "[::1]:9003", "node-7.cluster:7000"}) {
    Write("parsers", "endpoint_" + std::to_string(i++), std::string("\x01\x00", 2) + s);
  }
  Write("parsers", "endpoint_default_port", std::string("\x01\x80", 2) + "10.0.0.1");
  Write("parsers", "key", std::string("\x02") + "model/layer-3/page-000042");
  const std::vector<std::string> keys = {"model/layer-3/page-000042", std::string(200, 'k'), "x"};
  Write("parsers", "packed_keys", std::string("\x03") + PackKeys(keys));
  Write("parsers", "master_address_etcd", std::string("\x04") + "etcd://10.0.0.1:2379;[::1]/prod");
  Write("parsers", "master_address_plain", std::string("\x04") + "10.0.0.1");
}

// ---- master_service: records [op][clock step x 50 ms][len u16][bytes] ----
enum Op : uint8_t {
  kPing,
  kMount,
  kUnmount,
  kPutStart,
  kPutEnd,
  kGet,
  kExists,
  kPrefix,
  kRemove,
  kRemoveAll,
  kStat,
  kHousekeeping,
  kRawMethod,
  kAdmin
};

std::string Rec(uint8_t op, uint8_t step, const std::string& body) {
  return std::string{static_cast<char>(op), static_cast<char>(step)} +
         U16(static_cast<uint16_t>(body.size())) + body;
}
std::string Rec(uint8_t op, uint8_t step, const google::protobuf::MessageLite& m) {
  return Rec(op, step, m.SerializeAsString());
}
std::string Admin(uint8_t path, const std::string& query) {
  return Rec(kAdmin, 0, std::string(1, static_cast<char>(path)) + query);
}

rpc::PutStart PutStart(const std::string& client, const std::vector<std::string>& keys,
                       uint64_t size, uint32_t replicas = 1, bool upsert = false) {
  rpc::PutStart p;
  p.set_client_id(client);
  for (const auto& k : keys) {
    auto* item = p.add_items();
    item->set_key(k);
    item->set_size(size);
  }
  p.mutable_config()->set_replica_num(replicas);
  p.set_upsert(upsert);
  return p;
}
rpc::PutEnd PutEnd(const std::string& client, const std::vector<std::string>& commit,
                   const std::vector<std::string>& revoke = {}) {
  rpc::PutEnd p;
  p.set_client_id(client);
  for (const auto& k : commit) p.add_commit_keys(k);
  for (const auto& k : revoke) p.add_revoke_keys(k);
  return p;
}
rpc::KeysRequest Keys(const std::vector<std::string>& keys, bool force = false) {
  rpc::KeysRequest k;
  k.set_client_id("c");
  for (const auto& key : keys) k.add_keys(key);
  k.set_force(force);
  return k;
}

void MasterServiceSeeds() {
  const std::string w = "master_service";
  Write(w, "put_get_remove",
        Rec(kPutStart, 1, PutStart("c", {"k1", "k2", "k3"}, 4096, 2)) +
            Rec(kPutEnd, 1, PutEnd("c", {"k1", "k2"}, {"k3"})) +
            Rec(kGet, 1, Keys({"k1", "k2", "missing"})) + Rec(kExists, 0, Keys({"k1", "nope"})) +
            Rec(kPrefix, 0, Keys({"k1", "k2", "k3"})) + Rec(kRemove, 0, Keys({"k1"})) +
            Rec(kRemove, 30, Keys({"k2"})) + Admin(3, "prefix=k&limit=1") + Admin(4, "key=k2") +
            Rec(kHousekeeping, 100, ""));
  rpc::MountSegment mount;
  mount.set_client_id("n");
  mount.set_segment_name("seg-c");
  mount.set_endpoint("127.0.0.1:7002");
  mount.set_size(1 << 16);
  rpc::UnmountSegment unmount;
  unmount.set_client_id("n");
  unmount.set_segment_name("seg-c");
  rpc::Ping ping;
  ping.set_client_id("n");
  rpc::RemoveAll all;
  all.set_client_id("c");
  all.set_force(true);
  Write(w, "mount_unmount",
        Rec(kMount, 0, mount) + Rec(kPing, 10, ping) +
            Rec(kPutStart, 0, PutStart("c", {"on-c"}, 1000)) +
            Rec(kPutEnd, 0, PutEnd("c", {"on-c"})) + Rec(kUnmount, 0, unmount) +
            Rec(kGet, 0, Keys({"on-c"})) + Rec(kStat, 0, "") + Rec(kRemoveAll, 0, all) +
            Admin(5, "") + Admin(2, ""));
  rpc::PutStart pinned = PutStart("c", {"pin"}, 512);
  pinned.mutable_config()->set_with_hard_pin(true);
  pinned.mutable_config()->add_preferred_segments("seg-b");
  Write(w, "upsert_lease_pin",
        Rec(kPutStart, 0, PutStart("c", {"u"}, 100)) + Rec(kPutEnd, 0, PutEnd("c", {"u"})) +
            Rec(kGet, 0, Keys({"u"})) + Rec(kPutStart, 1, PutStart("c", {"u"}, 200, 1, true)) +
            Rec(kPutStart, 30, PutStart("c", {"u"}, 200, 1, true)) + Rec(kPutStart, 0, pinned) +
            Rec(kPutEnd, 0, PutEnd("c", {"u", "pin"})) + Rec(kRemove, 0, Keys({"u"}, true)));
  Write(w, "stale_put_takeover",
        Rec(kPutStart, 0, PutStart("c1", {"s"}, 4096)) + Rec(kPing, 20, ping) +
            Rec(kPutStart, 80, PutStart("c2", {"s"}, 4096)) + Rec(kPutEnd, 0, PutEnd("c1", {"s"})) +
            Rec(kPutEnd, 0, PutEnd("c2", {"s"})) + Rec(kHousekeeping, 40, "") +
            Rec(kHousekeeping, 80, ""));
  std::vector<std::string> big;
  for (int i = 0; i < 12; ++i) big.push_back("big" + std::to_string(i));
  Write(w, "fill_and_evict",
        Rec(kPutStart, 0, PutStart("c", big, 100 << 10)) + Rec(kPutEnd, 0, PutEnd("c", big)) +
            Rec(kPutStart, 30, PutStart("c", {"more1", "more2"}, 100 << 10)) +
            Rec(kHousekeeping, 0, "") + Admin(1, ""));
  Write(w, "raw_methods",
        Rec(kRawMethod, 0, U16(999) + "x") + Rec(kRawMethod, 0, U16(40)) +
            Rec(kPutStart, 0, std::string("\xff\xff", 2)));
}

// ---- data_request: [method u8: 0 WRITE, 1 READ][payload length u16][DataRequest] ----
void DataRequestSeeds() {
  auto req = [](const std::string& seg, std::vector<std::pair<uint64_t, uint64_t>> ranges) {
    rpc::DataRequest r;
    r.set_segment_name(seg);
    for (auto [o, l] : ranges) {
      auto* x = r.add_ranges();
      x->set_offset(o);
      x->set_length(l);
    }
    return r.SerializeAsString();
  };
  const std::string w = "data_request";
  Write(w, "write_odd", std::string(1, 0) + U16(200) + req("odd", {{0, 100}, {12245, 100}}));
  Write(w, "read_big", std::string(1, 1) + U16(0) + req("big", {{0, 4096}, {1048000, 576}}));
  Write(w, "write_past_end", std::string(1, 0) + U16(64) + req("one-page", {{4090, 64}}));
  Write(w, "read_overflow",
        std::string(1, 1) + U16(0) + req("big", {{UINT64_MAX - 10, 20}, {0, UINT64_MAX}}));
  Write(w, "unknown_segment", std::string(1, 1) + U16(0) + req("nope", {{0, 1}}));
}

// ---- master_config: [mode u8: even argv (NUL-separated), odd config file][text] ----
void MasterConfigSeeds() {
  const std::string w = "master_config";
  auto argv = [](std::vector<std::string> args) {
    std::string s(1, '\0');
    for (size_t i = 0; i < args.size(); ++i) s += (i ? std::string(1, '\0') : "") + args[i];
    return s;
  };
  Write(w, "argv_ports",
        argv({"--rpc_port", "50052", "--metrics_port", "0", "--rpc_host", "127.0.0.1"}));
  Write(w, "argv_sizes",
        argv({"--allocation_alignment", "4KiB", "--eviction_ratio", "0.1", "--default_kv_lease_ttl",
              "500", "--enable_http_admin", "false"}));
  Write(w, "ini",
        "\x01rpc_port = 50052\nmetrics_port = 9100\nmetrics_host = 0.0.0.0\n"
        "client_ttl = 20\nlog_level = warn\n");
  Write(w, "toml",
        "\x01[default]\nenable_http_admin = true\neviction_high_watermark_ratio = 0.8\n"
        "put_start_release_timeout_sec = 900\n");
}

// ---- attach_requests: records of [op u8][len u16][meta]; op indexes fuzz_attach_requests.cc's
// kMethods (0 ATTACH .. 13 NODE_STATUS), 14 and 29 / 44 are protocol violations ----
void AttachRequestSeeds() {
  auto rec = [](uint8_t op, const google::protobuf::MessageLite& m) {
    std::string meta = m.SerializeAsString();
    return std::string(1, static_cast<char>(op)) + U16(static_cast<uint16_t>(meta.size())) + meta;
  };
  auto slice = [](rpc::Slice* s, uint64_t region, uint64_t offset, uint64_t length) {
    s->set_region_id(region);
    s->set_offset(offset);
    s->set_length(length);
  };
  auto object = [&](rpc::LocalObject* o, const std::string& key, uint64_t region, uint64_t offset,
                    uint64_t length) {
    o->set_key(key);
    if (length > 0) slice(o->add_slices(), region, offset, length);
  };
  auto keys = [](std::vector<std::string> ks) {
    rpc::KeysRequest k;
    for (auto& key : ks) k.add_keys(key);
    return k;
  };
  rpc::Attach attach;
  attach.set_client_id("fuzz");
  attach.set_pid(1);
  rpc::RegisterRegion reg;
  reg.set_region_id(1);
  reg.set_size(64 * 1024);
  rpc::LocalPut put;
  object(put.add_objects(), "page/0", 1, 0, 4096);
  object(put.add_objects(), "page/1", 1, 4096, 12000);
  rpc::LocalGet get;
  object(get.add_objects(), "page/0", 1, 32768, 4096);
  object(get.add_objects(), "page/1", 1, 40960, 12000);
  get.set_verify_checksum(true);
  rpc::LocalGet packed;
  object(packed.add_objects(), "page/0", 0, 0, 0);
  object(packed.add_objects(), "page/1", 0, 0, 0);
  slice(packed.mutable_pack(), 1, 16384, 20000);
  rpc::UnregisterRegion unreg;
  unreg.set_region_id(1);
  rpc::RemoveAll remove_all;
  remove_all.set_force(true);
  const std::string w = "attach_requests";
  Write(w, "put_get_remove",
        rec(0, attach) + rec(2, reg) + rec(5, put) + rec(6, get) + rec(6, packed) +
            rec(7, keys({"page/0", "page/1", "nope"})) + rec(8, keys({"page/0", "nope"})) +
            rec(9, keys({"page/1"})) + rec(10, keys({"page/0"})) + rec(3, unreg));
  rpc::LocalPut outside;
  object(outside.add_objects(), "edge", 1, 65000, 4096);  // past the region's end
  object(outside.add_objects(), "other", 7, 0, 4096);     // an unregistered region
  object(outside.add_objects(), "huge", 1, UINT64_MAX - 8, 64);
  rpc::LocalGet pack_outside = packed;
  slice(pack_outside.mutable_pack(), 1, 60000, 1 << 20);
  Write(w, "slices_outside_regions",
        rec(0, attach) + rec(2, reg) + rec(5, outside) + rec(6, pack_outside));
  Write(w, "before_attach", rec(5, put) + rec(2, reg) + rec(13, rpc::Empty()) + rec(0, attach));
  rpc::JoinSession join;
  join.set_session_id(1);
  join.set_session_token(12345);
  Write(w, "join_and_status",
        rec(1, join) + rec(0, attach) + rec(0, attach) + rec(4, rpc::Empty()) +
            rec(12, rpc::Empty()) + rec(11, remove_all) + rec(13, rpc::Empty()));
  Write(w, "violations", rec(0, attach) + rec(44, reg) + rec(29, join) + rec(14, attach));
  rpc::RegisterRegion big = reg;
  big.set_size(1 << 30);  // larger than the descriptor
  Write(w, "register_too_big", rec(0, attach) + rec(2, big) + rec(2, reg) + rec(2, reg));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  FrameHeaderSeeds();
  ParserSeeds();
  MasterServiceSeeds();
  DataRequestSeeds();
  MasterConfigSeeds();
  AttachRequestSeeds();
  return 0;
}
