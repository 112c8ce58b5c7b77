#include "tools/top_command.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <httplib.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <iostream>
#include <optional>

#include "kvpool/status.h"
#include "rpc/endpoint.h"
#include "tools/top_view.h"

namespace kvpool::tools {
namespace {

constexpr const char* kClearScreen = "\x1b[H\x1b[2J";

Result<TopSnapshot> Fetch(httplib::Client& client, const std::string& where) {
  auto res = client.Get("/metrics");
  if (!res) {
    return Status(ErrorCode::RPC_FAIL, fmt::format("cannot fetch http://{}/metrics: {}", where,
                                                   httplib::to_string(res.error())));
  }
  if (res->status != 200) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("http://{}/metrics answered {}", where, res->status));
  }
  auto samples = ParsePromText(res->body);
  KVPOOL_RETURN_IF_ERROR(CheckMasterMetrics(samples, where));
  return SnapshotOf(samples);
}

// Sleeps `ms`, returning true early when SIGINT or SIGTERM arrives (they are blocked, so they
// wait for us here).
bool WaitInterrupted(int ms) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  return sigtimedwait(&set, nullptr, &ts) > 0;
}

std::string Title(const std::string& where, int interval_ms) {
  std::time_t t = std::time(nullptr);
  return fmt::format("kvpool top - master http://{} - {:%H:%M:%S} - every {:.1f} s", where,
                     fmt::localtime(t), interval_ms / 1000.0);
}

int RunTop(const TopCommandOptions& o) {
  auto ep = rpc::ParseEndpoint(o.http, 0, "--http");
  if (!ep.ok()) {
    std::cerr << "kvpool top: " << ep.status().ToString() << "\n";
    return 2;
  }
  httplib::Client client(ep->host, ep->port);
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  const bool tty = isatty(STDOUT_FILENO) != 0;

  std::optional<TopSnapshot> prev;
  auto prev_at = std::chrono::steady_clock::now();
  for (int i = 0; o.iterations == 0 || i < o.iterations; ++i) {
    if (i > 0 && WaitInterrupted(o.interval_ms)) break;
    auto snap = Fetch(client, o.http);
    auto at = std::chrono::steady_clock::now();
    if (!snap.ok() && i == 0) {
      std::cerr << "kvpool top: " << snap.status().ToString() << "\n";
      return 1;
    }
    std::string screen = Title(o.http, o.interval_ms) + "\n";
    if (snap.ok()) {
      double elapsed = std::chrono::duration<double>(at - prev_at).count();
      screen = RenderTop(Title(o.http, o.interval_ms), *snap, prev ? &*prev : nullptr, elapsed);
      prev = std::move(snap).value();
      prev_at = at;
    } else {
      screen += snap.status().ToString() + "\n";  // keep trying: the master may come back
    }
    std::cout << (tty ? kClearScreen : (i > 0 ? "\n" : "")) << screen << std::flush;
  }
  return 0;
}

}  // namespace

void AddTopCommand(CLI::App& app, TopCommandOptions& o, int& exit_code) {
  auto* top = app.add_subcommand("top", "Live view of the pool from the master's /metrics");
  top->add_option("--http", o.http, "The master's HTTP admin address (--metrics_port)")
      ->capture_default_str();
  top->add_option("--interval_ms", o.interval_ms, "Time between refreshes")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  top->add_option("--iterations", o.iterations, "Refreshes before exiting (0: until Ctrl-C)")
      ->check(CLI::Range(0, 1000000000))
      ->capture_default_str();
  top->add_option("--timeout_ms", o.timeout_ms, "Deadline of each fetch")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  top->callback([&] { exit_code = RunTop(o); });
}

}  // namespace kvpool::tools
