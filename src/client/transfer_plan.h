// Groups a batch's byte moves by segment so each segment costs one data request.
#pragma once

#include <sys/uio.h>

#include <map>
#include <string>
#include <vector>

#include "rpc/endpoint.h"
#include "rpc/kvpool.pb.h"
#include "transfer/transport.h"

namespace kvpool::client {

struct SegmentMoves {
  rpc::Endpoint endpoint;
  std::vector<rpc::Range> ranges;  // in the segment, in order
  std::vector<iovec> memory;       // the caller's side, concatenated in the same order
  std::vector<size_t> objects;     // batch index of each range's object
};

class TransferPlan {
 public:
  // Adds one replica's move: `memory` (exactly replica.length() bytes) <-> the replica's range.
  // Errors: INVALID_REPLICA when the master sent an unparsable endpoint.
  Status Add(size_t object, const rpc::Replica& replica, const std::vector<iovec>& memory);

  // Runs every segment's moves (write: memory -> segments; read: segments -> memory) with
  // `transport_for(segment_name)`, recording a failed move's status for each of its objects.
  template <typename TransportFor>
  void Run(bool write, TransportFor&& transport_for, Deadline deadline,
           std::vector<Status>& per_object) {
    for (auto& [name, moves] : segments_) {
      transfer::SegmentRanges where{&name, &moves.endpoint, moves.ranges};
      transfer::Transport& t = transport_for(name);
      Status st =
          write ? t.Write(where, moves.memory, deadline) : t.Read(where, moves.memory, deadline);
      if (st.ok()) continue;
      for (size_t i : moves.objects) {
        if (per_object[i].ok()) per_object[i] = st;
      }
    }
  }

  bool empty() const { return segments_.empty(); }

 private:
  std::map<std::string, SegmentMoves> segments_;
};

// The first `length` bytes of `buffers` as iovecs (buffers must hold at least that many).
std::vector<iovec> Prefix(const std::vector<iovec>& buffers, uint64_t length);
uint64_t TotalLength(const std::vector<iovec>& buffers);

}  // namespace kvpool::client
