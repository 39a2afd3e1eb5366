// A history of rate-limit decisions recorded by the clients of a fault test, and the checker that
// measures it against the bound docs/SPEC.md states for the mode under test (Jepsen's method: a
// real system, a fault schedule, a checker over what the clients saw).
//
// What a client sees of one request is an Operation: which instance it asked, for which key, when
// it sent the request and when the answer came (the client's steady clock), and the answer:
// admitted (decided), denied, admitted by on_error allow (fail-open: the backend failed), an error
// (503 by on_error deny, a 5xx, a closed connection) or no answer before the client gave up.
//
// The bound, per key: the admissions in any interval of length D number at most
// burst + (D + slack)·limit/period. That is the buckets' own bound (token_bucket, gcra) with
// slack 0 (exact on one Redis, a Cluster, and over-limit cache on), and the leases' bound with
// slack = max_age (SPEC §2.3). The checker never over-reports: a set of admissions is counted
// against the shortest interval they surely fall in, from the earliest sending to the latest
// answer of the set (a charge happens somewhere between the two).
//
// Thread safety: History::add from any number of threads; the rest is pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace spillway::testing {

using HistoryClock = std::chrono::steady_clock;

enum class Answer { kAdmitted, kDenied, kFailOpen, kError, kNoAnswer };

struct Operation {
  int instance = 0;
  std::string key;
  HistoryClock::time_point invoked;
  HistoryClock::time_point completed;
  Answer answer = Answer::kError;
};

class History {
 public:
  void add(Operation operation) {
    std::lock_guard lock(mutex_);
    operations_.push_back(std::move(operation));
  }
  std::vector<Operation> operations() const {
    std::lock_guard lock(mutex_);
    return operations_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Operation> operations_;
};

// What the SPEC allows one key (see above). Units: whole requests, and milliseconds.
struct AdmissionBound {
  std::int64_t burst = 0;
  std::int64_t limit = 0;
  std::chrono::milliseconds period{0};
  std::chrono::milliseconds slack{0};
  // The most admissions the bound allows in an interval of `span`.
  double allowed(std::chrono::nanoseconds span) const;
};

struct HistoryReport {
  std::int64_t operations = 0;
  std::int64_t admitted = 0;
  std::int64_t denied = 0;
  std::int64_t fail_open = 0;
  std::int64_t errors = 0;     // kError and kNoAnswer
  std::int64_t no_answer = 0;  // of which the client gave up waiting
  // Admissions beyond the bound: per key, the largest excess over any interval, summed over the
  // keys; 0 when the bound held.
  std::int64_t over_admitted = 0;
  std::string worst;  // the worst key's interval, for failure messages ("" if none exceeded)
  // Recovery after the faults ended (`healed`): per instance, from `healed` to the answer of its
  // last failed request (error, no answer or fail-open) sent after the faults started; the
  // largest over the instances, 0 when none failed after `healed`.
  std::chrono::milliseconds recovery{0};
  // Every instance that was asked after `healed` answered a decision (admitted or denied) to a
  // request sent after it: none needs a restart to recover.
  bool recovered = false;
};

// `faulted` and `healed`: when the fault schedule began and ended (for recovery).
HistoryReport check_history(const std::vector<Operation>& operations, const AdmissionBound& bound,
                            HistoryClock::time_point faulted, HistoryClock::time_point healed);

}  // namespace spillway::testing
