#include "src/policy/routes.h"

#include <algorithm>
#include <map>

#include "src/core/text.h"
#include "src/policy/endpoint_path.h"

namespace spillway::policy {
namespace {

bool is_param_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::unexpected<Error> bad_route(std::string_view route, const std::string& why) {
  return invalid_argument("route " + quote_for_error(route) + " " + why);
}

}  // namespace

bool RouteTable::method_matches(const Pattern& pattern, std::string_view method) {
  return pattern.method.empty() || pattern.method == method ||
         (pattern.method == "GET" && method == "HEAD");
}

bool RouteTable::matches(const Pattern& pattern, const std::vector<std::string_view>& segments) {
  const std::vector<Segment>& parts = pattern.segments;
  const bool rest = !parts.empty() && parts.back().part == Part::kRest;
  const std::size_t fixed = rest ? parts.size() - 1 : parts.size();
  if (rest ? segments.size() <= fixed : segments.size() != fixed) return false;
  for (std::size_t i = 0; i < fixed; ++i) {
    if (parts[i].part == Part::kLiteral && parts[i].text != segments[i]) return false;
  }
  return true;
}

bool RouteTable::more_specific(const Pattern& a, const Pattern& b) {
  const auto rest = [](const Pattern& p) {
    return !p.segments.empty() && p.segments.back().part == Part::kRest;
  };
  if (rest(a) != rest(b)) return !rest(a);
  if (rest(a) && a.segments.size() != b.segments.size()) {
    return a.segments.size() > b.segments.size();  // the longer prefix
  }
  const auto literals = [](const Pattern& p) {
    return std::count_if(p.segments.begin(), p.segments.end(),
                         [](const Segment& s) { return s.part == Part::kLiteral; });
  };
  if (literals(a) != literals(b)) return literals(a) > literals(b);
  const std::size_t n = std::min(a.segments.size(), b.segments.size());
  for (std::size_t i = 0; i < n; ++i) {
    const bool la = a.segments[i].part == Part::kLiteral;
    const bool lb = b.segments[i].part == Part::kLiteral;
    if (la != lb) return la;
  }
  if (a.method.empty() != b.method.empty()) return !a.method.empty();
  return a.index < b.index;
}

Result<RouteTable> RouteTable::make(const std::vector<std::string>& written, bool case_sensitive) {
  RouteTable table;
  table.case_sensitive_ = case_sensitive;
  std::map<std::string, std::size_t> shapes;  // what a route matches -> its index
  for (std::size_t index = 0; index < written.size(); ++index) {
    const std::string& route = written[index];
    Pattern pattern{.index = index};
    std::string_view path = route;
    if (route.starts_with('/') && route.find(' ') != std::string::npos) {
      return bad_route(route, "has a space (a route is written \"[METHOD ]/path\")");
    }
    if (const std::size_t space = route.find(' '); space != std::string::npos) {
      auto method = canonical_method(std::string_view(route).substr(0, space));
      if (!method) return bad_route(route, "has a bad method: " + method.error().message);
      pattern.method = *method;
      path = std::string_view(route).substr(space + 1);
      table.uses_methods_ = true;
    }
    if (!path.starts_with('/')) {
      return bad_route(route, "must be a path starting with '/', optionally after a method");
    }
    std::string shape = pattern.method + " ";
    std::size_t start = 1;
    while (start <= path.size()) {
      std::size_t end = path.find('/', start);
      if (end == std::string_view::npos) end = path.size();
      const std::string_view raw = path.substr(start, end - start);
      start = end + 1;
      if (raw.empty()) continue;  // a repeated or trailing slash
      if (!pattern.segments.empty() && pattern.segments.back().part == Part::kRest) {
        return bad_route(route, "has segments after \"**\" (it must be the last)");
      }
      if (raw == "**") {
        pattern.segments.push_back({Part::kRest, ""});
        shape.append("/\x02");
        continue;
      }
      if (raw.starts_with('{') && raw.ends_with('}')) {
        if (!is_param_name(raw.substr(1, raw.size() - 2))) {
          return bad_route(route, "has a parameter " + quote_for_error(raw) +
                                      " whose name is not letters, digits or '_'");
        }
        pattern.segments.push_back({Part::kParam, ""});
        shape.append("/\x01");
        continue;
      }
      if (raw.find_first_of("{}*?#;") != std::string_view::npos) {
        return bad_route(route, "has a segment " + quote_for_error(raw) +
                                    " that is neither literal text, {name} nor ** (and a literal "
                                    "holds none of { } * ? # ;)");
      }
      auto literal = canonical_path("/" + std::string(raw), !case_sensitive);
      if (!literal) return bad_route(route, literal.error().message);
      if (*literal == "/" || raw == "..") {
        return bad_route(route, "has a dot segment " + quote_for_error(raw));
      }
      pattern.segments.push_back({Part::kLiteral, literal->substr(1)});
      shape.append(*literal);
    }
    auto [earlier, fresh] = shapes.emplace(shape, index);
    if (!fresh) {
      return bad_route(
          route, "matches the same requests as route " + quote_for_error(written[earlier->second]));
    }
    const bool exact = std::all_of(pattern.segments.begin(), pattern.segments.end(),
                                   [](const Segment& s) { return s.part == Part::kLiteral; });
    if (exact) {
      if (shape.back() == ' ') shape.push_back('/');  // the root route
      table.exact_.emplace(shape, index);
      if (!pattern.method.empty()) ++table.method_exact_paths_[shape.substr(shape.find(' ') + 1)];
    } else {
      table.patterns_.push_back(std::move(pattern));
    }
  }
  std::sort(table.patterns_.begin(), table.patterns_.end(), more_specific);
  return table;
}

std::optional<std::size_t> RouteTable::match(std::string_view path, std::string_view method) const {
  if (!exact_.empty()) {
    std::string key;
    key.reserve(method.size() + 1 + path.size());
    const auto find = [&](std::string_view m) -> std::optional<std::size_t> {
      key.assign(m).append(" ").append(path);
      auto it = exact_.find(key);
      return it == exact_.end() ? std::nullopt : std::optional(it->second);
    };
    if (uses_methods_ && !method.empty()) {
      if (auto found = find(method)) return found;
      if (method == "HEAD") {
        if (auto found = find("GET")) return found;
      }
    }
    if (auto found = find("")) return found;
  }
  if (patterns_.empty()) return std::nullopt;
  const std::vector<std::string_view> segments = split(path);
  for (const Pattern& pattern : patterns_) {
    if (method_matches(pattern, method) && matches(pattern, segments)) return pattern.index;
  }
  return std::nullopt;
}

// A request without a method gets the most specific route for any method; the method matters
// when a route naming one would beat it: an exact route for this path, or a template that comes
// first in the order of specificity (where, at equal specificity, a method comes first).
bool RouteTable::method_matters(std::string_view path) const {
  if (!uses_methods_) return false;
  if (method_exact_paths_.contains(std::string(path))) return true;
  if (exact_.contains(" " + std::string(path))) return false;  // an exact route beats templates
  const std::vector<std::string_view> segments = split(path);
  for (const Pattern& pattern : patterns_) {
    if (matches(pattern, segments)) return !pattern.method.empty();
  }
  return false;
}

std::vector<std::string_view> RouteTable::split(std::string_view path) {
  std::vector<std::string_view> segments;
  for (std::size_t start = 1; start < path.size();) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    segments.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return segments;
}

}  // namespace spillway::policy
