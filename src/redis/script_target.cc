#include "src/redis/script_target.h"

namespace spillway::redis {
namespace {

bool is_noscript(const Result<Reply>& reply) {
  return reply && reply->is_error() && reply->text.starts_with("NOSCRIPT");
}

void call_script(Client& client, const Script& script,
                 std::shared_ptr<std::vector<std::string>> args, ScriptTarget::Deadline deadline,
                 bool with_source, ScriptTarget::Callback done) {
  set_script_call(*args, script, with_source);
  client.call_async(*args, deadline,
                    [&client, script, args, deadline, with_source,
                     done = std::move(done)](Result<Reply> reply) mutable {
                      if (is_noscript(reply) && !with_source) {
                        return call_script(client, script, std::move(args), deadline, true,
                                           std::move(done));
                      }
                      done(std::move(reply));
                    });
}

}  // namespace

void SingleNode::run(std::uint16_t, const Script& script,
                     std::shared_ptr<std::vector<std::string>> args, Deadline deadline,
                     Callback done) {
  call_script(client_, script, std::move(args), deadline, false, std::move(done));
}

}  // namespace spillway::redis
