#include "tools/client_commands.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "client/client_security.h"
#include "common/units.h"
#include "kvpool/client.h"

namespace kvpool::tools {
namespace {

int Fail(const std::string& what, const Status& st) {
  std::cerr << "kvpool " << what << ": " << st.ToString() << "\n";
  return 1;
}

Result<std::unique_ptr<Client>> Connect(const ClientCommandOptions& o) {
  ClientOptions co;
  co.master_server_address = o.master;
  co.rpc_timeout = std::chrono::milliseconds(o.timeout_ms);
  co.transfer_timeout = std::chrono::milliseconds(std::max(o.timeout_ms, 30000));
  client::ApplySecurityFlags(o.security, co);
  co.tenant_id = o.tenant_id;
  co.tenant_key_file = o.tenant_key_file;
  return Client::Setup(co);
}

Result<std::vector<char>> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(ErrorCode::FILE_OPEN_FAIL, fmt::format("cannot open '{}' for reading", path));
  }
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status(ErrorCode::FILE_READ_FAIL, fmt::format("cannot read '{}'", path));
  return data;
}

int Put(const ClientCommandOptions& o, const std::string& key, const std::string& path) {
  auto data = ReadFile(path);
  if (!data.ok()) return Fail("put", data.status());
  auto client = Connect(o);
  if (!client.ok()) return Fail("put", client.status());
  if (data->empty()) {
    return Fail("put", Status(ErrorCode::INVALID_PARAMS, fmt::format("'{}' is empty", path)));
  }
  Status st = (*client)->RegisterBuffer(data->data(), data->size());
  if (st.ok()) st = (*client)->PutFrom(key, data->data(), data->size());
  if (!st.ok()) return Fail("put", st);
  std::cout << fmt::format("put {} ({})\n", key, FormatSize(data->size()));
  return 0;
}

int Get(const ClientCommandOptions& o, const std::string& key, const std::string& path) {
  auto client = Connect(o);
  if (!client.ok()) return Fail("get", client.status());
  auto size = (*client)->GetSize(key);
  if (!size.ok()) return Fail("get", size.status());
  std::vector<char> data(*size);
  Status st = (*client)->RegisterBuffer(data.data(), data.size());
  if (!st.ok()) return Fail("get", st);
  auto got = (*client)->GetInto(key, data.data(), data.size());
  if (!got.ok()) return Fail("get", got.status());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(*got));
  out.close();
  if (!out) {
    return Fail("get", Status(ErrorCode::FILE_WRITE_FAIL, fmt::format("cannot write '{}'", path)));
  }
  std::cout << fmt::format("got {} ({}) -> {}\n", key, FormatSize(*got), path);
  return 0;
}

int Exists(const ClientCommandOptions& o, const std::string& key) {
  auto client = Connect(o);
  if (!client.ok()) return Fail("exists", client.status());
  auto r = (*client)->IsExist(key);
  if (!r.ok()) return Fail("exists", r.status());
  std::cout << (*r ? "yes" : "no") << "\n";
  return *r ? 0 : 1;
}

int Remove(const ClientCommandOptions& o, const std::string& key, bool force) {
  auto client = Connect(o);
  if (!client.ok()) return Fail("rm", client.status());
  Status st = (*client)->Remove(key, force);
  if (!st.ok()) return Fail("rm", st);
  std::cout << fmt::format("removed {}\n", key);
  return 0;
}

// The same fields as the master's /segments endpoint.
void PrintStatJson(const PoolStat& s) {
  nlohmann::json segments = nlohmann::json::array();
  for (const auto& seg : s.segments) {
    segments.push_back({{"name", seg.name},
                        {"endpoint", seg.endpoint},
                        {"capacity_bytes", seg.size},
                        {"used_bytes", seg.used},
                        {"objects", seg.object_count}});
  }
  nlohmann::json j = {{"segments", std::move(segments)},
                      {"capacity_bytes", s.capacity},
                      {"used_bytes", s.used},
                      {"objects", s.object_count},
                      {"clients", s.client_count},
                      {"evicted_objects", s.evicted_total},
                      {"leases_held", s.leases_held},
                      {"leased_bytes", s.bytes_leased},
                      {"puts_refused",
                       {{"leased_or_pinned", s.refused_leased_or_pinned},
                        {"tenant_quota", s.refused_tenant_quota},
                        {"no_segment", s.refused_no_segment}}}};
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

int PrintStat(const ClientCommandOptions& o) {
  auto client = Connect(o);
  if (!client.ok()) return Fail("stat", client.status());
  auto s = (*client)->Stat();
  if (!s.ok()) return Fail("stat", s.status());
  if (o.json) {
    PrintStatJson(*s);
    return 0;
  }
  double pct = s->capacity ? 100.0 * static_cast<double>(s->used) / s->capacity : 0.0;
  std::cout << fmt::format(
      "pool: {} segments, capacity {}, used {} ({:.1f}%), {} objects, "
      "{} clients, {} evicted\n",
      s->segments.size(), FormatSize(s->capacity), FormatSize(s->used), pct, s->object_count,
      s->client_count, s->evicted_total);
  std::cout << fmt::format(
      "leases: {} held ({}); puts refused: {} pool full of leased/pinned, {} tenant quota, {} no "
      "segment\n",
      s->leases_held, FormatSize(s->bytes_leased), s->refused_leased_or_pinned,
      s->refused_tenant_quota, s->refused_no_segment);
  std::cout << fmt::format("{:<28} {:>12} {:>12} {:>10}\n", "segment", "size", "used", "objects");
  for (const auto& seg : s->segments) {
    std::cout << fmt::format("{:<28} {:>12} {:>12} {:>10}\n", seg.name, FormatSize(seg.size),
                             FormatSize(seg.used), seg.object_count);
  }
  return 0;
}

}  // namespace

void AddClientCommands(CLI::App& app, ClientCommandOptions& o, int& exit_code) {
  auto add_common = [&o](CLI::App* cmd) {
    cmd->add_option("--master", o.master, "Master host:port")->capture_default_str();
    cmd->add_option("--timeout_ms", o.timeout_ms, "Deadline of each call")->capture_default_str();
    rpc::AddSecurityFlags(*cmd, o.security, /*server=*/false);
    cmd->add_option("--tenant_id", o.tenant_id, "Tenant whose keys to use (default: the default)");
    cmd->add_option("--tenant_key_file", o.tenant_key_file,
                    "File holding the tenant key of --tenant_id (default: $KVPOOL_TENANT_KEY)");
  };
  auto* put = app.add_subcommand("put", "Store FILE's bytes under KEY");
  put->add_option("KEY", o.key)->required();
  put->add_option("FILE", o.path)->required();
  add_common(put);
  put->callback([&] { exit_code = Put(o, o.key, o.path); });

  auto* get = app.add_subcommand("get", "Write KEY's bytes to FILE");
  get->add_option("KEY", o.key)->required();
  get->add_option("FILE", o.path)->required();
  add_common(get);
  get->callback([&] { exit_code = Get(o, o.key, o.path); });

  auto* exists = app.add_subcommand("exists", "Exit 0 and print yes when KEY exists");
  exists->add_option("KEY", o.key)->required();
  add_common(exists);
  exists->callback([&] { exit_code = Exists(o, o.key); });

  auto* rm = app.add_subcommand("rm", "Remove KEY");
  rm->add_option("KEY", o.key)->required();
  rm->add_flag("--force", o.force, "Remove even while a reader holds a lease");
  add_common(rm);
  rm->callback([&] { exit_code = Remove(o, o.key, o.force); });

  auto* stat = app.add_subcommand("stat", "Segments, capacity, use and object count");
  stat->add_flag("--json", o.json, "Print one JSON object instead of a table");
  add_common(stat);
  stat->callback([&] { exit_code = PrintStat(o); });
}

}  // namespace kvpool::tools
