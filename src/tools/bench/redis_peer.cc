#include "tools/bench/redis_peer.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common/units.h"
#include "tools/bench/payload.h"
#include "tools/bench/pool_launcher.h"
#include "tools/bench/row_runner.h"
#include "tools/bench/stats.h"

namespace kvpool::tools::bench {
namespace {

constexpr uint64_t kMaxGetKeys = 16384;  // per thread, as the kvpool get rows
constexpr timeval kConnectTimeout{2, 0};
constexpr timeval kCommandTimeout{30, 0};  // a whole pipelined batch's replies

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using RedisConn = std::unique_ptr<redisContext, ContextDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using RedisReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// A connection whose every read and write waits at most kCommandTimeout.
Result<RedisConn> Connect(uint16_t port) {
  RedisConn c(redisConnectWithTimeout("127.0.0.1", port, kConnectTimeout));
  if (c == nullptr || c->err != 0) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("redis 127.0.0.1:{}: {}", port, c ? c->errstr : "out of memory"));
  }
  if (redisSetTimeout(c.get(), kCommandTimeout) != REDIS_OK) {
    return Status(ErrorCode::RPC_FAIL,
                  fmt::format("redis 127.0.0.1:{}: cannot set a timeout", port));
  }
  return c;
}

Result<RedisReplyPtr> NextReply(redisContext* c, const std::string& what) {
  void* r = nullptr;
  if (redisGetReply(c, &r) != REDIS_OK || r == nullptr) {
    return Status(ErrorCode::RPC_FAIL, fmt::format("redis {}: {}", what, c->errstr));
  }
  RedisReplyPtr reply(static_cast<redisReply*>(r));
  if (reply->type == REDIS_REPLY_ERROR) {
    return Status(ErrorCode::RPC_FAIL, fmt::format("redis {}: {}", what, reply->str));
  }
  return reply;
}

uint64_t KeyId(int thread, uint64_t n) { return (static_cast<uint64_t>(thread) << 40) | n; }

// One thread of a Redis row: `put` stores `batch` fresh keys per call as a pipeline of SETs;
// get reads the next `batch` of `n_keys` keys (stored in Prepare) as a pipeline of GETs.
class RedisWorker : public RowWorker {
 public:
  RedisWorker(const BenchOptions& o, uint16_t port, bool put, uint64_t page, int batch, int thread,
              size_t n_keys)
      : o_(o),
        port_(port),
        put_(put),
        batch_(batch),
        thread_(thread),
        base_(fmt::format("{}/p{}/b{}/t{}/", put ? "put" : "get", page, batch, thread)),
        pattern_(page, Mix64(page * 131 + batch * 7 + thread)),
        n_keys_(n_keys),
        pages_(page * batch / 8),
        keys_(batch),
        ids_(batch) {}

  Status Prepare() override {
    auto c = Connect(port_);
    if (!c.ok()) return c.status();
    conn_ = std::move(c).value();
    if (put_) return Status::Ok();
    // Populate the get row's keys in pipelines of up to 64 MiB.
    const uint64_t page = pattern_.page_bytes();
    const size_t chunk = std::clamp<uint64_t>((64ULL << 20) / page, 1, 256);
    std::vector<uint64_t> staging(page / 8);
    for (size_t from = 0; from < n_keys_; from += chunk) {
      const size_t n = std::min(chunk, n_keys_ - from);
      std::vector<std::vector<uint64_t>> pages(n, std::vector<uint64_t>(page / 8));
      for (size_t j = 0; j < n; ++j) {
        pattern_.Fill(pages[j].data(), KeyId(thread_, from + j));
        const std::string key = base_ + std::to_string(KeyId(thread_, from + j));
        redisAppendCommand(conn_.get(), "SET %b %b", key.data(), key.size(), pages[j].data(),
                           static_cast<size_t>(page));
      }
      for (size_t j = 0; j < n; ++j) {
        auto r = NextReply(conn_.get(), "populating the get row: SET");
        if (!r.ok()) return r.status();
      }
    }
    return Status::Ok();
  }

  Status Step(ThreadTally& tally) override { return put_ ? StepPut(tally) : StepGet(tally); }

  Status Finish(ThreadTally& tally) override {
    if (!put_ || next_ == 0) return Status::Ok();
    // The last batch must read back exactly as it was put.
    for (size_t j = 0; j < batch_; ++j) {
      redisAppendCommand(conn_.get(), "GET %b", keys_[j].data(), keys_[j].size());
    }
    return CheckReplies(keys_, ids_, /*check=*/true, tally);
  }

 private:
  uint8_t* page(size_t j) {
    return reinterpret_cast<uint8_t*>(pages_.data()) + j * pattern_.page_bytes();
  }

  Status StepPut(ThreadTally& tally) {
    const double side0 = ThreadCpuSeconds();
    for (size_t j = 0; j < batch_; ++j) {
      ids_[j] = KeyId(thread_, next_++);
      keys_[j] = base_ + std::to_string(ids_[j]);
      pattern_.Fill(page(j), ids_[j]);
    }
    tally.side_cpu_s += ThreadCpuSeconds() - side0;
    const auto t0 = BenchClock::now();
    for (size_t j = 0; j < batch_; ++j) {
      redisAppendCommand(conn_.get(), "SET %b %b", keys_[j].data(), keys_[j].size(), page(j),
                         static_cast<size_t>(pattern_.page_bytes()));
    }
    for (size_t j = 0; j < batch_; ++j) {
      auto r = NextReply(conn_.get(), "SET key=" + keys_[j]);
      if (!r.ok()) return r.status();
    }
    tally.Call(NanosSince(t0), batch_, batch_ * pattern_.page_bytes());
    return Status::Ok();
  }

  Status StepGet(ThreadTally& tally) {
    const size_t slices = n_keys_ / batch_;
    const size_t s = tally.calls % slices;
    for (size_t j = 0; j < batch_; ++j) {
      ids_[j] = KeyId(thread_, s * batch_ + j);
      keys_[j] = base_ + std::to_string(ids_[j]);
    }
    const bool check = tally.calls % o_.verify_every == 0;
    const auto t0 = BenchClock::now();
    for (size_t j = 0; j < batch_; ++j) {
      redisAppendCommand(conn_.get(), "GET %b", keys_[j].data(), keys_[j].size());
    }
    ThreadTally scratch;  // the checks below are not timed
    KVPOOL_RETURN_IF_ERROR(CheckReplies(keys_, ids_, check, scratch, &t0, &tally));
    tally.verified += scratch.verified;
    tally.side_cpu_s += scratch.side_cpu_s;
    return Status::Ok();
  }

  // Reads one GET reply per key; each must be the page exactly (checked when `check`). With
  // `t0` the call is recorded in `timed` once the last reply is in, before the checks.
  Status CheckReplies(const std::vector<std::string>& keys, const std::vector<uint64_t>& ids,
                      bool check, ThreadTally& tally, const BenchClock::time_point* t0 = nullptr,
                      ThreadTally* timed = nullptr) {
    std::vector<RedisReplyPtr> replies;
    replies.reserve(keys.size());
    for (size_t j = 0; j < keys.size(); ++j) {
      auto r = NextReply(conn_.get(), "GET key=" + keys[j]);
      if (!r.ok()) return r.status();
      replies.push_back(std::move(r).value());
    }
    if (timed != nullptr)
      timed->Call(NanosSince(*t0), keys.size(), keys.size() * pattern_.page_bytes());
    const double side0 = ThreadCpuSeconds();
    for (size_t j = 0; j < keys.size(); ++j) {
      const redisReply* r = replies[j].get();
      if (r->type != REDIS_REPLY_STRING || r->len != pattern_.page_bytes()) {
        return Status(ErrorCode::INTERNAL_ERROR,
                      fmt::format("WRONG SIZE: redis GET key={} returned type {} of {} bytes, {} "
                                  "were put",
                                  keys[j], r->type, r->len, pattern_.page_bytes()));
      }
      if (!check) continue;
      const void* got = r->str;
      if (reinterpret_cast<uintptr_t>(got) % 8 != 0) {  // FirstMismatch reads aligned words
        std::memcpy(page(0), r->str, r->len);
        got = page(0);
      }
      if (auto bad = pattern_.FirstMismatch(got, ids[j])) {
        return Status(ErrorCode::INTERNAL_ERROR,
                      fmt::format("WRONG BYTES: redis GET key={} differs from what was put at "
                                  "byte {}",
                                  keys[j], *bad));
      }
      ++tally.verified;
    }
    tally.side_cpu_s += ThreadCpuSeconds() - side0;
    return Status::Ok();
  }

  const BenchOptions& o_;
  const uint16_t port_;
  const bool put_;
  const size_t batch_;
  const int thread_;
  const std::string base_;
  PagePattern pattern_;
  const size_t n_keys_;
  std::vector<uint64_t> pages_;  // batch pages, 8-byte aligned
  std::vector<std::string> keys_;
  std::vector<uint64_t> ids_;
  uint64_t next_ = 0;
  RedisConn conn_;
};

// Keys per thread of a get row, as the kvpool rows choose them (workloads.cc), bounded by what
// fits in Redis's memory.
size_t GetKeys(const BenchOptions& o, uint64_t page, int batch, uint64_t max_bytes) {
  const uint64_t per_thread = o.working_set_bytes / o.threads;
  size_t n =
      std::max<size_t>(batch, std::min<uint64_t>((per_thread + page - 1) / page, kMaxGetKeys));
  n = (n + batch - 1) / batch * batch;
  const size_t fit = std::max<size_t>(
      batch, static_cast<size_t>(0.6 * max_bytes) / page / o.threads / batch * batch);
  return std::min(n, fit);
}

}  // namespace

std::string FindRedisServer() { return FindInPath("redis-server"); }

std::string FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t from = 0;
  while (from <= dirs.size()) {
    size_t to = dirs.find(':', from);
    if (to == std::string::npos) to = dirs.size();
    std::string candidate = dirs.substr(from, to - from) + "/" + program;
    if (to > from && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    from = to + 1;
  }
  return "";
}

Result<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& program,
                                                        uint64_t max_bytes) {
  char tmpl[] = "/tmp/kvpool-bench-redis-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    return Status(ErrorCode::INTERNAL_ERROR, "redis peer: cannot create a directory in /tmp");
  }
  const std::string dir = tmpl;
  const uint16_t port = FreeLoopbackPort();
  auto child = ChildProcess::Start(
      "redis-server", program,
      {"--bind", "127.0.0.1", "--port", std::to_string(port), "--save", "", "--appendonly", "no",
       "--dir", dir, "--maxmemory", std::to_string(max_bytes), "--maxmemory-policy", "allkeys-lru",
       "--protected-mode", "no"},
      BenchChildOptions());
  if (!child.ok()) {
    std::filesystem::remove_all(dir);
    return child.status();
  }
  std::unique_ptr<RedisServer> server(new RedisServer(dir, port, std::move(child).value()));
  const auto t0 = BenchClock::now();
  while (SecondsSince(t0) < 10) {
    if (!server->process_->Running()) break;
    if (auto c = Connect(port); c.ok()) {
      redisReply* r = static_cast<redisReply*>(redisCommand(c->get(), "PING"));
      const bool up = r != nullptr && r->type == REDIS_REPLY_STATUS;
      if (r != nullptr) freeReplyObject(r);
      if (up) return server;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status(ErrorCode::RPC_TIMEOUT,
                fmt::format("redis-server on 127.0.0.1:{} did not answer PING within 10 s; its "
                            "log:\n{}",
                            port, server->process_->LogTail()));
}

RedisServer::~RedisServer() {
  process_->Stop(std::chrono::seconds(2));
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

Status RedisServer::FlushAll() const {
  auto c = Connect(port_);
  if (!c.ok()) return c.status();
  redisReply* r = static_cast<redisReply*>(redisCommand(c->get(), "FLUSHALL"));
  const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
  if (r != nullptr) freeReplyObject(r);
  if (!ok) return Status(ErrorCode::RPC_FAIL, "redis FLUSHALL failed");
  return Status::Ok();
}

Status RunRedisRows(const BenchOptions& o, const Limits& limits, const RedisServer& server,
                    std::stop_token stop, std::vector<Row>& rows) {
  RowContext ctx;  // no kvpool client: the workers talk to Redis
  ctx.mode = Mode::kRemote;
  ctx.options = &o;
  ctx.pool_cpu = [&server] { return server.CpuSeconds(); };
  ctx.stop = stop;
  for (Workload w : o.workload_list) {
    if (w != Workload::kPut && w != Workload::kGet) continue;
    for (uint64_t page : o.page_list) {
      for (int batch : o.batch_list) {
        if (stop.stop_requested()) return Status::Ok();
        Row row;
        row.workload = WorkloadName(w);
        row.mode = "redis";
        row.page_bytes = page;
        row.batch = batch;
        row.threads = o.threads;
        const bool put = w == Workload::kPut;
        const size_t n_keys = put ? 0 : GetKeys(o, page, batch, o.segment_bytes);
        WorkerFactory make = [&](int t) {
          return std::make_unique<RedisWorker>(o, server.port(), put, page, batch, t, n_keys);
        };
        Status st = RunWorkers(ctx, o.threads, make, row);
        Status flushed = server.FlushAll();
        if (!st.ok()) {
          return Status(st.code(), fmt::format("{} redis page={} batch={}: {}", row.workload, page,
                                               batch, st.message()));
        }
        KVPOOL_RETURN_IF_ERROR(flushed);
        FinishRow(row, limits.For(Mode::kRemote, page), LimitName(Mode::kRemote));
        std::cout << TableLine(row) << std::endl;
        rows.push_back(std::move(row));
      }
    }
  }
  return Status::Ok();
}

void CompareWithRedis(std::vector<Row>& rows) {
  bool header = false;
  for (Row& r : rows) {
    if (r.mode != "remote" || (r.workload != "put" && r.workload != "get")) continue;
    for (const Row& peer : rows) {
      if (peer.mode != "redis" || peer.workload != r.workload || peer.page_bytes != r.page_bytes ||
          peer.batch != r.batch || peer.threads != r.threads || peer.gbps <= 0) {
        continue;
      }
      r.vs_redis = r.gbps / peer.gbps;
      if (!header) {
        std::cout << "\nkvpool remote vs Redis (same pages, batches, threads; GB/s):\n";
        header = true;
      }
      std::cout << fmt::format(
          "  {:<4} {:>7} x {:<4} thr {}: kvpool {:.2f}, redis {:.2f}: "
          "{:.2f} x redis\n",
          r.workload, FormatSize(r.page_bytes), r.batch, r.threads, r.gbps, peer.gbps, r.vs_redis);
    }
  }
}

}  // namespace kvpool::tools::bench
