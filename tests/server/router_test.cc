// The route tables of the decision service and the admin API (src/server/router.h): templates and
// their captures, table order, the method check and the 405 with Allow.
#include "src/server/router.h"

#include <gtest/gtest.h>

#include <string>

namespace spillway::server {
namespace {

using TestRoute = Route<int>;

const TestRoute kTestRoutes[] = {
    {"/v1/tenants", "GET", 1, "use GET on /v1/tenants (PUT a record at /v1/tenants/{key})"},
    {"/v1/tenants/import", "POST", 2},
    {"/v1/tenants/{key}/counters/*", "DELETE", 3},
    {"/v1/tenants/{key}", "GET, PUT, DELETE", 4,
     "method {method} is not allowed on a tenant (allow: {allow})"},
};

int route_of(std::string_view path, RouteCaptures& captures) {
  const TestRoute* route = find_route(kTestRoutes, path, captures);
  return route == nullptr ? 0 : route->handler;
}

TEST(Router, ExactPathsFirstThenTemplatesWithTheirCaptures) {
  RouteCaptures captures;
  EXPECT_EQ(route_of("/v1/tenants", captures), 1);
  EXPECT_EQ(captures.count, 0u);
  EXPECT_EQ(route_of("/v1/tenants/import", captures), 2);
  EXPECT_EQ(captures.count, 0u);
  EXPECT_EQ(route_of("/v1/tenants/k%2F1", captures), 4);
  ASSERT_EQ(captures.count, 1u);
  EXPECT_EQ(captures.values[0], "k%2F1");
  EXPECT_EQ(route_of("/v1/tenants/", captures), 4) << "an empty segment is captured too";
  EXPECT_EQ(captures.values[0], "");
  EXPECT_EQ(route_of("/v1/tenants/k1/counters/edge/x", captures), 3);
  ASSERT_EQ(captures.count, 2u);
  EXPECT_EQ(captures.values[0], "k1");
  EXPECT_EQ(captures.values[1], "edge/x") << "a trailing * takes the rest, '/' included";
  EXPECT_EQ(route_of("/v1/tenants/k1/counters/", captures), 3);
  EXPECT_EQ(captures.values[1], "");
}

TEST(Router, APathNoRouteMatchesFindsNone) {
  RouteCaptures captures;
  for (const std::string_view path : {"/v1/tenant", "/v1/tenantsx", "/v1/tenants/a/b",
                                      "/v1/tenants/a/countersx", "/V1/TENANTS", "", "/"}) {
    EXPECT_EQ(route_of(path, captures), 0) << path;
  }
}

TEST(Router, MethodsAreMatchedAsSpeltInTheAllowList) {
  EXPECT_TRUE(allows_method("GET, HEAD", "GET"));
  EXPECT_TRUE(allows_method("GET, HEAD", "HEAD"));
  EXPECT_FALSE(allows_method("GET, HEAD", "get"));
  EXPECT_FALSE(allows_method("GET, HEAD", "GE"));
  EXPECT_FALSE(allows_method("GET, HEAD", "POST"));
  EXPECT_FALSE(allows_method("GET, HEAD", ""));
  EXPECT_TRUE(allows_method("POST", "POST"));
}

TEST(Router, A405NamesTheMethodAndCarriesAllow) {
  EXPECT_FALSE(refuse_method(kTestRoutes[3], "PUT", "/v1/tenants/k").has_value());

  const std::optional<HttpResponse> tenant = refuse_method(kTestRoutes[3], "POST", "/v1/tenants/k");
  ASSERT_TRUE(tenant.has_value());
  EXPECT_EQ(tenant->status, 405);
  EXPECT_EQ(tenant->body,
            "{\"error\":\"method POST is not allowed on a tenant (allow: GET, PUT, DELETE)\"}");
  ASSERT_EQ(tenant->headers.size(), 1u);
  EXPECT_EQ(tenant->headers[0].first, "Allow");
  EXPECT_EQ(tenant->headers[0].second, "GET, PUT, DELETE");

  const std::optional<HttpResponse> list = refuse_method(kTestRoutes[0], "PUT", "/v1/tenants");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->body,
            "{\"error\":\"use GET on /v1/tenants (PUT a record at /v1/tenants/{key})\"}")
      << "a brace that names no placeholder stays";

  const std::optional<HttpResponse> plain =
      refuse_method(kTestRoutes[1], "GET", "/v1/tenants/import");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->body,
            "{\"error\":\"method GET is not allowed on /v1/tenants/import (allow: POST)\"}");
}

}  // namespace
}  // namespace spillway::server
