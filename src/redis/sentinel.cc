// SentinelTarget (see sentinel.h). The watcher thread does all the talking to sentinels, through
// the project's Client (one per sentinel, kept; each call within the sentinel timeout); calls
// never wait for it.
#include "src/redis/sentinel.h"

#include <atomic>
#include <mutex>
#include <thread>

#include "src/redis/resend.h"

namespace spillway::redis {
namespace {

using std::chrono::milliseconds;

// How often the watcher looks at its subscription, its requests to resolve and the clock.
constexpr milliseconds kWatchTick{20};

std::unexpected<Error> unavailable(std::string message) {
  return std::unexpected(Error{Errc::kUnavailable, std::move(message)});
}

// A reply's text when it is a string.
std::optional<std::string> text_of(const Reply& reply) {
  if (reply.type != Reply::Type::kString) return std::nullopt;
  return reply.text;
}

// The client of one sentinel: no credentials, one connection, `timeout` for connecting and for
// every call, and a quick reconnect so that a sentinel that comes back is asked again soon.
ClientOptions sentinel_options(const NodeAddress& sentinel, milliseconds timeout) {
  ClientOptions options;
  options.host = sentinel.host;
  options.port = sentinel.port;
  options.timeout = timeout;
  options.connect_timeout = timeout;
  options.reconnect_max = milliseconds(200);
  return options;
}

// One call, waiting for its reply (the watcher's own thread, never a client's). A Redis error
// reply becomes an error too, "<what><the reply>"; the Client's own errors name the server.
Result<Reply> ask(Client& client, const std::string& what, const std::vector<std::string>& args) {
  Result<Reply> reply = client.call(args);
  if (reply && reply->is_error()) return unavailable(what + reply->text);
  return reply;
}

// The primary that `sentinel` names for `name`.
Result<NodeAddress> ask_sentinel(Client& client, const NodeAddress& sentinel,
                                 const std::string& name) {
  Result<Reply> reply =
      ask(client, sentinel.text() + ": ", {"SENTINEL", "get-master-addr-by-name", name});
  if (!reply) return std::unexpected(reply.error());
  if (reply->type == Reply::Type::kNil) {
    return unavailable(sentinel.text() + " monitors no primary named '" + name + "'");
  }
  std::optional<std::string> host, port;
  if (reply->type == Reply::Type::kArray && reply->elements.size() == 2) {
    host = text_of(reply->elements[0]);
    port = text_of(reply->elements[1]);
  }
  if (!host || !port) {
    return unavailable(sentinel.text() + ": unexpected answer to get-master-addr-by-name");
  }
  Result<NodeAddress> address = parse_node_address(*host + ":" + *port);
  if (!address) return unavailable(sentinel.text() + ": " + address.error().message);
  return address;
}

// Whether `node` says it is a primary (ROLE), through a client with the URL's credentials (the
// Client sends AUTH and SELECT before the call; their failure is the call's error).
Result<void> verify_primary(const NodeAddress& node, const ClientOptions& node_options,
                            milliseconds timeout) {
  ClientOptions options = node_options;
  options.host = node.host;
  options.port = node.port;
  options.pool_size = 1;
  options.timeout = timeout;
  options.connect_timeout = timeout;
  Client client(std::move(options));
  Result<Reply> role = ask(client, node.text() + ": ROLE failed: ", {"ROLE"});
  if (!role) return std::unexpected(role.error());
  std::optional<std::string> what;
  if (role->type == Reply::Type::kArray && !role->elements.empty()) {
    what = text_of(role->elements[0]);
  }
  if (!what) return unavailable(node.text() + ": unexpected answer to ROLE");
  if (*what != "master") return unavailable(node.text() + " is a " + *what + ", not a primary");
  return {};
}

}  // namespace

class SentinelTarget::Impl {
 public:
  Impl(SentinelUrl url, ClientOptions node_options)
      : sentinels_(std::move(url.sentinels)),
        name_(std::move(url.master_name)),
        node_options_(std::move(node_options)),
        io_timeout_(std::max(node_options_.timeout, milliseconds(200))) {}

  ~Impl() { stop(); }

  // Before the watcher starts: the first primary, or every sentinel's reason.
  Result<void> first_resolve() {
    std::string errors;
    if (resolve(&errors)) return {};
    return unavailable("redis sentinel: no sentinel named a reachable primary '" + name_ + "' (" +
                       errors + ")");
  }

  void start() {
    thread_ = std::thread([this] { watch(); });
  }

  void stop() {
    if (stopping_.exchange(true)) return;
    if (thread_.joinable()) thread_.join();
    subscription_.reset();
    sentinel_clients_.clear();
    resends_.close();  // the calls waiting to be sent again fail
    std::shared_ptr<SingleNode> node;
    {
      std::lock_guard lock(mutex_);
      node = std::move(node_);
    }
    node.reset();  // fails its calls in flight; their callbacks see stopping_
    retired_.clear();
  }

  void run(std::uint16_t slot, const Script& script, std::shared_ptr<std::vector<std::string>> args,
           Deadline deadline, Callback done) {
    send(ScriptCall{.slot = slot,
                    .script = script,
                    .args = std::move(args),
                    .deadline = deadline,
                    .done = std::move(done)});
  }

  bool ready() const {
    std::lock_guard lock(mutex_);
    return node_ && node_->ready();
  }

  NodeAddress primary() const {
    std::lock_guard lock(mutex_);
    return primary_;
  }

  std::uint64_t switches() const { return switches_.load(); }

 private:
  static Error closing() {
    return Error{Errc::kUnavailable, "the redis sentinel client is closing"};
  }

  // To the primary's SingleNode, which sends NOSCRIPT's EVAL itself.
  void send(ScriptCall call) {
    std::shared_ptr<SingleNode> node;
    {
      std::lock_guard lock(mutex_);
      node = node_;
    }
    if (!node || stopping_) return call.finish(std::unexpected(closing()));
    if (!count_send(call)) {
      return call.finish(
          std::unexpected(out_of_time(call, "redis sentinel: no answer from the primary")));
    }
    const std::uint16_t slot = call.slot;
    const Script script = call.script;
    const std::shared_ptr<std::vector<std::string>> args = call.args;
    const Deadline deadline = call.deadline;
    node->run(slot, script, args, deadline,
              [this, call = std::move(call)](Result<Reply> reply) mutable {
                on_reply(std::move(call), std::move(reply));
              });
  }

  void on_reply(ScriptCall call, Result<Reply> reply) {
    const bool resend = not_applied(call.script, reply);
    if (reply && reply->is_error() && reply->text.starts_with("READONLY")) {
      reply = unavailable("redis sentinel: " + primary().text() +
                          " is no longer the primary (READONLY); following the failover");
    }
    // A demoted or unreachable primary: ask the sentinels.
    if (!reply && reply.error().code == Errc::kUnavailable) resolve_requested_ = true;
    if (!resend || stopping_) return call.finish(std::move(reply));
    // Not applied: sent again once the primary is known (or answered when time runs out).
    call.last_error = reply ? reply->text : reply.error().message;
    if (!can_wait(call)) {
      return call.finish(
          std::unexpected(out_of_time(call, "redis sentinel: no answer from the primary")));
    }
    resends_.at(socket_now() + kResendPause,
                [this, call = std::move(call)](bool closing_now) mutable {
                  if (closing_now) return call.finish(std::unexpected(closing()));
                  send(std::move(call));
                });
  }

  // Asks the sentinels in turn (the last one that answered first) and installs the primary the
  // first of them names, once verified. Returns whether a primary is known and reachable.
  bool resolve(std::string* errors) {
    const std::size_t n = sentinels_.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t index = (preferred_ + i) % n;
      const NodeAddress& sentinel = sentinels_[index];
      Result<NodeAddress> named = ask_sentinel(sentinel_client(index), sentinel, name_);
      if (!named) {
        if (errors) *errors += (errors->empty() ? "" : "; ") + named.error().message;
        continue;
      }
      {
        std::lock_guard lock(mutex_);
        if (node_ && primary_ == *named && node_->ready()) {
          preferred_ = index;
          return true;
        }
      }
      if (Result<void> ok = verify_primary(*named, node_options_, io_timeout_); !ok) {
        if (errors) {
          *errors += (errors->empty() ? "" : "; ") + sentinel.text() + " names " + named->text() +
                     ": " + ok.error().message;
        }
        continue;
      }
      preferred_ = index;
      install(*named);
      return true;
    }
    return false;
  }

  // A new client for a primary at a new address; the old client is retired (closed later by the
  // watcher, once nothing holds it: never on its own I/O thread).
  void install(const NodeAddress& primary) {
    std::shared_ptr<SingleNode> old;
    {
      std::lock_guard lock(mutex_);
      if (node_ && primary_ == primary) return;  // same server: its client reconnects by itself
      ClientOptions options = node_options_;
      options.host = primary.host;
      options.port = primary.port;
      old = std::move(node_);
      node_ = std::make_shared<SingleNode>(std::move(options));
      if (old) ++switches_;
      primary_ = primary;
    }
    if (old) retired_.push_back(std::move(old));
  }

  // The client of sentinel #index, made on first use. Watcher thread (or first_resolve).
  Client& sentinel_client(std::size_t index) {
    if (sentinel_clients_.empty()) sentinel_clients_.resize(sentinels_.size());
    std::unique_ptr<Client>& client = sentinel_clients_[index];
    if (!client) {
      client = std::make_unique<Client>(sentinel_options(sentinels_[index], io_timeout_));
    }
    return *client;
  }

  // The watcher: +switch-master messages, re-resolving when asked and once a second.
  void watch() {
    auto next_check = socket_now() + kRecheckInterval;
    auto last_resolve = SocketClock::time_point{};
    while (!stopping_) {
      if (subscription_ && !subscription_->connected()) {  // that sentinel went away
        subscription_.reset();
        subscribed_index_ = (subscribed_index_ + 1) % sentinels_.size();
        resolve_requested_ = true;
      }
      if (!subscription_ && socket_now() >= next_subscribe_) subscribe();
      std::this_thread::sleep_for(kWatchTick);
      const auto now = socket_now();
      if ((resolve_requested_ || now >= next_check) && now - last_resolve >= milliseconds(100)) {
        resolve_requested_ = false;
        last_resolve = now;
        const bool known = resolve(nullptr);
        next_check = now + (known ? kRecheckInterval : milliseconds(100));
      }
      std::erase_if(retired_, [](const auto& node) { return node.use_count() == 1; });
    }
  }

  // A client of its own per subscription: once it carries SUBSCRIBE it takes no other call. It
  // never reconnects by itself before the watcher sees it down (a reconnected connection would
  // not be subscribed): the watcher replaces it.
  void subscribe() {
    const std::size_t n = sentinels_.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t index = (subscribed_index_ + i) % n;
      ClientOptions options = sentinel_options(sentinels_[index], io_timeout_);
      options.reconnect_min = options.reconnect_max = std::chrono::seconds(10);
      options.on_push = [this](Reply message) { on_message(message); };
      auto client = std::make_unique<Client>(std::move(options));
      if (!ask(*client, "", {"SUBSCRIBE", "+switch-master"})) continue;
      subscribed_index_ = index;
      subscription_ = std::move(client);
      return;
    }
    next_subscribe_ = socket_now() + milliseconds(200);
  }

  // On the subscription's I/O thread.
  void on_message(const Reply& message) {
    // ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"]
    if (message.type == Reply::Type::kArray && message.elements.size() == 3) {
      std::optional<std::string> text = text_of(message.elements[2]);
      if (text && text->starts_with(name_ + " ")) resolve_requested_ = true;
    }
  }

  const std::vector<NodeAddress> sentinels_;
  const std::string name_;
  const ClientOptions node_options_;
  const milliseconds io_timeout_;  // each sentinel connection and command

  mutable std::mutex mutex_;
  std::shared_ptr<SingleNode> node_;  // the primary's client
  NodeAddress primary_;
  ResendTimer resends_;  // calls waiting to be sent again

  std::atomic<bool> stopping_{false};
  std::atomic<bool> resolve_requested_{false};
  std::atomic<std::uint64_t> switches_{0};

  // Watcher thread only (and first_resolve, before it starts):
  std::size_t preferred_ = 0;
  std::size_t subscribed_index_ = 0;
  std::vector<std::unique_ptr<Client>> sentinel_clients_;  // by sentinel index
  std::unique_ptr<Client> subscription_;
  SocketClock::time_point next_subscribe_{};
  std::vector<std::shared_ptr<SingleNode>> retired_;
  std::thread thread_;
};

Result<std::unique_ptr<SentinelTarget>> SentinelTarget::open(SentinelUrl url,
                                                             ClientOptions node_options) {
  auto impl = std::make_unique<Impl>(std::move(url), std::move(node_options));
  if (Result<void> found = impl->first_resolve(); !found) return std::unexpected(found.error());
  impl->start();
  return std::unique_ptr<SentinelTarget>(new SentinelTarget(std::move(impl)));
}

SentinelTarget::SentinelTarget(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SentinelTarget::~SentinelTarget() { impl_->stop(); }

void SentinelTarget::run(std::uint16_t slot, const Script& script,
                         std::shared_ptr<std::vector<std::string>> args, Deadline deadline,
                         Callback done) {
  impl_->run(slot, script, std::move(args), deadline, std::move(done));
}

bool SentinelTarget::ready() const { return impl_->ready(); }

NodeAddress SentinelTarget::primary() const { return impl_->primary(); }

std::uint64_t SentinelTarget::switches() const { return impl_->switches(); }

}  // namespace spillway::redis
