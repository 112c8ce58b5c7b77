// Test helpers for the data service: a tenant's view of it, and a recorder of the objects its
// WRITEs name.
#pragma once

#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "rpc/server.h"
#include "transfer/data_service.h"

namespace kvpool::transfer {

inline constexpr uint64_t kNow = 1'800'000'000'000;  // the service's clock in tests (unix ms)
inline constexpr const char* kSecret = "pool secret";
inline uint64_t FixedNow() { return kNow; }

// What the server does for a connection that proved a tenant key: the same service, with a
// non-privileged context.
class AsTenant : public rpc::Service {
 public:
  explicit AsTenant(rpc::Service* inner) : inner_(inner) {}
  asio::awaitable<rpc::Reply> Handle(const rpc::FrameHeader& h, std::string_view meta,
                                     rpc::PayloadReader& payload) override {
    rpc::ConnectionContext tenant;
    tenant.peer = "test peer";
    tenant.authenticated = true;
    tenant.privileged = false;
    tenant.tenant_id = "tenant-a";
    co_return co_await inner_->HandleFrom(tenant, h, meta, payload);
  }

 private:
  rpc::Service* inner_;
};

// Keeps what each WRITE named: key, offset, length, checksum and journal_seq per range.
class RecordingWrites : public WriteRecorder {
 public:
  struct Listed {
    std::string key;
    uint64_t offset, length, checksum, journal_seq;
  };
  bool RecordWrites(const rpc::DataRequest& req, std::span<const uint64_t> checksums) override {
    std::lock_guard lock(mu_);
    for (int i = 0; i < req.ranges_size(); ++i) {
      listed_.push_back({req.record_keys(i), req.ranges(i).offset(), req.ranges(i).length(),
                         checksums[i], req.ranges(i).journal_seq()});
    }
    return true;
  }
  std::vector<Listed> listed() const {
    std::lock_guard lock(mu_);
    return listed_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Listed> listed_;
};

}  // namespace kvpool::transfer
