// The Service of the rpc tests: WRITE keeps the payload, READ sends it back, anything else is
// NOT_SUPPORTED. It counts the requests it is handed. Tests that need more derive from it and
// handle their own methods first.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/kvpool.pb.h"
#include "rpc/server.h"

namespace kvpool::rpc {

class EchoService : public Service {
 public:
  asio::awaitable<Reply> Handle(const FrameHeader& h, std::string_view /*meta*/,
                                PayloadReader& payload) override {
    ++handled;
    if (h.method == WRITE) {
      stored_.resize(payload.size());
      // (GCC 12 cannot hold a braced initializer list across co_await: build it first.)
      std::vector<asio::mutable_buffer> into(1, asio::buffer(stored_));
      Status st = co_await payload.ReadInto(std::move(into));
      if (!st.ok()) co_return Reply::Error(st);
      co_return Reply::Of(Empty());
    }
    if (h.method == READ) {
      Reply r = Reply::Of(Empty());
      r.payload.push_back(asio::buffer(stored_));
      r.payload_stable = stable_reads_;
      co_return r;
    }
    co_return Reply::Error(Status(ErrorCode::NOT_SUPPORTED, "method"));
  }

  std::atomic<int> handled{0};
  std::string stored_;
  // READ replies say their bytes stay unchanged until read (they may go out zero-copy): true
  // while no WRITE comes during a READ, which the tests that set it ensure.
  bool stable_reads_ = false;
};

// A loopback server with a thread per connection (ServerOptions::pin_connections, the master's
// and the data servers' setting).
inline ServerOptions PinnedOptions(int threads) {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.threads = threads;
  o.pin_connections = true;
  return o;
}

}  // namespace kvpool::rpc
