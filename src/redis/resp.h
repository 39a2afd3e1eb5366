// RESP (Redis's wire protocol, version 2) for the Client: a command encoded as bulk strings, and
// a reply decoded by hiredis 0.14's reader turned into a Reply we own.
//
// Thread safety: pure functions; a ReaderPtr is used by one connection (one thread) at a time.
// Ownership: ReaderPtr and ReplyPtr own the hiredis objects and free them with hiredis.
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

#include "spillway/error.h"
#include "src/redis/reply.h"

namespace spillway::redis {

struct ReaderDeleter {
  void operator()(redisReader* reader) const { redisReaderFree(reader); }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// "*<count>\r\n" then "$<length>\r\n<bytes>\r\n" per argument (binary safe), in one allocation.
// An empty command is kInvalidArgument.
Result<std::string> format_command(const std::vector<std::string>& args);

// A copy of hiredis's reply (arrays element by element); the caller still owns `raw`.
Reply convert(const redisReply& raw);

}  // namespace spillway::redis
