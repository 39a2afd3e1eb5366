#include "src/redis/cluster_router.h"

// When a call is sent again (NOSCRIPT, not applied, the budget) is resend.h's rule; what is
// the cluster's own here is the slot map and the redirections.
#include <algorithm>
#include <optional>

#include "src/redis/resend.h"

namespace spillway::redis {

namespace {

std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

}  // namespace

class ClusterRouter::Impl {
 public:
  Impl(std::vector<NodeAddress> seeds, ClientOptions node_options)
      : seeds_(std::move(seeds)), node_options_(std::move(node_options)) {}

  ~Impl() { shutdown(); }

  // Learns the map from the seeds, one after the other; the errors of all that failed.
  Result<void> learn_from_seeds() {
    std::string errors;
    for (const NodeAddress& seed : seeds_) {
      std::shared_ptr<Client> client = client_for(seed);
      if (!client) break;
      Result<Reply> reply = client->call({"CLUSTER", "SLOTS"});
      Result<SlotMap> map = reply ? parse_cluster_slots(*reply, seed)
                                  : Result<SlotMap>(std::unexpected(reply.error()));
      if (map && map->primaries.empty()) {
        map = fail(Errc::kUnavailable, "the cluster serves no slot yet");
      }
      if (map) {
        install(std::move(*map));
        return {};
      }
      errors += (errors.empty() ? "" : "; ") + seed.text() + ": " + map.error().message;
    }
    return fail(Errc::kUnavailable,
                "redis cluster: no seed node gave the slot map (" + errors + ")");
  }

  void run(std::uint16_t slot, const Script& script, std::shared_ptr<std::vector<std::string>> args,
           SocketClock::time_point deadline, Callback done) {
    auto call = std::make_shared<Call>(Call{{.slot = slot,
                                             .script = script,
                                             .args = std::move(args),
                                             .deadline = deadline,
                                             .done = std::move(done)}});
    attempt(call);
  }

  bool ready() const {
    std::shared_ptr<const SlotMap> map = current_map();
    for (std::int16_t owner : map->owner) {
      if (owner == SlotMap::kNoOwner) return false;
    }
    for (const NodeAddress& primary : map->primaries) {
      std::lock_guard lock(mutex_);
      auto it = clients_.find(primary.text());
      if (it == clients_.end() || !it->second->connected()) return false;
    }
    return true;
  }

  Counters counters() const {
    return {moved_.load(), ask_.load(), retried_.load(), refreshes_.load()};
  }

  // Fails what is in flight or waiting, each call exactly once, and stops every thread.
  void shutdown() {
    std::map<std::string, std::shared_ptr<Client>> clients;
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      closing_ = true;
      clients.swap(clients_);
    }
    clients.clear();   // each Client fails its calls in flight; their retries see closing_
    resends_.close();  // the calls waiting to be sent again fail (attempt() sees closing_)
  }

 private:
  struct Call : ScriptCall {
    std::optional<NodeAddress> next;  // the node a redirection named
    bool asking = false;              // ASKING first (after ASK)
  };

  std::shared_ptr<const SlotMap> current_map() const {
    std::lock_guard lock(mutex_);
    return map_;
  }

  // Uses `map` from now on, and starts connecting to every primary it names.
  void install(SlotMap map) {
    auto fresh = std::make_shared<const SlotMap>(std::move(map));
    {
      std::lock_guard lock(mutex_);
      map_ = fresh;
      ++refreshes_;
    }
    for (const NodeAddress& primary : fresh->primaries) client_for(primary);
  }

  // The node's client, created on first use; null once closing.
  std::shared_ptr<Client> client_for(const NodeAddress& node) {
    std::lock_guard lock(mutex_);
    if (closing_) return nullptr;
    std::shared_ptr<Client>& client = clients_[node.text()];
    if (!client) {
      ClientOptions options = node_options_;
      options.host = node.host;
      options.port = node.port;
      client = std::make_shared<Client>(std::move(options));
    }
    return client;
  }

  void finish(const std::shared_ptr<Call>& call, Result<Reply> result) {
    call->finish(std::move(result));
  }

  bool closing() const {
    std::lock_guard lock(mutex_);
    return closing_;
  }

  void attempt(const std::shared_ptr<Call>& call) {
    if (closing())
      return finish(call, fail(Errc::kUnavailable, "the redis cluster client is closing"));
    if (!count_send(*call)) return give_up(call);
    NodeAddress node;
    if (call->next) {
      node = std::move(*call->next);
      call->next.reset();
    } else {
      std::shared_ptr<const SlotMap> map = current_map();
      const NodeAddress* owner = map->owner_of(call->slot);
      if (owner == nullptr) {
        call->last_error = "slot " + std::to_string(call->slot) + " has no owner";
        refresh();
        return later(call);
      }
      node = *owner;
    }
    std::shared_ptr<Client> client = client_for(node);
    if (!client)
      return finish(call, fail(Errc::kUnavailable, "the redis cluster client is closing"));
    call->prepare();
    const bool asking = call->asking;
    call->asking = false;
    auto on_reply = [this, call, node, asking](Result<Reply> reply) {
      this->on_reply(call, node, asking, std::move(reply));
    };
    client->call_async(*call->args, call->deadline,
                       {.asking = asking, .durable = call->script.writes}, std::move(on_reply));
  }

  void on_reply(const std::shared_ptr<Call>& call, const NodeAddress& node, bool asked,
                Result<Reply> reply) {
    if (closing()) return finish(call, std::move(reply));
    if (reply && reply->is_error()) {
      const std::string& text = reply->text;
      if (std::optional<Redirect> redirect = parse_redirect(text)) {
        call->next = redirect->to;
        call->last_error = text;
        if (redirect->kind == Redirect::Kind::kAsk) {
          ++ask_;
          call->asking = true;
        } else {
          ++moved_;
          refresh();
        }
        // A redirection right after another: the cluster is between two states (a slot's
        // owners disagree for a moment), so wait a little instead of bouncing.
        if (call->sends > 1) return later(call);
        return attempt(call);
      }
    }
    switch (resend_step(*call, reply)) {
      case ResendStep::kWithSource:  // to the same node, ASKING again if it was asked
        call->next = node;
        call->asking = asked;
        return attempt(call);
      case ResendStep::kLater:  // a node down or unreachable, the cluster between two states
        ++retried_;
        refresh();
        return later(call);
      case ResendStep::kAnswer:
        return finish(call, std::move(reply));
    }
  }

  void give_up(const std::shared_ptr<Call>& call) {
    finish(call, std::unexpected(out_of_time(
                     *call, "redis cluster: no answer for slot " + std::to_string(call->slot))));
  }

  // Tries the call again after kResendPause, or gives up when that would reach its deadline.
  void later(const std::shared_ptr<Call>& call) {
    if (!can_wait(*call)) return give_up(call);
    resends_.at(socket_now() + kResendPause,
                [this, call](bool) { attempt(call); });  // closing: attempt() sees closing_
  }

  // Learns the slot map again, in the background: one refresh at a time, and none within
  // kRefreshInterval of the last one. Asks the known primaries first, then the seeds.
  void refresh() {
    auto candidates = std::make_shared<std::vector<NodeAddress>>();
    {
      std::lock_guard lock(mutex_);
      const auto now = socket_now();
      if (closing_ || refreshing_ || now - last_refresh_ < kRefreshInterval) return;
      refreshing_ = true;
      last_refresh_ = now;
      *candidates = map_->primaries;
      for (const NodeAddress& seed : seeds_) {
        if (std::find(candidates->begin(), candidates->end(), seed) == candidates->end()) {
          candidates->push_back(seed);
        }
      }
    }
    ask_for_map(candidates, 0);
  }

  void ask_for_map(const std::shared_ptr<std::vector<NodeAddress>>& candidates, std::size_t i) {
    std::shared_ptr<Client> client =
        i < candidates->size() ? client_for((*candidates)[i]) : nullptr;
    if (!client) {
      std::lock_guard lock(mutex_);
      refreshing_ = false;
      return;
    }
    client->call_async({"CLUSTER", "SLOTS"}, [this, candidates, i](Result<Reply> reply) {
      if (reply) {
        Result<SlotMap> map = parse_cluster_slots(*reply, (*candidates)[i]);
        if (map && !map->primaries.empty()) {
          install(std::move(*map));
          std::lock_guard lock(mutex_);
          refreshing_ = false;
          last_refresh_ = socket_now();
          return;
        }
      }
      ask_for_map(candidates, i + 1);
    });
  }

  const std::vector<NodeAddress> seeds_;
  const ClientOptions node_options_;
  mutable std::mutex mutex_;
  std::shared_ptr<const SlotMap> map_ = std::make_shared<const SlotMap>();
  std::map<std::string, std::shared_ptr<Client>> clients_;  // by "host:port"
  bool closing_ = false;
  bool refreshing_ = false;
  SocketClock::time_point last_refresh_{};
  std::atomic<std::uint64_t> moved_{0}, ask_{0}, retried_{0}, refreshes_{0};
  ResendTimer resends_;  // calls waiting to be sent again
};

Result<std::unique_ptr<ClusterRouter>> ClusterRouter::open(std::vector<NodeAddress> seeds,
                                                           ClientOptions node_options) {
  if (seeds.empty()) return invalid_argument("redis cluster: no seed node given");
  auto impl = std::make_unique<Impl>(std::move(seeds), std::move(node_options));
  if (Result<void> learned = impl->learn_from_seeds(); !learned) {
    return std::unexpected(learned.error());
  }
  return std::unique_ptr<ClusterRouter>(new ClusterRouter(std::move(impl)));
}

ClusterRouter::ClusterRouter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ClusterRouter::~ClusterRouter() { impl_->shutdown(); }

void ClusterRouter::run(std::uint16_t slot, const Script& script,
                        std::shared_ptr<std::vector<std::string>> args, Deadline deadline,
                        Callback done) {
  impl_->run(slot, script, std::move(args), deadline, std::move(done));
}

bool ClusterRouter::ready() const { return impl_->ready(); }

ClusterRouter::Counters ClusterRouter::counters() const { return impl_->counters(); }

}  // namespace spillway::redis
