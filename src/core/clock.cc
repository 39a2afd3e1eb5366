#include "spillway/clock.h"

#include <chrono>

namespace spillway {

Micros SystemClock::now() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

Micros SteadyClock::now() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace spillway
