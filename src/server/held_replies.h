// Answers held back for a while: GET /v1/auth's answer to a request a shaping layer admitted
// after a delay (docs/SPEC.md §5.4), so that nginx in front lets it through only then. Each is
// released by a task on a Runtime when its delay has passed (no thread per held answer), and at
// most `capacity` are held at once.
//
// Thread safety: every member from any thread. Answers run on the runtime's thread when due, on
// release_all()'s caller when released early, and never twice. Ownership: holds each answer until
// it ran; release_all() (also from the destructor) runs the ones still held and waits for any
// running on the runtime's thread, so that nothing an answer uses is destroyed under it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "spillway/duration.h"
#include "spillway/runtime.h"

namespace spillway::server {

class HeldReplies {
 public:
  // `early`: true when release_all() ran it before its time.
  using Answer = std::function<void(bool early)>;

  HeldReplies(Runtime& runtime, std::size_t capacity) : runtime_(runtime), capacity_(capacity) {}
  ~HeldReplies() { release_all(); }
  HeldReplies(const HeldReplies&) = delete;
  HeldReplies& operator=(const HeldReplies&) = delete;

  enum class Held {
    kHeld,      // `answer` runs in `delay` µs (or early, at release_all())
    kFull,      // `capacity` answers are held already: `answer` was not kept
    kReleased,  // release_all() ran already: `answer` was not kept (answer at once)
  };
  Held hold(Micros delay, Answer answer);

  // Runs every held answer now (early), then waits for those running on the runtime's thread;
  // later holds are kReleased. Returns how many it ran.
  std::size_t release_all();

  std::size_t held() const;
  std::size_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  void set_capacity(std::size_t capacity) { capacity_.store(capacity, std::memory_order_relaxed); }

 private:
  // An answer is run by whoever takes it out of `held_`: due() or release_all(), never both.
  struct Entry {
    Answer answer;
    ScheduledTask task;
  };
  // The task of answer `id`: takes it out and runs it, unless release_all() took it first.
  void due(std::uint64_t id);

  Runtime& runtime_;
  std::atomic<std::size_t> capacity_;
  mutable std::mutex mutex_;
  std::condition_variable finished_;  // running_ went down
  std::unordered_map<std::uint64_t, std::shared_ptr<Entry>> held_;
  std::size_t running_ = 0;  // answers due() took out and is running
  std::uint64_t next_id_ = 0;
  bool released_ = false;
};

}  // namespace spillway::server
