// SingleNode (see script_target.h); when a call is sent again is resend.h's rule.
#include "src/redis/script_target.h"

#include "src/redis/resend.h"

namespace spillway::redis {
namespace {

// One server: NOSCRIPT is sent again as EVAL; a call that was not applied is answered as it is
// (no other server, no failover to wait for: on_error and the circuit breaker decide).
void send(Client& client, ScriptCall call) {
  call.prepare();
  const std::vector<std::string>& args = *call.args;
  const ScriptTarget::Deadline deadline = call.deadline;
  const Client::CallMode mode{.durable = call.script.writes};
  client.call_async(args, deadline, mode,
                    [&client, call = std::move(call)](Result<Reply> reply) mutable {
                      if (resend_step(call, reply) == ResendStep::kWithSource) {
                        return send(client, std::move(call));
                      }
                      call.finish(std::move(reply));
                    });
}

}  // namespace

void SingleNode::run(std::uint16_t slot, const Script& script,
                     std::shared_ptr<std::vector<std::string>> args, Deadline deadline,
                     Callback done) {
  send(client_, ScriptCall{.slot = slot,
                           .script = script,
                           .args = std::move(args),
                           .deadline = deadline,
                           .done = std::move(done)});
}

}  // namespace spillway::redis
