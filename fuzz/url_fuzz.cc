// libFuzzer target: backend URL text -> the redis URL parsers. See fuzz/url_check.h.
#include <cstddef>
#include <cstdint>

#include "fuzz/url_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  spillway::fuzz::check_url_input(data, size);
  return 0;
}
