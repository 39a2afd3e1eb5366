#include "spillway/redis_store.h"

#include <deque>
#include <future>
#include <mutex>

#include "src/redis/client.h"
#include "src/redis/scripts.h"
#include "src/redis/url.h"

namespace spillway {
namespace {

constexpr std::size_t kFieldsPerDecision = 5;

// Decision i of a script reply: {allowed, limit, remaining, retry_after, reset_after} per check.
Result<Decision> decision_at(const redis::Reply& reply, std::size_t i) {
  if (reply.is_error()) {
    return std::unexpected(Error{Errc::kUnavailable, "redis replied: " + reply.text});
  }
  const std::size_t first = i * kFieldsPerDecision;
  if (reply.type != redis::Reply::Type::kArray ||
      reply.elements.size() < first + kFieldsPerDecision) {
    return std::unexpected(
        Error{Errc::kInternal, "unexpected reply shape from the limiter script"});
  }
  const auto& e = reply.elements;
  for (std::size_t k = first; k < first + kFieldsPerDecision; ++k) {
    if (e[k].type != redis::Reply::Type::kInteger) {
      return std::unexpected(Error{Errc::kInternal, "non-integer field in the limiter's reply"});
    }
  }
  return Decision{.allowed = e[first].integer == 1,
                  .limit = e[first + 1].integer,
                  .remaining = e[first + 2].integer,
                  .retry_after = e[first + 3].integer,
                  .reset_after = e[first + 4].integer};
}

bool is_noscript(const Result<redis::Reply>& reply) {
  return reply && reply->is_error() && reply->text.starts_with("NOSCRIPT");
}

// Sends a script call by SHA. After NOSCRIPT (restart, failover, SCRIPT FLUSH) it is sent once
// more as EVAL with the script's text, which runs it and caches it again in one atomic step, so
// no flush can fall between loading and running. args[0] and args[1] are filled in here.
void call_script(redis::Client& client, std::string_view source, const std::string& sha,
                 std::shared_ptr<std::vector<std::string>> args, bool with_source,
                 std::function<void(Result<redis::Reply>)> done) {
  (*args)[0] = with_source ? "EVAL" : "EVALSHA";
  (*args)[1] = with_source ? std::string(source) : sha;
  client.call_async(*args, [&client, source, &sha, args, with_source,
                            done = std::move(done)](Result<redis::Reply> reply) mutable {
    if (is_noscript(reply) && !with_source) {
      return call_script(client, source, sha, std::move(args), true, std::move(done));
    }
    done(std::move(reply));
  });
}

}  // namespace

// Sends one algorithm's checks to Redis: at once while fewer than max_in_flight script calls are
// out, otherwise queued and sent together when a call returns. Callbacks run on the client's I/O
// thread. Thread-safe.
class RedisStore::Batcher {
 public:
  Batcher(Algorithm algorithm, const RedisStoreOptions& options, redis::Client& client)
      : algorithm_(algorithm), options_(options), client_(client) {}

  struct Pending {
    std::string key;                      // the Redis key
    std::string now;                      // "" for the server's TIME
    std::array<std::int64_t, 6> numbers;  // limit, period, burst, limit_units, period_units, cost
    Callback done;
  };

  // From now on queued and new checks fail at once instead of going to the client (which is
  // being destroyed).
  void close() {
    std::deque<Pending> orphans;
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
      orphans.swap(queue_);
    }
    for (Pending& p : orphans) p.done(std::unexpected(closed_error()));
  }

  void submit(Pending check) {
    std::vector<Pending> batch;
    {
      std::lock_guard lock(mutex_);
      if (closing_) {
        check.done(std::unexpected(closed_error()));
        return;
      }
      queue_.push_back(std::move(check));
      if (in_flight_ >= options_.max_in_flight) return;  // a returning call will take it
      batch = take_batch_locked();
    }
    send(std::make_shared<std::vector<Pending>>(std::move(batch)));
  }

 private:
  // The longest prefix of the queue that shares one `now` (order per key is kept), capped.
  std::vector<Pending> take_batch_locked() {
    std::vector<Pending> batch;
    const auto cap = static_cast<std::size_t>(std::max(1, options_.max_batch));
    while (!queue_.empty() && batch.size() < cap &&
           (batch.empty() || queue_.front().now == batch.front().now)) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    ++in_flight_;
    return batch;
  }

  // One script call for the whole batch (call_script handles NOSCRIPT).
  void send(std::shared_ptr<std::vector<Pending>> batch) {
    auto args = std::make_shared<std::vector<std::string>>();
    args->reserve(5 + batch->size() * 7);
    args->insert(args->end(), {"", "", std::to_string(batch->size())});
    for (const Pending& p : *batch) args->push_back(p.key);
    args->push_back(batch->front().now);
    args->push_back(std::to_string(options_.ttl_floor.count()));
    for (const Pending& p : *batch) {
      for (std::int64_t n : p.numbers) args->push_back(std::to_string(n));
    }
    call_script(client_, redis::script_source(algorithm_), redis::script_sha(algorithm_),
                std::move(args), false,
                [this, batch](Result<redis::Reply> reply) { finish(*batch, std::move(reply)); });
  }

  void finish(std::vector<Pending>& batch, Result<redis::Reply> reply) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      batch[i].done(reply ? decision_at(*reply, i) : std::unexpected(reply.error()));
    }
    std::vector<Pending> next;
    {
      std::lock_guard lock(mutex_);
      --in_flight_;
      if (queue_.empty() || closing_) return;
      next = take_batch_locked();
    }
    send(std::make_shared<std::vector<Pending>>(std::move(next)));
  }

  static Error closed_error() { return Error{Errc::kUnavailable, "the redis store is closing"}; }

  const Algorithm algorithm_;
  const RedisStoreOptions& options_;
  redis::Client& client_;
  std::mutex mutex_;
  std::deque<Pending> queue_;
  int in_flight_ = 0;
  bool closing_ = false;
};

Result<std::unique_ptr<RedisStore>> RedisStore::open(RedisStoreOptions options) {
  auto client_options = redis::parse_redis_url(options.url);
  if (!client_options) return std::unexpected(client_options.error());
  if (options.pool_size < 1) {
    return invalid_argument("redis pool size must be at least 1, got " +
                            std::to_string(options.pool_size));
  }
  if (options.timeout.count() < 1) return invalid_argument("redis timeout must be at least 1ms");
  if (options.key_prefix.empty()) return invalid_argument("redis key prefix must not be empty");
  if (options.max_batch < 1 || options.max_in_flight < 1) {
    return invalid_argument("redis max_batch and max_in_flight must be at least 1");
  }
  client_options->pool_size = options.pool_size;
  client_options->timeout = options.timeout;
  auto client = std::make_unique<redis::Client>(*client_options);
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(options), std::move(client)));
}

RedisStore::RedisStore(RedisStoreOptions options, std::unique_ptr<redis::Client> client)
    : options_(std::move(options)), client_(std::move(client)) {
  for (Algorithm a : kAlgorithms) {
    batchers_.push_back(std::make_unique<Batcher>(a, options_, *client_));
  }
}

// The batchers stop feeding the client, then the client goes: its destructor fails the calls in
// flight, whose callbacks still use the batchers.
RedisStore::~RedisStore() {
  for (auto& batcher : batchers_) batcher->close();
  client_.reset();
}

std::string RedisStore::storage_key(std::string_view key, const Limit& limit) const {
  std::string out = options_.key_prefix;
  out += ':';
  out += algorithm_name(limit.algorithm());
  for (std::int64_t n : {limit.limit(), limit.period(), limit.burst()}) {
    out += ':';
    out += std::to_string(n);
  }
  out += ":{";
  out += key;
  out += '}';
  return out;
}

void RedisStore::check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                             std::optional<Micros> now, Callback done) {
  if (Result<void> valid = validate_check(key, cost, now); !valid) {
    return done(std::unexpected(valid.error()));
  }
  batchers_[algorithm_index(limit.algorithm())]->submit(
      {.key = storage_key(key, limit),
       .now = now ? std::to_string(*now) : std::string(),
       .numbers = {limit.limit(), limit.period(), limit.burst(), limit.limit_units(),
                   limit.period_units(), cost},
       .done = std::move(done)});
}

Result<Decision> RedisStore::check(std::string_view key, const Limit& limit, std::int64_t cost,
                                   std::optional<Micros> now) {
  std::promise<Result<Decision>> promise;
  std::future<Result<Decision>> future = promise.get_future();
  check_async(key, limit, cost, now,
              [&promise](Result<Decision> decision) { promise.set_value(std::move(decision)); });
  return future.get();
}

void RedisStore::check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                                 std::optional<Micros> now, AllCallback done) {
  if (Result<void> valid = validate_check_all(checks, cost, now); !valid) {
    return done(std::unexpected(valid.error()));
  }
  auto args = std::make_shared<std::vector<std::string>>();
  args->reserve(6 + checks.size() * 7);
  args->insert(args->end(), {"", "", std::to_string(checks.size())});
  for (const KeyedLimit& c : checks) args->push_back(storage_key(c.key, *c.limit));
  args->push_back(now ? std::to_string(*now) : std::string());
  args->push_back(std::to_string(options_.ttl_floor.count()));
  args->push_back(std::to_string(cost));
  for (const KeyedLimit& c : checks) {
    const Limit& l = *c.limit;
    // The algorithm by its number: the script's decide_by_id is built from the same list.
    for (std::int64_t n : {static_cast<std::int64_t>(algorithm_index(l.algorithm())), l.limit(),
                           l.period(), l.burst(), l.limit_units(), l.period_units()}) {
      args->push_back(std::to_string(n));
    }
  }
  const std::size_t count = checks.size();
  call_script(*client_, redis::all_or_nothing_script_source(), redis::all_or_nothing_script_sha(),
              args, false, [count, done = std::move(done)](Result<redis::Reply> reply) {
                if (!reply) return done(std::unexpected(reply.error()));
                Decisions decisions;
                for (std::size_t i = 0; i < count; ++i) {
                  Result<Decision> d = decision_at(*reply, i);
                  if (!d) return done(std::unexpected(d.error()));
                  decisions.push_back(*d);
                }
                done(std::move(decisions));
              });
}

Result<Decisions> RedisStore::check_all(std::span<const KeyedLimit> checks, std::int64_t cost,
                                        std::optional<Micros> now) {
  std::promise<Result<Decisions>> promise;
  std::future<Result<Decisions>> future = promise.get_future();
  check_all_async(checks, cost, now,
                  [&promise](Result<Decisions> d) { promise.set_value(std::move(d)); });
  return future.get();
}

bool RedisStore::ready() const { return client_->connected(); }

}  // namespace spillway
