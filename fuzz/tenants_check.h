// The tenants fuzz target's body (fuzz/tenants_fuzz.cc), also run over the seed corpus by
// tests/server/fuzz_corpus_test.cc in the normal test build.
//
// The first byte picks what the rest is:
//   0  a stored record ("v1 0 pro gateway=5/60000000"): decode_tenant_record either refuses it
//      or returns a record that check_tenant_record accepts and that encodes and decodes to
//      itself;
//   1  the body of PUT /v1/tenants/k through the admin API (src/server/admin_service.h) on an
//      in-process directory and a policy whose gateway layer reads tenant records;
//   2  an NDJSON import body; 3 a CSV one (the same service);
//   4  a tenants journal file (src/memory/tenant_file.h), opened from a file.
// For 1-3: the answer is 200 or 400 with a JSON body ({"error": one line} for a 400); a 400
// changes no record; after a 200 every stored record passes check_tenant_record. For 4: the file
// opens or fails with kInvalidArgument; when it opens, a second open finds the same records.
// Anything else aborts (see check_util.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway::fuzz {

void check_tenants_input(const std::uint8_t* data, std::size_t size);

}  // namespace spillway::fuzz
