// The fault suite's checker (tests/support/history.h) on histories written by hand: it finds an
// over-admission where there is one, never where the timing allows it, and measures recovery.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/history.h"

namespace spillway::testing {
namespace {

using namespace std::chrono_literals;

const HistoryClock::time_point kHistoryStart = HistoryClock::time_point{} + 1000s;

// An operation sent `at` after the start that took `took`.
Operation history_op(std::chrono::milliseconds at, Answer answer, const std::string& key = "k",
                     int instance = 0, std::chrono::milliseconds took = 1ms) {
  return {.instance = instance,
          .key = key,
          .invoked = kHistoryStart + at,
          .completed = kHistoryStart + at + took,
          .answer = answer};
}

// gcra 10/min: burst 10, one more every 6 s.
constexpr AdmissionBound kTenPerMinute{.burst = 10, .limit = 10, .period = 60s};

TEST(HistoryChecker, AdmissionsWithinTheBurstAndTheRefillAreNoOverAdmission) {
  std::vector<Operation> ops;
  for (int i = 0; i < 10; ++i)
    ops.push_back(history_op(std::chrono::milliseconds(i), Answer::kAdmitted));
  ops.push_back(history_op(100ms, Answer::kDenied));
  ops.push_back(history_op(6100ms, Answer::kAdmitted));  // refilled by then
  const HistoryReport report = check_history(ops, kTenPerMinute, kHistoryStart, kHistoryStart);
  EXPECT_EQ(report.operations, 12);
  EXPECT_EQ(report.admitted, 11);
  EXPECT_EQ(report.denied, 1);
  EXPECT_EQ(report.over_admitted, 0) << report.worst;
}

TEST(HistoryChecker, OneAdmissionPastTheBurstIsCountedWithItsKey) {
  std::vector<Operation> ops;
  for (int i = 0; i < 12; ++i)
    ops.push_back(history_op(std::chrono::milliseconds(i), Answer::kAdmitted, "a"));
  for (int i = 0; i < 10; ++i)
    ops.push_back(history_op(std::chrono::milliseconds(i), Answer::kAdmitted, "b"));
  const HistoryReport report = check_history(ops, kTenPerMinute, kHistoryStart, kHistoryStart);
  EXPECT_EQ(report.over_admitted, 2);
  EXPECT_NE(report.worst.find("key a: 12 admitted"), std::string::npos) << report.worst;
}

TEST(HistoryChecker, ExcessesAreFoundInAnyIntervalNotOnlyFromTheFirstAdmission) {
  // 10 at once, then (7 s later, one refilled) 10 more at once: the second group alone spans
  // a few ms, in which at most 10 + 1 from the refill (counted from the first) ... the worst
  // interval is the whole history: 20 in 7 s where 10 + 7/6 are allowed.
  std::vector<Operation> ops;
  for (int i = 0; i < 10; ++i)
    ops.push_back(history_op(std::chrono::milliseconds(i), Answer::kAdmitted));
  for (int i = 0; i < 10; ++i)
    ops.push_back(history_op(7000ms + std::chrono::milliseconds(i), Answer::kAdmitted));
  const HistoryReport report = check_history(ops, kTenPerMinute, kHistoryStart, kHistoryStart);
  EXPECT_EQ(report.over_admitted, 20 - 11);
}

TEST(HistoryChecker, AnAdmissionIsCountedInTheLongestIntervalItMayHaveHappenedIn) {
  // 11 admissions: 10 at once and one sent at the start whose answer came 7 s later: it may
  // have been charged after the refill, so no over-admission is certain.
  std::vector<Operation> ops;
  for (int i = 0; i < 10; ++i)
    ops.push_back(history_op(std::chrono::milliseconds(i), Answer::kAdmitted));
  ops.push_back(history_op(0ms, Answer::kAdmitted, "k", 1, 7000ms));
  EXPECT_EQ(check_history(ops, kTenPerMinute, kHistoryStart, kHistoryStart).over_admitted, 0);
  // The same answer within 1 s: certainly over.
  ops.back().completed = kHistoryStart + 1000ms;
  EXPECT_EQ(check_history(ops, kTenPerMinute, kHistoryStart, kHistoryStart).over_admitted, 1);
}

TEST(HistoryChecker, TheLeaseSlackAllowsWhatMaxAgeAllows) {
  // 1000/s burst 10 with leases of max_age 100 ms: 10 + 100 in an instant.
  const AdmissionBound leases{.burst = 10, .limit = 1000, .period = 1s, .slack = 100ms};
  std::vector<Operation> ops;
  for (int i = 0; i < 110; ++i) ops.push_back(history_op(0ms, Answer::kAdmitted, "k", 0, 0ms));
  EXPECT_EQ(check_history(ops, leases, kHistoryStart, kHistoryStart).over_admitted, 0);
  ops.push_back(history_op(0ms, Answer::kAdmitted, "k", 0, 0ms));
  EXPECT_EQ(check_history(ops, leases, kHistoryStart, kHistoryStart).over_admitted, 1);
}

TEST(HistoryChecker, FailOpenAdmissionsAndErrorsAreCountedApartFromTheBound) {
  std::vector<Operation> ops;
  for (int i = 0; i < 10; ++i)
    ops.push_back(history_op(std::chrono::milliseconds(i), Answer::kAdmitted));
  for (int i = 0; i < 5; ++i) ops.push_back(history_op(20ms, Answer::kFailOpen));
  ops.push_back(history_op(30ms, Answer::kError));
  ops.push_back(history_op(30ms, Answer::kNoAnswer));
  ops.push_back(history_op(40ms, Answer::kDenied));
  const HistoryReport report = check_history(ops, kTenPerMinute, kHistoryStart, kHistoryStart);
  EXPECT_EQ(report.over_admitted, 0);
  EXPECT_EQ(report.fail_open, 5);
  EXPECT_EQ(report.errors, 2);
  EXPECT_EQ(report.no_answer, 1);
  EXPECT_TRUE(report.recovered);
}

TEST(HistoryChecker, RecoveryIsTheLastFailedAnswerAfterTheFaultsEnded) {
  const HistoryClock::time_point faulted = kHistoryStart + 1000ms;
  const HistoryClock::time_point healed = kHistoryStart + 3000ms;
  std::vector<Operation> ops = {
      history_op(500ms, Answer::kError, "k", 0),  // before the fault: not the fault's
      history_op(1500ms, Answer::kError, "k", 0),
      history_op(3100ms, Answer::kError, "k", 0, 400ms),  // answered 3500 ms: 500 ms after healing
      history_op(3600ms, Answer::kDenied, "k", 0),
      history_op(3200ms, Answer::kFailOpen, "k", 1, 50ms),  // 250 ms after
      history_op(3300ms, Answer::kAdmitted, "k", 1),
  };
  HistoryReport report = check_history(ops, kTenPerMinute, faulted, healed);
  EXPECT_EQ(report.recovery, 500ms);
  EXPECT_TRUE(report.recovered);
  // An instance asked after healing that never decided again has not recovered.
  ops.push_back(history_op(4000ms, Answer::kError, "k", 2));
  ops.push_back(history_op(4500ms, Answer::kNoAnswer, "k", 2));
  report = check_history(ops, kTenPerMinute, faulted, healed);
  EXPECT_FALSE(report.recovered);
  EXPECT_EQ(report.recovery, 1501ms);
}

}  // namespace
}  // namespace spillway::testing
