#include "client/embedded/peer_health.h"

#include <gtest/gtest.h>

namespace kvpool::client {
namespace {

const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

TEST(PeerHealthTest, TimeoutMarksSilentUntilItExpires) {
  PeerHealth h(std::chrono::seconds(5));
  h.Note("10.0.0.2:50052", Status(ErrorCode::RPC_TIMEOUT, "no progress"), kT0);
  EXPECT_TRUE(h.Avoided("10.0.0.2:50052", kT0 + std::chrono::seconds(4)));
  EXPECT_FALSE(h.Avoided("10.0.0.2:50052", kT0 + std::chrono::seconds(5)));
  EXPECT_FALSE(h.Avoided("10.0.0.3:50052", kT0));
  EXPECT_EQ(h.counters().marked_silent, 1u);
}

TEST(PeerHealthTest, AnAnswerClearsIt) {
  PeerHealth h(std::chrono::seconds(5));
  h.Note("a:1", Status(ErrorCode::RPC_FAIL, "cannot connect"), kT0);
  h.Note("a:1", Status::Ok(), kT0 + std::chrono::seconds(1));
  EXPECT_FALSE(h.Avoided("a:1", kT0 + std::chrono::seconds(1)));
  EXPECT_EQ(h.counters().recovered, 1u);
}

TEST(PeerHealthTest, ThePeersOwnErrorsSayItIsAlive) {
  PeerHealth h(std::chrono::seconds(5));
  for (ErrorCode c : {ErrorCode::CHECKSUM_MISMATCH, ErrorCode::SEGMENT_NOT_FOUND,
                      ErrorCode::INVALID_READ, ErrorCode::OBJECT_NOT_FOUND}) {
    h.Note("a:1", Status(c, "answered"), kT0);
  }
  EXPECT_FALSE(h.Avoided("a:1", kT0));
  EXPECT_TRUE(h.AvoidedNow(kT0).empty());
}

}  // namespace
}  // namespace kvpool::client
