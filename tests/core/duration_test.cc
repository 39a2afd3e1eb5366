// parse_duration / parse_rate / format_duration (docs/SPEC.md §1, include/spillway/duration.h).
#include "spillway/duration.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace spillway {
namespace {

constexpr Micros kS = kMicrosPerSecond;

// --- parse_duration: accepted forms -------------------------------------------------------------

struct DurationCase {
  const char* text;
  Micros expected;
};

class ParseDurationValid : public ::testing::TestWithParam<DurationCase> {};

TEST_P(ParseDurationValid, Parses) {
  const auto& c = GetParam();
  const auto got = parse_duration(c.text);
  ASSERT_TRUE(got.has_value()) << "\"" << c.text << "\": " << got.error().message;
  EXPECT_EQ(*got, c.expected) << c.text;
}

INSTANTIATE_TEST_SUITE_P(Forms, ParseDurationValid,
                         ::testing::Values(DurationCase{"250ms", 250'000},      // 250 * 1000
                                           DurationCase{"1s", 1'000'000},       // 1 * 10^6
                                           DurationCase{"30s", 30'000'000},     // 30 * 10^6
                                           DurationCase{"1m", 60'000'000},      // 60 * 10^6
                                           DurationCase{"1h", 3'600'000'000},   // 3600 * 10^6
                                           DurationCase{"1d", 86'400'000'000},  // 86400 * 10^6
                                           DurationCase{"7us", 7},              // micros as written
                                           DurationCase{"1us", 1},      // the smallest duration
                                           DurationCase{"1ms", 1'000},  // 10^3
                                           DurationCase{"1500ms", 1'500'000},    // 1500 * 1000
                                           DurationCase{"90s", 90'000'000},      // 90 * 10^6
                                           DurationCase{"15m", 900'000'000},     // 15 * 60 * 10^6
                                           DurationCase{"24h", 86'400'000'000},  // 24 * 3600 * 10^6
                                           DurationCase{"2d",
                                                        172'800'000'000}));  // 2 * 86400 * 10^6

// The unit words of a rate's period work after a duration's number too.
INSTANTIATE_TEST_SUITE_P(
    Words, ParseDurationValid,
    ::testing::Values(DurationCase{"1min", 60'000'000},           // 60 * 10^6
                      DurationCase{"5mins", 300'000'000},         // 5 * 60 * 10^6
                      DurationCase{"1minute", 60'000'000},        // 60 * 10^6
                      DurationCase{"15minutes", 900'000'000},     // 15 * 60 * 10^6
                      DurationCase{"90sec", 90'000'000},          // 90 * 10^6
                      DurationCase{"10secs", 10'000'000},         // 10 * 10^6
                      DurationCase{"1second", 1'000'000},         // 10^6
                      DurationCase{"30seconds", 30'000'000},      // 30 * 10^6
                      DurationCase{"1hour", 3'600'000'000},       // 3600 * 10^6
                      DurationCase{"2hours", 7'200'000'000},      // 2 * 3600 * 10^6
                      DurationCase{"1day", 86'400'000'000},       // 86400 * 10^6
                      DurationCase{"7days", 604'800'000'000},     // 7 * 86400 * 10^6
                      DurationCase{" 2hours ", 7'200'000'000}));  // blanks around are trimmed

// --- parse_duration: rejections ------------------------------------------------------------------

class ParseDurationInvalid : public ::testing::TestWithParam<const char*> {};

TEST_P(ParseDurationInvalid, RejectsAndQuotesInput) {
  const std::string text = GetParam();
  const auto got = parse_duration(text);
  ASSERT_FALSE(got.has_value()) << "\"" << text << "\" parsed as " << *got;
  EXPECT_EQ(got.error().code, Errc::kInvalidArgument) << text;
  EXPECT_FALSE(got.error().message.empty()) << text;
  if (!text.empty()) {
    EXPECT_NE(got.error().message.find(text), std::string::npos)
        << "message does not quote the input \"" << text << "\": " << got.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(Bad, ParseDurationInvalid,
                         ::testing::Values("0s", "0ms", "0", "-1s", "-250ms", "1.5s", "0.5m", "",
                                           "10", "s", "ms", "abc", "1x", "1sx", "1 s", "s1", "1s1s",
                                           "99999999999999999999d", "9223372036854775807s",
                                           "9223372036854775807ms",
                                           "106751992d",  // 106751992 * 86400 * 10^6 > 2^63
                                           "1e3s", "0x10s",
                                           // unit words: no blank inside, no other spelling
                                           "1 min", "2 hours", "2hourss", "1mins2", "min", "1MIN",
                                           "1minut", "0min", "-2hours", "1.5hours"));

// --- parse_rate ----------------------------------------------------------------------------------

struct RateCase {
  const char* text;
  std::int64_t limit;
  Micros period;
};

class ParseRateValid : public ::testing::TestWithParam<RateCase> {};

TEST_P(ParseRateValid, Parses) {
  const auto& c = GetParam();
  const auto got = parse_rate(c.text);
  ASSERT_TRUE(got.has_value()) << "\"" << c.text << "\": " << got.error().message;
  EXPECT_EQ(got->limit, c.limit) << c.text;
  EXPECT_EQ(got->period, c.period) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Forms, ParseRateValid,
    ::testing::Values(RateCase{"60/min", 60, 60 * kS},        // L=60, P=1m
                      RateCase{"10/s", 10, kS},               // L=10, P=1s
                      RateCase{"10/sec", 10, kS},             // same, unit word
                      RateCase{"10/second", 10, kS},          // same, long word
                      RateCase{"5/hour", 5, 3600 * kS},       // P=1h
                      RateCase{"5/h", 5, 3600 * kS},          // P=1h
                      RateCase{"1/day", 1, 86400 * kS},       // P=1d
                      RateCase{"1/d", 1, 86400 * kS},         // P=1d
                      RateCase{"3/minute", 3, 60 * kS},       // P=1m
                      RateCase{"3/m", 3, 60 * kS},            // P=1m
                      RateCase{"7/ms", 7, 1'000},             // P=1ms
                      RateCase{"100/30s", 100, 30 * kS},      // duration after '/'
                      RateCase{"1000/250ms", 1000, 250'000},  // duration after '/'
                      RateCase{"2/5m", 2, 5 * 60 * kS},       // duration after '/'
                      RateCase{"60/minutes", 60, 60 * kS},    // a plural unit word
                      RateCase{"5/2hours", 5, 7200 * kS},     // a duration with a unit word
                      RateCase{"9/15mins", 9, 900 * kS}));    // a duration with a unit word

class ParseRateInvalid : public ::testing::TestWithParam<const char*> {};

TEST_P(ParseRateInvalid, RejectsAndQuotesInput) {
  const std::string text = GetParam();
  const auto got = parse_rate(text);
  ASSERT_FALSE(got.has_value()) << "\"" << text << "\" parsed as " << got->limit << "/"
                                << got->period;
  EXPECT_EQ(got.error().code, Errc::kInvalidArgument) << text;
  EXPECT_FALSE(got.error().message.empty()) << text;
  if (!text.empty()) {
    EXPECT_NE(got.error().message.find(text), std::string::npos)
        << "message does not quote the input \"" << text << "\": " << got.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(Bad, ParseRateInvalid,
                         ::testing::Values("", "10", "/min", "10/", "abc", "0/min", "-1/min",
                                           "1.5/s", "10/xyz", "10/0s", "10/-1s", "10/1.5s",
                                           "10/min junk", "10/minx", "10//min", "a/min", "10/s/s",
                                           "99999999999999999999/s", "1/99999999999999999999d"));

// --- format_duration -----------------------------------------------------------------------------

TEST(FormatDuration, LargestDividingUnit) {
  EXPECT_EQ(format_duration(60'000'000), "1m");       // 60 s = 1 m
  EXPECT_EQ(format_duration(1'500'000), "1500ms");    // 1.5 s is not whole seconds
  EXPECT_EQ(format_duration(1), "1us");               // smallest unit
  EXPECT_EQ(format_duration(1'001), "1001us");        // not whole ms
  EXPECT_EQ(format_duration(1'000), "1ms");           // 10^3
  EXPECT_EQ(format_duration(250'000), "250ms");       // 250 * 10^3
  EXPECT_EQ(format_duration(1'000'000), "1s");        // 10^6
  EXPECT_EQ(format_duration(90'000'000), "90s");      // 1.5 m is not whole minutes
  EXPECT_EQ(format_duration(3'600'000'000), "1h");    // 3600 s
  EXPECT_EQ(format_duration(5'400'000'000), "90m");   // 1.5 h is not whole hours
  EXPECT_EQ(format_duration(86'400'000'000), "1d");   // 86400 s
  EXPECT_EQ(format_duration(172'800'000'000), "2d");  // 2 * 86400 s
}

TEST(FormatDuration, RoundTripsExamples) {
  for (Micros d : {Micros{1}, Micros{999}, Micros{1'000}, Micros{59'000'000}, Micros{60'000'000},
                   Micros{61'000'000}, Micros{3'599'000'000}, Micros{86'400'000'001},
                   Micros{7 * 86'400'000'000}}) {
    const auto back = parse_duration(format_duration(d));
    ASSERT_TRUE(back.has_value()) << format_duration(d) << ": " << back.error().message;
    EXPECT_EQ(*back, d) << format_duration(d);
  }
}

RC_GTEST_PROP(FormatDuration, RoundTripsRandom, ()) {
  // Mostly whole multiples of some unit, so every unit gets exercised.
  const Micros unit = *rc::gen::element(Micros{1}, kMicrosPerMilli, kMicrosPerSecond,
                                        kMicrosPerMinute, kMicrosPerHour, kMicrosPerDay);
  const Micros count = *rc::gen::inRange<Micros>(1, 100'000);
  const Micros d = unit * count;
  const std::string text = format_duration(d);
  const auto back = parse_duration(text);
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == d);
}

RC_GTEST_PROP(ParseDuration, WholeNumbersOfEachUnit, ()) {
  const Micros count = *rc::gen::inRange<Micros>(1, 10'000);
  const auto [suffix, unit] = *rc::gen::element(
      std::pair<std::string, Micros>{"us", 1}, std::pair<std::string, Micros>{"ms", 1'000},
      std::pair<std::string, Micros>{"s", kMicrosPerSecond},
      std::pair<std::string, Micros>{"m", kMicrosPerMinute},
      std::pair<std::string, Micros>{"h", kMicrosPerHour},
      std::pair<std::string, Micros>{"d", kMicrosPerDay});
  const auto got = parse_duration(std::to_string(count) + suffix);
  RC_ASSERT(got.has_value());
  RC_ASSERT(*got == count * unit);
}

TEST(CeilToUnit, RoundsUp) {
  EXPECT_EQ(ceil_to_unit(0, kMicrosPerMilli), 0);
  EXPECT_EQ(ceil_to_unit(1, kMicrosPerMilli), 1);
  EXPECT_EQ(ceil_to_unit(1'000, kMicrosPerMilli), 1);
  EXPECT_EQ(ceil_to_unit(1'001, kMicrosPerMilli), 2);
  EXPECT_EQ(ceil_to_unit(1'999'999, kMicrosPerSecond), 2);
}

}  // namespace
}  // namespace spillway
