// Counters per (domain, stat path), for the RLS counters (rls_stats.h) and the RLQS ones
// (quota_engine.h's QuotaStats): N counters of type Value per series, at most kMaxSeries series;
// a path first seen after that counts under "_other", so that values from callers (rules with
// detailed_metric, RLQS buckets) cannot grow the exposition without bound.
//
// Thread safety: every method from any thread (one mutex).
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace spillway::rls {

template <typename Value, std::size_t N>
class SeriesByPath {
 public:
  static constexpr std::size_t kMaxSeries = 10000;
  using Counters = std::array<Value, N>;

  SeriesByPath() = default;
  SeriesByPath(const SeriesByPath&) = delete;
  SeriesByPath& operator=(const SeriesByPath&) = delete;
  // Takes the lock once, so that an update made on another thread (a store's callback, which
  // counts before it answers) is ordered before the series go. The caller waited for that answer
  // through gRPC, whose own synchronisation ThreadSanitizer cannot see (Debian's library is not
  // instrumented): without this, a shutdown right after a call is reported as a race.
  ~SeriesByPath() { std::lock_guard lock(mutex_); }

  // Runs change(counters) on the series of (domain, path), zero the first time, under the lock.
  template <typename Change>
  void update(std::string_view domain, std::string_view path, Change change) {
    std::string id = id_of(domain, path);
    std::lock_guard lock(mutex_);
    auto found = series_.find(id);
    if (found == series_.end()) {
      if (series_.size() >= kMaxSeries) id = id_of(domain, "_other");
      found = series_.try_emplace(std::move(id)).first;
    }
    change(found->second);
  }

  Value get(std::string_view domain, std::string_view path, std::size_t counter) const {
    const std::string id = id_of(domain, path);
    std::lock_guard lock(mutex_);
    auto found = series_.find(id);
    return found == series_.end() ? Value{} : found->second[counter];
  }

  // Runs read(domain, path, counters) for every series, in (domain, path) order, under the lock.
  template <typename Read>
  void for_each(Read read) const {
    std::lock_guard lock(mutex_);
    for (const auto& [id, counters] : series_) {
      const std::size_t split = id.find('\0');
      read(std::string_view(id).substr(0, split), std::string_view(id).substr(split + 1), counters);
    }
  }

  bool empty() const {
    std::lock_guard lock(mutex_);
    return series_.empty();
  }

 private:
  static std::string id_of(std::string_view domain, std::string_view path) {
    std::string id(domain);
    id += '\0';
    id += path;
    return id;
  }

  mutable std::mutex mutex_;
  std::map<std::string, Counters, std::less<>> series_;  // domain '\0' path
};

}  // namespace spillway::rls
