// The Store interface's default asynchronous forms: decide synchronously, then deliver the answer
// through complete_inline(), so that a caller chaining checks from its callback never recurses.
#include "spillway/store.h"
#include "src/core/inline_completion.h"

namespace spillway {

void Store::check_async(std::string_view key, const Limit& limit, std::int64_t cost,
                        std::optional<Micros> now, Callback done) {
  complete_inline(done, check(key, limit, cost, now));
}

void Store::check_all_async(std::span<const KeyedLimit> checks, std::int64_t cost,
                            std::optional<Micros> now, AllCallback done) {
  complete_inline(done, check_all(checks, cost, now));
}

}  // namespace spillway
