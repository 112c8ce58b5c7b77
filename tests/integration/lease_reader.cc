// A reader in its own process, for the lease tests that stop or kill one (lease_test.cc).
//   lease_reader read MASTER PREFIX COUNT SIZE SECONDS
//       batch-gets keys PREFIX/0..COUNT-1 (SIZE bytes, FillObject version 0) over and over for
//       SECONDS, checking every byte; prints "ROUND n" after each batch and at the end
//       "RESULT ok=.. expired=.. failed=.. wrong=..". Exit 0 unless a get returned wrong bytes.
//   lease_reader recent MASTER SIZE WINDOW FILL SECONDS
//       writes FILL fresh pages of SIZE bytes (filling the pool), then for SECONDS one more
//       fresh page followed by a read of the last WINDOW in one batch; prints "RESULT ..." with
//       the puts refused after the fill and how many reads came back exact, missing or wrong.
//   lease_reader hold MASTER PREFIX COUNT
//       takes a read lease on the keys straight from the master (as a reader mid-transfer
//       would hold it), prints "HELD id", then keeps pinging until killed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "kvpool/client.h"
#include "master_client/master_client.h"
#include "rpc/endpoint.h"
#include "test_bytes.h"

namespace {

int Read(const std::string& master, const std::string& prefix, int count, size_t size,
         int seconds) {
  kvpool::ClientOptions o;
  o.master_server_address = master;
  o.heartbeat_interval = std::chrono::milliseconds(200);
  auto client = kvpool::Client::Setup(o);
  if (!client.ok()) {
    std::printf("FAILED setup: %s\n", client.status().ToString().c_str());
    return 2;
  }
  std::vector<uint8_t> buf(size * count);
  if (!(*client)->RegisterBuffer(buf.data(), buf.size()).ok()) return 2;
  std::vector<std::string> keys;
  std::vector<void*> ptrs;
  std::vector<size_t> sizes;
  for (int i = 0; i < count; ++i) {
    keys.push_back(prefix + "/" + std::to_string(i));
    ptrs.push_back(buf.data() + i * size);
    sizes.push_back(size);
  }
  long ok = 0, expired = 0, failed = 0, wrong = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (int round = 0; std::chrono::steady_clock::now() < until; ++round) {
    auto got = (*client)->BatchGetInto(keys, ptrs, sizes);
    for (int i = 0; i < count; ++i) {
      if (!got[i].ok()) {
        (got[i].code() == kvpool::ErrorCode::LEASE_EXPIRED ? expired : failed)++;
        continue;
      }
      const auto want = kvpool::testing::ObjectBytes(keys[i], 0, size);
      if (*got[i] == size && std::equal(want.begin(), want.end(), buf.data() + i * size)) {
        ++ok;
      } else {
        ++wrong;
        std::printf("WRONG key=%s\n", keys[i].c_str());
      }
    }
    std::printf("ROUND %d\n", round);
    std::fflush(stdout);
  }
  std::printf("RESULT ok=%ld expired=%ld failed=%ld wrong=%ld\n", ok, expired, failed, wrong);
  std::fflush(stdout);
  return wrong == 0 ? 0 : 1;
}

// Writes fresh pages and reads back the most recent ones, as a write-then-read engine does:
// one put of page n, then one batch get of pages n-63..n, for SECONDS. Counts puts refused
// once the pool has filled (`fill` pages were written) and what the reads returned.
int Recent(const std::string& master, size_t size, int window, int fill, int seconds) {
  kvpool::ClientOptions o;
  o.master_server_address = master;
  auto client = kvpool::Client::Setup(o);
  if (!client.ok()) {
    std::printf("FAILED setup: %s\n", client.status().ToString().c_str());
    return 2;
  }
  std::vector<uint8_t> page(size);
  std::vector<uint8_t> back(size * window);
  if (!(*client)->RegisterBuffer(page.data(), page.size()).ok() ||
      !(*client)->RegisterBuffer(back.data(), back.size()).ok()) {
    return 2;
  }
  auto key_of = [](long n) { return "recent/" + std::to_string(n); };
  std::vector<bool> stored;  // per page: its put succeeded
  long refused = 0, refused_after_fill = 0, puts_after_fill = 0, other_put_errors = 0;
  long reads = 0, exact = 0, missing = 0, wrong = 0;
  long n = 0;
  // First fill the pool (`fill` pages, no reads), then the measured loop.
  for (; n < fill; ++n) {
    const std::string key = key_of(n);
    kvpool::testing::FillObject(key, 0, page.data(), size);
    kvpool::Status st = (*client)->PutFrom(key, page.data(), size);
    stored.push_back(st.ok());
    if (!st.ok()) ++refused;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (; std::chrono::steady_clock::now() < until; ++n) {
    const std::string key = key_of(n);
    kvpool::testing::FillObject(key, 0, page.data(), size);
    kvpool::Status st = (*client)->PutFrom(key, page.data(), size);
    stored.push_back(st.ok());
    if (n >= fill) ++puts_after_fill;
    if (st.code() == kvpool::ErrorCode::NO_AVAILABLE_HANDLE) {
      ++refused;
      if (n >= fill) ++refused_after_fill;
    } else if (!st.ok()) {
      ++other_put_errors;
      std::printf("PUT ERROR %s\n", st.ToString().c_str());
    }
    std::vector<std::string> keys;
    std::vector<void*> ptrs;
    std::vector<size_t> sizes;
    for (long m = std::max(0L, n - window + 1); m <= n; ++m) {
      if (!stored[m]) continue;  // refused: nothing to read back
      ptrs.push_back(back.data() + keys.size() * size);
      keys.push_back(key_of(m));
      sizes.push_back(size);
    }
    auto got = (*client)->BatchGetInto(keys, ptrs, sizes);
    for (size_t i = 0; i < keys.size(); ++i) {
      ++reads;
      if (!got[i].ok()) {
        ++missing;
        continue;
      }
      const auto want = kvpool::testing::ObjectBytes(keys[i], 0, size);
      if (*got[i] == size && std::equal(want.begin(), want.end(), back.data() + i * size)) {
        ++exact;
      } else {
        ++wrong;
      }
    }
  }
  std::printf(
      "RESULT pages=%ld refused=%ld puts_after_fill=%ld refused_after_fill=%ld "
      "other_put_errors=%ld reads=%ld exact=%ld missing=%ld wrong=%ld\n",
      n, refused, puts_after_fill, refused_after_fill, other_put_errors, reads, exact, missing,
      wrong);
  std::fflush(stdout);
  return wrong == 0 ? 0 : 1;
}

int Hold(const std::string& master, const std::string& prefix, int count) {
  auto ep = kvpool::rpc::ParseEndpoint(master, 0, "master");
  if (!ep.ok()) return 2;
  kvpool::master::MasterClient mc(*ep, "lease-holder-" + std::to_string(getpid()));
  auto deadline = [] { return kvpool::DeadlineAfter(std::chrono::seconds(5)); };
  if (!mc.Ping(deadline()).ok()) return 2;
  std::vector<std::string> keys;
  for (int i = 0; i < count; ++i) keys.push_back(prefix + "/" + std::to_string(i));
  auto r = mc.GetReplicaList(keys, /*no_lease=*/false, deadline());
  if (!r.ok() || r->lease_id() == 0) {
    std::printf("FAILED lease\n");
    return 2;
  }
  std::printf("HELD %llu\n", static_cast<unsigned long long>(r->lease_id()));
  std::fflush(stdout);
  for (;;) {  // alive, as a reader stuck mid-transfer: pings, never releases
    (void)mc.Ping(deadline());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "read" && argc == 7) {
    return Read(argv[2], argv[3], std::atoi(argv[4]), std::strtoull(argv[5], nullptr, 10),
                std::atoi(argv[6]));
  }
  if (mode == "hold" && argc == 5) return Hold(argv[2], argv[3], std::atoi(argv[4]));
  if (mode == "recent" && argc == 7) {
    return Recent(argv[2], std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]),
                  std::atoi(argv[5]), std::atoi(argv[6]));
  }
  std::fprintf(stderr, "usage: lease_reader read|hold ...\n");
  return 2;
}
