// One shard's keys: a flat open-addressing hash table from stored key (src/memory/table_key.h)
// to an algorithm's state, built to keep a tracked key small (64 bytes per GCRA slot: 40 of
// state, 24 of key).
//
// Layout: an array of slots and, beside it, one control byte per slot (0: empty, else 0x80 | seven
// bits of the hash), scanned sixteen at a time with SSE2. A slot holds the state and the key:
// inline when it has at most kInlineKey bytes, otherwise on the heap (its size and a pointer in
// the same bytes). No idle time is stored: the owner derives it from the state and the limit that
// the key's prefix names (core::idle_at), exactly.
//
// Probing is linear from the key's home position (the hash scaled to the capacity, which need not
// be a power of two) and never wraps: at least kSlack empty slots follow the last used one, and a
// run that reaches the end makes the table rebuild with that room again (so an insert always
// ends). A key is always stored in the first empty slot at or after its home, and single keys are
// never erased: dropping keys (sweep) rebuilds the table, so there are no tombstones and a lookup
// stops at the first empty slot.
//
// Growth: when 7/8 of the capacity is used, the table is rebuilt 12/7 times its size (so it is 58%
// full right after), keeping every slot; retain() rebuilds it to fit what it keeps.
//
// Thread safety: none; the owner (ShardedTable) locks the shard around every call.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "src/memory/table_key.h"

namespace spillway::memory {

template <typename State>
class FlatTable {
 public:
  static constexpr std::size_t kInlineKey = TableKey::kInlineKey;
  static constexpr char kOnHeap = static_cast<char>(0xFF);

  struct Slot {
    State state;
    // key[0]: the key's size, or kOnHeap; then the key's bytes and zeros (a TableKey's image), or
    // (kOnHeap) the size as a uint32 and a char* to the bytes on the heap.
    char key[TableKey::kImageBytes];
  };

  // The slot's stored key: the limit's varint prefix, then the user's bytes.
  static std::string_view stored_key(const Slot& slot) {
    if (slot.key[0] == kOnHeap) return {heap_bytes(slot), heap_size(slot)};
    return {slot.key + 1, static_cast<std::size_t>(slot.key[0])};
  }

  explicit FlatTable(std::uint64_t seed) : seed_(seed) {}
  ~FlatTable() { release(); }
  FlatTable(const FlatTable&) = delete;
  FlatTable& operator=(const FlatTable&) = delete;

  std::size_t size() const { return size_; }

  // The key's slot, or nullptr.
  Slot* find(const TableKey& key) {
    if (size_ == 0) return nullptr;
    const std::uint8_t tag = tag_of(key.hash);
    for (std::size_t i = home(key.hash); i < end_; i += kGroup) {
      const Group group(ctrl_.get() + i);
      std::uint32_t matches = group.match(tag);
      const std::uint32_t empties = group.match(0);
      if (empties != 0) matches &= (empties & (0u - empties)) - 1;  // only before the first empty
      for (; matches != 0; matches &= matches - 1) {
        Slot& slot = slots_[i + static_cast<std::size_t>(std::countr_zero(matches))];
        if (same_key(slot, key)) return &slot;
      }
      if (empties != 0) return nullptr;
    }
    return nullptr;
  }

  // Stores a key that is not in the table (find returned nullptr), growing the table if needed.
  Slot& insert(const TableKey& key, State state) {
    constexpr auto keep_all = [](const Slot&) { return true; };
    if (size_ >= max_size_) rebuild(capacity_for(size_ + 1), keep_all, size_);
    std::size_t at = first_empty(key.hash);
    if (at == end_) {
      // The key's run reaches the end: rebuild with kSlack empty slots after the last used one,
      // where the run now ends.
      rebuild(capacity_, keep_all, size_);
      at = first_empty(key.hash);
    }
    Slot* slot = new (&slots_[at]) Slot{std::move(state), {}};
    write_key(*slot, key);
    ctrl_[at] = tag_of(key.hash);
    ++size_;
    return *slot;
  }

  // Keeps the slots for which keep(slot) is true and drops the others; returns how many it
  // dropped. The table is rebuilt to fit what it keeps (and freed when that is nothing).
  template <typename Keep>
  std::size_t retain(Keep keep) {
    std::size_t kept = 0;
    for_each_full([&](Slot& slot) { kept += keep(slot) ? 1 : 0; });
    const std::size_t dropped = size_ - kept;
    if (dropped == 0) return 0;
    if (kept == 0) {
      release();
    } else {
      rebuild(capacity_for(kept), keep, kept);
    }
    return dropped;
  }

 private:
  static constexpr std::size_t kGroup = 16;
  static constexpr std::size_t kSlack = 32;

  // Sixteen control bytes, compared with one value at once.
  struct Group {
    explicit Group(const std::uint8_t* p) : bytes(p) {}
    std::uint32_t match(std::uint8_t value) const {
#if defined(__SSE2__)
      const __m128i group = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
      return static_cast<std::uint32_t>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(group, _mm_set1_epi8(static_cast<char>(value)))));
#else
      std::uint32_t out = 0;
      for (std::size_t i = 0; i < kGroup; ++i) out |= std::uint32_t{bytes[i] == value} << i;
      return out;
#endif
    }
    const std::uint8_t* bytes;
  };

  // Bits 32..38: apart from the shard's (the low bits) and the home's (mostly the high bits).
  static std::uint8_t tag_of(std::uint64_t hash) {
    return static_cast<std::uint8_t>(0x80 | ((hash >> 32) & 0x7F));
  }
  // The hash's high bits scaled to [0, capacity): no power-of-two capacity needed.
  std::size_t home(std::uint64_t hash) const { return home_in(hash, capacity_); }
  static std::size_t home_in(std::uint64_t hash, std::size_t capacity) {
    return static_cast<std::size_t>((static_cast<hash_detail::U128>(hash) * capacity) >> 64);
  }
  static std::size_t capacity_for(std::size_t keys) {
    return std::max<std::size_t>(16, keys * 12 / 7 + 1);
  }

  static bool same_key(const Slot& slot, const TableKey& key) {
    if (key.is_inline()) return std::memcmp(slot.key, key.image(), sizeof slot.key) == 0;
    return slot.key[0] == kOnHeap && key.equals_long(heap_bytes(slot), heap_size(slot));
  }
  static std::size_t heap_size(const Slot& slot) {
    std::uint32_t n;
    std::memcpy(&n, slot.key + 1, sizeof n);
    return n;
  }
  static char* heap_bytes(const Slot& slot) {
    char* p;
    std::memcpy(&p, slot.key + 1 + sizeof(std::uint32_t), sizeof p);
    return p;
  }
  static void write_key(Slot& slot, const TableKey& key) {
    if (key.is_inline()) {
      std::memcpy(slot.key, key.image(), sizeof slot.key);
      return;
    }
    char* heap = new char[key.size];
    key.write_long(heap);
    const auto n32 = static_cast<std::uint32_t>(key.size);
    slot.key[0] = kOnHeap;
    std::memcpy(slot.key + 1, &n32, sizeof n32);
    std::memcpy(slot.key + 1 + sizeof n32, &heap, sizeof heap);
  }
  // The hash make_table_key gives the slot's key.
  std::uint64_t hash_of(const Slot& slot) const {
    const std::string_view key = stored_key(slot);
    return hash_stored_key(key.data(), key.size(), seed_);
  }
  static void destroy(Slot& slot) {
    if (slot.key[0] == kOnHeap) delete[] heap_bytes(slot);
    slot.~Slot();
  }

  // The first empty slot at or after the hash's home, or end_ when the run reaches the end.
  std::size_t first_empty(std::uint64_t hash) const {
    for (std::size_t i = home(hash); i < end_; i += kGroup) {
      const std::uint32_t empties = Group(ctrl_.get() + i).match(0);
      if (empties != 0)
        return std::min(end_, i + static_cast<std::size_t>(std::countr_zero(empties)));
    }
    return end_;
  }

  template <typename F>
  void for_each_full(F f) {
    for (std::size_t i = 0; i < end_; ++i) {
      if (ctrl_[i] != 0) f(slots_[i]);
    }
  }

  struct SlotsDeleter {
    void operator()(Slot* p) const { ::operator delete (p, std::align_val_t{alignof(Slot)}); }
  };

  // Moves the slots that keep() accepts into new arrays of `capacity` homes, followed by at least
  // kSlack empty slots after the last one used, and destroys the others.
  // `kept` is how many slots keep() accepts.
  template <typename Keep>
  void rebuild(std::size_t capacity, Keep keep, std::size_t kept) {
    // Place every kept key in new control bytes first, to learn how far the runs reach. No run
    // can reach further than one slot per key past the last home.
    const std::size_t room = capacity + kept + kSlack;
    auto ctrl = std::make_unique<std::uint8_t[]>(room + kGroup);  // zeroed: all empty
    std::vector<std::pair<std::size_t, std::size_t>> moves;       // (old index, new index)
    moves.reserve(kept);
    std::size_t last_used = 0;
    for (std::size_t i = 0; i < end_; ++i) {
      if (ctrl_[i] == 0 || !keep(slots_[i])) continue;
      const std::uint64_t hash = hash_of(slots_[i]);
      std::size_t at = home_in(hash, capacity);
      while (ctrl[at] != 0) ++at;
      ctrl[at] = tag_of(hash);
      moves.emplace_back(i, at);
      last_used = std::max(last_used, at);
    }
    const std::size_t end = std::max(capacity, last_used + 1) + kSlack;
    if (end < room) {  // keep only what is used and the slack (the rest is all zero)
      auto trimmed = std::make_unique<std::uint8_t[]>(end + kGroup);
      std::memcpy(trimmed.get(), ctrl.get(), end);
      ctrl = std::move(trimmed);
    }
    std::unique_ptr<Slot[], SlotsDeleter> slots(
        static_cast<Slot*>(::operator new (sizeof(Slot) * end, std::align_val_t{alignof(Slot)})));
    std::size_t next_move = 0;
    for (std::size_t i = 0; i < end_; ++i) {
      if (ctrl_[i] == 0) continue;
      if (next_move < moves.size() && moves[next_move].first == i) {
        new (&slots[moves[next_move].second]) Slot(std::move(slots_[i]));
        slots_[i].~Slot();  // the heap key (if any) now belongs to the moved slot
        ++next_move;
      } else {
        destroy(slots_[i]);
      }
    }
    ctrl_ = std::move(ctrl);
    slots_ = std::move(slots);
    capacity_ = capacity;
    end_ = end;
    size_ = moves.size();
    max_size_ = capacity * 7 / 8;
  }

  void release() {
    for_each_full([](Slot& slot) { destroy(slot); });
    ctrl_.reset();
    slots_.reset();
    capacity_ = end_ = size_ = max_size_ = 0;
  }

  const std::uint64_t seed_;
  std::unique_ptr<std::uint8_t[]> ctrl_;  // end_ + kGroup bytes; the last kGroup stay empty
  std::unique_ptr<Slot[], SlotsDeleter> slots_;
  std::size_t capacity_ = 0;  // homes: a key's home is in [0, capacity_)
  std::size_t end_ = 0;       // slots: at least kSlack past the last used one and past capacity_
  std::size_t size_ = 0;
  std::size_t max_size_ = 0;  // grow beyond this
};

}  // namespace spillway::memory
