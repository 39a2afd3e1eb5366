// The Redis backends' tenant directory (spillway/tenant_directory.h): the records live in Redis,
// each instance holds a full copy and follows a change log, so a request never waits on Redis for
// its tenant.
//
// Redis keys (one hash slot, "{tenants}", so each script is atomic on a cluster too):
//   <prefix>:{tenants}:records  hash: id (the key's digest) -> record ("v1 ...")
//   <prefix>:{tenants}:log      stream: entry 0-<seq> names the ids change <seq> wrote
//   <prefix>:{tenants}:seq      the sequence number of the last change
// A write (lua/tenant_write.lua) changes the records, bumps the sequence and appends to the log in
// one atomic step, and is in this instance's copy when it returns: the write wakes the follower
// and waits until it has applied that sequence number, so the copy takes every change in the
// order Redis applied them (a write of this instance never lands after a newer one of another).
// Every instance polls (lua/tenant_read.lua, every poll_interval: 100 ms) for the entries after the
// last sequence number it applied, and reads the records they name; so any instance sees a change
// within poll_interval plus a round trip. A reader whose next entry was trimmed from the log (it
// was away for more than log_length changes), or whose last applied entry is gone or is another one
// (each entry carries a nonce: the keys were lost and written again, by FLUSHALL, a restart
// without persistence or a failover to a replica that was behind), loads every record again
// (lua/tenant_scan.lua, HSCAN), as it does at start.
// Counter resets ride the same log (announce_reset: an entry with field 'r' and no id), so a
// reset made through one instance reaches every instance's remembered denials as fast as a
// record change; a full reload counts as a reset heard (one may have been among what it skipped).
// Why polling and not pub/sub: a message published while a subscriber reconnects is lost, and a
// lost invalidation would leave a stale plan in force indefinitely; a sequenced log cannot skip
// a change, and costs each instance ten small reads a second.
//
// While Redis is unreachable the copy keeps serving what it last saw; writes fail
// (kUnavailable / kTimeout). ready() is true once the first full load succeeded; wait_ready()
// returns as soon as it did, or as soon as a first attempt failed (the follower keeps trying).
//
// Thread safety: as TenantDirectory; one background thread follows the log (its own, not a task
// on the runtime: each poll waits on Redis up to its timeout, ARCHITECTURE.md "Time").
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "spillway/redis_store.h"
#include "spillway/tenant_directory.h"

namespace spillway::redis {

class ScriptTarget;
struct Reply;

// Records per write script call at most: the script unpacks two values per record into one
// XADD, and Lua unpacks at most about 8,000.
inline constexpr std::size_t kMaxBatch = 2000;

struct RedisTenantOptions {
  std::chrono::milliseconds poll_interval{100};
  // Per script call: longer than a check's (backend.timeout), since a call may carry a thousand
  // records.
  std::chrono::milliseconds timeout{5000};
  std::size_t read_entries = 16;    // log entries per read (each names up to `batch` ids)
  std::size_t log_length = 100000;  // log entries kept (approximately: MAXLEN ~)
  std::size_t batch = 1000;   // records per write script call (bulk import); at most kMaxBatch
  std::size_t in_flight = 4;  // write calls in flight at once (bulk import)
  // Where the follower says that it lost or regained Redis, or reloaded every record: one line
  // per change of state, never per poll. Default: nothing.
  std::function<void(const std::string&)> log;
};

class RedisTenantDirectory final : public TenantDirectory {
 public:
  // `store` gives the URL, TLS, timeouts, key prefix and key_hash (the same as the store's, so a
  // record and the caller's counters are named alike). Connects and follows in the background.
  static Result<std::unique_ptr<RedisTenantDirectory>> open(RedisStoreOptions store,
                                                            RedisTenantOptions options = {});
  ~RedisTenantDirectory() override;

  bool ready() const override { return loaded_.load(); }
  bool applies_own_writes() const override { return true; }
  void append_metrics(std::string& out) const override;
  bool wait_ready(std::chrono::milliseconds timeout) const override;
  // A log entry that says a counter reset happened (no key, no record): every instance's
  // follower runs its on_reset listener within poll_interval plus a round trip.
  Result<void> announce_reset() override;
  // The sequence number of the last change this copy applied.
  std::int64_t applied_seq() const { return seq_.load(); }

 private:
  RedisTenantDirectory(KeyDigest digest, RedisStoreOptions store, RedisTenantOptions options,
                       std::unique_ptr<ScriptTarget> target);
  Result<std::vector<std::optional<TenantRecord>>> write(std::span<const Change> changes,
                                                         bool want_before) override;
  Result<Reply> run(int which, std::vector<std::string> argv);
  Result<void> load_all();
  Result<void> catch_up();
  void follow();
  void say(const std::string& line);

  RedisStoreOptions store_;
  RedisTenantOptions options_;
  std::unique_ptr<ScriptTarget> target_;
  std::vector<std::string> keys_;  // records, log, seq
  std::uint16_t slot_ = 0;
  std::atomic<std::int64_t> seq_{0};
  std::string nonce_;  // of the log entry seq_ names (the follower's thread only)
  std::atomic<bool> loaded_{false};
  std::atomic<std::uint64_t> resyncs_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> resets_{0};  // reset entries read from the log
  std::atomic<std::uint64_t> reads_{0};   // read and scan script calls sent
  bool failing_ = false;                  // the follower's thread only
  mutable std::mutex stop_mutex_;
  mutable std::condition_variable stop_signal_;
  bool stopping_ = false;
  bool poked_ = false;              // a write asks the follower to poll now
  bool first_load_failed_ = false;  // a load or read failed (ends wait_ready's wait)
  std::thread follower_;
};

}  // namespace spillway::redis
