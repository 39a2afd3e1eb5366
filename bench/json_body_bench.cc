// What refusing duplicate members costs (src/server/json_unique.h): a /v1/check body and a
// /v1/commit body parsed by boost::json::parser (what the server used before, last member wins)
// and by parse_json_unique, both into a stack buffer as the endpoints do; and an object of 5,000
// distinct members (a 64 KiB body, the largest the decision port takes), which the sorted check
// keeps O(n log n). Beside them, what a /v1/auth request from an untrusted peer that sends
// X-Forwarded-For adds (src/server/untrusted_forwarders.h: a count and a lookup of a known peer).
//
// Run: build/ci/bench/json_body_bench  (see docs/benchmarks.md)
#include <benchmark/benchmark.h>

#include <boost/json.hpp>
#include <string>

#include "src/server/json_unique.h"
#include "src/server/untrusted_forwarders.h"

namespace spillway::server {
namespace {

namespace json = boost::json;

const std::string kCheckBody =
    R"({"ip":"203.0.113.9","api_key":"sk-live-0123456789abcdef","endpoint":"/search","method":"GET"})";
const std::string kCommitBody =
    R"({"reservation":"r-0123456789abcdef0123456789","costs":{"tpm":900,"rpm":1}})";

std::string many_members(int n) {
  std::string body = "{";
  for (int i = 0; i < n; ++i) body += (i ? ",\"m" : "\"m") + std::to_string(i) + "\":1";
  return body + "}";
}

void boost_parser(benchmark::State& state, const std::string& body) {
  for (auto _ : state) {
    unsigned char buffer[2048];
    json::monotonic_resource resource(buffer, sizeof buffer);
    unsigned char scratch[512];
    json::parser parser(json::storage_ptr(), json::parse_options(), scratch, sizeof scratch);
    parser.reset(json::storage_ptr(&resource));
    boost::system::error_code ec;
    parser.write(body.data(), body.size(), ec);
    benchmark::DoNotOptimize(parser.release());
  }
}

void unique_parser(benchmark::State& state, const std::string& body) {
  for (auto _ : state) {
    unsigned char buffer[2048];
    json::monotonic_resource resource(buffer, sizeof buffer);
    unsigned char scratch[512];
    auto parsed = parse_json_unique(body, json::storage_ptr(&resource), scratch, sizeof scratch);
    benchmark::DoNotOptimize(parsed);
  }
}

void BM_CheckBodyBoostParser(benchmark::State& state) { boost_parser(state, kCheckBody); }
void BM_CheckBodyUnique(benchmark::State& state) { unique_parser(state, kCheckBody); }
void BM_CommitBodyBoostParser(benchmark::State& state) { boost_parser(state, kCommitBody); }
void BM_CommitBodyUnique(benchmark::State& state) { unique_parser(state, kCommitBody); }
void BM_FiveThousandMembersBoostParser(benchmark::State& state) {
  boost_parser(state, many_members(5000));
}
void BM_FiveThousandMembersUnique(benchmark::State& state) {
  unique_parser(state, many_members(5000));
}

void BM_UntrustedForwarderKnownPeer(benchmark::State& state) {
  UntrustedForwarders peers([](const std::string&) {});
  peers.saw("10.0.0.5", "X-Forwarded-For");
  for (auto _ : state) peers.saw("10.0.0.5", "X-Forwarded-For");
  benchmark::DoNotOptimize(peers.count());
}

BENCHMARK(BM_CheckBodyBoostParser);
BENCHMARK(BM_CheckBodyUnique);
BENCHMARK(BM_CommitBodyBoostParser);
BENCHMARK(BM_CommitBodyUnique);
BENCHMARK(BM_FiveThousandMembersBoostParser);
BENCHMARK(BM_FiveThousandMembersUnique);
BENCHMARK(BM_UntrustedForwarderKnownPeer);

}  // namespace
}  // namespace spillway::server

BENCHMARK_MAIN();
