// SentinelTarget (see sentinel.h). The watcher thread does all the talking to sentinels with
// blocking hiredis connections (each with a short timeout); calls never wait for it.
#include "src/redis/sentinel.h"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "src/redis/resend.h"

namespace spillway::redis {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often the watcher looks at its subscription, its requests to resolve and the clock.
constexpr milliseconds kWatchTick{20};

struct ContextDeleter {
  void operator()(redisContext* context) const { redisFree(context); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

std::unexpected<Error> unavailable(std::string message) {
  return std::unexpected(Error{Errc::kUnavailable, std::move(message)});
}

timeval to_timeval(milliseconds duration) {
  timeval out{};
  out.tv_sec = static_cast<time_t>(duration.count() / 1000);
  out.tv_usec = static_cast<suseconds_t>((duration.count() % 1000) * 1000);
  return out;
}

// A blocking connection whose connect and every command give up after `timeout`.
Result<ContextPtr> connect_to(const NodeAddress& node, milliseconds timeout) {
  ContextPtr context(redisConnectWithTimeout(node.host.c_str(), node.port, to_timeval(timeout)));
  if (!context) return unavailable(node.text() + ": cannot allocate a connection");
  if (context->err != 0) return unavailable(node.text() + ": " + context->errstr);
  redisSetTimeout(context.get(), to_timeval(timeout));
  return context;
}

Result<ReplyPtr> command(redisContext* context, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const std::string& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  ReplyPtr reply(static_cast<redisReply*>(
      redisCommandArgv(context, static_cast<int>(args.size()), argv.data(), lengths.data())));
  if (!reply) return unavailable(context->errstr[0] != '\0' ? context->errstr : "no reply");
  if (reply->type == REDIS_REPLY_ERROR) return unavailable(std::string(reply->str, reply->len));
  return reply;
}

// The primary that `sentinel` names for `name`.
Result<NodeAddress> ask_sentinel(const NodeAddress& sentinel, const std::string& name,
                                 milliseconds timeout) {
  Result<ContextPtr> context = connect_to(sentinel, timeout);
  if (!context) return std::unexpected(context.error());
  Result<ReplyPtr> reply = command(context->get(), {"SENTINEL", "get-master-addr-by-name", name});
  if (!reply) return unavailable(sentinel.text() + ": " + reply.error().message);
  const redisReply& r = **reply;
  if (r.type == REDIS_REPLY_NIL) {
    return unavailable(sentinel.text() + " monitors no primary named '" + name + "'");
  }
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 || r.element[0]->type != REDIS_REPLY_STRING ||
      r.element[1]->type != REDIS_REPLY_STRING) {
    return unavailable(sentinel.text() + ": unexpected answer to get-master-addr-by-name");
  }
  Result<NodeAddress> address =
      parse_node_address(std::string(r.element[0]->str, r.element[0]->len) + ":" +
                         std::string(r.element[1]->str, r.element[1]->len));
  if (!address) return unavailable(sentinel.text() + ": " + address.error().message);
  return address;
}

// Whether `node` says it is a primary (ROLE), after AUTH with the URL's credentials.
Result<void> verify_primary(const NodeAddress& node, const ClientOptions& options,
                            milliseconds timeout) {
  Result<ContextPtr> context = connect_to(node, timeout);
  if (!context) return std::unexpected(context.error());
  if (options.password) {
    std::vector<std::string> auth{"AUTH"};
    if (options.user) auth.push_back(*options.user);
    auth.push_back(*options.password);
    if (Result<ReplyPtr> ok = command(context->get(), auth); !ok) {
      return unavailable(node.text() + ": AUTH failed: " + ok.error().message);
    }
  }
  Result<ReplyPtr> role = command(context->get(), {"ROLE"});
  if (!role) return unavailable(node.text() + ": ROLE failed: " + role.error().message);
  const redisReply& r = **role;
  if (r.type != REDIS_REPLY_ARRAY || r.elements == 0 || r.element[0]->type != REDIS_REPLY_STRING) {
    return unavailable(node.text() + ": unexpected answer to ROLE");
  }
  const std::string what(r.element[0]->str, r.element[0]->len);
  if (what != "master") return unavailable(node.text() + " is a " + what + ", not a primary");
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
    resends_.at(SteadyClock::now() + kResendPause,
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
      Result<NodeAddress> named = ask_sentinel(sentinel, name_, io_timeout_);
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

  // The watcher: +switch-master messages, re-resolving when asked and once a second.
  void watch() {
    auto next_check = SteadyClock::now() + kRecheckInterval;
    auto last_resolve = SteadyClock::time_point{};
    while (!stopping_) {
      if (!subscription_ && SteadyClock::now() >= next_subscribe_) subscribe();
      if (subscription_) {
        pollfd p{subscription_->fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(kWatchTick.count())) > 0) read_messages();
      } else {
        std::this_thread::sleep_for(kWatchTick);
      }
      const auto now = SteadyClock::now();
      if ((resolve_requested_ || now >= next_check) && now - last_resolve >= milliseconds(100)) {
        resolve_requested_ = false;
        last_resolve = now;
        const bool known = resolve(nullptr);
        next_check = now + (known ? kRecheckInterval : milliseconds(100));
      }
      std::erase_if(retired_, [](const auto& node) { return node.use_count() == 1; });
    }
  }

  void subscribe() {
    const std::size_t n = sentinels_.size();
    for (std::size_t i = 0; i < n; ++i) {
      const NodeAddress& sentinel = sentinels_[(subscribed_index_ + i) % n];
      Result<ContextPtr> context = connect_to(sentinel, io_timeout_);
      if (!context) continue;
      if (Result<ReplyPtr> ok = command(context->get(), {"SUBSCRIBE", "+switch-master"}); !ok) {
        continue;
      }
      subscribed_index_ = (subscribed_index_ + i) % n;
      subscription_ = std::move(*context);
      return;
    }
    next_subscribe_ = SteadyClock::now() + milliseconds(200);
  }

  void read_messages() {
    if (redisBufferRead(subscription_.get()) != REDIS_OK) {  // that sentinel went away
      subscription_.reset();
      subscribed_index_ = (subscribed_index_ + 1) % sentinels_.size();
      resolve_requested_ = true;
      return;
    }
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(subscription_.get(), &raw) != REDIS_OK) {
        subscription_.reset();
        return;
      }
      if (raw == nullptr) return;
      const ReplyPtr message(static_cast<redisReply*>(raw));
      // ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"]
      if (message->type == REDIS_REPLY_ARRAY && message->elements == 3 &&
          message->element[2]->type == REDIS_REPLY_STRING) {
        const std::string_view text(message->element[2]->str, message->element[2]->len);
        if (text.starts_with(name_ + " ")) resolve_requested_ = true;
      }
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
  ContextPtr subscription_;
  SteadyClock::time_point next_subscribe_{};
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
