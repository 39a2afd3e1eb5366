// Template matching, the method check and the 405 of the route tables (see router.h).
#include "src/server/router.h"

#include <algorithm>
#include <string>
#include <utility>

#include "src/server/decision_response.h"

namespace spillway::server {
namespace {

constexpr std::string_view kDefaultRefusal =
    "method {method} is not allowed on {path} (allow: {allow})";

}  // namespace

bool matches_template(std::string_view pattern, std::string_view path, RouteCaptures& captures) {
  std::size_t at = 0;  // in path
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '*' && i + 1 == pattern.size()) {
      if (captures.count == RouteCaptures::kMaxCaptures) return false;
      captures.values[captures.count++] = path.substr(at);
      return true;
    }
    if (c == '{') {
      const std::size_t close = pattern.find('}', i);
      if (close == std::string_view::npos || captures.count == RouteCaptures::kMaxCaptures) {
        return false;
      }
      const std::size_t end = std::min(path.find('/', at), path.size());
      captures.values[captures.count++] = path.substr(at, end - at);
      at = end;
      i = close;
      continue;
    }
    if (at == path.size() || path[at] != c) return false;
    ++at;
  }
  return at == path.size();
}

bool allows_method(std::string_view allow, std::string_view method) {
  while (!allow.empty()) {
    const std::size_t comma = allow.find(", ");
    if (allow.substr(0, comma) == method) return true;
    if (comma == std::string_view::npos) break;
    allow.remove_prefix(comma + 2);
  }
  return false;
}

HttpResponse method_not_allowed(std::string_view refusal, std::string_view allow,
                                std::string_view method, std::string_view path) {
  if (refusal.empty()) refusal = kDefaultRefusal;
  std::string message;
  while (!refusal.empty()) {
    const std::size_t open = refusal.find('{');
    message.append(refusal.substr(0, open));
    if (open == std::string_view::npos) break;
    refusal.remove_prefix(open);
    bool replaced = false;
    for (const auto& [name, value] : {std::pair{std::string_view("{method}"), method},
                                      std::pair{std::string_view("{path}"), path},
                                      std::pair{std::string_view("{allow}"), allow}}) {
      if (refusal.starts_with(name)) {
        message.append(value);
        refusal.remove_prefix(name.size());
        replaced = true;
        break;
      }
    }
    if (!replaced) {  // a brace of the text itself ("/v1/tenants/{key}")
      message.push_back('{');
      refusal.remove_prefix(1);
    }
  }
  HttpResponse response = error_response(405, message);
  response.headers.emplace_back("Allow", std::string(allow));
  return response;
}

}  // namespace spillway::server
