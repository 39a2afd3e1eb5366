// The table of backend URL schemes, looked up; their forms listed; URLs printed without passwords
// (see backend_schemes.h).
#include "src/core/backend_schemes.h"

namespace spillway {

const BackendScheme* find_backend_scheme(std::string_view url) {
  for (const BackendScheme& scheme : kBackendSchemes) {
    if (scheme.kind == BackendKind::kMemory) {
      if (url == scheme.name || url == scheme.prefix) return &scheme;
    } else if (url.starts_with(scheme.prefix)) {
      return &scheme;
    }
  }
  return nullptr;
}

bool is_redis_backend_url(std::string_view url) {
  const BackendScheme* scheme = find_backend_scheme(url);
  return scheme != nullptr && scheme->kind != BackendKind::kMemory;
}

std::string backend_url_forms() {
  std::string out;
  for (std::size_t i = 0; i < kBackendSchemes.size(); ++i) {
    if (i > 0) out += i + 1 < kBackendSchemes.size() ? ", " : " or ";
    out += kBackendSchemes[i].form;
  }
  return out;
}

std::string printable_url(std::string_view url) {
  constexpr std::string_view kMask = "***";
  std::string out(url);
  const BackendScheme* known = find_backend_scheme(url);
  // User info: after "://" and up to the last '@' before the query of a scheme whose URLs have
  // user info; of any other text (a mistyped scheme, no "://"), up to the last '@' of all. A unix
  // socket's path has none: an '@' in it is part of the path.
  const bool has_user_info = known == nullptr || known->kind != BackendKind::kRedisUnix;
  const std::size_t scheme = out.find("://");
  const std::size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const std::size_t end =
      known == nullptr || scheme == std::string::npos ? std::string::npos : out.find('?', start);
  const std::size_t at =
      has_user_info ? out.rfind('@', end == std::string::npos ? end : end - 1) : std::string::npos;
  if (at != std::string::npos && at < start) {
    out.replace(0, at, kMask);  // an '@' before the "://": no URL the parsers read
  } else if (at != std::string::npos) {
    const std::size_t colon = out.find(':', start);
    if (scheme != std::string::npos && colon < at) {
      out.replace(colon + 1, at - colon - 1, kMask);  // user:password@ -> user:***@
    } else if (at > start) {
      out.replace(start, at - start, kMask);
    }
  }
  // "password=" query parameters (unix:///path?password=…).
  if (const std::size_t query = out.find('?'); query != std::string::npos) {
    for (std::size_t found = out.find("password=", query); found != std::string::npos;
         found = out.find("password=", found + 1)) {
      if (out[found - 1] != '?' && out[found - 1] != '&') continue;
      const std::size_t value = found + 9;
      const std::size_t value_end = out.find_first_of("&#", value);
      out.replace(value, (value_end == std::string::npos ? out.size() : value_end) - value, kMask);
    }
  }
  return out;
}

}  // namespace spillway
