// Test helpers for MasterCore: a fake clock (times are explicit arguments) and one-line
// wrappers that build the request messages.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "master/master_core.h"

namespace kvpool::master::testing {

// A time far from the steady clock's epoch; tests add offsets to it.
inline const Clock::time_point kT0 = Clock::time_point(std::chrono::hours(1000));
inline Clock::time_point At(double seconds) {
  return kT0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

inline ErrorCode Code(int32_t c) { return static_cast<ErrorCode>(c); }

// The MOUNT_SEGMENT request the service-level tests send through MasterService::Dispatch: a
// 1 MiB segment "seg" that client "node" serves at 127.0.0.1:7001.
inline rpc::MountSegment TestSegmentMount() {
  rpc::MountSegment m;
  m.set_client_id("node");
  m.set_segment_name("seg");
  m.set_endpoint("127.0.0.1:7001");
  m.set_size(1 << 20);
  return m;
}

class CoreTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSeg = 1 << 20;

  explicit CoreTest(MasterOptions o = MasterOptions())
      : options_(std::move(o)), core_(options_, 42) {}

  // Mounts segment `name` ("node:N") of `size` bytes for `client`.
  uint64_t Mount(const std::string& client, const std::string& name, uint64_t size = kSeg,
                 Clock::time_point now = kT0) {
    rpc::MountSegment m;
    m.set_client_id(client);
    m.set_segment_name(name);
    m.set_endpoint("127.0.0.1:" + std::to_string(9000 + name.size()));
    m.set_size(size);
    auto r = core_.MountSegment(m, now);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->segment_id() : 0;
  }

  rpc::PutStartReply PutStart(const std::string& client, std::vector<std::string> keys,
                              uint64_t size, Clock::time_point now = kT0, bool upsert = false,
                              rpc::ReplicateConfig cfg = rpc::ReplicateConfig()) {
    rpc::PutStart p;
    p.set_client_id(client);
    for (auto& k : keys) {
      auto* item = p.add_items();
      item->set_key(k);
      item->set_size(size);
    }
    *p.mutable_config() = std::move(cfg);
    p.set_upsert(upsert);
    auto r = core_.PutStart(p, now);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : rpc::PutStartReply();
  }
  // PutStart of one key; returns its result.
  rpc::PutStartResult Put1(const std::string& client, const std::string& key, uint64_t size,
                           Clock::time_point now = kT0, bool upsert = false,
                           rpc::ReplicateConfig cfg = rpc::ReplicateConfig()) {
    auto r = PutStart(client, {key}, size, now, upsert, std::move(cfg));
    return r.results_size() == 1 ? r.results(0) : rpc::PutStartResult();
  }

  rpc::CodesReply PutEnd(const std::string& client, const std::vector<std::string>& commit,
                         const std::vector<std::string>& revoke = {}, Clock::time_point now = kT0) {
    rpc::PutEnd p;
    p.set_client_id(client);
    for (auto& k : commit) p.add_commit_keys(k);
    for (auto& k : revoke) p.add_revoke_keys(k);
    auto r = core_.PutEnd(p, now);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : rpc::CodesReply();
  }
  // PutStart + commit; EXPECTs both OK.
  void PutComplete(const std::string& client, const std::string& key, uint64_t size,
                   Clock::time_point now = kT0) {
    auto r = Put1(client, key, size, now);
    ASSERT_EQ(r.code(), 0) << r.message();
    ASSERT_FALSE(r.already_exists()) << key;
    auto e = PutEnd(client, {key}, {}, now);
    ASSERT_EQ(e.codes(0), 0) << e.messages(0);
  }

  static rpc::KeysRequest Keys(const std::vector<std::string>& keys, bool force = false,
                               bool no_lease = false) {
    rpc::KeysRequest k;
    for (auto& key : keys) k.add_keys(key);
    k.set_force(force);
    k.set_no_lease(no_lease);
    return k;
  }
  rpc::ObjectLocation Get1(const std::string& key, Clock::time_point now = kT0,
                           bool no_lease = false) {
    auto r = core_.GetReplicaList(Keys({key}, false, no_lease), now);
    return r.objects(0);
  }
  int32_t Exists1(const std::string& key) { return core_.Exists(Keys({key}), kT0).codes(0); }
  ErrorCode Remove1(const std::string& key, Clock::time_point now = kT0, bool force = false) {
    return Code(core_.Remove(Keys({key}, force), now).codes(0));
  }
  void Ping(const std::string& client, Clock::time_point now) {
    rpc::Ping p;
    p.set_client_id(client);
    ASSERT_TRUE(core_.Ping(p, now).ok());
  }
  uint64_t Used() { return core_.Stat().used(); }

  MasterOptions options_;
  MasterCore core_;
};

}  // namespace kvpool::master::testing
