#include "client/client_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>

#include "common/env.h"
#include "common/spin_wait.h"
#include "common/units.h"

namespace kvpool {
namespace {

constexpr int64_t kMaxDurationMs = 24LL * 3600 * 1000;

Status Invalid(std::string_view key, std::string_view value, std::string_view accepted) {
  return Status(ErrorCode::INVALID_PARAMS,
                fmt::format("client option {}='{}': expected {}", key, value, accepted));
}

std::optional<uint64_t> ParseUnsigned(std::string_view text, uint64_t max) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > max) {
    return std::nullopt;
  }
  return v;
}

std::optional<bool> ParseBool(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  return std::nullopt;
}

// One descriptor's setter and getter from the member it names; the kind picks the parser.
template <typename T>
ClientOptionDescriptor Option(std::string_view name, OptionKind kind, T ClientOptions::*field,
                              std::string_view doc, std::vector<std::string_view> aliases = {},
                              std::vector<std::string_view> env = {},
                              uint64_t max_count = std::numeric_limits<uint64_t>::max()) {
  ClientOptionDescriptor d{name, std::move(aliases), kind, std::move(env), doc, nullptr, nullptr};
  d.set = [name, kind, field, max_count](std::string_view value, ClientOptions& o) -> Status {
    (void)name, (void)kind, (void)max_count;  // each used by some of the branches below
    if constexpr (std::is_same_v<T, std::string>) {
      o.*field = std::string(value);
      return Status::Ok();
    } else if constexpr (std::is_same_v<T, bool>) {
      auto b = ParseBool(value);
      if (!b) return Invalid(name, value, "a bool (true/false, 1/0, yes/no, on/off)");
      o.*field = *b;
      return Status::Ok();
    } else if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
      auto ms = ParseUnsigned(value, kMaxDurationMs);
      if (!ms || *ms == 0) {
        return Invalid(
            name, value,
            fmt::format("an integer number of milliseconds from 1 to {}", kMaxDurationMs));
      }
      o.*field = std::chrono::milliseconds(*ms);
      return Status::Ok();
    } else {
      if (kind == OptionKind::kSize) {
        auto bytes = ParseSize(value, name);
        if (!bytes.ok()) {
          return Invalid(name, value, "a size in bytes: an integer or a number with a unit (4gb)");
        }
        o.*field = static_cast<T>(*bytes);
        return Status::Ok();
      }
      const uint64_t max = std::min<uint64_t>(std::numeric_limits<T>::max(), max_count);
      auto n = ParseUnsigned(value, max);
      if (!n) return Invalid(name, value, fmt::format("an integer from 0 to {}", max));
      o.*field = static_cast<T>(*n);
      return Status::Ok();
    }
  };
  d.get = [field](const ClientOptions& o) -> std::string {
    if constexpr (std::is_same_v<T, std::string>) {
      return o.*field;
    } else if constexpr (std::is_same_v<T, bool>) {
      return o.*field ? "true" : "false";
    } else if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
      return std::to_string((o.*field).count());
    } else {
      return std::to_string(o.*field);
    }
  };
  return d;
}

std::vector<ClientOptionDescriptor> BuildTable() {
  using K = OptionKind;
  using O = ClientOptions;
  std::vector<ClientOptionDescriptor> t;
  t.push_back(Option("master_server_address", K::kString, &O::master_server_address,
                     "master \"host:port\" or \"etcd://h1:2379;h2:2379[/id]\"",
                     {"master_server_addr"}, {"MOONCAKE_MASTER"}));
  t.push_back(Option("local_hostname", K::kString, &O::local_hostname,
                     "host name or IP peers reach this process's segment by", {},
                     {"MOONCAKE_LOCAL_HOSTNAME", "LOCAL_HOSTNAME"}));
  t.push_back(Option("global_segment_size", K::kSize, &O::global_segment_size,
                     "bytes of DRAM this process contributes to the pool (0: none)", {},
                     {"MOONCAKE_GLOBAL_SEGMENT_SIZE"}));
  t.push_back(Option("segment_port", K::kPort, &O::segment_port,
                     "data port of the contributed segment (0: a free port)"));
  t.push_back(Option("use_hugepage", K::kBool, &O::use_hugepage,
                     "back the contributed segment with huge pages"));
  t.push_back(Option("disk_path", K::kString, &O::disk_path,
                     "directory of the disk tier below the segment (empty: none)"));
  t.push_back(Option("disk_size", K::kSize, &O::disk_size, "bytes of the disk tier's file"));
  t.push_back(Option("disk_queue_depth", K::kCount, &O::disk_queue_depth,
                     "io_uring operations in flight per disk ring"));
  t.push_back(Option("disk_promote_after", K::kCount, &O::disk_promote_after,
                     "disk reads after which an object is copied back to DRAM (0: never)"));
  t.push_back(Option("protocol", K::kString, &O::protocol, "transport: \"tcp\"", {},
                     {"MOONCAKE_PROTOCOL"}));
  t.push_back(Option("rpc_timeout_ms", K::kDurationMs, &O::rpc_timeout,
                     "deadline of one control call to the master", {"rpc_timeout"}));
  t.push_back(Option("transfer_timeout_ms", K::kDurationMs, &O::transfer_timeout,
                     "deadline of the data phase of one call", {"transfer_timeout"}));
  t.push_back(Option("silent_peer_timeout_ms", K::kDurationMs, &O::silent_peer_timeout,
                     "a node making no progress this long is given up on when another replica "
                     "can serve the read"));
  t.push_back(Option("heartbeat_interval_ms", K::kDurationMs, &O::heartbeat_interval,
                     "liveness ping period", {"heartbeat_interval"}));
  t.push_back(Option("reply_spin_us", K::kCount, &O::reply_spin_us,
                     "microseconds a call polls for its reply before sleeping (0: never)", {}, {},
                     kMaxSpinMicros));
  t.push_back(
      Option("zero_copy_send_min_bytes", K::kSize, &O::zero_copy_send_min_bytes,
             "sends of at least this many bytes (put payloads, the contributed segment's get "
             "replies) go zero-copy where the kernel can (0: never)"));
  t.push_back(Option("prefault_segment", K::kBool, &O::prefault_segment,
                     "fault the contributed segment in at Setup"));
  t.push_back(Option("prefault_segment_in_background", K::kBool, &O::prefault_segment_in_background,
                     "fault the contributed segment in on a thread after Setup"));
  t.push_back(Option("insecure", K::kBool, &O::insecure,
                     "without a secret, serve the contributed segment to other hosts too "
                     "(default: protected mode, this host only)"));
  t.push_back(Option("verify_checksum", K::kBool, &O::verify_checksum,
                     "gets verify each object's XXH3-64", {}, {"KVPOOL_VERIFY_CHECKSUM"}));
  t.push_back(Option("auth_secret", K::kString, &O::auth_secret,
                     "shared secret proven to the master and nodes", {}, {"KVPOOL_AUTH_SECRET"}));
  t.push_back(Option("auth_secret_file", K::kString, &O::auth_secret_file,
                     "file holding the shared secret"));
  t.push_back(Option("tls_ca_file", K::kString, &O::tls_ca_file,
                     "CA bundle (PEM); setting it turns TLS on"));
  t.push_back(Option("tls_cert_file", K::kString, &O::tls_cert_file, "client certificate (PEM)"));
  t.push_back(Option("tls_key_file", K::kString, &O::tls_key_file, "client key (PEM)"));
  t.push_back(Option("tls_verify_client", K::kBool, &O::tls_verify_client,
                     "embedded segment requires client certificates from peers"));
  t.push_back(Option("tenant_id", K::kString, &O::tenant_id,
                     "tenant whose key namespace this client uses", {}, {"MOONCAKE_TENANT_ID"}));
  t.push_back(Option("tenant_key", K::kString, &O::tenant_key, "tenant key of tenant_id", {},
                     {"KVPOOL_TENANT_KEY"}));
  t.push_back(Option("tenant_key_file", K::kString, &O::tenant_key_file,
                     "file holding the tenant key", {}, {"KVPOOL_TENANT_KEY_FILE"}));
  return t;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string_view OptionKindName(OptionKind kind) {
  switch (kind) {
    case OptionKind::kString:
      return "string";
    case OptionKind::kBool:
      return "bool";
    case OptionKind::kSize:
      return "size";
    case OptionKind::kCount:
      return "count";
    case OptionKind::kDurationMs:
      return "duration-ms";
    case OptionKind::kPort:
      return "port";
  }
  return "?";
}

std::span<const ClientOptionDescriptor> ClientOptionTable() {
  static const std::vector<ClientOptionDescriptor> table = BuildTable();
  return table;
}

const ClientOptionDescriptor* FindClientOption(std::string_view key) {
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    if (d.name == key || std::find(d.aliases.begin(), d.aliases.end(), key) != d.aliases.end()) {
      return &d;
    }
  }
  return nullptr;
}

std::string_view ClosestClientOption(std::string_view key,
                                     std::span<const std::string_view> extra) {
  std::string_view best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  auto consider = [&](std::string_view name) {
    size_t dist = EditDistance(key, name);
    if (dist < best_distance) best_distance = dist, best = name;
  };
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    consider(d.name);
    for (std::string_view alias : d.aliases) consider(alias);
  }
  for (std::string_view name : extra) consider(name);
  return best;
}

Status ApplyClientOption(std::string_view key, std::string_view value, ClientOptions& o) {
  const ClientOptionDescriptor* d = FindClientOption(key);
  if (d == nullptr) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("unknown client option '{}'; did you mean '{}'?", key,
                              ClosestClientOption(key)));
  }
  return d->set(value, o);
}

EnvLookup ProcessEnv() {
  return [](const char* name) -> std::optional<std::string> { return GetEnv(name); };
}

namespace {

// The first of `vars` set and non-empty in `env`, with its value.
std::optional<std::pair<std::string_view, std::string>> FirstSetVariable(
    std::span<const std::string_view> vars, const EnvLookup& env) {
  for (std::string_view var : vars) {
    std::optional<std::string> value = env(std::string(var).c_str());
    if (value && !value->empty()) return std::pair{var, std::move(*value)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ClientOptionFromEnv(std::string_view name, const EnvLookup& env) {
  const ClientOptionDescriptor* d = FindClientOption(name);
  if (d == nullptr) return std::nullopt;
  auto found = FirstSetVariable(d->env, env);
  if (!found) return std::nullopt;
  return std::move(found->second);
}

std::optional<std::string> SetupSettingFromEnv(std::string_view key, const EnvLookup& env) {
  struct SetupSetting {
    std::string_view key;
    std::array<std::string_view, 1> env;
  };
  static constexpr std::array<SetupSetting, 1> kSetupSettings = {
      {{"ssd_offload_path", {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"}}}};
  for (const SetupSetting& s : kSetupSettings) {
    if (s.key != key) continue;
    auto found = FirstSetVariable(s.env, env);
    if (found) return std::move(found->second);
  }
  return std::nullopt;
}

Status ApplyClientEnvironment(ClientOptions& o, const EnvLookup& env) {
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    auto found = FirstSetVariable(d.env, env);
    if (!found) continue;
    if (Status st = d.set(found->second, o); !st.ok()) {
      return Status(st.code(), fmt::format("${}: {}", found->first, st.message()));
    }
  }
  return Status::Ok();
}

std::string ClientOptionDefault(const ClientOptionDescriptor& d) { return d.get(ClientOptions{}); }

std::string ClientOptionsMarkdown() {
  auto codes = [](const std::vector<std::string_view>& names) {
    std::string out;
    for (std::string_view n : names) out += fmt::format("{}`{}`", out.empty() ? "" : ", ", n);
    return out;
  };
  std::string out =
      "| option | also | kind | default | environment | meaning |\n"
      "|---|---|---|---|---|---|\n";
  for (const ClientOptionDescriptor& d : ClientOptionTable()) {
    std::string def = ClientOptionDefault(d);
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", d.name, codes(d.aliases),
                       OptionKindName(d.kind), def.empty() ? "" : fmt::format("`{}`", def),
                       codes(d.env), d.doc);
  }
  return out;
}

}  // namespace kvpool
