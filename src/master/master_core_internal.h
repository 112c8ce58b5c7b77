// What MasterCore's source files share beyond master_core.h: the put's context types and the
// small encoders of replies. Private to src/master (master_core.cc, master_put.cc,
// master_query.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/keys.h"
#include "master/master_core.h"

namespace kvpool::master {

inline int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

inline void SetResult(rpc::PutStartResult* out, ErrorCode code, std::string message) {
  out->set_code(static_cast<int32_t>(code));
  out->set_message(std::move(message));
}

inline void AddCode(rpc::CodesReply* reply, ErrorCode code, std::string message) {
  reply->add_codes(static_cast<int32_t>(code));
  reply->add_messages(std::move(message));
}

struct MasterCore::PutContext {
  uint32_t writer;
  uint32_t replica_num;
  uint8_t flags;
  bool upsert;
  int64_t now_ns;
  uint64_t largest_segment;
  std::vector<std::string_view> preferred;
  std::string_view client_host;
  bool prefer_same_host;
  int64_t soft_pin_ttl_ns;          // 0: a soft pin never lapses
  bool keep_soft_pin;               // upsert: the replaced object's soft pin carries over
  std::vector<uint64_t> excluded;   // ReplicateConfig.excluded_segments, as ids
  std::vector<JournalMark>* frees;  // where replaced objects' frees go (may be null)
};

// What an upsert takes over from the object it replaces (Mooncake's semantics): its hard pin
// always, its soft pin and that pin's expiry when the put asks to keep it.
struct MasterCore::Carried {
  uint8_t flags = 0;
  int64_t soft_pin_until_ns = 0;  // 0: the carried soft pin never lapses
};

// OK for a valid key (common/keys.h); else its error, with the reason in *msg (the per-key
// calls that answer a code and a message: Revoke, RemoveOne, Commit).
inline ErrorCode KeyError(std::string_view key, std::string* msg) {
  Status st = ValidateKey(key);
  if (!st.ok()) *msg = st.message();
  return st.code();
}

}  // namespace kvpool::master
