// HTTP routing by method and path, in one place for the decision service (src/server/service.cc)
// and the admin API (src/server/admin_service.cc): a table of routes, each a path (or a template),
// the methods it allows (as the Allow header spells them, "GET, HEAD") and its handler. A request
// finds its route by path (find_route; none: the service's 404); a method the route does not
// allow is a 405 whose Allow header is the route's list (method_not_allowed).
//
// Templates: "{name}" stands for one path segment (any bytes but '/', maybe none), and a "*" that
// ends the template for the rest of the path ('/' included); what they stand for is captured, in
// order (at most kMaxCaptures). Any other byte matches itself. Routes are tried in table order,
// the first that matches wins, so an exact path goes before a template that would match it too.
//
// Pure functions and constant tables; thread-safe. A Route holds views of text that outlives it
// (string literals in the tables).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "src/server/http_server.h"

namespace spillway::server {

// What a template's "{name}" and "*" stood for in a path, in order.
struct RouteCaptures {
  static constexpr std::size_t kMaxCaptures = 2;
  std::array<std::string_view, kMaxCaptures> values;
  std::size_t count = 0;
};

template <typename Handler>
struct Route {
  constexpr Route(std::string_view route_path, std::string_view methods, Handler answer,
                  std::string_view refusal_words = {})
      : path(route_path),
        allow(methods),
        handler(answer),
        refusal(refusal_words),
        is_template(route_path.find('{') != std::string_view::npos || route_path.ends_with('*')) {}

  std::string_view path;   // exact, or a template
  std::string_view allow;  // the methods, as in Allow: "GET, HEAD"
  Handler handler;
  // The 405's message, "{method}", "{path}" and "{allow}" standing for the request's method, its
  // path and `allow`; empty: "method {method} is not allowed on {path} (allow: {allow})".
  std::string_view refusal;
  bool is_template;  // an exact path is compared as a whole
};

// Whether `path` matches the template `pattern`; what it captured in `captures`.
bool matches_template(std::string_view pattern, std::string_view path, RouteCaptures& captures);

// Whether `method` is one of `allow` ("GET, HEAD"), exactly as spelt.
bool allows_method(std::string_view allow, std::string_view method);

// The 405 for `method` on `path`: {"error": the refusal's words} and `Allow: <allow>`.
HttpResponse method_not_allowed(std::string_view refusal, std::string_view allow,
                                std::string_view method, std::string_view path);

// The first route of `routes` that `path` (the target without its query) matches, or null;
// `captures` holds what its template captured.
template <typename Handler, std::size_t N>
const Route<Handler>* find_route(const Route<Handler> (&routes)[N], std::string_view path,
                                 RouteCaptures& captures) {
  for (const Route<Handler>& route : routes) {
    captures.count = 0;
    if (route.is_template ? matches_template(route.path, path, captures) : route.path == path) {
      return &route;
    }
  }
  return nullptr;
}

// The 405 when `route` does not allow `method`, else nullopt.
template <typename Handler>
std::optional<HttpResponse> refuse_method(const Route<Handler>& route, std::string_view method,
                                          std::string_view path) {
  if (allows_method(route.allow, method)) return std::nullopt;
  return method_not_allowed(route.refusal, route.allow, method, path);
}

}  // namespace spillway::server
