// What a layer, plan or attribute name may be made of: letters, digits, '_' and '-'. Names begin
// the keys of their layer and appear in HTTP headers and metrics labels, so nothing that could
// separate key parts (':') or break a header line may be in them. Pure; thread-safe.
#pragma once

#include <algorithm>
#include <string_view>

namespace spillway::policy {

inline bool is_name(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

}  // namespace spillway::policy
