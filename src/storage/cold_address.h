// Where a durable record lies, packed into one word: the cold form of an OID-array entry
// (mvcc/version.h) and of a checkpoint's reference to a record it did not copy. Storage writes
// and reads records at these addresses; MVCC stores them in entries. The word's bit 0 is set,
// which no version pointer has (versions are 16-byte aligned), so an entry tells the two apart:
//   bits  1..12  size in 16-byte units (payload + header, up to 64 KiB)
//   bits 13..36  offset in the file in 16-byte units (files up to 256 MiB)
//   bits 37..63  file number (a log segment or a checkpoint part; database-wide numbers)
#pragma once

#include <cstdint>

#include "util/assert.h"

namespace braid::storage {

inline constexpr std::uint64_t kColdBit = 1;

struct ColdAddress {
  std::uint32_t segment;  // the file's number
  std::uint64_t offset;   // bytes, multiple of 16
  std::uint32_t size;     // bytes, multiple of 16
};

inline constexpr std::uint32_t kMaxColdSize = (1u << 12) * 16;
inline constexpr std::uint64_t kMaxColdOffset = (std::uint64_t{1} << 24) * 16;
inline constexpr std::uint32_t kMaxColdSegment = (1u << 27) - 1;

inline bool is_cold(std::uint64_t word) { return (word & kColdBit) != 0; }

// Valid when size and offset are multiples of 16 within the limits above.
inline bool cold_encodable(const ColdAddress& a) {
  return a.size % 16 == 0 && a.size > 0 && a.size <= kMaxColdSize && a.offset % 16 == 0 &&
         a.offset < kMaxColdOffset && a.segment <= kMaxColdSegment;
}
inline std::uint64_t from_cold(const ColdAddress& a) {
  BRAID_ASSERT(cold_encodable(a));
  return kColdBit | (std::uint64_t{a.size / 16 - 1} << 1) | ((a.offset / 16) << 13) |
         (std::uint64_t{a.segment} << 37);
}
inline ColdAddress cold(std::uint64_t word) {
  BRAID_DASSERT(is_cold(word));
  return {static_cast<std::uint32_t>(word >> 37), ((word >> 13) & ((1u << 24) - 1)) * 16,
          static_cast<std::uint32_t>(((word >> 1) & ((1u << 12) - 1)) + 1) * 16};
}
// The cold word of a record at (file, offset, size), or 0 when it does not fit one.
inline std::uint64_t cold_word(std::uint64_t file, std::uint64_t offset, std::uint64_t size) {
  if (file > kMaxColdSegment) return 0;
  const ColdAddress a{static_cast<std::uint32_t>(file), offset, static_cast<std::uint32_t>(size)};
  return size <= kMaxColdSize && cold_encodable(a) ? from_cold(a) : 0;
}

}  // namespace braid::storage
