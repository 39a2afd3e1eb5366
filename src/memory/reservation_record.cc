// The actual costs of a settlement of a memory-store reservation (src/memory/reservation_record.h).
// Pure; thread-safe.
#include "src/memory/reservation_record.h"

#include <algorithm>

#include "src/core/reservation_errors.h"

namespace spillway::memory {

Result<void> actual_costs(const Reservation& kept, const Settlement& settlement,
                          std::vector<std::int64_t>& actual) {
  const bool any_metered = std::any_of(kept.keys.begin(), kept.keys.end(),
                                       [](const Reservation::Key& k) { return k.metered; });
  if (settlement.release && std::none_of(kept.keys.begin(), kept.keys.end(),
                                         [](const Reservation::Key& k) { return k.hold; })) {
    return std::unexpected(reservation_not_a_ticket(settlement.id));
  }
  actual.clear();
  for (const Reservation::Key& k : kept.keys) {
    std::int64_t cost = k.estimate;
    if (settlement.cancel) {
      cost = 0;
    } else if (settlement.cost && (k.metered || !any_metered)) {
      cost = *settlement.cost;
    }
    actual.push_back(cost);
  }
  for (const LayerCost& named : settlement.costs) {
    const auto at = std::find_if(kept.keys.begin(), kept.keys.end(),
                                 [&](const Reservation::Key& k) { return k.label == named.label; });
    if (at == kept.keys.end()) {
      std::vector<std::string> labels;
      for (const Reservation::Key& k : kept.keys) labels.push_back(k.label);
      return std::unexpected(reservation_has_no_layer(named.label, labels));
    }
    if (!settlement.cancel) actual[static_cast<std::size_t>(at - kept.keys.begin())] = named.cost;
  }
  for (std::size_t i = 0; i < kept.keys.size(); ++i) {
    if (kept.keys[i].hold) actual[i] = 0;  // the release of a concurrency slot
  }
  return {};
}

}  // namespace spillway::memory
