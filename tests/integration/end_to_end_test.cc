// The core store end to end: a master and two node processes on 127.0.0.1, 1,000 objects of
// 1 KiB – 4 MiB written by one client and read back byte-exact by another, an overfill that
// makes eviction run (writes keep succeeding, leased objects survive), then kill -9 of a node.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "master_client/master_client.h"
#include "pool.h"
#include "test_bytes.h"

namespace kvpool::testing {
namespace {

void Fill(const std::string& key, char* p, size_t n) {
  FillObject(key, 0, reinterpret_cast<uint8_t*>(p), n);
}

bool Matches(const std::string& key, const char* p, size_t n) {
  std::vector<char> want(n);
  Fill(key, want.data(), n);
  return memcmp(want.data(), p, n) == 0;
}

// Log-uniform sizes between 1 KiB and 4 MiB, like a mix of small and large pages.
std::vector<size_t> Sizes(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(std::log(1024.0), std::log(4.0 * 1024 * 1024));
  std::vector<size_t> out;
  for (size_t i = 0; i < count; ++i) out.push_back(static_cast<size_t>(std::exp(d(rng))));
  return out;
}

constexpr size_t kBatch = 16;
constexpr size_t kMaxObject = 4 << 20;

class EndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    wbuf_.resize(kBatch * kMaxObject);
    rbuf_.resize(kBatch * kMaxObject);
  }
  void Register(Client& c) {
    ASSERT_TRUE(c.RegisterBuffer(wbuf_.data(), wbuf_.size()).ok());
    ASSERT_TRUE(c.RegisterBuffer(rbuf_.data(), rbuf_.size()).ok());
  }
  // Puts keys[i] with sizes[i] in batches; returns per-key statuses.
  std::vector<Status> PutAll(Client& c, const std::vector<std::string>& keys,
                             const std::vector<size_t>& sizes) {
    std::vector<Status> out;
    for (size_t b = 0; b < keys.size(); b += kBatch) {
      std::vector<std::string> k;
      std::vector<const void*> p;
      std::vector<size_t> s;
      for (size_t i = b; i < std::min(keys.size(), b + kBatch); ++i) {
        char* dst = wbuf_.data() + (i - b) * kMaxObject;
        Fill(keys[i], dst, sizes[i]);
        k.push_back(keys[i]);
        p.push_back(dst);
        s.push_back(sizes[i]);
      }
      auto r = c.BatchPutFrom(k, p, s);
      out.insert(out.end(), r.begin(), r.end());
    }
    return out;
  }
  // Gets and verifies; returns per-key statuses (CHECKSUM_MISMATCH for wrong bytes).
  std::vector<Status> GetAll(Client& c, const std::vector<std::string>& keys,
                             const std::vector<size_t>& sizes) {
    std::vector<Status> out;
    for (size_t b = 0; b < keys.size(); b += kBatch) {
      std::vector<std::string> k;
      std::vector<void*> p;
      std::vector<size_t> s;
      for (size_t i = b; i < std::min(keys.size(), b + kBatch); ++i) {
        k.push_back(keys[i]);
        p.push_back(rbuf_.data() + (i - b) * kMaxObject);
        s.push_back(kMaxObject);
      }
      auto r = c.BatchGetInto(k, p, s);
      for (size_t j = 0; j < r.size(); ++j) {
        size_t i = b + j;
        if (!r[j].ok()) {
          out.push_back(r[j].status());
        } else if (*r[j] != sizes[i] || !Matches(keys[i], static_cast<char*>(p[j]), sizes[i])) {
          out.push_back(Status(ErrorCode::CHECKSUM_MISMATCH, "wrong bytes for " + keys[i]));
        } else {
          out.push_back(Status::Ok());
        }
      }
    }
    return out;
  }
  static size_t CountOk(const std::vector<Status>& v) {
    size_t n = 0;
    for (const auto& s : v) n += s.ok();
    return n;
  }

  std::vector<char> wbuf_, rbuf_;
};

TEST_F(EndToEndTest, ThousandObjectsEvictionAndNodeDeath) {
  // Leases long enough to outlast the overfill even under sanitizers. No watermark eviction: the
  // overfill's failed allocations still evict what they need, but nothing may disappear later in
  // the background while step 3 checks that every object not on the killed node reads back.
  Pool pool({"--default_kv_lease_ttl", "60000", "--eviction_ratio", "0"});
  pool.AddNode("400MB");
  pool.AddNode("400MB");
  ClientOptions fast;
  fast.rpc_timeout = std::chrono::milliseconds(2000);
  fast.transfer_timeout = std::chrono::milliseconds(5000);
  auto writer = pool.NewClient(fast);
  auto reader = pool.NewClient(fast);
  ASSERT_TRUE(writer && reader);
  Register(*writer);
  Register(*reader);

  // 1. 1,000 objects, written by one client, read back byte-exact by another.
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("e2e/page/" + std::to_string(i));
  auto sizes = Sizes(keys.size(), 42);
  ASSERT_EQ(CountOk(PutAll(*writer, keys, sizes)), keys.size());
  auto got = GetAll(*reader, keys, sizes);
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(got[i].ok()) << got[i].ToString();
  auto stat = reader->Stat();
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->object_count, 1000u);
  EXPECT_EQ(stat->segments.size(), 2u);

  // 2. Overfill: hold leases on 40 objects, then write twice the pool's capacity. A client's
  // get releases its lease once its bytes have moved, so the lease is taken by a bare master
  // client that never releases it: a reader still moving bytes, as far as the master knows.
  std::vector<std::string> leased(keys.begin(), keys.begin() + 40);
  std::vector<size_t> leased_sizes(sizes.begin(), sizes.begin() + 40);
  master::MasterClient probe(*rpc::ParseEndpoint(pool.master_address()), "probe");
  auto held =
      probe.GetReplicaList(leased, /*no_lease=*/false, DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  ASSERT_NE(held->lease_id(), 0u);
  ASSERT_EQ(CountOk(GetAll(*reader, leased, leased_sizes)), leased.size());
  std::vector<std::string> more;
  for (int i = 0; i < 1600; ++i) more.push_back("e2e/overfill/" + std::to_string(i));
  std::vector<size_t> more_sizes(more.size(), 1 << 20);
  auto put_more = PutAll(*writer, more, more_sizes);
  for (const auto& st : put_more) ASSERT_TRUE(st.ok()) << st.ToString();
  stat = reader->Stat();
  ASSERT_TRUE(stat.ok());
  EXPECT_GT(stat->evicted_total, 0u);
  auto survived = GetAll(*reader, leased, leased_sizes);
  for (const auto& st : survived) EXPECT_TRUE(st.ok()) << st.ToString();

  // 3. kill -9 one node: its keys turn not-found within 15 s, the others still read back exact,
  // and no call blocks past its deadline.
  std::vector<std::string> live;
  std::vector<size_t> live_sizes;
  for (size_t i = 0; i < more.size(); ++i) {
    live.push_back(more[i]);
    live_sizes.push_back(more_sizes[i]);
  }
  auto where =
      probe.GetReplicaList(live, /*no_lease=*/true, DeadlineAfter(std::chrono::seconds(5)));
  ASSERT_TRUE(where.ok()) << where.status().ToString();
  std::vector<std::string> on_dead, on_alive;
  std::vector<size_t> alive_sizes;
  for (size_t i = 0; i < live.size(); ++i) {
    const auto& loc = where->objects(static_cast<int>(i));
    if (loc.code() != 0) continue;  // evicted
    if (loc.replicas(0).segment_name() == pool.node_segment(0)) {
      on_dead.push_back(live[i]);
    } else {
      on_alive.push_back(live[i]);
      alive_sizes.push_back(live_sizes[i]);
    }
  }
  ASSERT_FALSE(on_dead.empty());
  ASSERT_FALSE(on_alive.empty());
  pool.node(0).Signal(SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  const auto deadline = fast.rpc_timeout * 2 + fast.transfer_timeout + std::chrono::seconds(1);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() - killed < std::chrono::seconds(15)) {
    auto start = std::chrono::steady_clock::now();
    auto ex = reader->BatchIsExist(on_dead);
    EXPECT_LT(std::chrono::steady_clock::now() - start, deadline);
    gone = true;
    for (const auto& e : ex) gone = gone && e.ok() && !*e;
    // Reads of keys on the dead node fail cleanly (never wrong bytes) while it is declared dead.
    start = std::chrono::steady_clock::now();
    std::vector<std::string> one(on_dead.begin(), on_dead.begin() + 1);
    auto r = GetAll(*reader, one, {size_t{1} << 20});
    EXPECT_NE(r[0].code(), ErrorCode::CHECKSUM_MISMATCH);
    EXPECT_LT(std::chrono::steady_clock::now() - start, deadline);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_TRUE(gone) << "keys of the killed node still reported after 15 s";
  auto alive = GetAll(*reader, on_alive, alive_sizes);
  for (const auto& st : alive) EXPECT_TRUE(st.ok()) << st.ToString();
  stat = reader->Stat();
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->segments.size(), 1u);
}

TEST_F(EndToEndTest, EmbeddedClientServesItsOwnSegment) {
  Pool pool;
  ClientOptions embedded;
  embedded.global_segment_size = 64 << 20;
  auto a = pool.NewClient(embedded);
  auto b = pool.NewClient();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(pool.WaitForSegments(1));
  Register(*a);
  Register(*b);
  std::vector<std::string> keys = {"emb/1", "emb/2", "emb/3"};
  std::vector<size_t> sizes = {4096, 1 << 20, 3 << 20};
  ASSERT_EQ(CountOk(PutAll(*a, keys, sizes)), 3u);         // memcpy into its own segment
  EXPECT_EQ(CountOk(GetAll(*a, keys, sizes)), 3u);         // memcpy back
  EXPECT_EQ(CountOk(GetAll(*b, keys, sizes)), 3u);         // over TCP from a's segment
  ASSERT_EQ(CountOk(PutAll(*b, {"emb/4"}, {12345})), 1u);  // b writes into a over TCP
  EXPECT_EQ(CountOk(GetAll(*a, {"emb/4"}, {12345})), 1u);
  // Closing a unmounts its segment: its objects leave the pool.
  ASSERT_TRUE(a->Close().ok());
  EXPECT_TRUE(pool.WaitForSegments(0));
  EXPECT_FALSE(*b->IsExist("emb/1"));
}

TEST_F(EndToEndTest, MultiBufferScatterGatherAndPrefix) {
  Pool pool;
  pool.AddNode("64MB");
  auto c = pool.NewClient();
  ASSERT_TRUE(c);
  Register(*c);
  // One object gathered from 4 "layer" slices, read back scattered into 2 buffers.
  std::vector<char> whole(4 * 1000);
  Fill("mb", whole.data(), whole.size());
  memcpy(wbuf_.data(), whole.data(), whole.size());
  std::vector<const void*> parts;
  std::vector<size_t> part_sizes;
  for (int l = 0; l < 4; ++l) {
    parts.push_back(wbuf_.data() + l * 1000);
    part_sizes.push_back(1000);
  }
  auto put = c->BatchPutFromMultiBuffers({"mb"}, {parts}, {part_sizes});
  ASSERT_TRUE(put[0].ok()) << put[0].ToString();
  auto get =
      c->BatchGetIntoMultiBuffers({"mb"}, {{rbuf_.data(), rbuf_.data() + 10000}}, {{1500, 2500}});
  ASSERT_TRUE(get[0].ok()) << get[0].status().ToString();
  EXPECT_EQ(*get[0], 4000u);
  EXPECT_EQ(memcmp(rbuf_.data(), whole.data(), 1500), 0);
  EXPECT_EQ(memcmp(rbuf_.data() + 10000, whole.data() + 1500, 2500), 0);
  EXPECT_EQ(*c->GetSize("mb"), 4000u);

  ASSERT_EQ(CountOk(PutAll(*c, {"p0", "p1", "p2", "p4"}, {10, 10, 10, 10})), 4u);
  EXPECT_EQ(*c->ExistsPrefix({"p0", "p1", "p2", "p3", "p4"}), 3u);
  auto ex = c->BatchIsExist({"p0", "p3"});
  EXPECT_TRUE(*ex[0]);
  EXPECT_FALSE(*ex[1]);
  auto removed = c->RemoveAll(/*force=*/true);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 5u);

  // Copying calls work on unregistered memory.
  std::vector<uint8_t> v1 = {1, 2, 3}, v2(70000, 9);
  auto put_copy = c->BatchPut({"c1", "c2", ""}, {v1, v2, v1});
  EXPECT_TRUE(put_copy[0].ok());
  EXPECT_TRUE(put_copy[1].ok());
  EXPECT_EQ(put_copy[2].code(), ErrorCode::INVALID_KEY);
  auto got_copy = c->BatchGet({"c1", "c2", "c3"});
  ASSERT_TRUE(got_copy[0].ok());
  EXPECT_EQ(*got_copy[0], v1);
  ASSERT_TRUE(got_copy[1].ok());
  EXPECT_EQ(*got_copy[1], v2);
  EXPECT_EQ(got_copy[2].code(), ErrorCode::OBJECT_NOT_FOUND);
}

}  // namespace
}  // namespace kvpool::testing
