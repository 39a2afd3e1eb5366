#include "tests/support/history.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace spillway::testing {
namespace {

bool decided(Answer answer) { return answer == Answer::kAdmitted || answer == Answer::kDenied; }

// The largest excess of `admitted` (one key's admissions) over the bound, over every set of them
// that starts with one admission's sending: taken in the order of their answers, the set grows
// one at a time, and its interval is [that sending, the latest answer so far].
std::int64_t worst_excess(std::vector<const Operation*> admitted, const AdmissionBound& bound,
                          std::string& worst) {
  std::sort(admitted.begin(), admitted.end(),
            [](const Operation* a, const Operation* b) { return a->completed < b->completed; });
  std::int64_t most = 0;
  for (const Operation* first : admitted) {
    std::int64_t count = 0;
    for (const Operation* op : admitted) {
      if (op->invoked < first->invoked) continue;
      ++count;
      const auto span = op->completed - first->invoked;
      const auto excess = count - static_cast<std::int64_t>(std::floor(bound.allowed(span) + 1e-9));
      if (excess > most) {
        most = excess;
        worst =
            std::to_string(count) + " admitted within " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(span).count()) +
            " ms where the bound allows " + std::to_string(bound.allowed(span));
      }
    }
  }
  return most;
}

}  // namespace

double AdmissionBound::allowed(std::chrono::nanoseconds span) const {
  const double seconds = std::chrono::duration<double>(span + slack).count();
  const double period_seconds = std::chrono::duration<double>(period).count();
  return static_cast<double>(burst) +
         (period_seconds > 0 ? seconds * static_cast<double>(limit) / period_seconds : 0.0);
}

HistoryReport check_history(const std::vector<Operation>& operations, const AdmissionBound& bound,
                            HistoryClock::time_point faulted, HistoryClock::time_point healed) {
  HistoryReport report;
  std::map<std::string, std::vector<const Operation*>> admitted_by_key;
  std::map<int, bool> decided_after_healing;                   // asked after `healed`
  std::map<int, HistoryClock::time_point> last_failed_answer;  // sent after `faulted`
  for (const Operation& op : operations) {
    ++report.operations;
    switch (op.answer) {
      case Answer::kAdmitted:
        ++report.admitted;
        admitted_by_key[op.key].push_back(&op);
        break;
      case Answer::kDenied:
        ++report.denied;
        break;
      case Answer::kFailOpen:
        ++report.fail_open;
        break;
      case Answer::kNoAnswer:
        ++report.no_answer;
        ++report.errors;
        break;
      case Answer::kError:
        ++report.errors;
        break;
    }
    if (op.invoked > healed) decided_after_healing[op.instance] |= decided(op.answer);
    if (!decided(op.answer) && op.invoked >= faulted) {
      HistoryClock::time_point& at = last_failed_answer[op.instance];
      at = std::max(at, op.completed);
    }
  }
  std::int64_t worst_key = 0;
  for (const auto& [key, admitted] : admitted_by_key) {
    std::string worst;
    const std::int64_t excess = worst_excess(admitted, bound, worst);
    report.over_admitted += excess;
    if (excess > worst_key) {
      worst_key = excess;
      report.worst = "key " + key + ": " + worst;
    }
  }
  for (const auto& [instance, at] : last_failed_answer) {
    if (at > healed) {
      report.recovery =
          std::max(report.recovery, std::chrono::ceil<std::chrono::milliseconds>(at - healed));
    }
  }
  report.recovered = !decided_after_healing.empty();
  for (const auto& [instance, decided_once] : decided_after_healing) {
    report.recovered = report.recovered && decided_once;
  }
  return report;
}

}  // namespace spillway::testing
