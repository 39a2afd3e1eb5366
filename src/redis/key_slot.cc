#include "src/redis/key_slot.h"

#include <array>
#include <string>
#include <vector>

namespace spillway::redis {
namespace {

// crc16 of every byte value, shifted through the polynomial once, computed at compile time.
constexpr std::array<std::uint16_t, 256> kTable = [] {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    std::uint16_t crc = static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}();

}  // namespace

std::uint16_t crc16(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (unsigned char c : bytes) {
    crc = static_cast<std::uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

std::string_view hash_tag(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) { return crc16(hash_tag(key)) % kClusterSlots; }

std::string_view slot_tag(std::uint16_t slot) {
  static const std::vector<std::string> tags = [] {
    std::vector<std::string> out(kClusterSlots);
    std::size_t left = kClusterSlots;
    for (std::uint64_t n = 0; left > 0; ++n) {
      std::string text = std::to_string(n);
      std::string& tag = out[crc16(text) % kClusterSlots];
      if (tag.empty()) {
        tag = std::move(text);
        --left;
      }
    }
    return out;
  }();
  return tags[slot % kClusterSlots];
}

}  // namespace spillway::redis
