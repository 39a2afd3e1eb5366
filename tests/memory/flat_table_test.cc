// The memory store's flat table and its key encoding (src/memory/flat_table.h, table_key.h):
// keys of every length are found again across growth and sweeps, distinct limits never share a
// key, the stored hash matches the lookup hash, and the seed cannot be cancelled.
#include "src/memory/flat_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>

#include "src/core/gcra.h"
#include "src/core/sliding_log.h"

namespace spillway::memory {
namespace {

Limit limit_of(std::int64_t l, Micros period, std::int64_t burst = 0) {
  return *Limit::make(Algorithm::kGcra, l, period, burst > 0 ? burst : l);
}

TEST(TableKey, NumbersAndUserBytesAreOneCollisionFreeName) {
  const std::uint64_t seed = 42;
  // The same user bytes under two limits are two keys; user bytes that spell another limit's
  // prefix do not imitate it.
  const TableKey a = make_table_key("ab", limit_of(1, 1'000'000), seed);
  const TableKey b = make_table_key("ab", limit_of(2, 1'000'000), seed);
  EXPECT_NE(std::string(a.image(), TableKey::kImageBytes),
            std::string(b.image(), TableKey::kImageBytes));
  const TableKey c = make_table_key("b", limit_of(1, 1'000'000), seed);
  EXPECT_NE(std::string(a.image(), TableKey::kImageBytes),
            std::string(c.image(), TableKey::kImageBytes));
  // The hash a slot's stored bytes give back is the lookup's, for short and long keys.
  for (const std::string& user : {std::string("k"), std::string(12, 'x'), std::string(300, 'y')}) {
    const TableKey k = make_table_key(user, limit_of(100, 3'600'000'000), seed);
    std::string stored(k.size, '\0');
    if (k.is_inline()) {
      stored.assign(k.image() + 1, k.size);
    } else {
      k.write_long(stored.data());
    }
    EXPECT_EQ(hash_stored_key(stored.data(), stored.size(), seed), k.hash) << user.size();
  }
  // A different seed moves the hash (the seed is what hash flooding cannot guess).
  EXPECT_NE(make_table_key("k", limit_of(1, 1'000'000), 1).hash,
            make_table_key("k", limit_of(1, 1'000'000), 2).hash);
}

TEST(FlatTable, FindsEveryKeyAcrossGrowthAndRetainDropsExactlyTheOthers) {
  FlatTable<core::GcraState> table(7);
  std::map<std::string, std::int64_t> expected;  // user key -> tat_us written
  const Limit limit = limit_of(100, 1'000'000);
  std::mt19937_64 random(1);
  for (int i = 0; i < 5'000; ++i) {
    // Lengths 1..40: inline (the encoded prefix is 5 bytes here, so up to 14) and on the heap.
    std::string user = std::to_string(i) + "/";
    user.resize(user.size() + random() % 40, static_cast<char>('a' + i % 26));
    const TableKey key = make_table_key(user, limit, 7);
    ASSERT_EQ(table.find(key), nullptr) << user;
    table.insert(key, core::GcraState{.tat_us = i, .tat_rem = 0, .last = 0});
    expected[user] = i;
  }
  EXPECT_EQ(table.size(), expected.size());
  for (const auto& [user, tat] : expected) {
    auto* slot = table.find(make_table_key(user, limit, 7));
    ASSERT_NE(slot, nullptr) << user;
    EXPECT_EQ(slot->state.tat_us, tat) << user;
  }
  // The same bytes under another limit are not there.
  EXPECT_EQ(table.find(make_table_key(expected.begin()->first, limit_of(101, 1'000'000), 7)),
            nullptr);
  // Keep the even tats only.
  const std::size_t dropped =
      table.retain([](const auto& slot) { return slot.state.tat_us % 2 == 0; });
  EXPECT_EQ(dropped, expected.size() / 2);
  EXPECT_EQ(table.size(), expected.size() - dropped);
  for (const auto& [user, tat] : expected) {
    auto* slot = table.find(make_table_key(user, limit, 7));
    if (tat % 2 == 0) {
      ASSERT_NE(slot, nullptr) << user;
      EXPECT_EQ(slot->state.tat_us, tat);
    } else {
      EXPECT_EQ(slot, nullptr) << user;
    }
  }
  EXPECT_EQ(table.retain([](const auto&) { return false; }), expected.size() - dropped);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.find(make_table_key(expected.begin()->first, limit, 7)), nullptr);
}

TEST(FlatTable, StatesThatOwnMemoryMoveThroughRebuilds) {
  FlatTable<core::SlidingLogState> table(3);
  const Limit limit = limit_of(10, 1'000'000);
  for (int i = 0; i < 1'000; ++i) {
    core::SlidingLogState state;
    state.entries.push_back({.at = i, .cost = 1});
    state.total = 1;
    table.insert(make_table_key("log" + std::to_string(i), limit, 3), std::move(state));
  }
  table.retain([](const auto& slot) { return slot.state.entries.front().at < 500; });
  for (int i = 0; i < 1'000; ++i) {
    auto* slot = table.find(make_table_key("log" + std::to_string(i), limit, 3));
    ASSERT_EQ(slot != nullptr, i < 500) << i;
    if (slot != nullptr) {
      EXPECT_EQ(slot->state.entries.front().at, i);
    }
  }
}

TEST(TableKey, ChosenBlocksCannotCancelTheSeed) {
  // Regression: a block whose second word equalled a public constant zeroed the multiply and
  // with it the seed, so such keys collided under every seed. Now the seed is in both factors.
  const char pattern[8] = {'\xF9', '\x79', '\x37', '\x9E', '\xB1', '\x67', '\x56', '\x16'};
  std::set<std::uint64_t> hashes;
  for (int i = 0; i < 1'000; ++i) {
    std::string user = "k" + std::to_string(1'000'000 + i);  // 8 distinct bytes
    user.append(pattern, 8);
    user += 'z';
    hashes.insert(hash_bytes(user.data(), user.size(), 42));
  }
  EXPECT_EQ(hashes.size(), 1'000u);
}

}  // namespace
}  // namespace spillway::memory
