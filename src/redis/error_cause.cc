// error_cause (see error_cause.h).
#include "src/redis/error_cause.h"

#include <array>
#include <cctype>
#include <utility>

namespace spillway::redis {
namespace {

// Redis' error codes (the first word of an error reply) that fail every check, and what each
// means for this limiter.
constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kCauses = {{
    {"NOAUTH",
     "unauthenticated: the server requires a password and none was given "
     "(redis://:PASSWORD@host:port, or redis://USER:PASSWORD@host:port)"},
    {"WRONGPASS", "wrong password or user: the server refused the URL's credentials"},
    {"NOPERM",
     "the user lacks a permission a check needs (EVALSHA, EVAL and the key prefix's keys)"},
    {"LOADING", "the server is loading its dataset into memory; it answers once that is done"},
    {"READONLY",
     "the server is a read-only replica: checks write, so point the URL at the primary"},
    {"MASTERDOWN", "the replica lost its primary and serves no data"},
    {"MISCONF", "the server refuses writes because its last snapshot (RDB) failed"},
    {"OOM", "the server is out of memory (maxmemory reached with a policy that evicts nothing)"},
    {"BUSY", "a script or module command is running too long on the server"},
}};

bool is_word_character(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

bool names_redis_code(std::string_view message, std::string_view code) {
  for (std::size_t at = message.find(code); at != std::string_view::npos;
       at = message.find(code, at + 1)) {
    const std::size_t end = at + code.size();
    const bool starts = at == 0 || !is_word_character(message[at - 1]);
    const bool ends = end == message.size() || message[end] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

std::string_view error_cause(std::string_view message) {
  for (const auto& [code, cause] : kCauses) {
    if (names_redis_code(message, code)) return cause;
  }
  // A server that needs a password answers a long command of a client that gave none with "ERR
  // Protocol error: unauthenticated multibulk length" (or "bulk length") and closes the
  // connection.
  if (message.find("Protocol error: unauthenticated") != std::string_view::npos) {
    return kCauses[0].second;
  }
  // The client's and the batcher's words for a call whose deadline passed.
  // ("… no reply in time …", "redis: no answer within 50 ms …", "redis cluster: no answer for
  // slot 7 in time", "redis sentinel: no answer from the primary in time").
  if (message.find("no reply in time") != std::string_view::npos ||
      message.find("no answer") != std::string_view::npos) {
    return "no reply: the address accepts connections but nothing answered a check in time (not "
           "a Redis server, or a stopped or overloaded one)";
  }
  return {};
}

std::string with_error_cause(std::string message) {
  const std::string_view cause = error_cause(message);
  if (!cause.empty()) message.append("; ").append(cause);
  return message;
}

}  // namespace spillway::redis
