// Reading the scripts' replies (src/redis/script_reply.h): the packed form of the
// single-algorithm scripts is read exactly, and every other shape is an error that says so.
#include "src/redis/script_reply.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace spillway::redis {
namespace {

std::string packed(std::initializer_list<double> values) {
  std::string out;
  for (double v : values) {
    const auto bits = std::bit_cast<std::uint64_t>(v);
    char bytes[8];
    std::memcpy(bytes, &bits, 8);  // little-endian host, as the script packs
    out.append(bytes, 8);
  }
  return out;
}

Reply string_reply(std::string text) { return {.type = Reply::Type::kString, .text = text}; }

TEST(PackedDecision, ReadsEachDecisionOfABatchExactly) {
  const double big = 4503599627370495.0;  // 2^52 - 1: exact as a double
  const Reply reply = string_reply(packed({1, 99, 0, 10'000, 0, 0, 0, -1, big, 0}));
  const Result<Decision> first = packed_decision_at(reply, 0, 100);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(*first, (Decision{.allowed = true,
                              .limit = 100,
                              .remaining = 99,
                              .retry_after = 0,
                              .reset_after = 10'000}));
  const Result<Decision> second = packed_decision_at(reply, 1, 7);
  ASSERT_TRUE(second.has_value()) << second.error().message;
  EXPECT_FALSE(second->allowed);
  EXPECT_EQ(second->limit, 7);
  EXPECT_EQ(second->retry_after, kNever);
  EXPECT_EQ(second->reset_after, 4503599627370495);
  // The fifth double is the delay of a shaping limit (docs/SPEC.md §2.2).
  const Result<Decision> delayed =
      packed_decision_at(string_reply(packed({1, 0, 0, 600'000, 400'000})), 0, 5);
  ASSERT_TRUE(delayed.has_value()) << delayed.error().message;
  EXPECT_EQ(delayed->delay, 400'000);
  EXPECT_EQ(delayed->verdict(), Verdict::kAdmitAfter);
}

TEST(PackedDecision, OtherShapesAreErrorsThatSaySo) {
  const Reply error{.type = Reply::Type::kError, .text = "NOSCRIPT No matching script"};
  EXPECT_EQ(packed_decision_at(error, 0, 1).error().code, Errc::kUnavailable);
  EXPECT_NE(packed_decision_at(error, 0, 1).error().message.find("NOSCRIPT"), std::string::npos);
  // Past the end, a torn length, an integer array (the all-or-nothing shape), a fraction, a NaN.
  const Reply one = string_reply(packed({1, 2, 3, 4, 0}));
  EXPECT_EQ(packed_decision_at(one, 1, 1).error().code, Errc::kInternal);
  EXPECT_EQ(packed_decision_at(string_reply(packed({1, 2, 3, 4, 0}) + "x"), 0, 1).error().code,
            Errc::kInternal);
  // Four doubles: the shape of a script from before delays, a torn decision.
  EXPECT_EQ(packed_decision_at(string_reply(packed({1, 2, 3, 4})), 0, 1).error().code,
            Errc::kInternal);
  const Reply array{.type = Reply::Type::kArray};
  EXPECT_EQ(packed_decision_at(array, 0, 1).error().code, Errc::kInternal);
  const Result<Decision> fraction = packed_decision_at(string_reply(packed({1, 2.5, 3, 4, 0})), 0, 1);
  ASSERT_FALSE(fraction.has_value());
  EXPECT_NE(fraction.error().message.find("non-integer"), std::string::npos);
  EXPECT_FALSE(packed_decision_at(string_reply(packed({1, 2, std::nan(""), 4, 0})), 0, 1));
  EXPECT_FALSE(packed_decision_at(string_reply(packed({1, 9007199254740992.0, 0, 4, 0})), 0, 1));
}

}  // namespace
}  // namespace spillway::redis
