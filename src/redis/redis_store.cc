#include "spillway/redis_store.h"

#include <algorithm>
#include <thread>

#include "src/core/backend_schemes.h"
#include "src/core/inline_completion.h"
#include "src/core/metrics_text.h"
#include "src/core/wait_for_answer.h"
#include "src/redis/batcher.h"
#include "src/redis/cluster_router.h"
#include "src/redis/cross_slot.h"
#include "src/redis/error_cause.h"
#include "src/redis/key_slot.h"
#include "src/redis/redis_store_impl.h"
#include "src/redis/script_reply.h"
#include "src/redis/scripts.h"
#include "src/redis/sentinel.h"
#include "src/redis/storage_key.h"
#include "src/redis/tls.h"
#include "src/redis/url.h"

namespace spillway {
namespace {

// The backend a URL names (src/core/backend_schemes.h); one Redis when no scheme is known (its
// parser then says what is wrong with the URL).
BackendKind kind_of(std::string_view url) {
  const BackendScheme* scheme = find_backend_scheme(url);
  return scheme == nullptr ? BackendKind::kRedis : scheme->kind;
}

// Completes the URL's TLS settings with options.tls (the URL's own parameters win) and checks
// that they load (files readable, key matching), so that a mistake is reported at open.
Result<void> apply_tls(const RedisStoreOptions& options, redis::ClientOptions& client) {
  if (options.tls && !client.tls) {
    return invalid_argument(
        "redis: TLS settings were given (backend.tls) but the URL is not rediss:// or "
        "rediss+cluster:// (a plain URL would send everything in clear)");
  }
  if (!client.tls) return {};
  if (options.tls) {
    TlsOptions& tls = *client.tls;
    for (auto [field, fallback] : {std::pair{&tls.ca_file, &options.tls->ca_file},
                                   std::pair{&tls.cert_file, &options.tls->cert_file},
                                   std::pair{&tls.key_file, &options.tls->key_file},
                                   std::pair{&tls.server_name, &options.tls->server_name}}) {
      if (field->empty()) *field = *fallback;
    }
    tls.insecure = tls.insecure || options.tls->insecure;
  }
  if (auto context = redis::make_tls_context(*client.tls); !context) {
    return std::unexpected(context.error());
  }
  return {};
}

}  // namespace

Result<void> RedisStore::check_options(const RedisStoreOptions& options) {
  if (options.pool_size < 1) {
    return invalid_argument("redis pool size must be at least 1, got " +
                            std::to_string(options.pool_size));
  }
  if (options.timeout.count() < 1) return invalid_argument("redis timeout must be at least 1ms");
  if (options.key_prefix.empty()) return invalid_argument("redis key prefix must not be empty");
  if (options.replica_acks < 0 || options.replica_acks > 16) {
    return invalid_argument("redis replica_acks must be 0 to 16, got " +
                            std::to_string(options.replica_acks));
  }
  if (options.max_batch < 1 || options.max_in_flight < 1) {
    return invalid_argument("redis max_batch and max_in_flight must be at least 1");
  }
  if (auto digest = KeyDigest::make(options.key_hash); !digest) {
    return std::unexpected(digest.error());  // field "key_secret"
  }
  // The same parsers as open() below, without connecting; errors blame the URL or the TLS files.
  const auto blame = [](Error error, const char* field) {
    error.field = field;
    return std::unexpected(std::move(error));
  };
  const auto tls_of = [&](redis::ClientOptions client) -> Result<void> {
    if (auto tls = apply_tls(options, client); !tls) {
      return blame(tls.error(), client.tls ? "tls" : "url");
    }
    return {};
  };
  if (kind_of(options.url) == BackendKind::kRedisCluster) {
    auto cluster = redis::parse_cluster_url(options.url);
    if (!cluster) return blame(cluster.error(), "url");
    return tls_of(std::move(cluster->node_options));
  }
  if (kind_of(options.url) == BackendKind::kRedisSentinel) {
    auto sentinel = redis::parse_sentinel_url(options.url);
    if (!sentinel) return blame(sentinel.error(), "url");
    if (options.tls) {
      return blame(
          Error{Errc::kInvalidArgument, "redis: TLS is not offered with redis+sentinel:// yet"},
          "tls");
    }
    return {};
  }
  auto client_options = redis::parse_redis_url(options.url);
  if (!client_options) return blame(client_options.error(), "url");
  return tls_of(std::move(*client_options));
}

namespace redis {

Result<std::unique_ptr<ScriptTarget>> open_script_target(RedisStoreOptions options) {
  if (kind_of(options.url) == BackendKind::kRedisCluster) {
    auto cluster = parse_cluster_url(options.url);
    if (!cluster) return std::unexpected(cluster.error());
    if (auto tls = apply_tls(options, cluster->node_options); !tls) {
      return std::unexpected(tls.error());
    }
    cluster->node_options.pool_size = options.pool_size;
    cluster->node_options.timeout = options.timeout;
    cluster->node_options.connect_timeout = options.connect_timeout;
    cluster->node_options.replica_acks = options.replica_acks;
    auto router = ClusterRouter::open(std::move(cluster->seeds), std::move(cluster->node_options));
    if (!router) return std::unexpected(router.error());
    return std::unique_ptr<ScriptTarget>(std::move(*router));
  } else if (kind_of(options.url) == BackendKind::kRedisSentinel) {
    auto sentinel = parse_sentinel_url(options.url);
    if (!sentinel) return std::unexpected(sentinel.error());
    if (options.tls) {
      return invalid_argument("redis: TLS is not offered with redis+sentinel:// yet");
    }
    ClientOptions node_options = sentinel->node_options;
    node_options.pool_size = options.pool_size;
    node_options.timeout = options.timeout;
    node_options.connect_timeout = options.connect_timeout;
    node_options.replica_acks = options.replica_acks;
    auto found = SentinelTarget::open(std::move(*sentinel), std::move(node_options));
    if (!found) return std::unexpected(found.error());
    return std::unique_ptr<ScriptTarget>(std::move(*found));
  } else {
    auto client_options = parse_redis_url(options.url);
    if (!client_options) return std::unexpected(client_options.error());
    if (auto tls = apply_tls(options, *client_options); !tls) return std::unexpected(tls.error());
    client_options->pool_size = options.pool_size;
    client_options->timeout = options.timeout;
    client_options->connect_timeout = options.connect_timeout;
    client_options->replica_acks = options.replica_acks;
    return std::unique_ptr<ScriptTarget>(std::make_unique<SingleNode>(std::move(*client_options)));
  }
}

}  // namespace redis

Result<std::unique_ptr<RedisStore>> RedisStore::open(RedisStoreOptions options) {
  if (auto checked = check_options(options); !checked) return std::unexpected(checked.error());
  Result<KeyDigest> digest = KeyDigest::make(options.key_hash);
  if (!digest) return std::unexpected(digest.error());
  auto target = redis::open_script_target(options);
  if (!target) return std::unexpected(target.error());
  return std::unique_ptr<RedisStore>(new RedisStore(
      std::make_unique<Impl>(std::move(options), std::move(*digest), std::move(*target))));
}

RedisStore::RedisStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RedisStore::~RedisStore() = default;

void RedisStore::decide(const StoreRequest& request, AllCallback done) {
  impl_->decide(request, std::move(done));
}
void RedisStore::settle(const Settlement& settlement, SettleCallback done) {
  impl_->settle(settlement, std::move(done));
}
std::string RedisStore::storage_key(std::string_view key, const Limit& limit) const {
  return impl_->storage_key(key, limit);
}
bool RedisStore::ready() const { return impl_->ready(); }
Result<void> RedisStore::probe() { return impl_->probe(); }
void RedisStore::append_metrics(std::string& out) const { impl_->append_metrics(out); }
Result<void> RedisStore::wait_ready(std::chrono::milliseconds timeout) {
  return impl_->wait_ready(timeout);
}
RedisStore::RoutingCounters RedisStore::routing_counters() const {
  return impl_->routing_counters();
}

RedisStore::Impl::Impl(RedisStoreOptions options, KeyDigest digest,
                       std::unique_ptr<redis::ScriptTarget> target)
    : options_(std::move(options)), digest_(std::move(digest)), target_(std::move(target)) {
  for (Algorithm a : kAlgorithms) {
    batchers_.push_back(std::make_unique<redis::Batcher>(a, options_, *target_));
  }
}

// The batchers stop feeding the target, then the target goes: its destructor fails the calls in
// flight, whose callbacks still use the batchers.
RedisStore::Impl::~Impl() {
  for (auto& batcher : batchers_) batcher->close();
  target_.reset();
}

std::string RedisStore::Impl::storage_key(std::string_view key, const Limit& limit) const {
  return redis::storage_key(options_.key_prefix, digest_, key, limit);
}

std::uint16_t RedisStore::Impl::slot_of(std::string_view redis_key) const {
  return target_->one_node() ? 0 : redis::key_slot(redis_key);
}

void RedisStore::Impl::decide(const StoreRequest& request, AllCallback done) {
  if (request.operation() == Operation::kReset) return reset(request, std::move(done));
  if (request.operation() == Operation::kReserve) return reserve(request, std::move(done));
  if (request.operation() == Operation::kCharge) return charge(request, std::move(done));
  const std::span<const KeyedLimit> checks = request.checks();
  const std::optional<Micros> now = request.now();
  if (checks.size() == 1) {
    const Limit& limit = *checks[0].limit;
    std::string redis_key = storage_key(checks[0].key, limit);
    const std::uint16_t slot = slot_of(redis_key);
    return batchers_[algorithm_index(limit.algorithm())]->submit(
        {.key = std::move(redis_key),
         .slot = slot,
         .now = now ? std::to_string(*now) : std::string(),
         .numbers = {limit.limit(), limit.period(), limit.burst(), limit.limit_units(),
                     limit.period_units(), limit.max_delay(), limit.reserved(), request.cost_of(0)},
         .deadline = redis::deadline_in(options_.timeout),
         .done = std::move(done)});
  }
  std::vector<redis::SlotKey> keys = slot_keys(request);
  const bool one_slot = std::all_of(keys.begin(), keys.end(), [&](const redis::SlotKey& k) {
    return k.slot == keys.front().slot;
  });
  const std::string now_arg = now ? std::to_string(*now) : std::string();
  if (!one_slot) {
    return redis::check_all_across_slots(*target_, std::move(keys), now_arg, options_.ttl_floor,
                                         options_.cluster_dry_run_first,
                                         redis::deadline_in(options_.timeout), std::move(done));
  }
  all_or_nothing_call(keys, now_arg, {}, {}, std::move(done));
}

std::vector<redis::SlotKey> RedisStore::Impl::slot_keys(const StoreRequest& request) const {
  const std::span<const KeyedLimit> checks = request.checks();
  std::vector<redis::SlotKey> keys;
  keys.reserve(checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const Limit& l = *checks[i].limit;
    std::string redis_key = storage_key(checks[i].key, l);
    const std::uint16_t slot = slot_of(redis_key);
    // The algorithm by its number: the script's decide_by_id is built from the same list.
    keys.push_back({std::move(redis_key),
                    slot,
                    {static_cast<std::int64_t>(algorithm_index(l.algorithm())), l.limit(),
                     l.period(), l.burst(), l.limit_units(), l.period_units(), l.max_delay(),
                     l.reserved(), request.cost_of(i)}});
  }
  return keys;
}

void RedisStore::Impl::all_or_nothing_call(const std::vector<redis::SlotKey>& keys,
                                           const std::string& now_arg, std::string_view record_key,
                                           std::span<const std::string> record_args,
                                           AllCallback done) {
  auto args = std::make_shared<std::vector<std::string>>();
  args->reserve(8 + keys.size() * 10 + record_args.size());
  const bool record = !record_key.empty();
  args->insert(args->end(), {"", "", std::to_string(keys.size() + (record ? 1 : 0))});
  for (const redis::SlotKey& k : keys) args->push_back(k.key);
  if (record) args->emplace_back(record_key);
  // record_args: the record's ttl first, then what follows the layers' numbers.
  args->insert(args->end(), {now_arg, std::to_string(options_.ttl_floor.count()), "0",
                             record ? record_args.front() : std::string()});
  for (const redis::SlotKey& k : keys) {
    for (std::int64_t n : k.numbers) args->push_back(std::to_string(n));
  }
  if (record) args->insert(args->end(), record_args.begin() + 1, record_args.end());
  const std::size_t count = keys.size();
  target_->run(keys.front().slot,
               {redis::all_or_nothing_script_source(), &redis::all_or_nothing_script_sha()},
               std::move(args), redis::deadline_in(options_.timeout),
               [count, done = std::move(done)](Result<redis::Reply> reply) {
                 if (!reply) return done(std::unexpected(reply.error()));
                 Decisions decisions;
                 for (std::size_t i = 0; i < count; ++i) {
                   Result<Decision> d = redis::decision_at(*reply, i);
                   if (!d) return done(std::unexpected(d.error()));
                   decisions.push_back(*d);
                 }
                 done(std::move(decisions));
               });
}

bool RedisStore::Impl::ready() const {
  return target_->ready() && !probe_failed_.load(std::memory_order_acquire);
}

Result<void> RedisStore::Impl::probe() {
  // lua/probe.lua through the target, as every check's script goes: the connection (and its
  // AUTH), EVALSHA (EVAL after NOSCRIPT), the owner of the key's slot or the primary the
  // sentinels name, and a write of a key that the same script deletes.
  probes_.fetch_add(1, std::memory_order_relaxed);
  const std::string key = options_.key_prefix + ":readiness-probe";
  auto args =
      std::make_shared<std::vector<std::string>>(std::vector<std::string>{"", "", "1", key});
  const redis::Script script{redis::probe_script_source(), &redis::probe_script_sha()};
  const auto deadline = redis::deadline_in(options_.timeout);
  Result<redis::Reply> reply = wait_for_answer<Result<redis::Reply>>(
      [&](auto answer) { target_->run(slot_of(key), script, args, deadline, std::move(answer)); });
  Result<void> answer;
  if (!reply) {
    answer = std::unexpected(reply.error());
  } else if (reply->is_error()) {
    answer = std::unexpected(redis::reply_error(*reply));
  }
  probe_failed_.store(!answer.has_value(), std::memory_order_release);
  if (answer) return answer;
  answer.error().message = redis::with_error_cause(std::move(answer.error().message));
  return answer;
}

void RedisStore::Impl::append_metrics(std::string& out) const {
  append_metric_family(out, "spillway_backend_probes_total", MetricType::kCounter,
                       "Readiness probes sent to Redis (one script call each: --require-backend, "
                       "the backend watch behind /readyz).");
  append_metric_sample(out, "spillway_backend_probes_total", {},
                       probes_.load(std::memory_order_relaxed));
}

Result<void> RedisStore::Impl::wait_ready(std::chrono::milliseconds timeout) {
  const auto deadline = redis::socket_now() + timeout;
  // What the server itself said (an error reply: NOAUTH, READONLY …) tells more than a later
  // probe that got no reply in time on a loaded machine: it is the one reported.
  std::optional<Error> replied;
  while (true) {
    // Once connected, a probe; before, a probe only at the deadline (its error is the
    // connection's last cause).
    if (target_->ready() || redis::socket_now() >= deadline) {
      Result<void> answer = probe();
      if (answer) return answer;
      if (answer.error().message.starts_with(redis::kRedisReplied)) replied = answer.error();
      if (redis::socket_now() >= deadline)
        return std::unexpected(replied ? *replied : answer.error());
      // A failure that may pass (LOADING, a failover): again after a pause, until the deadline.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

RedisStore::RoutingCounters RedisStore::Impl::routing_counters() const {
  const auto* router = dynamic_cast<const redis::ClusterRouter*>(target_.get());
  if (router == nullptr) return {};
  const redis::ClusterRouter::Counters c = router->counters();
  return {c.moved, c.ask, c.retried, c.refreshes};
}

}  // namespace spillway
