#include "tools/client_commands.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "client/client_config.h"
#include "client/client_security.h"
#include "common/keys.h"
#include "common/units.h"
#include "kvpool/client.h"
#include "tools/interrupt_watcher.h"

namespace kvpool::tools {
namespace {

// Keys are any bytes and messages quote them: what reaches the terminal is PrintableBytes,
// and `key` (the command's, when it has one) as ShownKey: a long key is cut, with its length.
int Fail(const std::string& what, const Status& st, std::string_view key = {}) {
  std::string text = st.ToString();
  if (key.size() > kShownKeyBytes) {
    const std::string shown = ShownKey(key);
    std::string out;
    size_t from = 0;
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, from)) {
      out += PrintableBytes(std::string_view(text).substr(from, at - from));
      out += shown;
      from = at + key.size();
    }
    text = out + PrintableBytes(std::string_view(text).substr(from));
  } else {
    text = PrintableBytes(text);
  }
  std::cerr << "kvpool " << what << ": " << text << "\n";
  return 1;
}

// "KEY=VALUE" of --option split at its first '='; INVALID_PARAMS when there is none.
Result<std::pair<std::string, std::string>> SplitOption(const std::string& kv) {
  size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status(ErrorCode::INVALID_PARAMS,
                  fmt::format("--option '{}': expected KEY=VALUE (a client option, as in "
                              "docs/operations.md \"Client options\")",
                              kv));
  }
  return std::pair{kv.substr(0, eq), kv.substr(eq + 1)};
}

// The client's options from the command's flags, through the client option table (the same
// names, syntax and checks as Python's setup() and the C++ API): the named flags first, then
// each --option in order, so --option overrides them.
Result<ClientOptions> CommandClientOptions(const ClientCommandOptions& o) {
  ClientOptions co;
  co.transfer_timeout = std::chrono::milliseconds(std::max(o.timeout_ms, 30000));
  const std::pair<const char*, std::string> named[] = {
      {"master_server_address", o.master},
      {"rpc_timeout_ms", std::to_string(o.timeout_ms)},
      {"tenant_id", o.tenant_id},
      {"tenant_key_file", o.tenant_key_file}};
  for (const auto& [key, value] : named) KVPOOL_RETURN_IF_ERROR(ApplyClientOption(key, value, co));
  client::ApplySecurityFlags(o.security, co);
  for (const std::string& kv : o.client_options) {
    auto split = SplitOption(kv);
    if (!split.ok()) return split.status();
    KVPOOL_RETURN_IF_ERROR(ApplyClientOption(split->first, split->second, co));
  }
  return co;
}

Result<std::unique_ptr<Client>> Connect(const ClientCommandOptions& o) {
  auto co = CommandClientOptions(o);
  if (!co.ok()) return co.status();
  return Client::Setup(*co);
}

// FILE of a put: a regular file, opened without blocking (a FIFO would wait for a writer) and
// read to its size at open. Directories, devices (/dev/zero never ends), FIFOs and sockets are
// refused; so is a file larger than `max_bytes` (the pool's capacity, when known).
class InputFile {
 public:
  ~InputFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Open(const std::string& path) {
    path_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) {
      return Status(ErrorCode::FILE_OPEN_FAIL,
                    fmt::format("cannot open '{}' for reading: {}", path, std::strerror(errno)));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      return Status(ErrorCode::FILE_READ_FAIL,
                    fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
    }
    if (!S_ISREG(st.st_mode)) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("'{}' is {}, not a regular file: put stores a regular file's bytes",
                                path, KindOf(st.st_mode)));
    }
    if (st.st_size == 0) {
      return Status(ErrorCode::INVALID_PARAMS, fmt::format("'{}' is empty", path));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    return Status::Ok();
  }

  uint64_t size() const { return size_; }

  Result<std::vector<char>> Read(uint64_t max_bytes) {
    if (size_ > max_bytes) {
      return Status(ErrorCode::INVALID_PARAMS,
                    fmt::format("'{}' is {}, more than the pool's whole capacity ({})", path_,
                                FormatSize(size_), FormatSize(max_bytes)));
    }
    std::vector<char> data;
    try {
      data.resize(size_);
    } catch (const std::bad_alloc&) {
      return Status(
          ErrorCode::FILE_READ_FAIL,
          fmt::format("'{}' is {}: not enough memory to read it", path_, FormatSize(size_)));
    }
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::read(fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return Status(ErrorCode::FILE_READ_FAIL,
                      fmt::format("cannot read '{}': {}", path_, std::strerror(errno)));
      }
      if (n == 0) {
        return Status(
            ErrorCode::FILE_READ_FAIL,
            fmt::format("'{}' shrank while being read ({} of {} bytes)", path_, done, data.size()));
      }
      done += static_cast<size_t>(n);
    }
    return data;
  }

 private:
  static const char* KindOf(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
  }

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// What a put of FILE may not exceed: the pool's capacity (an object never holds more). Best
// effort: when Stat fails (e.g. refused to a tenant) the master refuses an oversized put itself.
uint64_t MaxPutBytes(Client& client) {
  auto s = client.Stat();
  return s.ok() && s->capacity > 0 ? s->capacity : UINT64_MAX;
}

int Put(const ClientCommandOptions& o, const std::string& key, const std::string& path) {
  InterruptWatcher watcher("put");
  InputFile in;
  if (Status st = in.Open(path); !st.ok()) return Fail("put", st);
  auto client = Connect(o);
  if (!client.ok()) return Fail("put", client.status());
  auto data = in.Read(MaxPutBytes(**client));
  if (!data.ok()) return Fail("put", data.status());
  Status st = (*client)->RegisterBuffer(data->data(), data->size());
  if (st.ok()) st = (*client)->PutFrom(key, data->data(), data->size());
  if (!st.ok()) return Fail("put", st, key);
  std::cout << fmt::format("put {} ({})\n", ShownKey(key), FormatSize(data->size()));
  return 0;
}

// Writes `data` to `path` (created mode 0666 & ~umask, or truncated), or to standard output
// when `path` is "-". A regular file is handed to `watcher` while it is written, so that an
// interrupted get leaves no partial file.
Status WriteOutput(const std::string& path, const std::vector<char>& data, size_t size,
                   InterruptWatcher& watcher) {
  const bool to_stdout = path == "-";
  int fd = to_stdout
               ? ::dup(STDOUT_FILENO)
               : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) {
    return Status(ErrorCode::FILE_WRITE_FAIL,
                  fmt::format("cannot open '{}' for writing: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  bool regular = !to_stdout && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular) watcher.SetPartialOutput(path);
  size_t done = 0;
  int err = 0;
  while (done < size && err == 0) {
    ssize_t n = ::write(fd, data.data() + done, size - done);
    if (n > 0) done += static_cast<size_t>(n);
    if (n < 0 && errno != EINTR) err = errno;
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    if (regular) ::unlink(path.c_str());
    watcher.SetPartialOutput("");
    return Status(
        ErrorCode::FILE_WRITE_FAIL,
        fmt::format("cannot write {}: {}", to_stdout ? "standard output" : "'" + path + "'",
                    std::strerror(err)));
  }
  watcher.SetPartialOutput("");
  return Status::Ok();
}

int Get(const ClientCommandOptions& o, const std::string& key, const std::string& path) {
  InterruptWatcher watcher("get");
  auto client = Connect(o);
  if (!client.ok()) return Fail("get", client.status());
  auto size = (*client)->GetSize(key);
  if (!size.ok()) return Fail("get", size.status(), key);
  std::vector<char> data(*size);
  Status st = (*client)->RegisterBuffer(data.data(), data.size());
  if (!st.ok()) return Fail("get", st, key);
  auto got = (*client)->GetInto(key, data.data(), data.size());
  if (!got.ok()) return Fail("get", got.status(), key);
  if (st = WriteOutput(path, data, *got, watcher); !st.ok()) return Fail("get", st, key);
  // With FILE "-" the bytes are standard output: the summary goes to standard error.
  (path == "-" ? std::cerr : std::cout)
      << fmt::format("got {} ({}) -> {}\n", ShownKey(key), FormatSize(*got),
                     path == "-" ? std::string("standard output") : PrintableBytes(path));
  return 0;
}

int Exists(const ClientCommandOptions& o, const std::string& key) {
  InterruptWatcher watcher("exists");
  auto client = Connect(o);
  if (!client.ok()) return Fail("exists", client.status());
  auto r = (*client)->IsExist(key);
  if (!r.ok()) return Fail("exists", r.status(), key);
  std::cout << (*r ? "yes" : "no") << "\n";
  return *r ? 0 : 1;
}

int Remove(const ClientCommandOptions& o, const std::string& key, bool force) {
  InterruptWatcher watcher("rm");
  auto client = Connect(o);
  if (!client.ok()) return Fail("rm", client.status());
  Status st = (*client)->Remove(key, force);
  if (!st.ok()) return Fail("rm", st, key);
  std::cout << fmt::format("removed {}\n", ShownKey(key));
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
                        {"objects", seg.object_count},
                        {"tier", seg.tier == 0 ? "dram" : "disk"}});
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
                        {"no_segment", s.refused_no_segment},
                        {"offload_pending", s.refused_offload_pending}}},
                      {"ha_role", s.ha_role},
                      {"leader_epoch", s.leader_epoch},
                      {"leader", s.leader_address},
                      {"disk",
                       {{"capacity_bytes", s.disk_capacity},
                        {"used_bytes", s.disk_used},
                        {"replicas", s.disk_replicas}}}};
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

int PrintStat(const ClientCommandOptions& o) {
  InterruptWatcher watcher("stat");
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
      "segment, {} waiting for the disk (retried)\n",
      s->leases_held, FormatSize(s->bytes_leased), s->refused_leased_or_pinned,
      s->refused_tenant_quota, s->refused_no_segment, s->refused_offload_pending);
  if (!s->leader_address.empty()) {
    std::cout << fmt::format("master: leader {} epoch {} ({})\n", s->leader_address,
                             s->leader_epoch, s->ha_role);
  }
  if (s->disk_capacity > 0) {
    double dpct = 100.0 * static_cast<double>(s->disk_used) / s->disk_capacity;
    std::cout << fmt::format("disk tiers: capacity {}, used {} ({:.1f}%), {} replicas\n",
                             FormatSize(s->disk_capacity), FormatSize(s->disk_used), dpct,
                             s->disk_replicas);
  }
  std::cout << fmt::format("{:<34} {:>12} {:>12} {:>10} {:>5}\n", "segment", "size", "used",
                           "objects", "tier");
  for (const auto& seg : s->segments) {
    std::cout << fmt::format("{:<34} {:>12} {:>12} {:>10} {:>5}\n", seg.name, FormatSize(seg.size),
                             FormatSize(seg.used), seg.object_count,
                             seg.tier == 0 ? "dram" : "disk");
  }
  return 0;
}

}  // namespace

void AddClientCommands(CLI::App& app, ClientCommandOptions& o, int& exit_code) {
  auto add_common = [&o](CLI::App* cmd) {
    cmd->add_option("--master", o.master,
                    "Master host:port, or etcd://h1:2379;h2:2379[/cluster_id]")
        ->capture_default_str();
    cmd->add_option("--timeout_ms", o.timeout_ms, "Deadline of each call (1..600000)")
        ->check(CLI::Range(1, 600000))
        ->capture_default_str();
    rpc::AddSecurityFlags(*cmd, o.security, /*server=*/false);
    cmd->add_option("--tenant_id", o.tenant_id, "Tenant whose keys to use (default: the default)");
    cmd->add_option("--tenant_key_file", o.tenant_key_file,
                    "File holding the tenant key of --tenant_id (default: $KVPOOL_TENANT_KEY)");
    cmd->add_option("-o,--option", o.client_options,
                    "KEY=VALUE: any client option by its name or Mooncake's (repeatable; "
                    "`kvpool client-options` lists them)")
        ->check([](const std::string& kv) -> std::string {
          auto split = SplitOption(kv);
          if (!split.ok()) return split.status().message();
          ClientOptions scratch;
          Status st = ApplyClientOption(split->first, split->second, scratch);
          return st.ok() ? std::string() : st.message();
        });
  };
  auto* put = app.add_subcommand("put", "Store FILE's bytes under KEY");
  put->add_option("KEY", o.key)->required();
  put->add_option("FILE", o.path)->required();
  add_common(put);
  put->callback([&] { exit_code = Put(o, o.key, o.path); });

  auto* get = app.add_subcommand("get", "Write KEY's bytes to FILE (\"-\": standard output)");
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

  auto* options = app.add_subcommand(
      "client-options", "Print the client options (-o KEY=VALUE, Python setup() keys) as a table");
  options->callback([&] {
    std::cout << ClientOptionsMarkdown();
    exit_code = 0;
  });

  auto* stat = app.add_subcommand("stat", "Segments, capacity, use and object count");
  stat->add_flag("--json", o.json, "Print one JSON object instead of a table");
  add_common(stat);
  stat->callback([&] { exit_code = PrintStat(o); });
}

}  // namespace kvpool::tools
