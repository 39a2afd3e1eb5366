// libFuzzer target: rules file text -> rls::parse_rls_yaml and RlsEngine. See fuzz/rls_check.h.
#include <cstddef>
#include <cstdint>

#include "fuzz/rls_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  spillway::fuzz::check_rls_input(data, size);
  return 0;
}
