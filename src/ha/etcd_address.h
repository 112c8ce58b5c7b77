// Master addresses as users type them: "host:port" (one master), or "etcd://h1:2379;h2:2379[/id]"
// (Mooncake's convention: ask etcd which master of cluster `id` leads). Parsed in one place for
// every role that takes a master address (CLI --master, node --master_server_address,
// ClientOptions, Python setup, SGLang config).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kvpool/status.h"
#include "rpc/endpoint.h"

namespace kvpool::ha {

// The cluster id a master and an etcd:// address use when none is given.
inline constexpr std::string_view kDefaultClusterId = "kvpool";
inline constexpr uint16_t kDefaultEtcdPort = 2379;

struct EtcdTarget {
  std::vector<rpc::Endpoint> endpoints;  // etcd members' client endpoints (at least one)
  std::string cluster_id{kDefaultClusterId};
  // "etcd://h1:2379;h2:2379/id", for messages.
  std::string ToString() const;
};

struct MasterAddress {
  bool via_etcd = false;
  rpc::Endpoint endpoint;  // !via_etcd
  EtcdTarget etcd;         // via_etcd
  std::string ToString() const { return via_etcd ? etcd.ToString() : endpoint.ToString(); }
};

// "host:port" with an IPv6 host in brackets ("[::1]:50051"), so that rpc::ParseEndpoint reads
// it back (rpc::Endpoint::ToString does not bracket). For addresses published or printed to be
// parsed again: etcd:// addresses, the leader's address in etcd.
std::string HostPort(const rpc::Endpoint& ep);

// Parses "h1:2379;h2:2379" (';' or ',' between members; a member without a port gets 2379). A
// member may be written "http://h1:2379" as etcd's own tools take it (the scheme is dropped).
// Errors: INVALID_PARAMS naming `what`, the text and the expected form (also for an https://
// or other scheme, user info "user@", or a path).
Result<std::vector<rpc::Endpoint>> ParseEtcdEndpoints(std::string_view text, std::string_view what);

// OK, or INVALID_PARAMS naming `what`: 1..128 characters of [A-Za-z0-9_.-].
Status ValidateClusterId(std::string_view id, std::string_view what);

// Parses a master address: "etcd://MEMBERS[/cluster_id]" or "host[:port]" (port defaults to
// `default_port`). Errors: INVALID_PARAMS naming `what`, the text and the expected form (also
// for "etcd://http://..." and for user info, "etcd://user@host:port").
Result<MasterAddress> ParseMasterAddress(std::string_view text, uint16_t default_port,
                                         std::string_view what);

// The address other hosts reach this one by, as seen on the route to `master` (its first etcd
// member for an etcd:// address): rpc::LocalAddressToward. A loopback address when the master
// is on this host's loopback. What a node or an embedded client announces when given no host.
// Errors: INVALID_PARAMS naming `what` (the master's host does not resolve, no route).
Result<std::string> LocalAddressTowardMaster(const MasterAddress& master, std::string_view what);

// True when every address `master` names is a loopback address (rpc::IsLoopbackHost): then
// only processes of this host can reach it anyway.
bool MasterIsLoopback(const MasterAddress& master);

}  // namespace kvpool::ha
