// Redis Cluster hash slots: CRC16-XMODEM and hash tags, against the published test vectors and
// the rules of the cluster specification.
#include "src/redis/key_slot.h"

#include <gtest/gtest.h>

#include <string>

namespace spillway::redis {
namespace {

TEST(KeySlot, Crc16MatchesTheXmodemCheckValue) {
  EXPECT_EQ(crc16("123456789"), 0x31C3);
  EXPECT_EQ(crc16(""), 0);
}

TEST(KeySlot, KnownSlots) {
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("somekey"), 11058);
  EXPECT_EQ(key_slot("foo{hash_tag}"), 2515);
  EXPECT_EQ(key_slot("hash_tag"), 2515);
}

TEST(KeySlot, HashTagRules) {
  EXPECT_EQ(hash_tag("{user1000}.following"), "user1000");
  EXPECT_EQ(hash_tag("foo{}{bar}"), "foo{}{bar}") << "an empty first tag: the whole key";
  EXPECT_EQ(hash_tag("foo{{bar}}zap"), "{bar") << "from the first '{' to the first '}'";
  EXPECT_EQ(hash_tag("foo{bar}{zap}"), "bar") << "only the first tag counts";
  EXPECT_EQ(hash_tag("no tag"), "no tag");
  EXPECT_EQ(hash_tag("open{only"), "open{only");
  // spillway's keys put the user key in the tag: every limit of one user key shares a slot.
  EXPECT_EQ(key_slot("spillway:gcra:10:1000000:10:{k1}"),
            key_slot("spillway:fixed_window:5:60000000:5:{k1}"));
  EXPECT_EQ(key_slot("spillway:gcra:10:1000000:10:{k1}"), key_slot("k1"));
}

TEST(KeySlot, EverySlotIsBelow16384AndBytesAreUnsigned) {
  std::string key;
  for (int c = 0; c < 256; ++c) {
    key.push_back(static_cast<char>(c));
    EXPECT_LT(key_slot(key), kClusterSlots);
  }
  // A byte above 0x7f must not be sign-extended: crc16("\xff") is the table's last entry.
  EXPECT_EQ(crc16("\xff"), 0x1EF0);
}

}  // namespace
}  // namespace spillway::redis
