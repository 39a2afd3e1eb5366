#include "src/redis/redis_tenants.h"

#include <algorithm>

#include "src/core/metrics_text.h"
#include "src/core/wait_for_answer.h"
#include "src/redis/key_slot.h"
#include "src/redis/reply.h"
#include "src/redis/script_target.h"
#include "src/redis/scripts.h"

namespace spillway::redis {
namespace {

enum Which { kWrite, kRead, kScan };

Script script_of(int which) {
  switch (which) {
    case kWrite:
      return {tenant_write_script_source(), &tenant_write_script_sha(), true};
    case kRead:
      return {tenant_read_script_source(), &tenant_read_script_sha(), false};
    default:
      return {tenant_scan_script_source(), &tenant_scan_script_sha(), false};
  }
}

std::unexpected<Error> bad_reply(const std::string& what) {
  return std::unexpected(Error{Errc::kUnavailable, "tenant records: unexpected reply " + what});
}

bool is_int(const Reply& reply) { return reply.type == Reply::Type::kInteger; }

}  // namespace

Result<std::unique_ptr<RedisTenantDirectory>> RedisTenantDirectory::open(
    RedisStoreOptions store, RedisTenantOptions options) {
  if (auto checked = RedisStore::check_options(store); !checked) {
    return std::unexpected(checked.error());
  }
  auto digest = KeyDigest::make(store.key_hash);
  if (!digest) return std::unexpected(digest.error());
  RedisStoreOptions target_options = store;
  target_options.pool_size = 1;
  target_options.timeout = options.timeout;
  auto target = open_script_target(std::move(target_options));
  if (!target) return std::unexpected(target.error());
  return std::unique_ptr<RedisTenantDirectory>(new RedisTenantDirectory(
      std::move(*digest), std::move(store), std::move(options), std::move(*target)));
}

RedisTenantDirectory::RedisTenantDirectory(KeyDigest digest, RedisStoreOptions store,
                                           RedisTenantOptions options,
                                           std::unique_ptr<ScriptTarget> target)
    : TenantDirectory(std::move(digest)),
      store_(std::move(store)),
      options_(std::move(options)),
      target_(std::move(target)) {
  const std::string base = store_.key_prefix + ":{tenants}:";
  keys_ = {base + "records", base + "log", base + "seq"};
  slot_ = target_->one_node() ? 0 : key_slot(keys_[0]);
  follower_ = std::thread([this] { follow(); });
}

RedisTenantDirectory::~RedisTenantDirectory() {
  {
    std::lock_guard lock(stop_mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  follower_.join();
  target_.reset();
}

void RedisTenantDirectory::say(const std::string& line) {
  if (options_.log) options_.log(line);
}

bool RedisTenantDirectory::wait_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(stop_mutex_);
  // A first load that failed (an error, or its timeout) ends the wait: a backend that refuses the
  // records (NOPERM) or does not answer will not hand them over before the caller's deadline.
  return stop_signal_.wait_for(lock, timeout, [this] {
    return loaded_.load() || stopping_ || first_load_failed_;
  }) && loaded_.load();
}

Result<Reply> RedisTenantDirectory::run(int which, std::vector<std::string> argv) {
  auto args = std::make_shared<std::vector<std::string>>();
  args->reserve(5 + argv.size());
  *args = {"", "", "3", keys_[0], keys_[1], keys_[2]};
  for (std::string& value : argv) args->push_back(std::move(value));
  const Script script = script_of(which);
  if (which != kWrite) reads_.fetch_add(1);
  const auto deadline = deadline_in(options_.timeout);
  Result<Reply> reply = wait_for_answer<Result<Reply>>(
      [&](auto answer) { target_->run(slot_, script, args, deadline, std::move(answer)); });
  if (reply && reply->is_error()) {
    return std::unexpected(Error{Errc::kUnavailable, "tenant records: " + reply->text});
  }
  return reply;
}

Result<std::vector<std::optional<TenantRecord>>> RedisTenantDirectory::write(
    std::span<const Change> changes, bool want_before) {
  std::vector<std::optional<TenantRecord>> before;
  before.reserve(changes.size());
  const std::size_t batch = std::clamp<std::size_t>(options_.batch, 1, kMaxBatch);
  // Batches go out up to in_flight at a time: a bulk import is bound by round trips otherwise.
  struct Pending {
    std::mutex mutex;
    std::condition_variable done;
    std::size_t running = 0;
    std::optional<Error> error;
    std::vector<std::pair<std::size_t, Reply>> replies;  // batch start -> reply
  };
  auto pending = std::make_shared<Pending>();
  const Script script = script_of(kWrite);
  for (std::size_t start = 0; start < changes.size(); start += batch) {
    const std::size_t end = std::min(changes.size(), start + batch);
    auto args = std::make_shared<std::vector<std::string>>();
    args->reserve(8 + 2 * (end - start));
    *args = {"",
             "",
             "3",
             keys_[0],
             keys_[1],
             keys_[2],
             std::to_string(options_.log_length),
             want_before ? "1" : "0"};
    for (std::size_t i = start; i < end; ++i) {
      args->push_back(changes[i].first);
      args->push_back(changes[i].second ? encode_tenant_record(*changes[i].second) : "");
    }
    {
      std::unique_lock lock(pending->mutex);
      pending->done.wait(
          lock, [&] { return pending->running < std::max<std::size_t>(1, options_.in_flight); });
      if (pending->error) break;
      ++pending->running;
    }
    target_->run(slot_, script, args, deadline_in(options_.timeout),
                 [pending, start](Result<Reply> reply) {
                   std::lock_guard lock(pending->mutex);
                   --pending->running;
                   if (!reply) {
                     if (!pending->error) pending->error = reply.error();
                   } else if (reply->is_error()) {
                     if (!pending->error) {
                       pending->error = Error{Errc::kUnavailable, "tenant records: " + reply->text};
                     }
                   } else {
                     pending->replies.emplace_back(start, std::move(*reply));
                   }
                   pending->done.notify_all();
                 });
  }
  std::int64_t written_seq = 0;
  {
    std::unique_lock lock(pending->mutex);
    pending->done.wait(lock, [&] { return pending->running == 0; });
    if (pending->error) return std::unexpected(*pending->error);
    for (const auto& [start, reply] : pending->replies) {
      if (reply.type == Reply::Type::kArray && !reply.elements.empty() &&
          is_int(reply.elements[0])) {
        written_seq = std::max(written_seq, reply.elements[0].integer);
      }
    }
  }
  // Into this copy through the follower, in Redis' order: wake it, and wait until it has applied
  // this write (or the timeout: Redis has the change either way, and the copy will follow).
  {
    std::unique_lock lock(stop_mutex_);
    poked_ = true;
    stop_signal_.notify_all();
    stop_signal_.wait_for(lock, options_.timeout,
                          [&] { return stopping_ || seq_.load() >= written_seq; });
  }
  if (!want_before) {
    before.resize(changes.size());
    return before;
  }
  std::lock_guard replies_lock(pending->mutex);
  std::sort(pending->replies.begin(), pending->replies.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [start, reply] : pending->replies) {
    if (reply.type != Reply::Type::kArray || reply.elements.empty()) return bad_reply("to a write");
    for (std::size_t i = 1; i < reply.elements.size(); ++i) {
      const std::string& text = reply.elements[i].text;
      if (text.empty()) {
        before.emplace_back();
        continue;
      }
      auto record = decode_tenant_record(text);
      before.push_back(record ? std::optional<TenantRecord>(std::move(*record)) : std::nullopt);
    }
  }
  if (before.size() != changes.size()) return bad_reply("to a write (records before)");
  return before;
}

Result<void> RedisTenantDirectory::load_all() {
  std::vector<TenantEntry> entries;
  std::string cursor = "0";
  std::optional<std::int64_t> start_seq;
  std::string start_nonce;
  do {
    auto reply = run(kScan, {cursor, "1000"});
    if (!reply) return std::unexpected(reply.error());
    if (reply->type != Reply::Type::kArray || reply->elements.size() < 3 ||
        !is_int(reply->elements[0]) || reply->elements.size() % 2 != 1) {
      return bad_reply("to a scan");
    }
    if (!start_seq) {
      start_seq = reply->elements[0].integer;
      start_nonce = reply->elements[1].text;
    }
    cursor = reply->elements[2].text;
    for (std::size_t i = 3; i + 1 < reply->elements.size(); i += 2) {
      auto record = decode_tenant_record(reply->elements[i + 1].text);
      if (!record) {
        errors_.fetch_add(1);
        continue;  // a record this version cannot read: left out, counted
      }
      entries.push_back({std::move(reply->elements[i].text), std::move(*record)});
    }
  } while (cursor != "0");
  replace_all(std::move(entries));
  seq_.store(*start_seq);
  nonce_ = std::move(start_nonce);
  resyncs_.fetch_add(1);
  heard_reset();  // a reset among the entries not read would otherwise be missed
  return {};
}

Result<void> RedisTenantDirectory::announce_reset() {
  auto reply = run(kWrite, {std::to_string(options_.log_length), "r"});
  if (!reply) return std::unexpected(reply.error());
  {
    std::lock_guard lock(stop_mutex_);
    poked_ = true;  // this instance hears it at once too (its own store already forgot)
  }
  stop_signal_.notify_all();
  return {};
}

Result<void> RedisTenantDirectory::catch_up() {
  while (true) {
    auto reply =
        run(kRead, {std::to_string(seq_.load()), std::to_string(options_.read_entries), nonce_});
    if (!reply) return std::unexpected(reply.error());
    if (reply->type != Reply::Type::kArray || reply->elements.size() < 5 ||
        reply->elements.size() % 2 != 1 || !is_int(reply->elements[0]) ||
        !is_int(reply->elements[1]) || !is_int(reply->elements[2]) || !is_int(reply->elements[4])) {
      return bad_reply("to a read of the log");
    }
    const std::int64_t now = reply->elements[0].integer;
    if (reply->elements[1].integer == 0) {
      say("tenant records: the change log no longer holds what this instance applied last "
          "(change " +
          std::to_string(seq_.load()) + ") or what follows it; loading every record again");
      return load_all();
    }
    for (std::size_t i = 5; i + 1 < reply->elements.size(); i += 2) {
      const std::string& text = reply->elements[i + 1].text;
      if (text.empty()) {
        apply(reply->elements[i].text, std::nullopt);
        continue;
      }
      auto record = decode_tenant_record(text);
      if (!record) {
        errors_.fetch_add(1);
        continue;
      }
      apply(reply->elements[i].text, std::move(*record));
    }
    const std::int64_t last = reply->elements[2].integer;
    seq_.store(last);
    nonce_ = std::move(reply->elements[3].text);
    if (reply->elements[4].integer > 0) {
      resets_.fetch_add(static_cast<std::uint64_t>(reply->elements[4].integer));
      heard_reset();
    }
    if (last >= now) return {};
  }
}

void RedisTenantDirectory::follow() {
  while (true) {
    Result<void> step = loaded_.load() ? catch_up() : load_all();
    polls_.fetch_add(1);
    if (step) {
      if (!loaded_.load()) {
        {
          std::lock_guard lock(stop_mutex_);
          loaded_.store(true);
        }
        stop_signal_.notify_all();
      }
      if (failing_) say("tenant records: following Redis again");
      failing_ = false;
    } else {
      errors_.fetch_add(1);
      if (!failing_) {
        say("tenant records: cannot read them from Redis (" + step.error().message +
            "); requests use the copy this instance holds until it can");
      }
      failing_ = true;
    }
    std::unique_lock lock(stop_mutex_);
    if (!step) first_load_failed_ = true;  // wait_ready() ends early when the first load fails
    stop_signal_.notify_all();  // a write waiting for this copy to reach its sequence number
    if (stop_signal_.wait_for(lock, options_.poll_interval,
                              [this] { return stopping_ || poked_; }) &&
        stopping_) {
      return;
    }
    poked_ = false;
  }
}

void RedisTenantDirectory::append_metrics(std::string& out) const {
  TenantDirectory::append_metrics(out);
  append_metric_family(out, "spillway_tenants_sequence", MetricType::kGauge,
                       "The last change to the tenant records this copy applied.");
  append_metric_sample(out, "spillway_tenants_sequence", {}, std::int64_t{seq_.load()});
  append_metric_family(out, "spillway_tenants_reloads_total", MetricType::kCounter,
                       "Full loads of the tenant records from Redis.");
  append_metric_sample(out, "spillway_tenants_reloads_total", {}, std::uint64_t{resyncs_.load()});
  append_metric_family(out, "spillway_tenants_reads_total", MetricType::kCounter,
                       "Script calls this instance's follower made to read the change log or "
                       "every record (about ten a second when nothing changes).");
  append_metric_sample(out, "spillway_tenants_reads_total", {}, std::uint64_t{reads_.load()});
  append_metric_family(out, "spillway_counter_resets_heard_total", MetricType::kCounter,
                       "Counter resets read from the change log (any instance's): each made this "
                       "instance forget the denials it remembers.");
  append_metric_sample(out, "spillway_counter_resets_heard_total", {},
                       std::uint64_t{resets_.load()});
  append_metric_family(out, "spillway_tenants_errors_total", MetricType::kCounter,
                       "Failed reads of the tenant records, and records that could not be "
                       "decoded.");
  append_metric_sample(out, "spillway_tenants_errors_total", {}, std::uint64_t{errors_.load()});
}

}  // namespace spillway::redis
