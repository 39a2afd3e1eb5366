// Route templates of by_endpoint layers (src/policy/routes.h): what each form matches, which
// route is the most specific, methods, and the config errors of malformed or ambiguous routes.
#include "src/policy/routes.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "src/policy/endpoint_path.h"

namespace spillway::policy {
namespace {

// The route (as written) that `raw` with `method` matches, or "" for none.
std::string matched(const std::vector<std::string>& routes, const std::string& raw,
                    const std::string& method = "", bool case_sensitive = false) {
  auto table = RouteTable::make(routes, case_sensitive);
  EXPECT_TRUE(table.has_value()) << table.error().message;
  auto path = canonical_path(raw, !case_sensitive);
  EXPECT_TRUE(path.has_value()) << raw;
  auto index = table->match(*path, method);
  return index ? routes[*index] : "";
}

TEST(Routes, EachFormMatchesWhatItSays) {
  const std::vector<std::string> routes = {"/search", "/orders/{id}/export", "/files/**", "/"};
  EXPECT_EQ(matched(routes, "/search"), "/search");
  EXPECT_EQ(matched(routes, "//Search/"), "/search");
  EXPECT_EQ(matched(routes, "/search/more"), "");
  EXPECT_EQ(matched(routes, "/orders/1/export"), "/orders/{id}/export");
  EXPECT_EQ(matched(routes, "/orders/abc%2Fdef/export"), "/orders/{id}/export");
  EXPECT_EQ(matched(routes, "/orders/export"), "");
  EXPECT_EQ(matched(routes, "/orders/1/2/export"), "");
  EXPECT_EQ(matched(routes, "/files/a"), "/files/**");
  EXPECT_EQ(matched(routes, "/files/a/b/c"), "/files/**");
  EXPECT_EQ(matched(routes, "/files"), "");  // ** is one or more segments
  EXPECT_EQ(matched(routes, "/"), "/");
  EXPECT_EQ(matched(routes, "/other"), "");
}

TEST(Routes, TheMostSpecificRouteWins) {
  const std::vector<std::string> routes = {"/**",          "/a/**",     "/a/b/**", "/a/{x}/c",
                                           "/a/b/{y}",     "/{p}/b/c",  "/a/b/c",  "/{p}/{q}",
                                           "/a/{x}/{y}/d", "/a/b/{y}/d"};
  EXPECT_EQ(matched(routes, "/a/b/c"), "/a/b/c");    // exact first
  EXPECT_EQ(matched(routes, "/a/b/x"), "/a/b/{y}");  // more literal segments
  EXPECT_EQ(matched(routes, "/a/x/c"), "/a/{x}/c");  // two literals beat one
  EXPECT_EQ(matched(routes, "/x/b/c"), "/{p}/b/c");
  EXPECT_EQ(matched(routes, "/a/b/x/d"), "/a/b/{y}/d");  // three literals beat two
  EXPECT_EQ(matched(routes, "/x/y"), "/{p}/{q}");        // a template beats a prefix
  EXPECT_EQ(matched(routes, "/a/b/x/y/z"), "/a/b/**");   // the longest prefix
  EXPECT_EQ(matched(routes, "/a/x/y/z"), "/a/**");
  EXPECT_EQ(matched(routes, "/x/y/z"), "/**");
  // As many literals: the route whose first differing segment is literal.
  EXPECT_EQ(matched({"/a/{x}/c", "/a/b/{y}"}, "/a/b/c"), "/a/b/{y}");
  EXPECT_EQ(matched({"/a/b/{y}", "/a/{x}/c"}, "/a/b/c"), "/a/b/{y}");
}

TEST(Routes, MethodsRefineARouteAndGetCoversHead) {
  const std::vector<std::string> routes = {"POST /search", "/search", "GET /items/{id}",
                                           "delete /items/**"};
  EXPECT_EQ(matched(routes, "/search", "POST"), "POST /search");
  EXPECT_EQ(matched(routes, "/search", "GET"), "/search");
  EXPECT_EQ(matched(routes, "/search", ""), "/search");
  EXPECT_EQ(matched(routes, "/items/1", "GET"), "GET /items/{id}");
  EXPECT_EQ(matched(routes, "/items/1", "HEAD"), "GET /items/{id}");
  EXPECT_EQ(matched(routes, "/items/1", "PUT"), "");
  EXPECT_EQ(matched(routes, "/items/1", "DELETE"), "delete /items/**");
  EXPECT_TRUE(RouteTable::make(routes, false)->uses_methods());
  EXPECT_FALSE(RouteTable::make({"/a", "/b/{x}"}, false)->uses_methods());
  // Whether a request without its method could be matched wrongly.
  auto table = RouteTable::make(routes, false);
  EXPECT_TRUE(table->method_matters("/search"));
  EXPECT_TRUE(table->method_matters("/items/7"));
  EXPECT_FALSE(table->method_matters("/other"));
  EXPECT_FALSE(table->method_matters("/items"));
  // An exact route for any method beats every template, whatever the method.
  auto exact = RouteTable::make({"/orders/1", "POST /orders/{id}", "/orders/{id}"}, false);
  EXPECT_FALSE(exact->method_matters("/orders/1"));
  EXPECT_TRUE(exact->method_matters("/orders/2"));
  // A more specific template for any method beats a looser one with a method.
  auto looser = RouteTable::make({"POST /a/**", "/a/{x}"}, false);
  EXPECT_FALSE(looser->method_matters("/a/b"));
  EXPECT_TRUE(looser->method_matters("/a/b/c"));
}

TEST(Routes, CaseSensitiveTablesKeepCase) {
  EXPECT_EQ(matched({"/Search"}, "/search", "", true), "");
  EXPECT_EQ(matched({"/Search"}, "/Search/", "", true), "/Search");
  EXPECT_EQ(matched({"/Search"}, "/SEARCH", "", false), "/Search");
  EXPECT_TRUE(RouteTable::make({"/Search", "/search"}, true).has_value());
}

TEST(Routes, MalformedAndAmbiguousRoutesAreErrorsNamingThem) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> table = {
      {{"search"}, "must be a path starting with '/'"},
      {{"/a b"}, "has a space"},
      {{"P(ST /a"}, "bad method"},
      {{"POST search"}, "must be a path starting with '/'"},
      {{"/files/**/x"}, "after \"**\""},
      {{"/a/{}"}, "whose name is not letters"},
      {{"/a/{x-y}"}, "whose name is not letters"},
      {{"/a/x{id}"}, "neither literal text"},
      {{"/a/*"}, "neither literal text"},
      {{"/a/b;c"}, "neither literal text"},
      {{"/a/%zz"}, "two hex digits"},
      {{"/a/./b"}, "dot segment"},
      {{"/a/../b"}, "dot segment"},
      {{"/search", "/search/"}, "matches the same requests as route \"/search\""},
      {{"/search", "/Search"}, "matches the same requests"},
      {{"/s%65arch", "/search"}, "matches the same requests"},
      {{"/o/{a}", "/o/{b}"}, "matches the same requests as route \"/o/{a}\""},
      {{"GET /x", "get /x"}, "matches the same requests"},
  };
  for (const auto& [routes, why] : table) {
    auto made = RouteTable::make(routes, false);
    ASSERT_FALSE(made.has_value()) << routes.back();
    EXPECT_NE(made.error().message.find(why), std::string::npos) << made.error().message;
    EXPECT_NE(made.error().message.find(routes.back()), std::string::npos) << made.error().message;
  }
}

// Any concrete path built from a template (a segment for each {name}, one or more for **), in any
// spelling canonical_path accepts, matches that template when it is the only route.
RC_GTEST_PROP(RouteProperties, EveryInstanceOfATemplateMatchesIt, ()) {
  const auto word = rc::gen::nonEmpty(
      rc::gen::container<std::string>(rc::gen::element<char>('a', 'b', 'q', 'Z', '0', '7', '-')));
  const int parts = *rc::gen::inRange(1, 6);
  std::string route, path;
  for (int i = 0; i < parts; ++i) {
    const int kind = *rc::gen::inRange(0, i + 1 == parts ? 3 : 2);
    if (kind == 0) {
      const std::string literal = *word;
      route += "/" + literal;
      path += "/" + literal;
    } else if (kind == 1) {
      route += "/{p" + std::to_string(i) + "}";
      path += "/" + *word;
    } else {
      route += "/**";
      const int rest = *rc::gen::inRange(1, 4);
      for (int j = 0; j < rest; ++j) path += "/" + *word;
    }
  }
  const std::string variant = "/" + path + "/?q=1";  // a doubled and a trailing slash, a query
  auto table = RouteTable::make({route}, false);
  RC_ASSERT(table.has_value());
  auto canonical = canonical_path(variant, true);
  RC_ASSERT(canonical.has_value());
  RC_ASSERT(table->match(*canonical, "GET") == std::optional<std::size_t>(0));
}

}  // namespace
}  // namespace spillway::policy
