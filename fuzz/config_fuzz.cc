// libFuzzer target: config file text -> policy::parse_config. See fuzz/config_check.h.
#include <cstddef>
#include <cstdint>

#include "fuzz/config_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  spillway::fuzz::check_config_input(data, size);
  return 0;
}
