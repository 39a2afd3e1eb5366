// A value in [lo, hi) drawn from the whole range whatever rapidcheck's current size (inRange alone
// shrinks its range with the size, which would make most early cases trivial). Still shrinks.
// For use inside a rapidcheck property.
#pragma once

#include <rapidcheck.h>

namespace spillway::testing {

template <typename T>
T pick_whole_range(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

}  // namespace spillway::testing
