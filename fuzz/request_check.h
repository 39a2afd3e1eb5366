// The request fuzz target's body (fuzz/request_fuzz.cc), also run over the seed corpus by
// tests/server/fuzz_corpus_test.cc in the normal test build.
//
// The input is what one client sends on one connection, after one leading byte that chooses how
// the bytes arrive: '@' (0x40, or any byte whose low 4 bits are 0) in one read; otherwise reads of
// 1 to 2^(k-1) bytes, k = the byte's low 4 bits ('A' = byte by byte ... 'O' = up to 16 KiB), sizes
// drawn from a small generator seeded with the byte. Bit 0x10 picks the peer: '@'..'O'
// 127.0.0.1 (a trusted proxy: X-Forwarded-For counts), 'P'..'_' ::1 (not trusted).
//
// The bytes go through server::RequestReader with the server's default limits exactly as a
// connection feeds it (prepare/commit per read, parse() after each, pipelined requests in turn,
// stop after an error or a request without keep-alive), and every complete request goes to a
// server::Service made for this input (seed policy; a MemoryStore of at most 32 keys on a
// ManualClock that moves 250 ms per request), so a crash reproduces from its input. Checked:
//   - a reader error is 400, 413 or 431 with a message; it stays an error;
//   - a complete request carries the method and path the reader reported; "100 Continue" is
//     asked for at most once per request, and only by HTTP/1.1 with "Expect: 100-continue";
//   - the service answers exactly once, before handle() returns (memory store);
//   - the status is 200, 204, 400, 401, 403, 404, 405, 413 or 429, never 5xx;
//   - a JSON body is valid JSON; an error (4xx other than 403/429) is {"error": "..."};
//     a decision's "allowed" agrees with its status; 204 and an nginx 403 have no error;
//   - header names are tokens and values hold no CR, LF or NUL;
//   - GET /metrics is well-formed Prometheus text (label values escaped).
// Anything else aborts (see check_util.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway::fuzz {

void check_request_input(const std::uint8_t* data, std::size_t size);

}  // namespace spillway::fuzz
