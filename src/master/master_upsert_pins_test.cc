// Upsert and pins, as Mooncake's: an upsert keeps the replaced object's hard pin always, and its
// soft pin (with that pin's expiry) when the put asks to keep it (SoftPinAction.PRESERVE);
// otherwise the new object takes with_soft_pin (ENABLE / DISABLE).
#include <gtest/gtest.h>

#include "master/master_test_util.h"

namespace kvpool::master::testing {
namespace {

class UpsertPinsTest : public CoreTest {
 protected:
  void Write(const std::string& key, bool upsert, const rpc::ReplicateConfig& cfg,
             Clock::time_point now = kT0) {
    auto r = Put1("w", key, 64, now, upsert, cfg);
    ASSERT_EQ(r.code(), 0) << r.message();
    auto e = PutEnd("w", {key}, {}, now);
    ASSERT_EQ(e.codes(0), 0) << e.messages(0);
  }
  ObjectInfo Info(const std::string& key, Clock::time_point now = kT0) {
    auto i = core_.InspectObject(key, now);
    EXPECT_TRUE(i.ok()) << i.status().ToString();
    return i.ok() ? *i : ObjectInfo();
  }
  static rpc::ReplicateConfig Cfg(bool soft, bool hard, bool keep_soft, uint64_t ttl_ms = 0) {
    rpc::ReplicateConfig c;
    c.set_with_soft_pin(soft);
    c.set_with_hard_pin(hard);
    c.set_keep_soft_pin_on_upsert(keep_soft);
    c.set_soft_pin_ttl_ms(ttl_ms);
    return c;
  }
};

TEST_F(UpsertPinsTest, HardPinCarriesOverAnUpsert) {
  Mount("node", "node:1");
  Write("h", false, Cfg(false, true, false));
  Write("h", true, Cfg(false, false, false));
  EXPECT_TRUE(Info("h").hard_pinned);  // an upsert cannot clear a hard pin
}

TEST_F(UpsertPinsTest, SoftPinPreservedEnabledOrDisabled) {
  Mount("node", "node:1");
  Write("s", false, Cfg(true, false, false));
  Write("s", true, Cfg(false, false, /*keep_soft=*/true));  // PRESERVE
  EXPECT_TRUE(Info("s").soft_pinned);
  Write("s", true, Cfg(false, false, false));  // DISABLE
  EXPECT_FALSE(Info("s").soft_pinned);
  Write("s", true, Cfg(false, false, true));  // PRESERVE of no pin: none
  EXPECT_FALSE(Info("s").soft_pinned);
  Write("s", true, Cfg(true, false, false));  // ENABLE
  EXPECT_TRUE(Info("s").soft_pinned);
}

TEST_F(UpsertPinsTest, PreservedSoftPinKeepsItsExpiry) {
  Mount("node", "node:1");
  Write("e", false, Cfg(true, false, false, /*ttl_ms=*/1000), At(0));
  Write("e", true, Cfg(false, false, true), At(0.5));
  EXPECT_TRUE(Info("e", At(0.9)).soft_pinned);
  core_.Housekeeping(At(1.1));  // the original pin lapses at 1 s, not 1 s after the upsert
  EXPECT_FALSE(Info("e", At(1.1)).soft_pinned);
}

}  // namespace
}  // namespace kvpool::master::testing
