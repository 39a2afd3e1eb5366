// The URL fuzz target's body (fuzz/url_fuzz.cc), also run over the seed corpus by
// tests/server/fuzz_corpus_test.cc in the normal test build.
//
// The input is a backend URL. It goes to parse_redis_url, parse_cluster_url and
// parse_sentinel_url, each twice, and:
//   - the same text gives the same answer both times;
//   - an error is kInvalidArgument, one non-empty line, starting with "redis";
//   - a URL that parses has a host (or a unix socket path), a port from 1 to 65535, TLS settings
//     exactly when its scheme is rediss:// (or rediss+cluster://), at least one seed or sentinel
//     and, for Sentinel, a primary name without '/'.
// Anything else aborts (see check_util.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway::fuzz {

void check_url_input(const std::uint8_t* data, std::size_t size);

}  // namespace spillway::fuzz
