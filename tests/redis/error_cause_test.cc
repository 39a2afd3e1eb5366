// What serve's lines say about a Redis that fails every check (src/redis/error_cause.h): each
// Redis error code that does, and a call without a reply, named in plain words; a code only as a
// word of its own, and nothing for a message that names none.
#include "src/redis/error_cause.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace spillway::redis {
namespace {

TEST(RedisErrorCause, EachCodeThatFailsEveryCheckIsNamedInPlainWords) {
  for (const auto& [message, words] : {
           std::pair{"redis replied: NOAUTH Authentication required.", "unauthenticated"},
           std::pair{"redis replied: ERR Protocol error: unauthenticated multibulk length",
                     "the server requires a password"},
           std::pair{"redis 127.0.0.1:6379: not connected (AUTH failed: WRONGPASS invalid "
                     "username-password pair or user is disabled.)",
                     "wrong password or user"},
           std::pair{"redis replied: NOPERM this user has no permissions to access one of the "
                     "keys used as arguments",
                     "lacks a permission"},
           std::pair{"redis replied: LOADING Redis is loading the dataset in memory",
                     "loading its dataset"},
           std::pair{"redis replied: READONLY You can't write against a read only replica. "
                     "script: 468bc76c, on @user_script:1.",
                     "read-only replica"},
           std::pair{"redis replied: MASTERDOWN Link with MASTER is down", "lost its primary"},
           std::pair{"redis replied: MISCONF Redis is configured to save RDB snapshots",
                     "snapshot"},
           std::pair{"redis replied: OOM command not allowed when used memory > 'maxmemory'.",
                     "out of memory"},
           std::pair{"redis replied: BUSY Redis is busy running a script.", "running too long"},
           std::pair{"redis 127.0.0.1:1: no reply in time (timeout 50 ms, including time queued)",
                     "no reply"},
           std::pair{"redis: no answer within 50 ms (the check waited in the queue)", "no reply"},
           std::pair{"redis sentinel: no answer from the primary in time", "no reply"},
       }) {
    const std::string explained = with_error_cause(message);
    EXPECT_TRUE(explained.starts_with(std::string(message) + "; ")) << explained;
    EXPECT_NE(explained.find(words), std::string::npos) << explained;
  }
}

TEST(RedisErrorCause, ACodeCountsOnlyAsAWordOfItsOwn) {
  for (const char* message : {"redis 127.0.0.1:1: connect failed: Connection refused",
                              "redis replied: ERR unknown command 'BLOOM'",
                              "redis replied: ERR NOAUTHX something", "ROOM full", ""}) {
    EXPECT_EQ(error_cause(message), "") << message;
    EXPECT_EQ(with_error_cause(message), message);
  }
}

}  // namespace
}  // namespace spillway::redis
