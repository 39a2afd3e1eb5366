// The routes of a by_endpoint layer (docs/SPEC.md §5.1) and which one a request path matches.
//
// A route is written "[METHOD ]/path", each segment of the path one of:
//   literal   "search"    matched after both sides are canonical (src/policy/endpoint_path.h);
//   {name}    one segment, any value ("/orders/{id}/export");
//   **        the last segment only: one or more segments ("/files/**" matches "/files/a/b",
//             not "/files").
// The most specific route wins: an exact route (no {name}, no **), then templates without **
// (more literal segments first, then the one whose first differing segment is literal), then
// prefixes ending in ** (more segments before ** first, then as templates). At equal specificity
// a route naming the request's method beats one for any method. A "GET" route also matches HEAD.
// Two routes that match the same requests ("/search" and "/search/", "/{a}" and "/{b}", and
// "/Search" when matching ignores case) are an error naming both.
//
// Immutable once made; match() is thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spillway/error.h"

namespace spillway::policy {

class RouteTable {
 public:
  // `written[i]` is route i as in the config; match() answers with i. Errors quote the route.
  static Result<RouteTable> make(const std::vector<std::string>& written, bool case_sensitive);

  // The route matching a path already made canonical with this table's case rule
  // (canonical_path(raw, !case_sensitive())), for `method` (upper case; "" when unknown: then only
  // routes for any method match).
  std::optional<std::size_t> match(std::string_view path, std::string_view method) const;

  // Whether a route naming a method matches this (canonical) path: then a request without its
  // method cannot be matched safely.
  bool method_matters(std::string_view path) const;

  bool case_sensitive() const { return case_sensitive_; }
  bool uses_methods() const { return uses_methods_; }

 private:
  enum class Part { kLiteral, kParam, kRest };
  struct Segment {
    Part part = Part::kLiteral;
    std::string text;  // the canonical literal
  };
  struct Pattern {
    std::size_t index = 0;
    std::string method;  // "" = any
    std::vector<Segment> segments;
  };
  static bool matches(const Pattern& pattern, const std::vector<std::string_view>& segments);
  static std::vector<std::string_view> split(std::string_view path);
  static bool method_matches(const Pattern& pattern, std::string_view method);
  // Sorts patterns most specific first.
  static bool more_specific(const Pattern& a, const Pattern& b);

  bool case_sensitive_ = false;
  bool uses_methods_ = false;
  // Exact routes by "METHOD path" (" path" for any method); templates and prefixes in order of
  // specificity.
  std::unordered_map<std::string, std::size_t> exact_;
  std::vector<Pattern> patterns_;
  std::unordered_map<std::string, int> method_exact_paths_;  // paths of exact routes with a method
};

}  // namespace spillway::policy
