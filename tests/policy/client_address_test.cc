// Who the client is behind trusted proxies (docs/SPEC.md §6, src/policy/client_address.h): the
// header the operator named, every field line of it, walked from the right; ports; RFC 7239
// Forwarded with quoted, unknown and obfuscated nodes; malformed values name the header.
#include "src/policy/client_address.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "src/policy/forwarded.h"

namespace spillway::policy {

// gtest shows addresses as text (found by argument-dependent lookup, so not in the namespace
// below).
[[maybe_unused]] static void PrintTo(const IpAddress& address, std::ostream* out) {
  *out << ip_key(address, 128);
}

namespace {

constexpr auto kXff = ClientIpHeader::kXForwardedFor;
constexpr auto kForwarded = ClientIpHeader::kForwarded;
constexpr auto kRealIp = ClientIpHeader::kXRealIp;

IpAddress address_of(std::string_view text) {
  Result<IpAddress> parsed = parse_ip(text);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << parsed.error().message;
  return parsed.value_or(IpAddress{});
}

std::vector<Cidr> trusted_proxies() {
  std::vector<Cidr> out;
  for (const char* text : {"10.0.0.0/8", "127.0.0.1/32", "fd00::/8"})
    out.push_back(*parse_cidr(text));
  return out;
}

Result<IpAddress> client(std::string_view peer, ClientIpHeader header,
                         const std::vector<std::string_view>& lines) {
  return client_address(address_of(peer), header, lines, trusted_proxies());
}

std::string show(const std::vector<std::string_view>& lines) {
  std::string out;
  for (std::string_view line : lines) out.append("[").append(line).append("]");
  return out;
}

// A request whose client address is `expected`.
struct Found {
  const char* peer;
  ClientIpHeader header;
  std::vector<std::string_view> lines;
  const char* expected;
};

void expect_found(const std::vector<Found>& cases) {
  for (const Found& c : cases) {
    Result<IpAddress> got = client(c.peer, c.header, c.lines);
    ASSERT_TRUE(got.has_value()) << client_ip_header_name(c.header) << " " << show(c.lines) << ": "
                                 << got.error().message;
    EXPECT_EQ(*got, address_of(c.expected))
        << client_ip_header_name(c.header) << " " << show(c.lines) << " from " << c.peer;
  }
}

// A request that is a 400 whose message holds every one of `mentions`.
struct Refused {
  ClientIpHeader header;
  std::vector<std::string_view> lines;
  std::vector<std::string> mentions;
};

void expect_refused(const std::vector<Refused>& cases) {
  for (const Refused& c : cases) {
    Result<IpAddress> got = client("10.0.0.1", c.header, c.lines);
    ASSERT_FALSE(got.has_value()) << client_ip_header_name(c.header) << " " << show(c.lines)
                                  << " accepted as " << ip_key(*got);
    EXPECT_EQ(got.error().code, Errc::kInvalidArgument);
    for (const std::string& mention : c.mentions) {
      EXPECT_NE(got.error().message.find(mention), std::string::npos)
          << "no " << mention << " in: " << got.error().message;
    }
    EXPECT_EQ(got.error().message.find('\n'), std::string::npos) << got.error().message;
  }
}

TEST(ClientIpHeaderSetting, NamesEachHeaderCaseInsensitively) {
  EXPECT_EQ(parse_client_ip_header("x-forwarded-for"), kXff);
  EXPECT_EQ(parse_client_ip_header("X-Forwarded-For"), kXff);
  EXPECT_EQ(parse_client_ip_header("forwarded"), kForwarded);
  EXPECT_EQ(parse_client_ip_header("Forwarded"), kForwarded);
  EXPECT_EQ(parse_client_ip_header("X-REAL-IP"), kRealIp);
  for (const char* bad : {"", "x-forwarded", "x-forwarded-for ", "real-ip", "forwarded-for"}) {
    EXPECT_EQ(parse_client_ip_header(bad), std::nullopt) << bad;
  }
  for (ClientIpHeader header : {kXff, kForwarded, kRealIp}) {
    EXPECT_EQ(parse_client_ip_header(client_ip_header_name(header)), header);
  }
}

TEST(ClientAddress, UntrustedPeerIgnoresEveryHeader) {
  expect_found({
      {"198.51.100.9", kXff, {"203.0.113.7"}, "198.51.100.9"},
      {"198.51.100.9", kXff, {"not-an-ip", "junk"}, "198.51.100.9"},
      {"198.51.100.9", kForwarded, {"for=\"unclosed"}, "198.51.100.9"},
      {"198.51.100.9", kRealIp, {"1.1.1.1", "2.2.2.2"}, "198.51.100.9"},
      {"2001:db8::9", kXff, {"203.0.113.7"}, "2001:db8::9"},
  });
  // And with no trusted proxies at all, nobody is believed.
  Result<IpAddress> got = client_address(address_of("10.0.0.1"), kXff, {}, {});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, address_of("10.0.0.1"));
  const std::vector<std::string_view> lines = {"203.0.113.7"};
  got = client_address(address_of("10.0.0.1"), kXff, lines, {});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, address_of("10.0.0.1"));
}

TEST(ClientAddress, AbsentOrBlankHeaderIsThePeer) {
  expect_found({
      {"10.0.0.1", kXff, {}, "10.0.0.1"},
      {"10.0.0.1", kXff, {"  "}, "10.0.0.1"},
      {"10.0.0.1", kXff, {"", " \t"}, "10.0.0.1"},
      {"10.0.0.1", kForwarded, {}, "10.0.0.1"},
      {"10.0.0.1", kForwarded, {" ", ","}, "10.0.0.1"},
      {"10.0.0.1", kRealIp, {}, "10.0.0.1"},
      {"10.0.0.1", kRealIp, {" "}, "10.0.0.1"},
  });
}

TEST(ClientAddress, XForwardedForWalksEveryLineFromTheRight) {
  expect_found({
      // One line: client -> spoofed entry it wrote itself -> proxies 10.1.1.1, 10.3.3.3 -> us.
      {"10.2.2.2", kXff, {"6.6.6.6, 203.0.113.7, 10.1.1.1,10.3.3.3"}, "203.0.113.7"},
      {"127.0.0.1", kXff, {"203.0.113.7"}, "203.0.113.7"},
      // HAProxy's `option forwardfor` adds its own line after the client's forged one.
      {"127.0.0.1", kXff, {"6.6.6.6", "203.0.113.7"}, "203.0.113.7"},
      {"127.0.0.1", kXff, {"6.6.6.6, 7.7.7.7", "", "203.0.113.7"}, "203.0.113.7"},
      {"10.0.0.1",
       kXff,
       {"garbage!", "203.0.113.7", "10.1.1.1", "10.2.2.2, 127.0.0.1"},
       "203.0.113.7"},
      // IPv6 hops and a mapped client.
      {"fd00::1", kXff, {"::ffff:198.51.100.4 , fd12::3"}, "198.51.100.4"},
      // Entries left of the client are not read; every entry trusted gives the leftmost.
      {"10.0.0.1", kXff, {"not an address, 203.0.113.7"}, "203.0.113.7"},
      {"10.0.0.1", kXff, {"10.9.9.9, 127.0.0.1", "10.1.1.1"}, "10.9.9.9"},
  });
}

TEST(ClientAddress, XForwardedForEntriesMayCarryAPort) {
  expect_found({
      {"10.0.0.1", kXff, {"203.0.113.7:5555"}, "203.0.113.7"},
      {"10.0.0.1", kXff, {"203.0.113.7:0"}, "203.0.113.7"},
      {"10.0.0.1", kXff, {"203.0.113.7:65535"}, "203.0.113.7"},
      {"10.0.0.1", kXff, {"[2001:db8::1]:443"}, "2001:db8::1"},
      {"10.0.0.1", kXff, {"[2001:db8::1]"}, "2001:db8::1"},
      {"10.0.0.1", kXff, {"[::ffff:203.0.113.7]:80"}, "203.0.113.7"},
      {"10.0.0.1", kXff, {"203.0.113.7, 10.0.0.2:8080", "[fd00::5]:1"}, "203.0.113.7"},
      // A bare IPv6 address is never address:port: these are addresses.
      {"10.0.0.1", kXff, {"2001:db8::1"}, "2001:db8::1"},
      {"10.0.0.1", kXff, {"2001:db8::1:443"}, "2001:db8::1:443"},
      {"10.0.0.1", kXff, {"::1"}, "::1"},
  });
}

TEST(ClientAddress, MalformedXForwardedForIsRefusedByName) {
  expect_refused({
      {kXff, {"1.2.3.4, 10.0.0.2, bogus!"}, {"X-Forwarded-For", "\"bogus!\""}},
      {kXff, {"unknown"}, {"X-Forwarded-For", "\"unknown\""}},
      {kXff, {"203.0.113.7, "}, {"X-Forwarded-For", "\"\""}},
      {kXff, {"203.0.113.7", " "}, {"X-Forwarded-For"}},
      {kXff, {"1.2.3.4:99999"}, {"X-Forwarded-For", "\"1.2.3.4:99999\"", "port"}},
      {kXff, {"1.2.3.4:"}, {"X-Forwarded-For", "\"1.2.3.4:\""}},
      {kXff, {"1.2.3.4:8x"}, {"X-Forwarded-For", "\"1.2.3.4:8x\""}},
      {kXff, {":80"}, {"X-Forwarded-For", "\":80\""}},
      {kXff, {"[1.2.3.4]:80"}, {"X-Forwarded-For", "\"[1.2.3.4]:80\"", "IPv6"}},
      {kXff, {"[2001:db8::1"}, {"X-Forwarded-For", "\"[2001:db8::1\""}},
      {kXff, {"[2001:db8::1]443"}, {"X-Forwarded-For", "\"[2001:db8::1]443\""}},
      {kXff, {"[2001:db8::1]:"}, {"X-Forwarded-For"}},
      {kXff, {"2001:db8::1%eth0"}, {"X-Forwarded-For", "\"2001:db8::1%eth0\""}},
      {kXff, {"1.2.3.4\x01"}, {"X-Forwarded-For", "\\x01"}},
  });
}

TEST(ClientAddress, XRealIpIsOneLineWithOneAddress) {
  expect_found({
      {"10.0.0.1", kRealIp, {" 2001:db8::7 "}, "2001:db8::7"},
      {"10.0.0.1", kRealIp, {"203.0.113.7:5555"}, "203.0.113.7"},
      {"10.0.0.1", kRealIp, {"[2001:db8::7]:443"}, "2001:db8::7"},
      // A trusted proxy is not skipped: X-Real-IP names one address, the one the proxy saw.
      {"10.0.0.1", kRealIp, {"10.5.5.5"}, "10.5.5.5"},
  });
  expect_refused({
      {kRealIp, {"nope"}, {"X-Real-IP", "\"nope\""}},
      {kRealIp, {"1.1.1.1, 2.2.2.2"}, {"X-Real-IP", "\"1.1.1.1, 2.2.2.2\""}},
      {kRealIp, {"6.6.6.6", "203.0.113.7"}, {"X-Real-IP", "2 times"}},
      {kRealIp, {"", "203.0.113.7"}, {"X-Real-IP", "2 times"}},
      {kRealIp, {"1.1.1.1", "1.1.1.1", "1.1.1.1"}, {"X-Real-IP", "3 times"}},
  });
}

TEST(ClientAddress, EachHeaderIsReadInItsOwnSyntax) {
  expect_found({
      {"10.0.0.1", kForwarded, {"for=203.0.113.7"}, "203.0.113.7"},
  });
  expect_refused({
      {kForwarded, {"203.0.113.7"}, {"Forwarded", "\"203.0.113.7\""}},
      {kXff, {"for=203.0.113.7"}, {"X-Forwarded-For", "\"for=203.0.113.7\""}},
  });
}

TEST(ClientAddress, ForwardedWalksForFromTheRight) {
  expect_found({
      // RFC 7239 §4 and §7's examples.
      {"10.0.0.1", kForwarded, {"for=\"_gazonk\", for=192.0.2.43"}, "192.0.2.43"},
      {"10.0.0.1", kForwarded, {"For=\"[2001:db8:cafe::17]:4711\""}, "2001:db8:cafe::17"},
      {"10.0.0.1", kForwarded, {"for=192.0.2.60;proto=http;by=203.0.113.43"}, "192.0.2.60"},
      {"10.0.0.1", kForwarded, {"for=192.0.2.43, for=198.51.100.17"}, "198.51.100.17"},
      {"10.0.0.1", kForwarded, {"for=\"192.0.2.43:47011\""}, "192.0.2.43"},
      {"10.0.0.1", kForwarded, {"for=\"[2001:db8::1]\""}, "2001:db8::1"},
      // Parameter names in any case, blanks around ";" and ",", empty elements and pairs.
      {"10.0.0.1", kForwarded, {"FOR=192.0.2.43"}, "192.0.2.43"},
      {"10.0.0.1", kForwarded, {"proto=https ; for=192.0.2.43 ;by=_p"}, "192.0.2.43"},
      {"10.0.0.1", kForwarded, {",, for=192.0.2.43;;, ,"}, "192.0.2.43"},
      // A quoted-pair stands for its character.
      {"10.0.0.1", kForwarded, {"for=\"\\[2001:db8::2\\]\""}, "2001:db8::2"},
      // Several lines are one list; the proxy's line comes last.
      {"10.0.0.1", kForwarded, {"for=6.6.6.6", "for=203.0.113.7;proto=https"}, "203.0.113.7"},
      // Separators inside a client's quoted string do not split its element.
      {"10.0.0.1", kForwarded, {"for=\"6.6.6.6, for=1.1.1.1\", for=203.0.113.7"}, "203.0.113.7"},
      // Trusted hops are skipped; a node left of the client is not read.
      {"10.0.0.1",
       kForwarded,
       {"for=not-read!, for=203.0.113.7, for=\"10.1.1.1:80\""},
       "203.0.113.7"},
      {"10.0.0.1", kForwarded, {"for=10.9.9.9, for=127.0.0.1"}, "10.9.9.9"},
  });
}

TEST(ClientAddress, ForwardedUnidentifiableHopIsKeyedByTheProxyThatReportedIt) {
  expect_found({
      // The peer reported an unknown or hidden client: everyone behind it shares the peer's key,
      // and what the client wrote further left is not believed.
      {"10.0.0.1", kForwarded, {"for=6.6.6.6, for=unknown"}, "10.0.0.1"},
      {"10.0.0.1", kForwarded, {"for=6.6.6.6", "for=UNKNOWN"}, "10.0.0.1"},
      {"10.0.0.1", kForwarded, {"for=6.6.6.6, for=_hidden"}, "10.0.0.1"},
      {"10.0.0.1", kForwarded, {"for=6.6.6.6, for=\"_SEVKISEK:_4711\""}, "10.0.0.1"},
      {"10.0.0.1", kForwarded, {"for=6.6.6.6, for=\"unknown:80\""}, "10.0.0.1"},
      // An element without `for` says nothing of who sent it: the same.
      {"10.0.0.1", kForwarded, {"for=6.6.6.6, proto=https;by=10.0.0.1"}, "10.0.0.1"},
      // Reported by a trusted proxy further along: that proxy is the key.
      {"10.0.0.1", kForwarded, {"for=6.6.6.6, for=unknown, for=10.1.1.1"}, "10.1.1.1"},
      {"10.0.0.1", kForwarded, {"for=6.6.6.6, for=_x, for=\"[fd00::7]:1\""}, "fd00::7"},
  });
}

TEST(ClientAddress, MalformedForwardedIsRefusedByName) {
  expect_refused({
      {kForwarded, {"for=\"[2001:db8::1]"}, {"Forwarded", "\"for=\\\"[2001:db8::1]\"", "closed"}},
      {kForwarded, {"for=2001:db8::1"}, {"Forwarded", "\"for=2001:db8::1\""}},
      {kForwarded, {"for=\"2001:db8::1\""}, {"Forwarded", "\"2001:db8::1\"", "brackets"}},
      {kForwarded, {"for=1.2.3.4;For=5.6.7.8"}, {"Forwarded", "twice"}},
      {kForwarded, {"for"}, {"Forwarded", "\"for\""}},
      {kForwarded, {"=1.2.3.4"}, {"Forwarded", "parameter name"}},
      {kForwarded, {"for="}, {"Forwarded", "value"}},
      {kForwarded, {"for=1.2.3.4 5.6.7.8"}, {"Forwarded", "\"5.6.7.8\""}},
      {kForwarded, {"for=\"1.2.3.4\"x"}, {"Forwarded"}},
      {kForwarded, {"for=\"1.2.3.4\x01\""}, {"Forwarded", "control", "\\x01"}},
      {kForwarded, {"for=\"1.2.3.4:99999\""}, {"Forwarded", "\"1.2.3.4:99999\"", "port"}},
      {kForwarded, {"for=\"1.2.3.4:\""}, {"Forwarded", "port"}},
      {kForwarded, {"for=\"[1.2.3.4]\""}, {"Forwarded", "IPv6"}},
      {kForwarded, {"for=\"[2001:db8::1]x\""}, {"Forwarded", "\"[2001:db8::1]x\""}},
      {kForwarded, {"for=\"[2001:db8::1\""}, {"Forwarded", "\"[2001:db8::1\""}},
      {kForwarded, {"for=300.1.1.1"}, {"Forwarded", "\"300.1.1.1\""}},
      {kForwarded, {"for=_"}, {"Forwarded", "\"_\""}},
      {kForwarded, {"for=6.6.6.6, for=\"_a b\""}, {"Forwarded", "\"_a b\""}},
      // A quote the client leaves open swallows the proxy's line: refused, never misread.
      {kForwarded, {"for=\"6.6.6.6", "for=203.0.113.7"}, {"Forwarded", "closed"}},
      {kForwarded, {"for=\"6.6.6.6", "for=\"[2001:db8::1]\""}, {"Forwarded"}},
  });
}

TEST(Forwarded, ElementsKeepTheirForValueUnquoted) {
  Result<std::vector<ForwardedElement>> elements =
      parse_forwarded("for=a;proto=http, by=b, , FOR=\"x\\\"y\" ,for=\"\"");
  ASSERT_TRUE(elements.has_value()) << elements.error().message;
  ASSERT_EQ(elements->size(), 4u);
  EXPECT_EQ((*elements)[0].for_node, "a");
  EXPECT_EQ((*elements)[1].for_node, std::nullopt);
  EXPECT_EQ((*elements)[2].for_node, "x\"y");
  EXPECT_EQ((*elements)[3].for_node, "");
  // An empty quoted node is not an address.
  EXPECT_FALSE(parse_forwarded_node("").has_value());
}

}  // namespace
}  // namespace spillway::policy
