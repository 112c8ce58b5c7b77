// `kvpool events`: tails a master's KV-event stream (--kv_events_endpoint) in a terminal, one
// line per event (docs/operations.md, "KV events").
//
//   kvpool events [--endpoint tcp://127.0.0.1:5557] [--topic kvpool] [--batches N]
//                 [--idle_timeout_ms 0]
//
// Prints "seq=S topic=T ts=UNIX" for each batch, then one indented line per event (its kind,
// medium and block hashes: bytes as hex, ints in decimal). A gap in the sequence numbers is
// reported ("missed batches A..B"). Exit codes: 0 after N batches or on SIGINT/SIGTERM; 1 when
// the endpoint is malformed, a payload does not decode, or nothing arrives within
// --idle_timeout_ms (when non-zero); 2 bad flags.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace kvpool::tools {

struct EventsCommandOptions {
  std::string endpoint = "tcp://127.0.0.1:5557";  // --endpoint: the master's PUB socket
  std::string topic;                              // --topic: prefix to subscribe to ("": all)
  int batches = 0;                                // --batches: exit after this many (0: never)
  int idle_timeout_ms = 0;                        // --idle_timeout_ms: 0 waits forever
};

// Registers `events` on `app`; `exit_code` receives its result. `o` must outlive app.parse().
// Runs on the calling (main) thread, which must have blocked the termination signals.
void AddEventsCommand(CLI::App& app, EventsCommandOptions& o, int& exit_code);

}  // namespace kvpool::tools
