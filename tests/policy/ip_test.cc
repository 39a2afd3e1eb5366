// Client IP handling (docs/SPEC.md §6): parsing, edge keys and CIDRs. The trusted-proxy walk is
// tested in client_address_test.cc.
#include "src/policy/ip.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace spillway::policy {
namespace {

IpAddress ip(std::string_view text) {
  Result<IpAddress> parsed = parse_ip(text);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << parsed.error().message;
  return parsed.value_or(IpAddress{});
}

Cidr parsed_cidr(std::string_view text) {
  Result<Cidr> parsed = parse_cidr(text);
  EXPECT_TRUE(parsed.has_value()) << text << ": " << parsed.error().message;
  return parsed.value_or(Cidr{});
}

IpAddress v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  IpAddress out;
  out.bytes[0] = a;
  out.bytes[1] = b;
  out.bytes[2] = c;
  out.bytes[3] = d;
  return out;
}

IpAddress v6(std::array<std::uint16_t, 8> groups) {
  IpAddress out;
  out.v6 = true;
  for (std::size_t i = 0; i < 8; ++i) {
    out.bytes[2 * i] = static_cast<std::uint8_t>(groups[i] >> 8);
    out.bytes[2 * i + 1] = static_cast<std::uint8_t>(groups[i] & 0xff);
  }
  return out;
}

TEST(IpParse, AcceptsDottedQuads) {
  EXPECT_EQ(ip("203.0.113.7"), v4(203, 0, 113, 7));
  EXPECT_EQ(ip("0.0.0.0"), v4(0, 0, 0, 0));
  EXPECT_EQ(ip("255.255.255.255"), v4(255, 255, 255, 255));
  EXPECT_EQ(ip("10.0.0.1"), v4(10, 0, 0, 1));
  EXPECT_FALSE(ip("1.2.3.4").v6);
}

TEST(IpParse, RejectsMalformedIpv4) {
  for (const char* bad :
       {"",           "1.2.3",      "1.2.3.4.5", "256.1.1.1", "1.2.3.-4",  "+1.2.3.4",
        "1.+2.3.4",   "01.2.3.4",   "1.2.3.010", "1.2.3.00",  "1..3.4",    "1.2.3.4.",
        ".1.2.3.4",   "1.2.3.4 ",   " 1.2.3.4",  "a.b.c.d",   "1.2.3.0x4", "1234.1.1.1",
        "1.2.3.4/32", "1.2.3.4:80", "localhost", "4294967295"}) {
    Result<IpAddress> parsed = parse_ip(bad);
    EXPECT_FALSE(parsed.has_value()) << "accepted \"" << bad << "\"";
  }
}

TEST(IpParse, ErrorsQuoteTheInput) {
  Result<IpAddress> parsed = parse_ip("300.1.1.1");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_NE(parsed.error().message.find("\"300.1.1.1\""), std::string::npos)
      << parsed.error().message;
  Result<IpAddress> control = parse_ip("1.2.3.4\n5");
  ASSERT_FALSE(control.has_value());
  EXPECT_EQ(control.error().message.find('\n'), std::string::npos) << control.error().message;
}

TEST(IpParse, AcceptsIpv6TextForms) {
  const IpAddress doc = v6({0x2001, 0xdb8, 0, 0, 0, 0, 0, 1});
  EXPECT_EQ(ip("2001:db8::1"), doc);
  EXPECT_EQ(ip("2001:0db8:0000:0000:0000:0000:0000:0001"), doc);
  EXPECT_EQ(ip("2001:DB8:0:0:0:0:0:1"), doc);
  EXPECT_EQ(ip("2001:db8:0::0:1"), doc);
  EXPECT_EQ(ip("::"), v6({0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ip("::1"), v6({0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(ip("fe80::"), v6({0xfe80, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ip("1:2:3:4:5:6:7::"), v6({1, 2, 3, 4, 5, 6, 7, 0}));
  EXPECT_EQ(ip("::2:3:4:5:6:7:8"), v6({0, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(ip("1:2:3:4:5:6:7:8"), v6({1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(ip("64:ff9b::192.0.2.33"), v6({0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x0221}));
  EXPECT_EQ(ip("1:2:3:4:5:6:1.2.3.4"), v6({1, 2, 3, 4, 5, 6, 0x0102, 0x0304}));
  EXPECT_EQ(ip("::1.2.3.4"), v6({0, 0, 0, 0, 0, 0, 0x0102, 0x0304}));  // not mapped: stays v6
}

TEST(IpParse, RejectsMalformedIpv6) {
  for (const char* bad : {":",
                          ":::",
                          "1:::2",
                          "1::2::3",
                          "1:2:3:4:5:6:7",
                          "1:2:3:4:5:6:7:8:9",
                          "1:2:3:4:5:6:7:8::",
                          "::1:2:3:4:5:6:7:8",
                          "12345::1",
                          "g::1",
                          ":1::2",
                          "1::2:",
                          "1:2:3:4:5:6:7:8:",
                          "fe80::1%eth0",
                          "fe80::1%1",
                          "[::1]",
                          "[2001:db8::1]:80",
                          "::1.2.3",
                          "::1.2.3.256",
                          "1.2.3.4::",
                          "::1.2.3.4:5",
                          "1:2:3:4:5:6:7:1.2.3.4",
                          "2001:db8::01.2.3.4",
                          " ::1",
                          "::1 ",
                          "::-1",
                          "::+1",
                          "2001:db8::/32"}) {
    Result<IpAddress> parsed = parse_ip(bad);
    EXPECT_FALSE(parsed.has_value()) << "accepted \"" << bad << "\"";
  }
}

TEST(IpParse, RejectsZonesAndBracketsByName) {
  Result<IpAddress> zone = parse_ip("fe80::1%eth0");
  ASSERT_FALSE(zone.has_value());
  EXPECT_NE(zone.error().message.find("zone"), std::string::npos) << zone.error().message;
  Result<IpAddress> brackets = parse_ip("[::1]");
  ASSERT_FALSE(brackets.has_value());
  EXPECT_NE(brackets.error().message.find("brackets"), std::string::npos)
      << brackets.error().message;
}

TEST(IpParse, MappedIpv6CountsAsIpv4) {
  EXPECT_EQ(ip("::ffff:192.0.2.1"), v4(192, 0, 2, 1));
  EXPECT_EQ(ip("::FFFF:c000:0201"), v4(192, 0, 2, 1));
  EXPECT_EQ(ip("0:0:0:0:0:ffff:192.0.2.1"), v4(192, 0, 2, 1));
  EXPECT_EQ(ip_key(ip("::ffff:203.0.113.7")), "203.0.113.7");
  EXPECT_EQ(ip_key(ip("::ffff:203.0.113.7")), ip_key(ip("203.0.113.7")));
  // Near misses are ordinary IPv6 addresses.
  EXPECT_TRUE(ip("::fffe:192.0.2.1").v6);
  EXPECT_TRUE(ip("1::ffff:192.0.2.1").v6);
}

TEST(IpKey, Ipv4IsTheWholeAddress) {
  EXPECT_EQ(ip_key(ip("203.0.113.7")), "203.0.113.7");
  EXPECT_EQ(ip_key(ip("0.0.0.0")), "0.0.0.0");
  EXPECT_EQ(ip_key(ip("10.0.0.1"), 8), "10.0.0.1");  // the prefix applies to IPv6 only
  EXPECT_NE(ip_key(ip("203.0.113.7")), ip_key(ip("203.0.113.8")));
}

TEST(IpKey, Ipv6AddressesInOneSlash64ShareAKey) {
  const std::string a = ip_key(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd"));
  const std::string b = ip_key(ip("2001:db8:1:2::1"));
  const std::string c = ip_key(ip("2001:DB8:1:2:ffff:ffff:ffff:ffff"));
  EXPECT_EQ(a, "2001:db8:1:2::/64");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_NE(a, ip_key(ip("2001:db8:1:3::1")));
  EXPECT_NE(a, ip_key(ip("2001:db8:1:1:ffff:ffff:ffff:ffff")));
  EXPECT_EQ(ip_key(ip("2001:db8:1:3::1")), "2001:db8:1:3::/64");
}

TEST(IpKey, PrefixLengthIsConfigurable) {
  const IpAddress address = ip("2001:db8:abcd:1234:5678:9abc:def0:1234");
  EXPECT_EQ(ip_key(address, 128), "2001:db8:abcd:1234:5678:9abc:def0:1234/128");
  EXPECT_EQ(ip_key(address, 56), "2001:db8:abcd:1200::/56");
  EXPECT_EQ(ip_key(address, 48), "2001:db8:abcd::/48");
  EXPECT_EQ(ip_key(address, 33), "2001:db8:8000::/33");
  EXPECT_EQ(ip_key(address, 1), "::/1");
  EXPECT_EQ(ip_key(ip("8000::1"), 1), "8000::/1");
  // Out-of-range prefix lengths are clamped to 1..128.
  EXPECT_EQ(ip_key(address, 0), ip_key(address, 1));
  EXPECT_EQ(ip_key(address, 500), ip_key(address, 128));
  EXPECT_EQ(ip_key(ip("2001:db8::1"), 48), ip_key(ip("2001:db8:0:ffff::1"), 48));
}

TEST(IpKey, PrintsRfc5952CanonicalForm) {
  struct Case {
    const char* in;
    const char* key;
  };
  for (const Case& c : {
           Case{"2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1/128"},
           Case{"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1/128"},     // first of equal runs
           Case{"2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1/128"},       // longest run, not first
           Case{"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1/128"},  // a lone 0 stays
           Case{"0:0:0:0:0:0:0:0", "::/128"},
           Case{"0:0:0:0:0:0:0:1", "::1/128"},
           Case{"1:0:0:0:0:0:0:0", "1::/128"},
           Case{"0:1:0:1:0:1:0:1", "0:1:0:1:0:1:0:1/128"},
           Case{"fe80:0:0:0:0200:5eff:fe00:5301", "fe80::200:5eff:fe00:5301/128"},
           Case{"ABCD:EF01:2345:6789:ABCD:EF01:2345:6789",
                "abcd:ef01:2345:6789:abcd:ef01:2345:6789/128"},
           Case{"::1.2.3.4", "::102:304/128"},
       }) {
    EXPECT_EQ(ip_key(ip(c.in), 128), c.key) << c.in;
  }
}

TEST(CidrParse, AcceptsNetworksAndSingleAddresses) {
  Cidr ten = parsed_cidr("10.0.0.0/8");
  EXPECT_EQ(ten.network, v4(10, 0, 0, 0));
  EXPECT_EQ(ten.prefix_bits, 8);
  Cidr doc = parsed_cidr("2001:db8::/32");
  EXPECT_EQ(doc.network, v6({0x2001, 0xdb8, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(doc.prefix_bits, 32);
  EXPECT_EQ(parsed_cidr("127.0.0.1").prefix_bits, 32);
  EXPECT_EQ(parsed_cidr("::1").prefix_bits, 128);
  EXPECT_EQ(parsed_cidr("0.0.0.0/0").prefix_bits, 0);
  EXPECT_EQ(parsed_cidr("::/0").prefix_bits, 0);
  EXPECT_EQ(parsed_cidr("1.2.3.4/32").network, v4(1, 2, 3, 4));
  // Host bits are cleared.
  EXPECT_EQ(parsed_cidr("10.1.2.3/8"), ten);
  EXPECT_EQ(parsed_cidr("2001:db8:ffff::1/32"), doc);
  // An IPv4-mapped network counts as the IPv4 network.
  EXPECT_EQ(parsed_cidr("::ffff:10.0.0.0/104"), ten);
}

TEST(CidrParse, RejectsJunkAndOutOfRangePrefixes) {
  for (const char* bad :
       {"", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/8/8",
        "10.0.0.0/a", "10.0.0.0/ 8", "10.0.0/8", "2001:db8::/129", "2001:db8::/1000", "::1/",
        "banana", "10.0.0.0/0008", "::ffff:10.0.0.0/8", "fe80::/10%eth0"}) {
    Result<Cidr> parsed = parse_cidr(bad);
    EXPECT_FALSE(parsed.has_value()) << "accepted \"" << bad << "\"";
  }
  Result<Cidr> parsed = parse_cidr("10.0.0.0/33");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_NE(parsed.error().message.find("\"10.0.0.0/33\""), std::string::npos)
      << parsed.error().message;
}

TEST(CidrContains, MatchesByPrefixAndFamily) {
  const Cidr ten = parsed_cidr("10.0.0.0/8");
  EXPECT_TRUE(cidr_contains(ten, ip("10.0.0.0")));
  EXPECT_TRUE(cidr_contains(ten, ip("10.255.255.255")));
  EXPECT_FALSE(cidr_contains(ten, ip("11.0.0.0")));
  EXPECT_FALSE(cidr_contains(ten, ip("9.255.255.255")));
  EXPECT_TRUE(cidr_contains(ten, ip("::ffff:10.1.2.3")));  // mapped counts as IPv4

  const Cidr narrow = parsed_cidr("192.168.1.128/25");
  EXPECT_TRUE(cidr_contains(narrow, ip("192.168.1.200")));
  EXPECT_FALSE(cidr_contains(narrow, ip("192.168.1.127")));

  const Cidr doc = parsed_cidr("2001:db8::/32");
  EXPECT_TRUE(cidr_contains(doc, ip("2001:db8:ffff::1")));
  EXPECT_FALSE(cidr_contains(doc, ip("2001:db9::1")));

  const Cidr single = parsed_cidr("127.0.0.1");
  EXPECT_TRUE(cidr_contains(single, ip("127.0.0.1")));
  EXPECT_FALSE(cidr_contains(single, ip("127.0.0.2")));

  // IPv4 networks match only IPv4, IPv6 networks only IPv6, even for /0.
  EXPECT_TRUE(cidr_contains(parsed_cidr("0.0.0.0/0"), ip("8.8.8.8")));
  EXPECT_FALSE(cidr_contains(parsed_cidr("0.0.0.0/0"), ip("::1")));
  EXPECT_TRUE(cidr_contains(parsed_cidr("::/0"), ip("::1")));
  EXPECT_FALSE(cidr_contains(parsed_cidr("::/0"), ip("8.8.8.8")));
  EXPECT_FALSE(cidr_contains(parsed_cidr("::/96"), ip("0.0.0.1")));
}

}  // namespace
}  // namespace spillway::policy
