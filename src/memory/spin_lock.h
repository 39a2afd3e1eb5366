// The lock of one memory-store shard: a test-and-test-and-set spin lock. A shard is held for tens
// of nanoseconds (one lookup and one algorithm's arithmetic), where a std::mutex costs two atomic
// read-modify-writes; this costs one, and its unlock is a plain release store.
//
// A waiter spins briefly, then yields its time slice, so that on a busy machine it never burns the
// CPU the holder needs (the holder may be rebuilding a large shard during a sweep).
//
// Thread safety: that is its job. Meets the Lockable requirements (lock, try_lock, unlock).
#pragma once

#include <atomic>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace spillway::memory {

class SpinLock {
 public:
  void lock() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    wait_and_lock();
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  [[gnu::noinline]] void wait_and_lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          pause();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  static void pause() {
#if defined(__SSE2__)
    _mm_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace spillway::memory
