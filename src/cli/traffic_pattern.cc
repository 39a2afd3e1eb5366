#include "src/cli/traffic_pattern.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numbers>
#include <random>

namespace spillway::cli {
namespace {

constexpr std::array<std::string_view, 6> kNames = {"steady",  "burst",  "ramp",
                                                    "diurnal", "attack", "many-tenants"};

// A uniform double in [0, 1) from the top 53 bits of the generator.
double uniform(std::mt19937_64& random) { return static_cast<double>(random() >> 11) * 0x1.0p-53; }

// The gap to the next arrival of a Poisson process of `rate` per second, in seconds.
double exponential_gap(std::mt19937_64& random, double rate) {
  return -std::log1p(-uniform(random)) / rate;
}

// Arrivals at rate(t) per second (t in seconds) by thinning a process at `peak` ≥ rate(t);
// each arrival gets key(random) as its key.
void arrivals(std::mt19937_64& random, double seconds, double peak,
              const std::function<double(double)>& rate,
              const std::function<std::string(std::mt19937_64&)>& key,
              std::vector<TraceLine>& out) {
  if (peak <= 0) return;
  for (double t = exponential_gap(random, peak); t < seconds; t += exponential_gap(random, peak)) {
    if (uniform(random) * peak >= rate(t)) continue;
    out.push_back({.at = static_cast<Micros>(t * 1e6), .key = key(random), .cost = 1});
  }
}

}  // namespace

std::span<const std::string_view> pattern_names() { return kNames; }

double default_rate(const PatternOptions& o) {
  const double per_key = o.name == "attack" ? 0.5 : 2.0;
  return per_key * o.limit_per_second * static_cast<double>(o.keys);
}

Result<std::vector<TraceLine>> generate_pattern(const PatternOptions& o) {
  if (std::find(kNames.begin(), kNames.end(), o.name) == kNames.end()) {
    std::string names;
    for (std::string_view n : kNames) names.append(names.empty() ? "" : ", ").append(n);
    return invalid_argument("--pattern: unknown pattern \"" + o.name + "\" (one of " + names + ")");
  }
  const double seconds = static_cast<double>(o.duration) / 1e6;
  const double attacker_rate = o.name == "attack" ? 20 * o.limit_per_second : 0;
  // The expected size, with room for chance: refuse what would be too big before making it.
  const double expected = (o.rate + attacker_rate) * seconds;
  if (expected > static_cast<double>(kMaxGeneratedRequests)) {
    return invalid_argument("--rate × --duration (and an attacker's rate) make about " +
                            std::to_string(static_cast<long long>(expected)) +
                            " requests; at most " + std::to_string(kMaxGeneratedRequests));
  }
  std::mt19937_64 random(o.seed);
  const auto uniform_key = [keys = o.keys](std::mt19937_64& r) {
    return "key-" + std::to_string(static_cast<int>(uniform(r) * keys));
  };
  std::vector<TraceLine> trace;
  trace.reserve(static_cast<std::size_t>(expected * 1.1) + 16);
  const double rate = o.rate;
  if (o.name == "steady" || o.name == "attack") {
    arrivals(
        random, seconds, rate, [&](double) { return rate; }, uniform_key, trace);
    if (o.name == "attack") {
      arrivals(
          random, seconds, attacker_rate, [&](double) { return attacker_rate; },
          [](std::mt19937_64&) { return std::string("attacker"); }, trace);
    }
  } else if (o.name == "burst") {
    const auto shape = [&](double t) { return std::fmod(t, 10.0) < 1.0 ? 5 * rate : rate / 2; };
    arrivals(random, seconds, 5 * rate, shape, uniform_key, trace);
  } else if (o.name == "ramp") {
    arrivals(
        random, seconds, 2 * rate, [&](double t) { return 2 * rate * t / seconds; }, uniform_key,
        trace);
  } else if (o.name == "diurnal") {
    const auto shape = [&](double t) {
      return rate * (1 - 0.8 * std::cos(2 * std::numbers::pi * t / seconds));
    };
    arrivals(random, seconds, 1.8 * rate, shape, uniform_key, trace);
  } else {  // many-tenants
    std::vector<double> cumulative(static_cast<std::size_t>(o.keys));
    double total = 0;
    for (int i = 0; i < o.keys; ++i) {
      total += 1 / std::pow(i + 1, 1.1);
      cumulative[static_cast<std::size_t>(i)] = total;
    }
    const auto zipf_key = [&](std::mt19937_64& r) {
      const double u = uniform(r) * total;
      const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
      const auto index = std::min<std::ptrdiff_t>(it - cumulative.begin(), o.keys - 1);
      return "key-" + std::to_string(index);
    };
    arrivals(
        random, seconds, rate, [&](double) { return rate; }, zipf_key, trace);
  }
  if (trace.size() > kMaxGeneratedRequests) {
    return invalid_argument("--rate × --duration make " + std::to_string(trace.size()) +
                            " requests; at most " + std::to_string(kMaxGeneratedRequests));
  }
  // The attacker's arrivals were made after the others': one timeline, in time order (stable, so
  // equal times keep a fixed order).
  std::stable_sort(trace.begin(), trace.end(),
                   [](const TraceLine& a, const TraceLine& b) { return a.at < b.at; });
  return trace;
}

}  // namespace spillway::cli
