// libFuzzer target: a trace file -> the trace line parser and simulate. See fuzz/trace_check.h.
#include <cstddef>
#include <cstdint>

#include "fuzz/trace_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  spillway::fuzz::check_trace_input(data, size);
  return 0;
}
