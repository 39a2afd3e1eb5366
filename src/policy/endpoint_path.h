// The canonical form of a request path, so that every spelling an application behind a proxy
// serves as one route is limited as that route (docs/SPEC.md §5.1). Over-matching costs nothing
// (a request the application would answer 404 spends the route's budget); under-matching is a
// bypass. canonical_path():
//   1. drops the query ("?…") and the fragment ("#…");
//   2. decodes percent-escapes of unreserved characters (RFC 3986 §2.3: A-Z a-z 0-9 - . _ ~) and
//      writes every other escape with upper-case hex ("%2f" -> "%2F": an encoded '/' stays one
//      segment's byte, never a separator); bytes above 0x7e are escaped the same way, so a raw
//      UTF-8 path and its escaped form are one path;
//   3. drops path parameters (";jsessionid=…" at the end of a segment, as servlet containers do);
//   4. merges repeated slashes and removes dot segments (RFC 3986 §5.2.4: "." and "..", also
//      written "%2e"); ".." above the root stays at the root;
//   5. drops a trailing slash ("/search/" -> "/search"; "/" stays "/");
//   6. with fold_case, lower-cases ASCII letters (escapes keep their upper-case hex).
// A path that is not one is an error naming the problem: empty, not starting with '/' (after the
// query is dropped), a control byte or space, '%' not followed by two hex digits, or an escaped
// control byte ("%00", "%0a"). Canonicalising a canonical path gives it back unchanged.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "spillway/error.h"

namespace spillway::policy {

Result<std::string> canonical_path(std::string_view raw, bool fold_case);

// ASCII upper-case of an HTTP method ("post" -> "POST", "m-search" -> "M-SEARCH"); an error unless
// it is an RFC 9110 token of at most 32 characters.
Result<std::string> canonical_method(std::string_view raw);

}  // namespace spillway::policy
