// Disk tier throughput on one file system, for comparison with fio in the same run
// (docs/benchmarks.md, "Disk tier"): writes `objects` objects of `object` bytes in batches of
// `batch`, then reads random batches of `batch` objects for `seconds`.
//   disk_tier_bench DIR [objects=512] [object_mib=1] [batch=128] [queue_depth=32] [seconds=5]
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "common/checksum.h"
#include "disk/disk_tier.h"

using namespace kvpool;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} DIR [objects] [object_mib] [batch] [queue_depth] [seconds]\n",
               argv[0]);
    return 2;
  }
  auto arg = [&](int i, uint64_t d) { return argc > i ? std::strtoull(argv[i], nullptr, 10) : d; };
  const uint64_t objects = arg(2, 512), object = arg(3, 1) << 20, batch = arg(4, 128);
  const uint32_t qd = static_cast<uint32_t>(arg(5, 32));
  const double seconds = static_cast<double>(arg(6, 5));
  disk::DiskTierOptions o;
  o.dir = argv[1];
  o.size = objects * object + (64 << 20);
  o.queue_depth = qd;
  auto tier = disk::DiskTier::Open(o);
  if (!tier.ok()) {
    fmt::print(stderr, "{}\n", tier.status().ToString());
    return 1;
  }
  disk::DiskTier& t = **tier;
  disk::AlignedBuffer buf(batch * object, t.alignment());
  std::mt19937_64 rng(1);
  for (uint64_t i = 0; i < batch * object / 8; ++i)
    reinterpret_cast<uint64_t*>(buf.data())[i] = rng();
  std::vector<disk::DiskObject> listed;
  auto t0 = Clock::now();
  for (uint64_t b = 0; b < objects; b += batch) {
    std::vector<std::string> keys;
    std::vector<disk::DiskTier::WriteItem> items;
    uint64_t n = std::min(batch, objects - b);
    for (uint64_t i = 0; i < n; ++i) keys.push_back("obj-" + std::to_string(b + i));
    for (uint64_t i = 0; i < n; ++i) {
      uint8_t* p = buf.data() + i * object;
      p[0] = static_cast<uint8_t>(b + i);  // distinct objects
      items.push_back({keys[i], p, object, ChecksumOf(p, object)});
    }
    for (auto& r : t.Write(items)) {
      if (!r.ok()) {
        fmt::print(stderr, "write: {}\n", r.status().ToString());
        return 1;
      }
      listed.push_back(*r);
    }
  }
  double ws = std::chrono::duration<double>(Clock::now() - t0).count();
  uint64_t read_bytes = 0;
  t0 = Clock::now();
  double rs = 0;
  while ((rs = std::chrono::duration<double>(Clock::now() - t0).count()) < seconds) {
    std::vector<disk::DiskTier::ReadOp> ops;
    for (uint64_t i = 0; i < batch; ++i) {
      const disk::DiskObject& d = listed[rng() % listed.size()];
      ops.push_back({d.offset, d.size, buf.data() + i * object});
    }
    Status st = t.Read(ops);
    if (!st.ok()) {
      fmt::print(stderr, "read: {}\n", st.ToString());
      return 1;
    }
    read_bytes += batch * object;
  }
  auto s = t.stats();
  fmt::print(
      "disk tier {} (o_direct={} queue_depth={}): write {:.0f} MB/s ({} x {} MiB, "
      "fdatasync per batch of {}), read {:.0f} MB/s (random batches of {} x {} MiB, "
      "checksums verified)\n",
      o.dir, s.direct_io, qd, objects * object / ws / 1e6, objects, object >> 20, batch,
      read_bytes / rs / 1e6, batch, object >> 20);
  return 0;
}
