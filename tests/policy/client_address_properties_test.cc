// Property: whatever a client writes into the header before the trusted proxy's own line (any
// bytes, any number of lines, entries that look like addresses), the client address is the one
// the trusted proxy appended (src/policy/client_address.h).
//
// X-Forwarded-For: always exactly that address (what the client wrote is never read).
// Forwarded: the whole value must be well-formed, so a client's broken syntax (an unclosed quote
// swallows the proxy's line) may make the request a 400, never another address; when the client
// writes well-formed elements, exactly the proxy's address.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "src/policy/client_address.h"

namespace spillway::policy {
namespace {

// The proxies in front of spillway: 10.0.0.0/8 (never generated as a client address).
const std::vector<Cidr>& trusted() {
  static const std::vector<Cidr> proxies{*parse_cidr("10.0.0.0/8")};
  return proxies;
}

std::string hex(int value) {
  constexpr std::string_view kDigits = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[static_cast<std::size_t>(value % 16)]);
    value /= 16;
  } while (value > 0);
  return out;
}

// The client as the proxy saw it: text of an untrusted IPv4 or IPv6 address.
struct AddressClient {
  std::string text;
  bool v6 = false;
};

rc::Gen<AddressClient> untrusted_client() {
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::tuple(rc::gen::inRange(11, 224), rc::gen::inRange(0, 256),
                                  rc::gen::inRange(0, 256), rc::gen::inRange(0, 256)),
                   [](const std::tuple<int, int, int, int>& b) {
                     const auto [a, x, y, z] = b;
                     return AddressClient{std::to_string(a) + "." + std::to_string(x) + "." +
                                              std::to_string(y) + "." + std::to_string(z),
                                          false};
                   }),
      rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, 65536), rc::gen::inRange(0, 65536)),
                   [](const std::tuple<int, int>& g) {
                     return AddressClient{
                         "2001:db8:" + hex(std::get<0>(g)) + "::" + hex(std::get<1>(g)), true};
                   }));
}

rc::Gen<std::string> trusted_hop() {
  return rc::gen::map(rc::gen::inRange(0, 1 << 24), [](int n) {
    return "10." + std::to_string(n >> 16) + "." + std::to_string((n >> 8) & 0xff) + "." +
           std::to_string(n & 0xff);
  });
}

// Text that looks like what a forging client sends, and raw bytes.
rc::Gen<std::string> forged_text() {
  return rc::gen::oneOf(
      rc::gen::arbitrary<std::string>(),
      rc::gen::element<std::string>("1.2.3.4", "6.6.6.6, 7.7.7.7", "unknown", "[2001:db8::9]:1",
                                    "10.0.0.1", "for=6.6.6.6", "\"", "for=\"", ",", "\\"),
      rc::gen::map(untrusted_client(), [](const AddressClient& c) { return c.text; }));
}

// A well-formed forwarded-element a client could write (distinct parameter names).
rc::Gen<std::string> forged_element() {
  return rc::gen::map(
      rc::gen::tuple(rc::gen::element<std::string>(
                         "for=6.6.6.6", "for=\"[2001:db8::9]:4711\"", "for=unknown", "for=_x",
                         "for=\"6.6.6.6, for=7.7.7.7\"", "for=\"10.0.0.1;x\"", "for=10.2.3.4",
                         "for=not-an-address", ""),
                     rc::gen::element<std::string>("", ";proto=https", ";by=\"[::1]\"", ";;")),
      [](const std::tuple<std::string, std::string>& parts) {
        return std::get<0>(parts) + std::get<1>(parts);
      });
}

std::vector<std::string_view> views(const std::vector<std::string>& lines) {
  return {lines.begin(), lines.end()};
}

RC_GTEST_PROP(ClientAddressProperties, XForwardedForIsWhatTheProxyAppended, ()) {
  const AddressClient real = *untrusted_client();
  std::vector<std::string> lines =
      *rc::gen::resize(8, rc::gen::container<std::vector<std::string>>(forged_text()));
  // The proxy's entry (sometimes with the client's port), then trusted proxies further along,
  // on the same line or lines of their own.
  const bool port = *rc::gen::arbitrary<bool>();
  std::string proxy_line =
      port ? (real.v6 ? "[" + real.text + "]:443" : real.text + ":5555") : real.text;
  lines.push_back(proxy_line);
  const int hops = *rc::gen::inRange(0, 3);
  for (int i = 0; i < hops; ++i) {
    const std::string hop = *trusted_hop();
    if (*rc::gen::arbitrary<bool>()) {
      lines.back() += ", " + hop;
    } else {
      lines.push_back(hop);
    }
  }
  Result<IpAddress> got = client_address(*parse_ip("10.0.0.1"), ClientIpHeader::kXForwardedFor,
                                         views(lines), trusted());
  RC_ASSERT(got.has_value());
  RC_ASSERT(*got == *parse_ip(real.text));
}

std::string forwarded_node(const AddressClient& real) {
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      return real.v6 ? "for=\"[" + real.text + "]\"" : "for=" + real.text;
    case 1:
      return real.v6 ? "for=\"[" + real.text + "]:4711\"" : "for=\"" + real.text + ":4711\"";
    default:
      return "proto=https;For=\"" + (real.v6 ? "[" + real.text + "]" : real.text) + "\"";
  }
}

void add_proxy_lines(const AddressClient& real, std::vector<std::string>& lines) {
  lines.push_back(forwarded_node(real));
  const int hops = *rc::gen::inRange(0, 3);
  for (int i = 0; i < hops; ++i) {
    const std::string hop = "for=\"" + *trusted_hop() + ":80\"";
    if (*rc::gen::arbitrary<bool>()) {
      lines.back() += ", " + hop;
    } else {
      lines.push_back(hop);
    }
  }
}

RC_GTEST_PROP(ClientAddressProperties, ForwardedIsTheProxysAddressOrARefusal, ()) {
  const AddressClient real = *untrusted_client();
  std::vector<std::string> lines =
      *rc::gen::resize(8, rc::gen::container<std::vector<std::string>>(forged_text()));
  add_proxy_lines(real, lines);
  Result<IpAddress> got =
      client_address(*parse_ip("10.0.0.1"), ClientIpHeader::kForwarded, views(lines), trusted());
  RC_CLASSIFY(got.has_value(), "answered");
  if (got) RC_ASSERT(*got == *parse_ip(real.text));
}

RC_GTEST_PROP(ClientAddressProperties, WellFormedForgedForwardedIsNeverBelieved, ()) {
  const AddressClient real = *untrusted_client();
  std::vector<std::string> lines;
  const int forged_lines = *rc::gen::inRange(0, 5);
  for (int i = 0; i < forged_lines; ++i) {
    const auto elements =
        *rc::gen::resize(4, rc::gen::container<std::vector<std::string>>(forged_element()));
    std::string line;
    for (const std::string& element : elements) line += (line.empty() ? "" : ", ") + element;
    lines.push_back(line);
  }
  add_proxy_lines(real, lines);
  Result<IpAddress> got =
      client_address(*parse_ip("10.0.0.1"), ClientIpHeader::kForwarded, views(lines), trusted());
  RC_ASSERT(got.has_value());
  RC_ASSERT(*got == *parse_ip(real.text));
}

}  // namespace
}  // namespace spillway::policy
