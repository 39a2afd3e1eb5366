// The errors a settlement gets from every store that keeps reservations (usage-based limits,
// docs/SPEC.md §5.3), worded once so that the memory and Redis backends answer alike. Pure.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway {

// kNotFound, field "reservation": no such id, or it expired.
Error reservation_not_found(std::string_view id);
// kConflict, field "reservation": settled or cancelled before.
Error reservation_already_settled(std::string_view id);
// kInvalidArgument, field "ticket": a release of a reservation that holds no concurrency slot.
Error reservation_not_a_ticket(std::string_view id);
// kInvalidArgument, field "costs": `label` names no layer of the reservation, whose layers are
// `labels` (in order).
Error reservation_has_no_layer(std::string_view label, std::span<const std::string> labels);

}  // namespace spillway
