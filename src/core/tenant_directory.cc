// Tenant records (spillway/tenant_directory.h): their checks and stored form, and the
// TenantDirectory's copy of them: the Impl below holds the 64 shards, the count, the write mutex
// and the reset listener; the header keeps only a pointer to it.
// Thread safety: a shard's map only under its shared_mutex (shared to read, unique to change);
// writes one at a time under write_mutex; the listener only under reset_mutex.
#include "spillway/tenant_directory.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "src/core/metrics_text.h"
#include "src/core/text.h"

namespace spillway {
namespace {

constexpr std::size_t kMaxNameBytes = 64;
constexpr std::size_t kMaxLayers = 32;
constexpr Micros kMaxPeriod = 366 * kMicrosPerDay;

bool is_record_name(std::string_view text) {
  return !text.empty() && text.size() <= kMaxNameBytes &&
         std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
         });
}

std::unexpected<Error> bad_field(std::string message, std::string field) {
  return std::unexpected(Error{Errc::kInvalidArgument, std::move(message), std::move(field)});
}

bool parse_int(std::string_view text, std::int64_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

Result<void> check_key(std::string_view key) {
  if (key.empty()) return bad_field("the tenant key is empty", "key");
  if (key.size() > kMaxTenantKeyBytes) {
    return bad_field("the tenant key is " + std::to_string(key.size()) + " bytes, over the " +
                         std::to_string(kMaxTenantKeyBytes) + "-byte bound",
                     "key");
  }
  return {};
}

std::vector<std::string_view> split_spaces(std::string_view text) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    parts.push_back(text.substr(0, space));
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
  return parts;
}

}  // namespace

Result<void> check_tenant_record(const TenantRecord& record) {
  if (!record.plan.empty() && !is_record_name(record.plan)) {
    return bad_field("plan " + quote_for_error(record.plan, 80) +
                         " must be letters, digits, '_' or '-' (at most 64)",
                     "plan");
  }
  if (record.limits.size() > kMaxLayers) {
    return bad_field("at most " + std::to_string(kMaxLayers) + " layers may have their own rate",
                     "limits");
  }
  for (const auto& [layer, rate] : record.limits) {
    const std::string field = "limits." + layer;
    if (!is_record_name(layer)) {
      return bad_field("layer name " + quote_for_error(layer, 80) +
                           " must be letters, digits, '_' or '-' (at most 64)",
                       "limits");
    }
    if (rate.limit < 1) return bad_field(field + ": the limit must be at least 1", field);
    if (rate.period < kMicrosPerMilli || rate.period > kMaxPeriod) {
      return bad_field(field + ": the period must be between 1ms and 366d", field);
    }
  }
  if (record.plan.empty() && record.limits.empty() && !record.blocked) {
    return bad_field("a tenant record needs a plan, limits or blocked (to remove one, delete it)",
                     "plan");
  }
  return {};
}

std::string encode_tenant_record(const TenantRecord& record) {
  std::string out = "v1 ";
  out += record.blocked ? '1' : '0';
  out += ' ';
  out += record.plan.empty() ? std::string(".") : record.plan;
  for (const auto& [layer, rate] : record.limits) {
    out += ' ';
    out += layer;
    out += '=';
    out += std::to_string(rate.limit);
    out += '/';
    out += std::to_string(rate.period);
  }
  return out;
}

Result<TenantRecord> decode_tenant_record(std::string_view text) {
  const std::vector<std::string_view> parts = split_spaces(text);
  if (parts.size() < 3 || parts[0] != "v1" || (parts[1] != "0" && parts[1] != "1")) {
    return invalid_argument("tenant record " + quote_for_error(text, 80) +
                            " is not in the form \"v1 <0|1> <plan|.> [layer=limit/period]...\"");
  }
  TenantRecord record;
  record.blocked = parts[1] == "1";
  if (parts[2] != ".") record.plan = std::string(parts[2]);
  for (std::size_t i = 3; i < parts.size(); ++i) {
    const std::size_t equals = parts[i].find('=');
    const std::size_t slash = parts[i].find('/');
    TenantRate rate;
    if (equals == std::string_view::npos || slash == std::string_view::npos || slash < equals ||
        !parse_int(parts[i].substr(equals + 1, slash - equals - 1), rate.limit) ||
        !parse_int(parts[i].substr(slash + 1), rate.period)) {
      return invalid_argument("tenant record: " + quote_for_error(parts[i], 80) +
                              " is not layer=limit/period_us");
    }
    if (!record.limits.emplace(std::string(parts[i].substr(0, equals)), rate).second) {
      return invalid_argument("tenant record: layer " +
                              quote_for_error(parts[i].substr(0, equals), 80) + " twice");
    }
  }
  if (auto checked = check_tenant_record(record); !checked) {
    return invalid_argument("tenant record: " + checked.error().message);
  }
  return record;
}

std::string describe_tenant_record(const TenantRecord& record) {
  std::string out;
  if (record.blocked) out = "blocked";
  if (!record.plan.empty()) out += (out.empty() ? "plan " : ", plan ") + record.plan;
  for (const auto& [layer, rate] : record.limits) {
    out += (out.empty() ? "" : ", ") + layer + " " + std::to_string(rate.limit) + "/" +
           format_duration(rate.period);
  }
  return out;
}

struct TenantDirectory::Impl {
  static constexpr std::size_t kShards = 64;
  // Lookups by string_view: no copy of the id on the request path.
  struct IdHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
  };
  using Map =
      std::unordered_map<std::string, std::shared_ptr<const TenantRecord>, IdHash, std::equal_to<>>;
  struct Shard {
    std::shared_mutex mutex;
    Map records;
  };

  explicit Impl(KeyDigest d) : digest(std::move(d)) {}
  Shard& shard_of(std::string_view id) {
    return shards[std::hash<std::string_view>{}(id) % kShards];
  }

  const KeyDigest digest;
  std::mutex write_mutex;  // a write and its update of the copy, one at a time
  std::mutex reset_mutex;  // guards reset_listener
  std::function<void()> reset_listener;
  Shard shards[kShards];
  std::atomic<std::size_t> size{0};
};

TenantDirectory::TenantDirectory(KeyDigest digest)
    : impl_(std::make_unique<Impl>(std::move(digest))) {}

TenantDirectory::~TenantDirectory() = default;

std::string TenantDirectory::id_of(std::string_view key) const { return impl_->digest.of(key); }

KeyHash TenantDirectory::key_hash() const { return impl_->digest.hash(); }

const KeyDigest& TenantDirectory::digest() const { return impl_->digest; }

std::size_t TenantDirectory::size() const { return impl_->size.load(std::memory_order_relaxed); }

std::shared_ptr<const TenantRecord> TenantDirectory::find(std::string_view key) const {
  if (size() == 0 || key.empty() || key.size() > kMaxTenantKeyBytes) return nullptr;
  thread_local std::string id;  // its capacity is kept: no allocation per request
  id.clear();
  impl_->digest.append(id, key);
  return find_id(id);
}

std::shared_ptr<const TenantRecord> TenantDirectory::find_id(std::string_view id) const {
  Impl::Shard& shard = impl_->shard_of(id);
  std::shared_lock lock(shard.mutex);
  auto it = shard.records.find(id);
  return it == shard.records.end() ? nullptr : it->second;
}

Result<std::optional<TenantRecord>> TenantDirectory::put(std::string_view key,
                                                         const TenantRecord& record) {
  if (auto checked = check_key(key); !checked) return std::unexpected(checked.error());
  if (auto checked = check_tenant_record(record); !checked) {
    return std::unexpected(checked.error());
  }
  const Change change{id_of(key), record};
  std::lock_guard lock(impl_->write_mutex);
  auto before = write(std::span(&change, 1), true);
  if (!before) return std::unexpected(before.error());
  if (!applies_own_writes()) apply(change.first, record);
  return std::move(before->front());
}

Result<std::optional<TenantRecord>> TenantDirectory::erase(std::string_view key) {
  if (auto checked = check_key(key); !checked) return std::unexpected(checked.error());
  const Change change{id_of(key), std::nullopt};
  std::lock_guard lock(impl_->write_mutex);
  // Nothing to delete in this copy: nothing is written (a 404, not an empty change).
  if (find_id(change.first) == nullptr) return std::optional<TenantRecord>();
  auto before = write(std::span(&change, 1), true);
  if (!before) return std::unexpected(before.error());
  if (!applies_own_writes()) apply(change.first, std::nullopt);
  return std::move(before->front());
}

Result<std::size_t> TenantDirectory::put_many(
    std::span<const std::pair<std::string, TenantRecord>> records) {
  std::vector<Change> changes;
  changes.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& [key, record] = records[i];
    auto checked = check_key(key);
    if (checked) checked = check_tenant_record(record);
    if (!checked) {
      Error error = checked.error();
      error.message = "record " + std::to_string(i + 1) + ": " + error.message;
      return std::unexpected(error);
    }
    changes.emplace_back(id_of(key), record);
  }
  if (changes.empty()) return 0;
  std::lock_guard lock(impl_->write_mutex);
  auto written = write(changes, false);
  if (!written) return std::unexpected(written.error());
  if (!applies_own_writes()) {
    for (Change& change : changes) apply(change.first, std::move(change.second));
  }
  return changes.size();
}

TenantPage TenantDirectory::list(std::string_view plan, std::string_view cursor,
                                 std::size_t limit) const {
  TenantPage page;
  if (limit == 0) return page;
  // Ids sorted across shards: each shard's `limit` + 1 smallest ids after the cursor (one more
  // than a page, so that a page knows whether another follows), merged; records are copied for
  // the page only. A page walks every shard once; fine for an operator's listing, never on the
  // request path.
  using Candidate = std::pair<std::string_view, std::shared_ptr<const TenantRecord>>;
  const auto by_id = [](const Candidate& a, const Candidate& b) { return a.first < b.first; };
  std::vector<Candidate> candidates;
  // Every shard stays read-locked until the page is copied: the ids are views into them.
  std::vector<std::shared_lock<std::shared_mutex>> locks;
  locks.reserve(Impl::kShards);
  for (Impl::Shard& shard : impl_->shards) {
    locks.emplace_back(shard.mutex);
    std::vector<Candidate> mine;
    for (const auto& [id, record] : shard.records) {
      if (!cursor.empty() && std::string_view(id) <= cursor) continue;
      if (!plan.empty() && record->plan != plan) continue;
      mine.emplace_back(id, record);
    }
    if (mine.size() > limit + 1) {
      std::nth_element(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(limit + 1),
                       mine.end(), by_id);
      mine.resize(limit + 1);
    }
    std::move(mine.begin(), mine.end(), std::back_inserter(candidates));
  }
  std::sort(candidates.begin(), candidates.end(), by_id);
  const bool more = candidates.size() > limit;
  if (more) candidates.resize(limit);
  for (const Candidate& candidate : candidates) {
    page.entries.push_back({std::string(candidate.first), *candidate.second});
  }
  if (more) page.next_cursor = page.entries.back().id;
  return page;
}

void TenantDirectory::append_metrics(std::string& out) const {
  append_metric_family(out, "spillway_tenants", MetricType::kGauge,
                       "Tenant records in this process's copy.");
  append_metric_sample(out, "spillway_tenants", {}, std::uint64_t{size()});
}

void TenantDirectory::apply(const std::string& id, std::optional<TenantRecord> record) {
  Impl::Shard& shard = impl_->shard_of(id);
  std::unique_lock lock(shard.mutex);
  if (!record) {
    if (shard.records.erase(id) > 0) impl_->size.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  auto [it, added] =
      shard.records.insert_or_assign(id, std::make_shared<const TenantRecord>(std::move(*record)));
  (void)it;
  if (added) impl_->size.fetch_add(1, std::memory_order_relaxed);
}

void TenantDirectory::replace_all(std::vector<TenantEntry> entries) {
  std::vector<Impl::Map> fresh(Impl::kShards);
  for (TenantEntry& entry : entries) {
    auto& map = fresh[std::hash<std::string_view>{}(entry.id) % Impl::kShards];
    map.insert_or_assign(std::move(entry.id),
                         std::make_shared<const TenantRecord>(std::move(entry.record)));
  }
  for (std::size_t i = 0; i < Impl::kShards; ++i) {
    Impl::Shard& shard = impl_->shards[i];
    std::unique_lock lock(shard.mutex);
    // The count moves by this shard's difference, under its lock: apply() on another shard
    // meanwhile keeps its own +1/-1.
    const std::size_t old_size = shard.records.size();
    shard.records.swap(fresh[i]);
    const std::size_t new_size = shard.records.size();
    if (new_size >= old_size) {
      impl_->size.fetch_add(new_size - old_size, std::memory_order_relaxed);
    } else {
      impl_->size.fetch_sub(old_size - new_size, std::memory_order_relaxed);
    }
  }
}

}  // namespace spillway

namespace spillway {

void TenantDirectory::on_reset(std::function<void()> listener) {
  std::lock_guard lock(impl_->reset_mutex);
  impl_->reset_listener = std::move(listener);
}

void TenantDirectory::heard_reset() {
  // Under the lock: once on_reset(nullptr) returned, the old listener is not running and will
  // not run (its owner may go away).
  std::lock_guard lock(impl_->reset_mutex);
  if (impl_->reset_listener) impl_->reset_listener();
}

}  // namespace spillway
