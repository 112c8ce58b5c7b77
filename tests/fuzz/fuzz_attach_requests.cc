// The node's local (standalone) request handling: a sequence of frames with arbitrary meta bytes
// goes through AttachService::Handle — ATTACH, JOIN_SESSION, REGISTER_REGION (with a real sealed
// memfd), UNREGISTER_REGION, the LOCAL_* batch and metadata calls, NODE_STATUS — on one local
// connection, as the node's attach server would deliver them after the uid check. The service
// runs on a real store: an embedded client hosting a 4 MiB segment, registered with an
// in-process master on 127.0.0.1, so puts and gets move real bytes between the fuzzer's regions
// and the segment. Slices that point outside a registered region, at unknown regions, or at
// regions of another session must be refused without touching memory (ASan watches).
//
// Input: records of [op u8][len u16][len bytes]. op % 15 picks the method from kMethods (with
// REGISTER_REGION carrying a descriptor: a fresh memfd of kRegionBytes); 14 sends REGISTER_REGION
// without a descriptor, or any method with one (both protocol violations). After the sequence the
// connection ends, which drops its session and unmaps its regions.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "client/embedded/client_impl.h"
#include "fuzz_input.h"
#include "master/master.h"
#include "node/attach_service.h"

using namespace kvpool;

namespace {

constexpr uint16_t kMethods[] = {rpc::ATTACH,
                                 rpc::JOIN_SESSION,
                                 rpc::REGISTER_REGION,
                                 rpc::UNREGISTER_REGION,
                                 rpc::LOCAL_HEARTBEAT,
                                 rpc::LOCAL_PUT,
                                 rpc::LOCAL_GET,
                                 rpc::LOCAL_EXISTS,
                                 rpc::LOCAL_EXISTS_PREFIX,
                                 rpc::LOCAL_GET_SIZE,
                                 rpc::LOCAL_REMOVE,
                                 rpc::LOCAL_REMOVE_ALL,
                                 rpc::LOCAL_STAT,
                                 rpc::NODE_STATUS};
constexpr size_t kNumMethods = sizeof(kMethods) / sizeof(kMethods[0]);
constexpr size_t kRegionBytes = 64 * 1024;

rpc::UniqueFd SealedMemfd() {
  int fd = memfd_create("kvpool-fuzz-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(ftruncate(fd, kRegionBytes) == 0);
  FUZZ_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
  return rpc::UniqueFd(fd);
}

struct Fixture {
  std::unique_ptr<master::Master> master;
  std::unique_ptr<client::ClientImpl> store;
  std::unique_ptr<node::AttachService> service;

  Fixture() {
    spdlog::set_level(spdlog::level::off);
    master::MasterOptions mo;
    mo.rpc_host = "127.0.0.1";
    mo.rpc_port = 0;
    mo.enable_http_admin = false;
    master = std::make_unique<master::Master>(mo);
    FUZZ_CHECK(master->Start().ok());
    ClientOptions co;
    co.master_server_address = "127.0.0.1:" + std::to_string(master->port());
    co.local_hostname = "127.0.0.1";
    co.global_segment_size = 4 << 20;
    co.segment_port = 0;
    co.rpc_timeout = std::chrono::milliseconds(2000);
    co.transfer_timeout = std::chrono::milliseconds(2000);
    client::HostingOptions ho;
    ho.bind_host = "127.0.0.1";
    store = std::make_unique<client::ClientImpl>(co, ho);
    FUZZ_CHECK(store->Init().ok());
    node::AttachServiceOptions so;
    so.client_ttl = std::chrono::hours(1);  // sessions end with their connection, not by time
    service = std::make_unique<node::AttachService>(store.get(), so);
  }
};

Fixture& F() {
  static Fixture* f = new Fixture();  // lives for the process: the master's threads keep running
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = F();
  fuzz::FuzzInput in(data, size);
  int fds[2];
  FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  rpc::UniqueFd client_end(fds[1]);
  node::LocalConnection conn;
  conn.handle = std::make_shared<node::ConnectionHandle>(rpc::UniqueFd(fds[0]));
  conn.peer.pid = getpid();
  conn.peer.uid = getuid();
  for (int records = 0; !in.empty() && records < 64; ++records) {
    const uint8_t op = in.U8();
    rpc::UnixFrame frame;
    frame.meta = std::string(in.Chunk());
    const size_t pick = op % (kNumMethods + 1);
    if (pick < kNumMethods) {
      frame.header.method = kMethods[pick];
      if (frame.header.method == rpc::REGISTER_REGION) frame.fds.push_back(SealedMemfd());
    } else {
      // Violations: a descriptor where none belongs, or REGISTER_REGION without one.
      frame.header.method = kMethods[(op >> 4) % kNumMethods];
      if (frame.header.method != rpc::REGISTER_REGION) frame.fds.push_back(SealedMemfd());
    }
    node::LocalReply reply = f.service->Handle(conn, frame);
    FUZZ_CHECK(reply.code != ErrorCode::OK || !reply.close);
    if (reply.close) break;  // the attach server ends the connection here
  }
  f.service->Disconnected(conn);
  conn.handle->Close();
  return 0;
}
