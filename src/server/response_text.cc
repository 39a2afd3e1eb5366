// append_response (see response_text.h) and the header checks it needs; error_body.
#include "src/server/response_text.h"

#include <array>
#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <string_view>

#include "src/core/decimal.h"
#include "src/core/json_writer.h"
#include "src/core/text.h"

namespace spillway::server {
namespace {

namespace http = boost::beast::http;

// A comma-separated header value ("keep-alive, Upgrade") holds `token`, ignoring case.
bool contains_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (ascii_iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// RFC 9110 token characters: what a header name may be made of.
constexpr std::array<bool, 256> kTokenChars = [] {
  std::array<bool, 256> table{};
  for (int c = '0'; c <= '9'; ++c) table[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) table[c] = table[c - 'a' + 'A'] = true;
  for (const char c : std::string_view("!#$%&'*+-.^_`|~"))
    table[static_cast<unsigned char>(c)] = true;
  return table;
}();

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

// A header value that cannot end the header or start a new one.
bool is_safe_value(std::string_view text) {
  for (const char c : text) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

}  // namespace

int append_response(std::string& out, const HttpResponse& response, ResponseFraming& framing) {
  int status = response.status;
  if (status < 200 || status > 999) status = 500;  // no interim responses, 3 digits
  const bool no_body = status == 204 || status == 304;

  const auto known = http::int_to_status(static_cast<unsigned>(status));
  std::string_view reason = "Unknown";
  if (known != http::status::unknown) {
    const auto text = http::obsolete_reason(known);
    reason = std::string_view(text.data(), text.size());
  }
  out.append("HTTP/1.1 ");
  append_decimal(out, status);
  out.append(" ").append(reason.data(), reason.size()).append("\r\n");
  // Content-Type describes a body: none on a response that has none (an empty one, 204, 304).
  // HEAD keeps it, since it describes the body that GET would send.
  const bool has_body = !no_body && !response.body.empty();
  if (has_body && !response.content_type.empty() && is_safe_value(response.content_type)) {
    out.append("Content-Type: ").append(response.content_type).append("\r\n");
  }
  if (!no_body) {
    out.append("Content-Length: ");
    append_decimal(out, static_cast<std::int64_t>(response.body.size()));
    out.append("\r\n");
  }
  for (const auto& [name, value] : response.headers) {
    if (!is_token(name) || !is_safe_value(value)) continue;
    if (ascii_iequals(name, "content-length") || ascii_iequals(name, "transfer-encoding")) continue;
    if (ascii_iequals(name, "connection")) {
      if (contains_token(value, "close")) framing.keep_alive = false;
      continue;
    }
    out.append(name).append(": ").append(value).append("\r\n");
  }
  if (!framing.keep_alive) {
    out.append("Connection: close\r\n");
  } else if (framing.http10) {
    out.append("Connection: keep-alive\r\n");
  }
  out.append("\r\n");
  if (!no_body && !framing.head) out.append(response.body);
  return status;
}

std::string error_body(std::string_view message) {
  std::string out;
  JsonWriter(out).begin_object().member("error", utf8_or_escaped(message)).end_object();
  return out;
}

}  // namespace spillway::server
