// libFuzzer target: one connection's bytes -> server::RequestReader -> server::Service.
// See fuzz/request_check.h for the input format and what is checked.
#include <cstddef>
#include <cstdint>

#include "fuzz/request_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  spillway::fuzz::check_request_input(data, size);
  return 0;
}
