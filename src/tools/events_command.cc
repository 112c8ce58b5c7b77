#include "tools/events_command.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <msgpack.hpp>
#include <zmq.hpp>

#include "common/signals.h"

namespace kvpool::tools {
namespace {

std::string HashText(const msgpack::object& h) {
  if (h.type == msgpack::type::BIN) {
    std::string out;
    for (uint32_t i = 0; i < h.via.bin.size; ++i) {
      out += fmt::format("{:02x}", static_cast<uint8_t>(h.via.bin.ptr[i]));
    }
    return out;
  }
  if (h.type == msgpack::type::POSITIVE_INTEGER) return std::to_string(h.via.u64);
  if (h.type == msgpack::type::NEGATIVE_INTEGER) return std::to_string(h.via.i64);
  return "?";
}

std::string StrOf(const msgpack::object& o) {
  return o.type == msgpack::type::STR ? std::string(o.via.str.ptr, o.via.str.size) : "-";
}

// One line per event of an EventBatch [ts, [event...]]; false when it is not one.
bool PrintBatch(const msgpack::object& batch) {
  if (batch.type != msgpack::type::ARRAY || batch.via.array.size < 2) return false;
  const msgpack::object& events = batch.via.array.ptr[1];
  if (events.type != msgpack::type::ARRAY) return false;
  for (uint32_t i = 0; i < events.via.array.size; ++i) {
    const msgpack::object& e = events.via.array.ptr[i];
    if (e.type != msgpack::type::ARRAY || e.via.array.size < 1) return false;
    const msgpack::object* f = e.via.array.ptr;
    const std::string kind = StrOf(f[0]);
    std::string line = "  " + kind;
    if ((kind == "BlockStored" && e.via.array.size >= 7) ||
        (kind == "BlockRemoved" && e.via.array.size >= 3)) {
      line += " medium=" + StrOf(f[kind == "BlockStored" ? 6 : 2]) + " hashes=";
      if (f[1].type != msgpack::type::ARRAY) return false;
      for (uint32_t k = 0; k < f[1].via.array.size; ++k) {
        line += (k == 0 ? "" : ",") + HashText(f[1].via.array.ptr[k]);
      }
    }
    std::printf("%s\n", line.c_str());
  }
  return true;
}

int RunEvents(const EventsCommandOptions& o) {
  zmq::context_t ctx(1);
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  try {
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, o.topic);
    sub.connect(o.endpoint);
  } catch (const zmq::error_t& e) {
    std::fprintf(stderr, "kvpool events: cannot connect to --endpoint %s: %s\n", o.endpoint.c_str(),
                 e.what());
    return 1;
  }
  int seen = 0;
  int64_t expected = -1;
  auto last = std::chrono::steady_clock::now();
  for (;;) {
    if (WaitForTerminationSignalFor(std::chrono::milliseconds(0)) != 0) return 0;
    zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    if ((item.revents & ZMQ_POLLIN) == 0) {
      if (o.idle_timeout_ms > 0 &&
          std::chrono::steady_clock::now() - last > std::chrono::milliseconds(o.idle_timeout_ms)) {
        std::fprintf(stderr, "kvpool events: nothing from %s for %d ms\n", o.endpoint.c_str(),
                     o.idle_timeout_ms);
        return 1;
      }
      continue;
    }
    std::vector<zmq::message_t> frames;
    for (bool more = true; more;) {
      zmq::message_t m;
      (void)sub.recv(m);
      more = m.more();
      frames.push_back(std::move(m));
    }
    last = std::chrono::steady_clock::now();
    if (frames.size() != 3 || frames[1].size() != 8) {
      std::fprintf(stderr, "kvpool events: not a KV event message (%zu frames)\n", frames.size());
      return 1;
    }
    int64_t seq = 0;
    for (size_t i = 0; i < 8; ++i) seq = (seq << 8) | frames[1].data<uint8_t>()[i];
    if (expected >= 0 && seq > expected) {
      std::printf("missed batches %lld..%lld\n", static_cast<long long>(expected),
                  static_cast<long long>(seq - 1));
    } else if (expected >= 0 && seq < expected) {
      std::printf("sequence restarted at %lld (a new publisher: resync)\n",
                  static_cast<long long>(seq));
    }
    expected = seq + 1;
    try {
      msgpack::object_handle oh = msgpack::unpack(frames[2].data<char>(), frames[2].size());
      const msgpack::object& batch = oh.get();
      double ts = batch.type == msgpack::type::ARRAY && batch.via.array.size > 0 &&
                          batch.via.array.ptr[0].type == msgpack::type::FLOAT64
                      ? batch.via.array.ptr[0].via.f64
                      : 0;
      std::printf("seq=%lld topic=%s ts=%.6f\n", static_cast<long long>(seq),
                  frames[0].to_string().c_str(), ts);
      if (!PrintBatch(batch)) throw msgpack::type_error();
    } catch (const std::exception&) {
      std::fprintf(stderr, "kvpool events: batch %lld is not a vLLM EventBatch\n",
                   static_cast<long long>(seq));
      return 1;
    }
    std::fflush(stdout);
    if (o.batches > 0 && ++seen >= o.batches) return 0;
  }
}

}  // namespace

void AddEventsCommand(CLI::App& app, EventsCommandOptions& o, int& exit_code) {
  auto* cmd = app.add_subcommand("events", "Tail a master's KV events (--kv_events_endpoint)");
  cmd->add_option("--endpoint", o.endpoint, "The master's KV-event PUB endpoint")
      ->capture_default_str();
  cmd->add_option("--topic", o.topic, "Topic prefix to subscribe to (default: all)");
  cmd->add_option("--batches", o.batches, "Batches before exiting (0: until Ctrl-C)")
      ->check(CLI::Range(0, 1000000000))
      ->capture_default_str();
  cmd->add_option("--idle_timeout_ms", o.idle_timeout_ms,
                  "Exit 1 when nothing arrives for this long (0: wait forever)")
      ->check(CLI::Range(0, 86400000))
      ->capture_default_str();
  cmd->callback([&] { exit_code = RunEvents(o); });
}

}  // namespace kvpool::tools
