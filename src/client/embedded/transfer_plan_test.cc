#include "client/embedded/transfer_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <mutex>

namespace kvpool::client {
namespace {

// A "segment" in memory: Write/Read copy between it and the caller's iovecs, so a plan that
// loses, repeats or misaligns a range shows up as wrong bytes. Fails every call that touches
// `fail_offset`.
class MemoryTransport : public transfer::Transport {
 public:
  explicit MemoryTransport(size_t bytes) : segment(bytes) {}
  Status Write(const transfer::SegmentRanges& dst, std::span<const iovec> src, Deadline) override {
    return Move(dst, src, true);
  }
  Status Read(const transfer::SegmentRanges& src, std::span<const iovec> dst, Deadline) override {
    return Move(src, dst, false);
  }
  std::vector<uint8_t> segment;
  uint64_t fail_offset = UINT64_MAX;
  // Reads: fail only the range at fail_offset (CHECKSUM_MISMATCH), reporting each range's
  // outcome in SegmentRanges::range_status, as a disk host's trailer does.
  bool report_each = false;
  // Reads: fail the request while reporting every range good (a confused or hostile host).
  bool lie = false;
  std::mutex mu;
  int calls = 0;

 private:
  Status Move(const transfer::SegmentRanges& where, std::span<const iovec> mem, bool write) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++calls;
    }
    if (lie && !write && where.range_status != nullptr) {
      *where.range_status = std::vector<Status>(where.ranges.size());
      return Status(ErrorCode::CHECKSUM_MISMATCH, "injected, every range said good");
    }
    size_t mi = 0, moff = 0;
    std::vector<Status> each(where.ranges.size());
    Status first;
    for (size_t k = 0; k < where.ranges.size(); ++k) {
      const rpc::Range& r = where.ranges[k];
      if (r.offset() == fail_offset && report_each && !write && where.range_status != nullptr) {
        each[k] = Status(ErrorCode::CHECKSUM_MISMATCH, "injected");
        if (first.ok()) first = each[k];
      } else if (r.offset() == fail_offset) {
        return Status(ErrorCode::TRANSFER_FAIL, "injected");
      }
      for (uint64_t done = 0; done < r.length();) {
        const size_t n = std::min<uint64_t>(r.length() - done, mem[mi].iov_len - moff);
        uint8_t* seg = segment.data() + r.offset() + done;
        uint8_t* m = static_cast<uint8_t*>(mem[mi].iov_base) + moff;
        write ? std::memcpy(seg, m, n) : std::memcpy(m, seg, n);
        done += n;
        moff += n;
        if (moff == mem[mi].iov_len) ++mi, moff = 0;
      }
    }
    if (!first.ok()) *where.range_status = std::move(each);
    return first;
  }
};

rpc::Replica ReplicaAt(const std::string& segment, uint64_t offset, uint64_t length) {
  rpc::Replica r;
  r.set_segment_name(segment);
  r.set_endpoint("127.0.0.1:9000");
  r.set_offset(offset);
  r.set_length(length);
  return r;
}

// Objects of 1 MiB in two buffers each (uneven halves), spread over two segments.
TEST(TransferPlanTest, ParallelPartsMoveEveryByteOnceAndReportFailuresPerObject) {
  constexpr size_t kObjects = 40;
  constexpr uint64_t kObj = 1 << 20;
  for (int threads : {0, 1, 3}) {
    TaskPool workers(threads);
    MemoryTransport a(kObjects * kObj), b(kObjects * kObj);
    std::vector<uint8_t> src(kObjects * kObj), dst(kObjects * kObj, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + i / 4096);
    auto buffers = [&](std::vector<uint8_t>& mem, size_t i) {
      uint8_t* p = mem.data() + i * kObj;
      return std::vector<iovec>{{p, 1000}, {p + 1000, kObj - 1000}};
    };
    auto transport_for = [&](const std::string& s) -> transfer::Transport& {
      return s == "a" ? static_cast<transfer::Transport&>(a) : b;
    };
    auto place = [&](size_t i) {
      // Reversed offsets in "b" so the segment side is not in memory order.
      return i % 4 == 3 ? ReplicaAt("b", (kObjects - 1 - i) * kObj, kObj)
                        : ReplicaAt("a", i * kObj, kObj);
    };
    TransferPlan put(&workers);
    for (size_t i = 0; i < kObjects; ++i) ASSERT_TRUE(put.Add(i, place(i), buffers(src, i)).ok());
    std::vector<Status> put_status(kObjects);
    put.Run(true, transport_for, Deadline::max(), put_status);
    for (const auto& st : put_status) ASSERT_TRUE(st.ok()) << st.ToString();
    if (threads > 0) {
      EXPECT_GT(a.calls, 1) << "40 MiB for one segment should split";
    }

    a.fail_offset = 5 * kObj;  // object 5's range fails: only the objects of its part fail
    TransferPlan get(&workers);
    for (size_t i = 0; i < kObjects; ++i) ASSERT_TRUE(get.Add(i, place(i), buffers(dst, i)).ok());
    std::vector<Status> get_status(kObjects);
    get.Run(false, transport_for, Deadline::max(), get_status);
    EXPECT_EQ(get_status[5].code(), ErrorCode::TRANSFER_FAIL);
    for (size_t i = 0; i < kObjects; ++i) {
      if (i % 4 == 3) {  // segment b: unaffected, byte-exact
        ASSERT_TRUE(get_status[i].ok()) << i;
        EXPECT_EQ(0, std::memcmp(dst.data() + i * kObj, src.data() + i * kObj, kObj)) << i;
      } else if (get_status[i].ok()) {
        EXPECT_EQ(0, std::memcmp(dst.data() + i * kObj, src.data() + i * kObj, kObj)) << i;
      }
    }
  }
}

// A failed read whose per-range report names no failed range fails every object of the
// request: bytes are returned as good only when a range's own code says so.
TEST(TransferPlanTest, AFailedReadWhoseRangesAllClaimGoodFailsThemAll) {
  constexpr size_t kObjects = 8;
  constexpr uint64_t kObj = 4096;
  MemoryTransport seg(kObjects * kObj);
  seg.lie = true;
  std::vector<uint8_t> dst(kObjects * kObj, 0);
  TransferPlan plan;
  for (size_t i = 0; i < kObjects; ++i) {
    ASSERT_TRUE(plan.Add(i, ReplicaAt("a", i * kObj, kObj),
                         std::vector<iovec>{{dst.data() + i * kObj, kObj}})
                    .ok());
  }
  std::vector<Status> per_object(kObjects);
  plan.Run(
      false, [&](const std::string&) -> transfer::Transport& { return seg; }, Deadline::max(),
      per_object);
  for (size_t i = 0; i < kObjects; ++i) {
    EXPECT_EQ(per_object[i].code(), ErrorCode::CHECKSUM_MISMATCH) << i;
  }
}

// A put's checksums come out of the run: one per written object, whatever its replica count
// and however its memory is split, equal to hashing the object's bytes on their own.
// A read whose transport reports each range's outcome fails only the object of the bad range;
// one that cannot tell fails every object of the request, as before.
TEST(TransferPlanTest, ARangeFailedOnItsOwnFailsOnlyItsObject) {
  constexpr size_t kObjects = 40;
  constexpr uint64_t kObj = 4096;
  for (bool report_each : {true, false}) {
    MemoryTransport seg(kObjects * kObj);
    for (size_t i = 0; i < seg.segment.size(); ++i) seg.segment[i] = static_cast<uint8_t>(i / 7);
    seg.fail_offset = 17 * kObj;
    seg.report_each = report_each;
    std::vector<uint8_t> dst(kObjects * kObj, 0);
    TransferPlan plan;
    for (size_t i = 0; i < kObjects; ++i) {
      ASSERT_TRUE(plan.Add(i, ReplicaAt("a", i * kObj, kObj),
                           std::vector<iovec>{{dst.data() + i * kObj, kObj}})
                      .ok());
    }
    std::vector<Status> per_object(kObjects);
    plan.Run(
        false, [&](const std::string&) -> transfer::Transport& { return seg; }, Deadline::max(),
        per_object);
    for (size_t i = 0; i < kObjects; ++i) {
      if (!report_each) {
        EXPECT_EQ(per_object[i].code(), ErrorCode::TRANSFER_FAIL) << i;
      } else if (i == 17) {
        EXPECT_EQ(per_object[i].code(), ErrorCode::CHECKSUM_MISMATCH);
      } else {
        ASSERT_TRUE(per_object[i].ok()) << i << ": " << per_object[i].ToString();
        EXPECT_EQ(std::memcmp(dst.data() + i * kObj, seg.segment.data() + i * kObj, kObj), 0) << i;
      }
    }
  }
}

TEST(TransferPlanTest, WritesHashEachObjectOnceAsTheyMove) {
  constexpr size_t kObjects = 24;
  constexpr uint64_t kObj = 1 << 20;
  std::vector<uint8_t> src(kObjects * kObj);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 13 + i / 8191);
  for (int threads : {0, 2}) {
    TaskPool workers(threads);
    MemoryTransport a(kObjects * kObj), b(kObjects * kObj);
    TransferPlan put(&workers);
    for (size_t i = 0; i < kObjects; ++i) {
      uint8_t* p = src.data() + i * kObj;
      std::vector<iovec> memory{{p, 4096}, {p + 4096, kObj - 4096}};
      ASSERT_TRUE(put.Add(i, ReplicaAt("a", i * kObj, kObj), memory).ok());
      if (i % 2 == 0) {
        ASSERT_TRUE(put.Add(i, ReplicaAt("b", i * kObj, kObj), memory).ok());
      }
    }
    std::vector<Status> status(kObjects + 1);  // one more object in the batch, not written
    std::vector<uint64_t> checksums(kObjects + 1, 0);
    put.Run(
        true,
        [&](const std::string& s) -> transfer::Transport& {
          return s == "a" ? static_cast<transfer::Transport&>(a) : b;
        },
        Deadline::max(), status, &checksums);
    for (size_t i = 0; i < kObjects; ++i) {
      ASSERT_TRUE(status[i].ok()) << i;
      EXPECT_EQ(checksums[i], ChecksumOf(src.data() + i * kObj, kObj)) << i;
    }
    EXPECT_EQ(checksums[kObjects], 0u);
  }
}

// A tenant's replicas carry grants; each range sent to the segment host carries its replica's.
TEST(TransferPlanTest, RangesCarryTheirReplicasGrants) {
  std::vector<rpc::Range> sent;
  class Recording : public transfer::Transport {
   public:
    explicit Recording(std::vector<rpc::Range>* out) : out_(out) {}
    Status Write(const transfer::SegmentRanges& dst, std::span<const iovec>, Deadline) override {
      out_->insert(out_->end(), dst.ranges.begin(), dst.ranges.end());
      return Status::Ok();
    }
    Status Read(const transfer::SegmentRanges&, std::span<const iovec>, Deadline) override {
      return Status::Ok();
    }

   private:
    std::vector<rpc::Range>* out_;
  } recording(&sent);
  std::vector<uint8_t> mem(300);
  TransferPlan plan;
  for (uint64_t i = 0; i < 3; ++i) {
    rpc::Replica r = ReplicaAt("a", i * 4096, 100);
    if (i != 1) {  // replica 1 has none (a privileged caller's)
      r.mutable_grant()->set_offset(i * 4096);
      r.mutable_grant()->set_length(100);
      r.mutable_grant()->set_mac("mac" + std::to_string(i));
    }
    ASSERT_TRUE(plan.Add(i, r, std::vector<iovec>{{mem.data() + i * 100, 100}}).ok());
  }
  std::vector<Status> status(3);
  plan.Run(
      true, [&](const std::string&) -> transfer::Transport& { return recording; }, Deadline::max(),
      status);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].grant().mac(), "mac0");
  EXPECT_FALSE(sent[1].has_grant());
  EXPECT_EQ(sent[2].grant().mac(), "mac2");
  EXPECT_EQ(sent[2].grant().offset(), 2u * 4096);
}

// Hosts that list what is written to them are asked to list the objects of one replica only
// (one each, with its checksum), and the run reports the ones they listed.
TEST(TransferPlanTest, OnlyObjectsOfOneReplicaAreNamedToTheirHost) {
  class Listing : public transfer::Transport {
   public:
    Status Write(const transfer::SegmentRanges& dst, std::span<const iovec>, Deadline) override {
      if (dst.before_ranges != nullptr) (*dst.before_ranges)(0, dst.ranges.size());
      if (dst.record_keys == nullptr) return Status::Ok();
      for (size_t k = 0; k < dst.record_keys->size(); ++k) {
        if ((*dst.record_keys)[k].empty()) continue;
        named.emplace_back((*dst.record_keys)[k]);
        sums.push_back((*dst.record_checksum)(k));
      }
      *dst.recorded = true;
      return Status::Ok();
    }
    Status Read(const transfer::SegmentRanges&, std::span<const iovec>, Deadline) override {
      return Status::Ok();
    }
    std::vector<std::string> named;
    std::vector<uint64_t> sums;
  } a, b;
  std::vector<uint8_t> mem(3 * 100, 0x33);
  const std::vector<std::string> keys = {"single", "double", "not-listing"};
  TransferPlan plan;
  for (size_t i = 0; i < 3; ++i) {
    rpc::Replica r = ReplicaAt("a", i * 4096, 100);
    r.set_host_records_writes(i != 2);
    std::vector<iovec> memory{{mem.data() + i * 100, 100}};
    ASSERT_TRUE(plan.Add(i, r, memory).ok());
    if (i == 1) {
      rpc::Replica second = ReplicaAt("b", 0, 100);
      second.set_host_records_writes(true);
      ASSERT_TRUE(plan.Add(i, second, memory).ok());
    }
  }
  std::vector<Status> status(3);
  std::vector<uint64_t> checksums(3, 0);
  HostRecords records{&keys, std::vector<char>(3, 0)};
  plan.Run(
      true,
      [&](const std::string& s) -> transfer::Transport& {
        return s == "a" ? static_cast<transfer::Transport&>(a) : b;
      },
      Deadline::max(), status, &checksums, &records);
  EXPECT_EQ(a.named, std::vector<std::string>{"single"});
  EXPECT_TRUE(b.named.empty());
  ASSERT_EQ(a.sums.size(), 1u);
  EXPECT_EQ(a.sums[0], ChecksumOf(mem.data(), 100));
  EXPECT_EQ(records.recorded, (std::vector<char>{1, 0, 0}));
}

}  // namespace
}  // namespace kvpool::client
