// Escaping for text put into HTML: element text and attribute values, and JSON put inside a
// <script> element. Pure functions; no allocation beyond the returned string.
#pragma once

#include <string>
#include <string_view>

namespace spillway::pages {

// &, <, >, " and ' as character references: safe as element text and in a quoted attribute.
std::string html_escape(std::string_view text);

// html_escape, and what XML also refuses taken out: control characters other than tab, LF and
// CR are dropped, and bytes that are not UTF-8 become U+FFFD. For text in an SVG document.
std::string xml_text(std::string_view text);

// JSON text made safe inside <script>…</script>: every "</" becomes "<\/" (the same JSON value),
// so no string inside can close the element. (JSON itself is written by src/core/json_writer.h.)
std::string script_safe_json(std::string_view json);

}  // namespace spillway::pages
