#include "common/keys.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/key_chunks.h"

namespace kvpool {

TEST(ValidateKeyTest, Limits) {
  EXPECT_TRUE(ValidateKey("a").ok());
  EXPECT_TRUE(ValidateKey(std::string(kMaxKeyBytes, 'k')).ok());
  EXPECT_EQ(ValidateKey("").code(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(ValidateKey(std::string(kMaxKeyBytes + 1, 'k')).code(), ErrorCode::INVALID_KEY);
}

TEST(PackedKeysTest, RoundTripsAnyKeys) {
  std::vector<std::string> keys = {"a",
                                   std::string(127, 'b'),
                                   std::string(128, 'c'),
                                   std::string("nul\0in\0it\0", 10),
                                   std::string(70000, 'd'),
                                   ""};
  const std::string packed = PackKeys(keys);
  auto back = UnpackKeys(packed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ((*back)[i], keys[i]) << i;
  EXPECT_TRUE(UnpackKeys("")->empty());
}

TEST(PackedKeysTest, TruncatedOrMalformedIsInvalidParams) {
  const std::vector<std::string> two = {"first", std::string(200, 'x')};
  const std::string packed = PackKeys(two);
  for (size_t cut = 1; cut < packed.size(); ++cut) {
    auto r = UnpackKeys(std::string_view(packed).substr(0, cut));
    if (cut == 6) {  // exactly the first key
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(r->size(), 1u);
    } else {
      EXPECT_EQ(r.code(), ErrorCode::INVALID_PARAMS) << cut;
    }
  }
  EXPECT_EQ(UnpackKeys(std::string(6, '\xff')).code(), ErrorCode::INVALID_PARAMS);
}

TEST(ShownKeyTest, LongKeysAreCutWithTheirLength) {
  EXPECT_EQ(ShownKey("page-1"), "page-1");
  EXPECT_EQ(ShownKey(std::string(128, 'k')), std::string(128, 'k'));
  EXPECT_EQ(ShownKey(std::string(4096, 'k')), std::string(128, 'k') + "...(4096 bytes)");
  // Never cut inside a UTF-8 character.
  std::string euro = std::string(127, 'a') + "\xe2\x82\xac" + std::string(100, 'b');
  EXPECT_EQ(ShownKey(euro), std::string(127, 'a') + "...(230 bytes)");
}

TEST(PrintableBytesTest, ValidUtf8PassesAndEverythingElseIsEscaped) {
  EXPECT_EQ(PrintableBytes("page-1/layer 3"), "page-1/layer 3");
  EXPECT_EQ(PrintableBytes("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // é € 😀 are text
  EXPECT_EQ(PrintableBytes("\xff\xfemissing"), "\\xff\\xfemissing");
  EXPECT_EQ(PrintableBytes(std::string("a\0b\n\x1b[2J\x7f", 9)), "a\\x00b\\x0a\\x1b[2J\\x7f");
  EXPECT_EQ(PrintableBytes("back\\slash"), "back\\x5cslash");    // so escapes cannot be forged
  EXPECT_EQ(PrintableBytes("\xc2\x9b"), "\\xc2\\x9b");           // C1 control (CSI)
  EXPECT_EQ(PrintableBytes("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(PrintableBytes("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(PrintableBytes("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(PrintableBytes("\xe2\x82"), "\\xe2\\x82");                    // truncated sequence
  EXPECT_EQ(PrintableBytes(""), "");
}

TEST(PrintableBytesTest, DistinctBytesPrintDistinctly) {
  // Every 1- and 2-byte string maps to a distinct text (the escaping is injective).
  std::set<std::string> seen;
  for (int a = 0; a < 256; ++a) {
    EXPECT_TRUE(seen.insert(PrintableBytes(std::string(1, static_cast<char>(a)))).second) << a;
    for (int b = 0; b < 256; ++b) {
      std::string two = {static_cast<char>(a), static_cast<char>(b)};
      EXPECT_TRUE(seen.insert(PrintableBytes(two)).second) << a << " " << b;
    }
  }
}

TEST(KeyChunksTest, SplitsByCountAndBytesInOrder) {
  EXPECT_EQ(KeyChunks(std::vector<std::string>{}),
            (std::vector<std::pair<size_t, size_t>>{{0, 0}}));
  std::vector<std::string> small(128, std::string(100, 'k'));  // HiCache's batch: one request
  EXPECT_EQ(KeyChunks(small), (std::vector<std::pair<size_t, size_t>>{{0, 128}}));
  std::vector<std::string> many(kMaxKeysPerRequest * 2 + 1, "k");
  EXPECT_EQ(KeyChunks(many), (std::vector<std::pair<size_t, size_t>>{
                                 {0, kMaxKeysPerRequest},
                                 {kMaxKeysPerRequest, 2 * kMaxKeysPerRequest},
                                 {2 * kMaxKeysPerRequest, 2 * kMaxKeysPerRequest + 1}}));
  // 20,000 keys of 4,000 bytes (80 MB, above the 64 MiB frame): chunks of at most 8 MiB.
  std::vector<std::string> big(20000, std::string(4000, 'k'));
  auto chunks = KeyChunks(big);
  size_t next = 0;
  for (auto [begin, end] : chunks) {
    EXPECT_EQ(begin, next);
    EXPECT_LE((end - begin) * 4000, kMaxKeyBytesPerRequest);
    EXPECT_GT(end, begin);
    next = end;
  }
  EXPECT_EQ(next, big.size());
  EXPECT_EQ(chunks.size(), 10u);  // 2,097 keys per 8 MiB
}

}  // namespace kvpool
