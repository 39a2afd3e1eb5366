// Embedding spillway: an in-process GCRA limiter of 5 requests per second, burst 5.
#include <spillway/memory_store.h>

#include <cstdio>

int main() {
  auto limit = spillway::Limit::make(spillway::Algorithm::kGcra, 5, spillway::kMicrosPerSecond);
  if (!limit) {
    std::fprintf(stderr, "bad limit: %s\n", limit.error().message.c_str());
    return 1;
  }
  spillway::MemoryStore store;
  int admitted = 0;
  for (int i = 0; i < 8; ++i) {
    auto decision = store.check("user:42", *limit);
    if (!decision) {
      std::fprintf(stderr, "check failed: %s\n", decision.error().message.c_str());
      return 1;
    }
    if (decision->allowed) ++admitted;
  }
  std::printf("admitted %d of 8\n", admitted);
  return admitted == 5 ? 0 : 1;
}
