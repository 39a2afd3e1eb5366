// libFuzzer target: tenant records, admin API bodies, tenant journals. See fuzz/tenants_check.h.
#include <cstddef>
#include <cstdint>

#include "fuzz/tenants_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  spillway::fuzz::check_tenants_input(data, size);
  return 0;
}
