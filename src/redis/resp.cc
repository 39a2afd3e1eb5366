// format_command and convert (see resp.h).
#include "src/redis/resp.h"

#include <cstddef>

#include "src/core/decimal.h"

namespace spillway::redis {

Result<std::string> format_command(const std::vector<std::string>& args) {
  if (args.empty()) return invalid_argument("redis command has no arguments");
  const auto append_header = [](std::string& out, char kind, std::size_t number) {
    out.push_back(kind);
    append_decimal(out, number);
    out.append("\r\n");
  };
  std::size_t size = 16;
  for (const std::string& arg : args) size += arg.size() + 24;
  std::string out;
  out.reserve(size);
  append_header(out, '*', args.size());
  for (const std::string& arg : args) {
    append_header(out, '$', arg.size());
    out.append(arg).append("\r\n");
  }
  return out;
}

Reply convert(const redisReply& raw) {
  Reply reply;
  switch (raw.type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      reply.type = raw.type == REDIS_REPLY_STRING   ? Reply::Type::kString
                   : raw.type == REDIS_REPLY_STATUS ? Reply::Type::kStatus
                                                    : Reply::Type::kError;
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_INTEGER:
      reply.type = Reply::Type::kInteger;
      reply.integer = raw.integer;
      break;
    case REDIS_REPLY_ARRAY:
      reply.type = Reply::Type::kArray;
      reply.elements.reserve(raw.elements);
      for (std::size_t i = 0; i < raw.elements; ++i)
        reply.elements.push_back(convert(*raw.element[i]));
      break;
    default:  // REDIS_REPLY_NIL
      reply.type = Reply::Type::kNil;
      break;
  }
  return reply;
}

}  // namespace spillway::redis
