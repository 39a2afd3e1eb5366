#include "src/cli/admin_client.h"

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json.hpp>
#include <cctype>

#include "src/core/text.h"

namespace spillway::cli {
namespace http = boost::beast::http;
namespace json = boost::json;

Result<AdminEndpoint> parse_admin_url(const std::string& url) {
  Result<HttpUrl> parsed = parse_http_url(url, "");
  if (!parsed) {
    return invalid_argument(
        "--admin " + quote_for_error(url, kUrlShown) +
        ": expected http://host:port (server.admin_listen): " + parsed.error().message);
  }
  return parsed->endpoint();
}

Result<AdminAnswer> admin_request(const AdminEndpoint& endpoint, const std::string& token,
                                  http::verb method, const std::string& target, std::string body,
                                  const std::string& content_type, AdminTimeouts timeouts) {
  http::request<http::string_body> request(method, target, 11);
  request.set(http::field::host, endpoint.host);
  request.set(http::field::authorization, "Bearer " + token);
  if (!body.empty() || method == http::verb::put || method == http::verb::post) {
    request.set(http::field::content_type, content_type);
    request.body() = std::move(body);
    request.prepare_payload();
  }
  auto answer = http_request(endpoint, request, timeouts);
  if (!answer) {
    return std::unexpected(Error{
        Errc::kUnavailable,
        "admin API at " + endpoint.host + ":" + endpoint.port + ": " + answer.error().message});
  }
  return answer;
}

std::string percent_encoded(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string admin_error_message(const AdminAnswer& answer) {
  boost::system::error_code ec;
  json::value value = json::parse(answer.body, ec);
  if (!ec && value.is_object()) {
    if (const json::value* error = value.as_object().if_contains("error");
        error != nullptr && error->is_string()) {
      return std::string(error->as_string());
    }
  }
  return answer.body;
}

}  // namespace spillway::cli
