// What the disk tier's integration tests share (disk_tier_test.cc, disk_tier_speed_test.cc): a
// fresh directory, a one-node pool over a disk tier, page puts and reads checked byte-exact, and
// fio as the yardstick.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "kvpool/host_allocator.h"
#include "master_client/master_client.h"
#include "pool.h"

namespace kvpool::testing::disk_tier {

using std::chrono::milliseconds;

inline constexpr size_t kPage = 256 << 10;
inline constexpr int kBatch = 128;

// A fresh directory on /tmp (ext4 here: O_DIRECT applies; tmpfs would fall back to buffered).
class DiskDir {
 public:
  DiskDir() {
    std::string tmpl = "/tmp/kvpool-disk-it-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~DiskDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string PageKey(int i) { return "page-" + std::to_string(i); }

// Puts pages [first, last) in batches of `batch`; returns how many puts succeeded.
inline int PutPages(Client& c, int first, int last, int batch = kBatch) {
  int ok = 0;
  for (int b = first; b < last; b += batch) {
    std::vector<std::string> keys;
    std::vector<std::vector<uint8_t>> values;
    std::vector<std::span<const uint8_t>> spans;
    for (int i = b; i < std::min(last, b + batch); ++i) {
      keys.push_back(PageKey(i));
      values.push_back(ObjectBytes(keys.back(), 1, kPage));
    }
    for (const auto& v : values) spans.emplace_back(v);
    for (const Status& st : c.BatchPut(keys, spans, ReplicateConfig{})) ok += st.ok() ? 1 : 0;
  }
  return ok;
}

struct Counts {
  int exact = 0, failed = 0, wrong = 0;
};

inline Counts GetPages(Client& c, int first, int last) {
  Counts n;
  for (int b = first; b < last; b += kBatch) {
    std::vector<std::string> keys;
    for (int i = b; i < std::min(last, b + kBatch); ++i) keys.push_back(PageKey(i));
    auto got = c.BatchGet(keys);
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!got[k].ok()) {
        ++n.failed;
      } else if (*got[k] == ObjectBytes(keys[k], 1, kPage)) {
        ++n.exact;
      } else {
        ++n.wrong;
      }
    }
  }
  return n;
}

// Waits (up to `timeout`) until the master lists at least `n` disk replicas; returns the count.
inline uint64_t WaitForDiskReplicas(Client& c, uint64_t n, milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  uint64_t have = 0;
  while (std::chrono::steady_clock::now() < until) {
    auto s = c.Stat();
    if (s.ok()) have = s->disk_replicas;
    if (have >= n) break;
    std::this_thread::sleep_for(milliseconds(5));  // fine enough to time the puts below
  }
  return have;
}

// Runs fio in `dir` (1 MiB O_DIRECT io_uring I/O at queue depth 32, the node's) with `args`
// added; returns the bandwidth in MB/s of what it read, or else of what it wrote (0 when fio
// failed).
inline double FioMBs(const std::string& dir, std::vector<std::string> args) {
  // --directory before the job's options: after --filename, fio put the file in the cwd.
  args.insert(args.begin(), "--directory=" + dir);
  args.insert(args.end(), {"--bs=1M", "--direct=1", "--ioengine=io_uring", "--iodepth=32",
                           "--output-format=terse", "--terse-version=3"});
  auto fio = RunCommand("/usr/bin/fio", args, std::chrono::seconds(60));
  if (fio.exit_code != 0) return 0;
  std::vector<std::string> f;
  size_t start = 0;
  for (size_t i = 0; i <= fio.output.size(); ++i) {
    if (i == fio.output.size() || fio.output[i] == ';') {
      f.push_back(fio.output.substr(start, i - start));
      start = i + 1;
    }
  }
  // terse v3, 1-based: field 7 is the read bandwidth in KiB/s, field 48 the write bandwidth.
  double read = f.size() > 6 ? std::stod(f[6]) : 0;
  double write = f.size() > 47 ? std::stod(f[47]) : 0;
  return (read > 0 ? read : write) * 1024 / 1e6;
}

inline ClientOptions Quick() {
  ClientOptions o;
  o.rpc_timeout = milliseconds(3000);
  o.transfer_timeout = milliseconds(10000);
  return o;
}

// A pool of one node with `dram` of DRAM over a `disk` disk tier in a fresh directory, and a
// client of it (null if it could not be set up).
struct DiskPool {
  DiskPool(const std::string& dram, const std::string& disk, std::vector<std::string> flags = {},
           ClientOptions options = Quick())
      : pool({"--client_ttl", "30"}) {
    flags.insert(flags.begin(), {"--disk_path", dir.path(), "--disk_size", disk});
    pool.AddNode(dram, flags);
    client = pool.NewClient(std::move(options));
  }
  // A standalone engine attached to the node.
  Result<std::unique_ptr<Client>> AttachEngine() {
    StandaloneOptions so;
    so.server_address = pool.node_segment(0);
    so.rpc_timeout = milliseconds(3000);
    so.transfer_timeout = milliseconds(10000);
    return Client::SetupStandalone(so);
  }
  DiskDir dir;  // outlives the pool
  Pool pool;
  std::unique_ptr<Client> client;
};

// 40 pages (10 MB) into a node with 16 MB of DRAM, copied to disk, then 80 more: the first
// pages are on disk only.
inline void PutFirstPagesOnDiskOnly(Client& c) {
  ASSERT_EQ(PutPages(c, 0, 40, 16), 40);
  ASSERT_GE(WaitForDiskReplicas(c, 40, milliseconds(10000)), 40u);
  ASSERT_EQ(PutPages(c, 40, 120, 16), 80);
  WaitForDiskReplicas(c, 120, milliseconds(10000));
}

}  // namespace kvpool::testing::disk_tier
