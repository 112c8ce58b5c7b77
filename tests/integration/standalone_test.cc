// Standalone mode against real processes: a master, `kvpool node`s, and clients attached over
// the node's Unix socket. Bytes round-trip exactly through the zero-copy and the copying calls,
// for the node's own segment (memcpy) and a peer's (TCP); register_buffer keeps the rule the
// seed document is about.
#include <gtest/gtest.h>

#include <cstring>

#include "kvpool/host_allocator.h"
#include "secured_pool_test.h"
#include "standalone_support.h"

namespace kvpool::testing {
namespace {

uint16_t PortOf(const std::string& segment) {
  return static_cast<uint16_t>(std::stoi(segment.substr(segment.rfind(':') + 1)));
}

class StandaloneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = std::make_unique<Pool>();
    pool_->AddNode("64MB");
    port_ = PortOf(pool_->node_segment(0));
    client_ = Attach(StandaloneFor(port_));
    ASSERT_NE(client_, nullptr);
    auto mem = alloc_.Alloc(kPool);
    ASSERT_TRUE(mem.ok()) << mem.status().ToString();
    pool_mem_ = static_cast<uint8_t*>(*mem);
  }
  void TearDown() override {
    client_.reset();
    if (pool_mem_ != nullptr) (void)alloc_.Free(pool_mem_);
  }

  // Puts `count` pages of `size` from the registered pool, reads them back into its second
  // half; every byte must match.
  void RoundTrip(Client& c, const std::string& prefix, size_t count, size_t size,
                 const ReplicateConfig& config = {}) {
    ASSERT_LE(2 * count * size, kPool);
    std::vector<std::string> keys;
    std::vector<const void*> src;
    std::vector<void*> dst;
    std::vector<size_t> sizes;
    for (size_t i = 0; i < count; ++i) {
      keys.push_back(prefix + "/" + std::to_string(i));
      FillPage(keys.back(), pool_mem_ + i * size, size);
      src.push_back(pool_mem_ + i * size);
      dst.push_back(pool_mem_ + kPool / 2 + i * size);
      sizes.push_back(size);
    }
    std::memset(pool_mem_ + kPool / 2, 0, count * size);
    for (const auto& st : c.BatchPutFrom(keys, src, sizes, config)) {
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    auto got = c.BatchGetInto(keys, dst, sizes);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
      EXPECT_EQ(*got[i], size);
      EXPECT_TRUE(PageMatches(keys[i], static_cast<uint8_t*>(dst[i]), size)) << keys[i];
    }
  }

  static constexpr size_t kPool = 32 << 20;
  std::unique_ptr<Pool> pool_;
  uint16_t port_ = 0;
  std::unique_ptr<Client> client_;
  HostMemAllocator alloc_;
  uint8_t* pool_mem_ = nullptr;
};

TEST_F(StandaloneTest, ZeroCopyRoundTripsOnTheNodesSegment) {
  ASSERT_TRUE(client_->RegisterBuffer(pool_mem_, kPool).ok());
  EXPECT_EQ(client_->SegmentName(), pool_->node_segment(0));
  // Single calls.
  FillPage("one", pool_mem_, 5000);
  ASSERT_TRUE(client_->PutFrom("one", pool_mem_, 5000).ok());
  auto one = client_->GetInto("one", pool_mem_ + kPool / 2, 8192);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, 5000u);
  EXPECT_TRUE(PageMatches("one", pool_mem_ + kPool / 2, 5000));
  // A batch of 16 pages of 256 KiB.
  RoundTrip(*client_, "batch", 16, 256 << 10);
  // Multi-buffer: one object gathered from 4 layer slices, scattered back into 2 buffers.
  std::vector<uint8_t> whole(4000);
  FillPage("mb", whole.data(), whole.size());
  std::memcpy(pool_mem_, whole.data(), whole.size());
  std::vector<const void*> parts;
  std::vector<size_t> part_sizes;
  for (int l = 0; l < 4; ++l) {
    parts.push_back(pool_mem_ + l * 1000);
    part_sizes.push_back(1000);
  }
  ASSERT_TRUE(client_->BatchPutFromMultiBuffers({"mb"}, {parts}, {part_sizes})[0].ok());
  uint8_t* out = pool_mem_ + kPool / 2;
  auto mb = client_->BatchGetIntoMultiBuffers({"mb"}, {{out, out + 10000}}, {{1500, 2500}});
  ASSERT_TRUE(mb[0].ok()) << mb[0].status().ToString();
  EXPECT_EQ(*mb[0], 4000u);
  EXPECT_EQ(std::memcmp(out, whole.data(), 1500), 0);
  EXPECT_EQ(std::memcmp(out + 10000, whole.data() + 1500, 2500), 0);
  // Errors keep their embedded-mode codes.
  EXPECT_EQ(client_->GetInto("mb", out, 100).code(), ErrorCode::BUFFER_OVERFLOW);
  EXPECT_EQ(client_->GetInto("absent", out, 100).code(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client_->PutFrom("", pool_mem_, 10).code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(client_->PutFrom("zero", pool_mem_, 0).code(), ErrorCode::INVALID_PARAMS);
  ReplicateConfig none;
  none.replica_num = 0;
  EXPECT_EQ(client_->PutFrom("r0", pool_mem_, 10, none).code(), ErrorCode::INVALID_PARAMS);
  auto bad_shape = client_->BatchPutFrom({"a", "b"}, {pool_mem_}, {10, 10});
  EXPECT_EQ(bad_shape[1].code(), ErrorCode::INVALID_PARAMS);
  // Upsert replaces (an object nobody holds a read lease on).
  std::memset(pool_mem_, 6, 200);
  ASSERT_TRUE(client_->PutFrom("up", pool_mem_, 200).ok());
  std::memset(pool_mem_, 7, 100);
  Status up = client_->BatchUpsertFrom({"up"}, {pool_mem_}, {100})[0];
  ASSERT_TRUE(up.ok()) << up.ToString();
  ASSERT_EQ(*client_->GetInto("up", out, 8192), 100u);
  EXPECT_EQ(out[99], 7);
  // The get's read lease ended with the get (the node released it): the upsert goes through.
  EXPECT_TRUE(client_->BatchUpsertFrom({"up"}, {pool_mem_}, {100})[0].ok());
  // The bytes moved straight, none through the copying path.
  auto status = NodeStatus(port_);
  ASSERT_TRUE(status.ok());
  EXPECT_GT(status->zero_copy_bytes(), 8u << 20);
  EXPECT_EQ(status->copied_bytes(), 0u);
}

TEST_F(StandaloneTest, MetadataCalls) {
  ASSERT_TRUE(client_->RegisterBuffer(pool_mem_, kPool).ok());
  RoundTrip(*client_, "p", 3, 1000);
  EXPECT_EQ(*client_->ExistsPrefix({"p/0", "p/1", "p/2", "p/3"}), 3u);
  auto ex = client_->BatchIsExist({"p/0", "p/9", ""});
  EXPECT_TRUE(*ex[0]);
  EXPECT_FALSE(*ex[1]);
  EXPECT_EQ(ex[2].code(), ErrorCode::INVALID_KEY);
  EXPECT_TRUE(*client_->IsExist("p/1"));
  EXPECT_EQ(*client_->GetSize("p/2"), 1000u);
  EXPECT_EQ(client_->GetSize("p/9").code(), ErrorCode::OBJECT_NOT_FOUND);
  auto stat = client_->Stat();
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(stat->object_count, 3u);
  ASSERT_EQ(stat->segments.size(), 1u);
  EXPECT_TRUE(client_->Remove("p/0", /*force=*/true).ok());
  EXPECT_EQ(client_->Remove("p/0").code(), ErrorCode::OBJECT_NOT_FOUND);
  auto removed = client_->RemoveAll(/*force=*/true);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 2u);
  EXPECT_EQ(client_->HealthCheck(), 0);
}

TEST_F(StandaloneTest, RemoteSegmentOverTcp) {
  pool_->AddNode("64MB");
  ASSERT_TRUE(client_->RegisterBuffer(pool_mem_, kPool).ok());
  ReplicateConfig remote;
  remote.preferred_segments = {pool_->node_segment(1)};
  RoundTrip(*client_, "far", 8, 1 << 20, remote);
  auto stat = client_->Stat();
  ASSERT_TRUE(stat.ok());
  uint64_t on_peer = 0;
  for (const auto& s : stat->segments) {
    if (s.name == pool_->node_segment(1)) on_peer = s.object_count;
  }
  EXPECT_EQ(on_peer, 8u);
  // An embedded client elsewhere reads the same bytes from the peer.
  auto other = pool_->NewClient();
  std::vector<uint8_t> buf(1 << 20);
  ASSERT_TRUE(other->RegisterBuffer(buf.data(), buf.size()).ok());
  ASSERT_TRUE(other->GetInto("far/3", buf.data(), buf.size()).ok());
  EXPECT_TRUE(PageMatches("far/3", buf.data(), buf.size()));
}

TEST_F(StandaloneTest, CopyingCallsGoThroughTheStagingBuffer) {
  StandaloneOptions o = StandaloneFor(port_);
  o.local_buffer_size = 1 << 20;  // small, so a batch needs several rounds
  auto c = Attach(o);
  ASSERT_NE(c, nullptr);
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;
  for (int i = 0; i < 40; ++i) {
    keys.push_back("copy/" + std::to_string(i));
    values.emplace_back(100000 + i);
    FillPage(keys.back(), values.back().data(), values.back().size());
  }
  keys.push_back("copy/big");  // larger than the whole staging buffer
  values.emplace_back(3 << 20);
  FillPage(keys.back(), values.back().data(), values.back().size());
  keys.push_back("copy/empty");
  values.emplace_back();
  keys.push_back("");
  values.emplace_back(10);
  std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
  auto put = c->BatchPut(keys, spans);
  for (size_t i = 0; i + 2 < keys.size(); ++i) ASSERT_TRUE(put[i].ok()) << put[i].ToString();
  EXPECT_EQ(put[keys.size() - 2].code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(put[keys.size() - 1].code(), ErrorCode::INVALID_KEY);

  std::vector<std::string> want(keys.begin(), keys.end() - 2);
  want.push_back("copy/absent");
  auto got = c->BatchGet(want);
  for (size_t i = 0; i + 1 < want.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << want[i] << ": " << got[i].status().ToString();
    EXPECT_EQ(*got[i], values[i]) << want[i];
  }
  EXPECT_EQ(got.back().code(), ErrorCode::OBJECT_NOT_FOUND);
  // The other client (default 64 MiB staging) reads them in one round.
  auto again = client_->BatchGet({"copy/7", "copy/big"});
  ASSERT_TRUE(again[0].ok() && again[1].ok());
  EXPECT_EQ(*again[1], values[40]);
  auto status = NodeStatus(port_);
  ASSERT_TRUE(status.ok());
  EXPECT_GT(status->copied_bytes(), 2 * (4u << 20));
}

// group_ids hold one id per key of the caller's batch; the parts a standalone client sends (the
// keys whose buffers passed its check, each staging round, a value put through a temporary
// buffer) carry the ids of their own keys, so one bad key or a small staging buffer fails no
// other key of the batch.
TEST_F(StandaloneTest, GroupIdsTravelWithTheirKeys) {
  ASSERT_TRUE(client_->RegisterBuffer(pool_mem_, kPool).ok());
  ReplicateConfig three;
  three.group_ids = {"page1", "page1", "page1"};
  std::vector<uint8_t> heap(1000);  // not host-allocator memory: the client refuses its key
  const uint8_t* unregistered = heap.data();
  auto zc = client_->BatchPutFrom({"g/a", "g/bad", "g/b"}, {pool_mem_, unregistered, pool_mem_},
                                  {1000, 1000, 1000}, three);
  ASSERT_EQ(zc.size(), 3u);
  EXPECT_TRUE(zc[0].ok()) << zc[0].ToString();
  EXPECT_FALSE(zc[1].ok());
  EXPECT_TRUE(zc[2].ok()) << zc[2].ToString();
  ReplicateConfig two;
  two.group_ids = {"page1", "page1"};
  EXPECT_EQ(client_
                ->BatchPutFrom({"g/c", "g/d", "g/e"}, {pool_mem_, pool_mem_, pool_mem_},
                               {10, 10, 10}, two)[0]
                .code(),
            ErrorCode::INVALID_PARAMS);

  StandaloneOptions o = StandaloneFor(port_);
  o.local_buffer_size = 1 << 20;  // several staging rounds, and one value above the buffer
  auto c = Attach(o);
  ASSERT_NE(c, nullptr);
  std::vector<std::string> keys;
  std::vector<std::vector<uint8_t>> values;
  ReplicateConfig cfg;
  for (int i = 0; i < 6; ++i) {
    keys.push_back("gc/" + std::to_string(i));
    values.emplace_back(i == 5 ? (2 << 20) : 400000);
    FillPage(keys.back(), values.back().data(), values.back().size());
    cfg.group_ids.push_back("page" + std::to_string(i / 2));
  }
  std::vector<std::span<const uint8_t>> spans(values.begin(), values.end());
  auto put = c->BatchPut(keys, spans, cfg);
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(put[i].ok()) << put[i].ToString();
  auto got = c->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << got[i].status().ToString();
    EXPECT_EQ(*got[i], values[i]) << keys[i];
  }
}

// The rule the seed document is about: in standalone mode, register_buffer accepts any range
// inside one HostMemAllocator allocation and refuses everything else with a clear way out.
TEST_F(StandaloneTest, RegisterBufferAcceptsOnlyHostAllocatorMemory) {
  // SGLang's MHA pool: one allocation, K half and V half registered separately.
  const size_t half = kPool / 2;
  ASSERT_TRUE(client_->RegisterBuffer(pool_mem_, half).ok());
  ASSERT_TRUE(client_->RegisterBuffer(pool_mem_ + half, half).ok());
  // Again, whole, and overlapping: harmless.
  EXPECT_TRUE(client_->RegisterBuffer(pool_mem_, half).ok());
  EXPECT_TRUE(client_->RegisterBuffer(pool_mem_, kPool).ok());
  EXPECT_TRUE(client_->RegisterBuffer(pool_mem_ + 4096, 8192).ok());
  auto status = NodeStatus(port_);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->regions(), 2u);  // the staging buffer and the one pool allocation
  RoundTrip(*client_, "kv", 4, 64 << 10);

  auto refused = [&](void* p, size_t n, const char* reason) {
    Status st = client_->RegisterBuffer(p, n);
    EXPECT_EQ(st.code(), ErrorCode::UNAVAILABLE_IN_CURRENT_MODE) << st.ToString();
    for (const char* part : {"HostMemAllocator", "standalone mode off", "copying calls", reason}) {
      EXPECT_NE(st.message().find(part), std::string::npos) << part << " not in: " << st.message();
    }
  };
  std::vector<uint8_t> heap(1 << 20);
  refused(heap.data(), heap.size(), "no HostMemAllocator allocation contains");
  uint8_t stack[4096];
  refused(stack, sizeof(stack), "no HostMemAllocator allocation contains");
  auto second = alloc_.Alloc(1 << 20);
  ASSERT_TRUE(second.ok());
  auto* b = static_cast<uint8_t*>(*second);
  refused(pool_mem_ + kPool - 4096, 8192, "past its end");  // runs off the end
  refused(b + (1 << 20) - 100, 200, "past its end");
  // Bad arguments keep their code; unregistered memory in zero-copy calls too.
  EXPECT_EQ(client_->RegisterBuffer(nullptr, 10).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client_->RegisterBuffer(b, 0).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client_->PutFrom("k", b, 100).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client_->PutFrom("k", heap.data(), 100).code(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client_->UnregisterBuffer(b).code(), ErrorCode::INVALID_PARAMS);
  // The refused memory still works through the copying calls.
  FillPage("heap", heap.data(), heap.size());
  ASSERT_TRUE(client_->BatchPut({"heap"}, {std::span<const uint8_t>(heap)})[0].ok());
  auto back = client_->BatchGet({"heap"});
  ASSERT_TRUE(back[0].ok());
  EXPECT_EQ(*back[0], heap);
  // Unregistering the last range of an allocation releases it at the node.
  ASSERT_TRUE(client_->RegisterBuffer(b, 1 << 20).ok());
  EXPECT_EQ(NodeStatus(port_)->regions(), 3u);
  ASSERT_TRUE(client_->UnregisterBuffer(b).ok());
  EXPECT_EQ(NodeStatus(port_)->regions(), 2u);
  // A freed allocation is refused even though its range was registered.
  ASSERT_TRUE(client_->RegisterBuffer(b, 1 << 20).ok());
  ASSERT_TRUE(alloc_.Free(b).ok());
  Status freed = client_->PutFrom("k", b, 100);
  EXPECT_EQ(freed.code(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(freed.message().find("freed"), std::string::npos) << freed.ToString();
}

// In a pool that asks no credential (this one: no secret, loopback), the node names its master
// at attach, and exists and prefix queries go there in one hop: they are answered while the
// node itself is stopped.
TEST_F(StandaloneTest, ExistsQueriesGoStraightToTheMasterOfAnOpenPool) {
  ASSERT_TRUE(client_->RegisterBuffer(pool_mem_, kPool).ok());
  RoundTrip(*client_, "direct", 2, 4096);
  pool_->node(0).Pause();
  auto ex = client_->BatchIsExist({"direct/0", "direct/1", "direct/9", ""});
  auto prefix = client_->ExistsPrefix({"direct/0", "direct/1", "direct/9"});
  pool_->node(0).Resume();
  ASSERT_TRUE(ex[0].ok() && ex[1].ok() && ex[2].ok()) << ex[0].status().ToString();
  EXPECT_TRUE(*ex[0]);
  EXPECT_TRUE(*ex[1]);
  EXPECT_FALSE(*ex[2]);
  EXPECT_EQ(ex[3].code(), ErrorCode::INVALID_KEY);  // checked here as the node would
  ASSERT_TRUE(prefix.ok()) << prefix.status().ToString();
  EXPECT_EQ(*prefix, 2u);
}

class SecuredStandaloneTest : public SecuredPoolTest {};

// With a pool secret the node names no master (an attached engine holds no credential, and
// must not get one): every query is relayed by the node, so a stopped node stalls it.
TEST_F(SecuredStandaloneTest, ExistsQueriesAreRelayedWhenThePoolHasASecret) {
  StartPool();
  StandaloneOptions so = StandaloneFor(PortOf(pool_->node_segment(0)));
  so.rpc_timeout = std::chrono::milliseconds(500);
  auto c = Attach(so);
  ASSERT_NE(c, nullptr);
  auto before = c->BatchIsExist({"relayed"});
  ASSERT_TRUE(before[0].ok()) << before[0].status().ToString();
  EXPECT_FALSE(*before[0]);
  pool_->node(0).Pause();
  auto stalled = c->BatchIsExist({"relayed"});
  pool_->node(0).Resume();
  EXPECT_EQ(stalled[0].code(), ErrorCode::RPC_TIMEOUT) << stalled[0].status().ToString();
}

}  // namespace
}  // namespace kvpool::testing
