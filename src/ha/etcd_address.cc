#include "ha/etcd_address.h"

#include <fmt/format.h>

#include <cctype>

namespace kvpool::ha {
namespace {

constexpr std::string_view kScheme = "etcd://";
constexpr std::string_view kForm = "etcd://host:port[;host:port...][/cluster_id]";

Status BadAddress(std::string_view what, std::string_view text, std::string_view why) {
  return Status(ErrorCode::INVALID_PARAMS, fmt::format("{}='{}': {}; expected host:port or {}",
                                                       what, text.substr(0, 256), why, kForm));
}

constexpr std::string_view kHttp = "http://";
constexpr std::string_view kMemberForm = "host:port or http://host:port";

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  }
  return true;
}

// One etcd member as etcd users write it: "host[:port]" or "http://host[:port][/]" (the scheme
// is stripped). Refused, naming the right form: another scheme (https: kvpool speaks plain
// HTTP to etcd), user info ("user@"), a path.
Result<rpc::Endpoint> ParseEtcdMember(std::string_view member, std::string_view text,
                                      std::string_view what) {
  auto bad = [&](std::string_view why) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("{}='{}': etcd member '{}' {}; write each member as {}", what,
                              text.substr(0, 256), member.substr(0, 256), why, kMemberForm));
  };
  if (StartsWithNoCase(member, kHttp)) {
    member.remove_prefix(kHttp.size());
    if (!member.empty() && member.back() == '/') member.remove_suffix(1);
  } else if (StartsWithNoCase(member, "https://")) {
    return bad("uses https: kvpool talks to etcd over plain HTTP only");
  } else if (member.find("://") != std::string_view::npos) {
    return bad("has a scheme other than http://");
  }
  if (member.find('@') != std::string_view::npos) {
    return bad("has user info (user@): kvpool does not log in to etcd");
  }
  if (member.find('/') != std::string_view::npos) return bad("has a path");
  return rpc::ParseEndpoint(member, kDefaultEtcdPort, what);
}

}  // namespace

std::string HostPort(const rpc::Endpoint& ep) {
  return ep.host.find(':') != std::string::npos ? "[" + ep.host + "]:" + std::to_string(ep.port)
                                                : ep.ToString();
}

std::string EtcdTarget::ToString() const {
  std::string out(kScheme);
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (i > 0) out += ';';
    out += HostPort(endpoints[i]);
  }
  return out + "/" + cluster_id;
}

Result<std::vector<rpc::Endpoint>> ParseEtcdEndpoints(std::string_view text,
                                                      std::string_view what) {
  std::vector<rpc::Endpoint> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find_first_of(";,", begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view member = text.substr(begin, end - begin);
    if (member.empty()) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("{}='{}': an empty etcd member; list them as host:port;host:port",
                                what, text.substr(0, 256)));
    }
    auto ep = ParseEtcdMember(member, text, what);
    if (!ep.ok()) return ep.status();
    out.push_back(std::move(ep).value());
    begin = end + 1;
  }
  return out;
}

Status ValidateClusterId(std::string_view id, std::string_view what) {
  bool ok = !id.empty() && id.size() <= 128;
  for (char c : id) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.' || c == '-');
  }
  if (ok) return Status::Ok();
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("{}='{}': a cluster id is 1..128 characters of A-Z a-z 0-9 _ . -", what,
                            id.substr(0, 256)));
}

Result<MasterAddress> ParseMasterAddress(std::string_view text, uint16_t default_port,
                                         std::string_view what) {
  MasterAddress a;
  if (text.substr(0, kScheme.size()) != kScheme) {
    if (text.find("://") != std::string_view::npos) {
      return BadAddress(what, text, "the only scheme is etcd://");
    }
    auto ep = rpc::ParseEndpoint(text, default_port, what);
    if (!ep.ok()) return ep.status();
    a.endpoint = std::move(ep).value();
    return a;
  }
  a.via_etcd = true;
  std::string_view rest = text.substr(kScheme.size());
  // etcd:// is the scheme: members after it are bare host:port (a second scheme would be read
  // as members and a cluster id), and kvpool does not log in to etcd (no user@).
  if (rest.find("://") != std::string_view::npos) {
    return BadAddress(what, text,
                      "write the etcd members after etcd:// without a scheme of their own "
                      "(etcd://h1:2379;h2:2379/id, not etcd://http://h1:2379)");
  }
  if (rest.find('@') != std::string_view::npos) {
    return BadAddress(what, text,
                      "user info (user@) is not supported: kvpool does not log in to "
                      "etcd");
  }
  // A '/' after the members starts the cluster id (IPv6 members are bracketed, no '/').
  size_t slash = rest.find('/');
  std::string_view members = rest.substr(0, slash);
  if (members.empty()) return BadAddress(what, text, "no etcd member");
  auto eps = ParseEtcdEndpoints(members, what);
  if (!eps.ok()) return BadAddress(what, text, eps.status().message());
  a.etcd.endpoints = std::move(eps).value();
  if (slash != std::string_view::npos) {
    std::string_view id = rest.substr(slash + 1);
    if (Status st = ValidateClusterId(id, "cluster id"); !st.ok()) {
      return BadAddress(what, text, st.message());
    }
    a.etcd.cluster_id = std::string(id);
  }
  return a;
}

Result<std::string> LocalAddressTowardMaster(const MasterAddress& master, std::string_view what) {
  const rpc::Endpoint& ep = master.via_etcd ? master.etcd.endpoints.front() : master.endpoint;
  return rpc::LocalAddressToward(ep.host, ep.port, what);
}

bool MasterIsLoopback(const MasterAddress& master) {
  if (!master.via_etcd) return rpc::IsLoopbackHost(master.endpoint.host);
  for (const rpc::Endpoint& ep : master.etcd.endpoints) {
    if (!rpc::IsLoopbackHost(ep.host)) return false;
  }
  return true;
}

}  // namespace kvpool::ha
