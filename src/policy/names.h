// What a layer, plan or attribute name may be made of: letters, digits, '_' and '-'. Names begin
// the keys of their layer and appear in HTTP headers and metrics labels, so nothing that could
// separate key parts (':') or break a header line may be in them. Pure; thread-safe.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

namespace spillway::policy {

inline bool is_name(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// The members of POST /v1/check's body that are the request's own, not attributes: "cost" (what
// the request costs) and "reserve". An attribute of either name could never be given.
inline constexpr std::string_view kRequestFields[] = {"cost", "reserve"};

// Why `name` cannot be an attribute (a layer's key part, by_plan or by_endpoint attribute, or cost
// attribute), or nullopt: it must be a name (is_name) that begins with a letter or '_' (so that
// `cost: 5`, a number, is no attribute), and not one of kRequestFields. The text follows
// "attribute \"<name>\" ".
inline std::optional<std::string> attribute_name_problem(std::string_view name) {
  if (!is_name(name)) return "must be letters, digits, '_' or '-'";
  const char first = name.front();
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '_')) {
    return "is not an attribute name: a name begins with a letter or '_'";
  }
  for (std::string_view field : kRequestFields) {
    if (name == field) {
      return "is a field of the request itself (POST /v1/check reads \"cost\" and \"reserve\" "
             "as the request's cost and reservation), so no request could give it as an "
             "attribute: choose another name";
    }
  }
  return std::nullopt;
}

}  // namespace spillway::policy
