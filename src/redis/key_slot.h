// Redis Cluster's hash slot of a key: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the
// key's hash tag, modulo 16384. The hash tag is the text between the first '{' and the first '}'
// after it, when that text is not empty; otherwise the whole key. Keys with the same tag share a
// slot, so one script may touch them all. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace spillway::redis {

inline constexpr std::uint16_t kClusterSlots = 16384;

std::uint16_t crc16(std::string_view bytes);

// The part of `key` that decides its slot.
std::string_view hash_tag(std::string_view key);

std::uint16_t key_slot(std::string_view key);

// A short text (decimal digits) whose slot is `slot`: a key holding "{<it>}" as its hash tag is
// on that slot (a reservation's record next to the keys it settles). The table is built once, on
// first use (~160,000 CRCs).
std::string_view slot_tag(std::uint16_t slot);

}  // namespace spillway::redis
