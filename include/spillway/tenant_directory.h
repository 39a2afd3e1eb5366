// Tenants: what the operator decided for one caller at runtime (docs/SPEC.md §5.2). A by_plan
// layer with `source: store` looks its attribute's value (the API key) up here before the
// config file's `keys:` map: the record can give the caller a plan, its own rate for a layer (a
// custom contract), or block it (every request denied by that layer, nothing charged).
//
// A TenantDirectory keeps a full copy of the records in this process, so the lookup on the
// request path is a hash-table read that never waits on I/O; writes go to the backend first (an
// fsync'd file for the in-process store, Redis for the Redis backends) and are in the copy when
// they return. Records are stored under the key's digest (spillway/key_hash.h), never the key in
// clear unless KeyHash::kNone says so. Other instances sharing the backend see a write within a
// second (the Redis directory follows a change log; src/redis/redis_tenants.h).
//
// Thread safety: every member may be called from any thread at once. find() takes a shared lock
// of one of 64 shards and copies a shared_ptr; writes are serialised per directory.
// Ownership: a TenantDirectory owns its copy of the records (the shards, in an Impl made once
// with it, src/core/tenant_directory.cc); find() hands out shared_ptrs to records that stay valid
// after a later write replaces them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spillway/duration.h"
#include "spillway/error.h"
#include "spillway/key_hash.h"

namespace spillway {

// Tenant keys (API keys) longer than this are refused: the bound of every key and record.
inline constexpr std::size_t kMaxTenantKeyBytes = 256;

// A custom rate for one layer: `limit` per `period` (µs); the layer's algorithm applies it.
struct TenantRate {
  std::int64_t limit = 0;
  Micros period = 0;
  friend bool operator==(const TenantRate&, const TenantRate&) = default;
};

struct TenantRecord {
  std::string plan;                                       // empty: none (the file or default)
  std::map<std::string, TenantRate, std::less<>> limits;  // layer name -> its rate for this key
  bool blocked = false;  // every request with this key is denied, nothing charged
  friend bool operator==(const TenantRecord&, const TenantRecord&) = default;
};

// What a record must be (kInvalidArgument naming the field "plan" or "limits.<layer>"): plan and
// layer names are letters, digits, '_' or '-' (at most 64); rates positive, periods ≥ 1 ms and
// ≤ 1 year; at most 32 layers; something set (an empty record is a deletion, not a record).
Result<void> check_tenant_record(const TenantRecord& record);

// The stored form, one line without spaces inside a field: "v1 <0|1 blocked> <plan or .>
// [<layer>=<limit>/<period µs>]..."; decode refuses anything else (and what check refuses).
std::string encode_tenant_record(const TenantRecord& record);
Result<TenantRecord> decode_tenant_record(std::string_view text);

// "pro", "pro, gateway 1200/1m", "blocked": one short phrase for logs and the CLI.
std::string describe_tenant_record(const TenantRecord& record);

// A stored record and the id it is stored under: the key's digest, or the key (KeyHash::kNone).
struct TenantEntry {
  std::string id;
  TenantRecord record;
};

struct TenantPage {
  std::vector<TenantEntry> entries;
  std::string next_cursor;  // empty: this was the last page
};

class TenantDirectory {
 public:
  virtual ~TenantDirectory();
  TenantDirectory(const TenantDirectory&) = delete;
  TenantDirectory& operator=(const TenantDirectory&) = delete;

  // The id a key is stored under (its digest, or the key with KeyHash::kNone).
  std::string id_of(std::string_view key) const;
  KeyHash key_hash() const;

  // The record of `key` in this process's copy; nullptr when there is none. No I/O; with no
  // record at all, not even the digest is computed.
  std::shared_ptr<const TenantRecord> find(std::string_view key) const;
  // The same by id (the admin API's listing hands ids out).
  std::shared_ptr<const TenantRecord> find_id(std::string_view id) const;

  // Writes a record (durable when this returns: on disk or in Redis) and returns the record it
  // replaced. Errors: kInvalidArgument (the key is empty or over kMaxTenantKeyBytes, or the
  // record fails check_tenant_record; nothing written), kUnavailable / kTimeout (the backend).
  Result<std::optional<TenantRecord>> put(std::string_view key, const TenantRecord& record);
  // Deletes a record; returns the one deleted (nullopt: there was none, nothing written).
  Result<std::optional<TenantRecord>> erase(std::string_view key);
  // Many records in one write per batch (bulk import): each record as put() checks it; the
  // first bad one refuses the whole call before anything is written. Returns how many.
  Result<std::size_t> put_many(std::span<const std::pair<std::string, TenantRecord>> records);

  // Records in id order, from after `cursor` (an id; empty: the first), at most `limit`, only
  // those with plan `plan` when it is not empty. From this process's copy.
  TenantPage list(std::string_view plan, std::string_view cursor, std::size_t limit) const;
  // How many records the copy holds.
  std::size_t size() const;

  // Whether the copy has been loaded from the backend and follows it.
  virtual bool ready() const { return true; }
  // Waits up to `timeout` for ready() (the first load from a network backend), or less when the
  // first attempt to load failed (the backend refused or did not answer); returns ready().
  virtual bool wait_ready(std::chrono::milliseconds timeout) const {
    (void)timeout;
    return ready();
  }
  // Prometheus lines: spillway_tenants and the backend's own.
  virtual void append_metrics(std::string& out) const;

  // Counter resets (the admin API's DELETE …/counters/…) on the same channel as the records: a
  // reset made through one instance tells every instance that follows this backend to forget
  // the denials it remembers (over-limit cache, lease denials), as fast as a record change
  // reaches it. announce_reset() writes that a reset happened (no key: nothing secret in the
  // backend) and does not wait for the others; the memory backend's directory has no other
  // instance and writes nothing. Errors: the backend's (kUnavailable / kTimeout).
  virtual Result<void> announce_reset() { return {}; }
  // What runs, on the follower's thread, when this copy learns of a reset (its own included) or
  // reloads every record (it may have missed one). Replacing it is safe from any thread; once
  // on_reset returned, the previous listener is not running and never runs again. It must not
  // call on_reset itself. Empty: nothing.
  void on_reset(std::function<void()> listener);

 protected:
  explicit TenantDirectory(KeyDigest digest);
  const KeyDigest& digest() const;

  // The backend's write: `changes` (id -> record, nullopt deletes) made durable, in order. On
  // success the base class applies them to the copy. Called under the write mutex: one at a time.
  // Returns, per change, the record stored before (the backend's view: another instance may have
  // written it since this copy's update).
  using Change = std::pair<std::string, std::optional<TenantRecord>>;
  virtual Result<std::vector<std::optional<TenantRecord>>> write(std::span<const Change> changes,
                                                                 bool want_before) = 0;

  // True for a backend whose write() puts its own changes in the copy (in the order the backend
  // applied them to everyone's): the base class then does not apply them after write().
  virtual bool applies_own_writes() const { return false; }

  // The copy's updates, for a backend that follows others' writes or loads at start.
  void apply(const std::string& id, std::optional<TenantRecord> record);
  void replace_all(std::vector<TenantEntry> entries);
  // Runs the on_reset listener (the follower's thread).
  void heard_reset();

 private:
  // The key digest, the copy's 64 shards (each under its own shared_mutex), the record count,
  // the write mutex and the reset listener: src/core/tenant_directory.cc.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spillway
