// Canonical request paths (src/policy/endpoint_path.h): a table of the spellings applications
// serve as one route, the malformed paths refused, and properties: canonicalisation is
// idempotent, and every spelling built by the rules canonicalises to the path it spells.
#include "src/policy/endpoint_path.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

namespace spillway::policy {
namespace {

struct Canonical {
  std::string raw;
  std::string folded;     // fold_case = true
  std::string sensitive;  // fold_case = false
};

TEST(CanonicalPath, SpellingsOfOnePathAreOnePath) {
  const std::vector<Canonical> table = {
      {"/search", "/search", "/search"},
      {"/search/", "/search", "/search"},
      {"//search", "/search", "/search"},
      {"/search//", "/search", "/search"},
      {"/%73earch", "/search", "/search"},
      {"/%73%65%61%72%63%68", "/search", "/search"},
      {"/./search", "/search", "/search"},
      {"/api/../search", "/search", "/search"},
      {"/api/%2e%2e/search", "/search", "/search"},
      {"/api/%2E%2E/search", "/search", "/search"},
      {"/api/.%2e/search", "/search", "/search"},
      {"/../../search", "/search", "/search"},
      {"/Search", "/search", "/Search"},
      {"/SEARCH/", "/search", "/SEARCH"},
      {"/%53earch", "/search", "/Search"},
      {"/search?q=x", "/search", "/search"},
      {"/search/?q=x/../y", "/search", "/search"},
      {"/search#frag", "/search", "/search"},
      {"/search;jsessionid=1", "/search", "/search"},
      {"/api/..;/search", "/search", "/search"},
      {"/search;x/", "/search", "/search"},
      {"/", "/", "/"},
      {"//", "/", "/"},
      {"/.", "/", "/"},
      {"/..", "/", "/"},
      {"/?", "/", "/"},
      {"/files/a%2Fb", "/files/a%2Fb", "/files/a%2Fb"},  // an encoded '/' stays in its segment
      {"/files/a%2fb", "/files/a%2Fb", "/files/a%2Fb"},  // hex case is normalised
      {"/files/%3b", "/files/%3B", "/files/%3B"},        // an encoded ';' is data
      {"/caf\xc3\xa9", "/caf%C3%A9", "/caf%C3%A9"},      // raw UTF-8 == its escaped form
      {"/caf%c3%a9", "/caf%C3%A9", "/caf%C3%A9"},
      {"/a~b-c_d.e", "/a~b-c_d.e", "/a~b-c_d.e"},
      {"/%7e", "/~", "/~"},
      {"/orders/42/export", "/orders/42/export", "/orders/42/export"},
      {"/a/b/../../c", "/c", "/c"},
      {"/a/./b/./", "/a/b", "/a/b"},
  };
  for (const Canonical& c : table) {
    auto folded = canonical_path(c.raw, true);
    ASSERT_TRUE(folded.has_value()) << c.raw << ": " << folded.error().message;
    EXPECT_EQ(*folded, c.folded) << c.raw;
    auto sensitive = canonical_path(c.raw, false);
    ASSERT_TRUE(sensitive.has_value()) << c.raw;
    EXPECT_EQ(*sensitive, c.sensitive) << c.raw;
  }
}

TEST(CanonicalPath, MalformedPathsAreErrorsThatNameTheProblem) {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"", "is empty"},
      {"?q=1", "is empty"},
      {"search", "must start with '/'"},
      {"http://host/search", "must start with '/'"},
      {"/%zz", "two hex digits"},
      {"/search%", "two hex digits"},
      {"/search%4", "two hex digits"},
      {"/%00", "control character (%00)"},
      {"/a%0ab", "control character (%0a)"},
      {"/a%7F", "control character (%7F)"},
      {std::string("/a\0b", 4), "control character or space at byte 2"},
      {"/a\tb", "control character or space"},
      {"/a b", "control character or space"},
      {"/a\x7f", "control character or space"},
  };
  for (const auto& [raw, why] : table) {
    auto path = canonical_path(raw, true);
    ASSERT_FALSE(path.has_value()) << raw << " gave " << *path;
    EXPECT_EQ(path.error().code, Errc::kInvalidArgument);
    EXPECT_NE(path.error().message.find(why), std::string::npos) << path.error().message;
    EXPECT_EQ(path.error().message.find('\n'), std::string::npos);  // one line, whatever came
  }
}

TEST(CanonicalMethod, UpperCasesLettersAndRefusesTheRest) {
  EXPECT_EQ(canonical_method("post").value(), "POST");
  EXPECT_EQ(canonical_method("Get").value(), "GET");
  EXPECT_FALSE(canonical_method("").has_value());
  EXPECT_FALSE(canonical_method("GET /x").has_value());
  EXPECT_EQ(canonical_method("m-search").value(), "M-SEARCH");  // any RFC 9110 token
  EXPECT_FALSE(canonical_method("G(T").has_value());
  EXPECT_FALSE(canonical_method(std::string(33, 'A')).has_value());
}

// Any byte string: canonicalising twice changes nothing more, and a canonical path is accepted.
RC_GTEST_PROP(CanonicalPathProperties, IsIdempotent, ()) {
  const auto alphabet = rc::gen::element<char>('/', '.', '%', '2', 'e', 'E', 'f', 'F', 'a', 'S',
                                               ';', '?', '~', '\xc3', '\xa9', '3', 'b');
  const std::string raw = "/" + *rc::gen::container<std::string>(alphabet);
  for (bool fold : {true, false}) {
    auto once = canonical_path(raw, fold);
    if (!once) continue;  // malformed input: nothing to compare
    auto twice = canonical_path(*once, fold);
    RC_ASSERT(twice.has_value());
    RC_ASSERT(*twice == *once);
  }
}

// A spelling of `segments` made by the rules (escapes of unreserved characters, repeated
// slashes, "." and "x/.." detours, path parameters, a trailing slash, a query) is that path.
RC_GTEST_PROP(CanonicalPathProperties, EveryVariantOfAPathIsThatPath, ()) {
  const auto segment_char =
      rc::gen::element<char>('a', 'b', 'z', 'A', 'Q', '0', '9', '-', '_', '~', '.');
  const auto segments = *rc::gen::resize(
      6, rc::gen::nonEmpty(rc::gen::container<std::vector<std::string>>(
             rc::gen::suchThat(rc::gen::nonEmpty(rc::gen::container<std::string>(segment_char)),
                               [](const std::string& s) { return s != "." && s != ".."; }))));
  std::string plain;
  for (const std::string& s : segments) plain += "/" + s;
  std::string variant;
  for (const std::string& s : segments) {
    variant += *rc::gen::element<std::string>("/", "//", "/./", "/x/../", "/%2e/");
    if (variant.back() != '/') variant += "/";
    for (char c : s) {
      if (*rc::gen::arbitrary<bool>()) {
        static constexpr char kHex[] = "0123456789abcdef";
        variant += '%';
        variant += kHex[static_cast<unsigned char>(c) >> 4];
        variant += kHex[c & 0xf];
      } else if (*rc::gen::arbitrary<bool>() && c >= 'a' && c <= 'z') {
        variant += static_cast<char>(c - 'a' + 'A');
      } else {
        variant += c;
      }
    }
    if (*rc::gen::arbitrary<bool>()) variant += ";p=1";
  }
  if (*rc::gen::arbitrary<bool>()) variant += "/";
  if (*rc::gen::arbitrary<bool>()) variant += "?q=/../x";
  std::string folded = plain;
  for (char& c : folded) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  auto canonical = canonical_path(variant, true);
  RC_ASSERT(canonical.has_value());
  RC_ASSERT(*canonical == folded);
}

}  // namespace
}  // namespace spillway::policy
