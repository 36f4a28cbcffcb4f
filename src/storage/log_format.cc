#include "storage/log_format.h"

#include <cstdio>

#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

void seal_chunk(char* p, std::uint32_t magic, std::uint32_t count, std::uint64_t index,
                std::uint64_t seq, std::uint32_t len) {
  ChunkHeader h{0, magic, len, count, index, seq};
  std::memcpy(p, &h, sizeof h);
  h.crc = util::crc32c(p + 4, kChunkHeaderBytes - 4 + len);
  std::memcpy(p, &h.crc, 4);
}

std::uint32_t encode_record(char* out, WriteOp op, std::uint32_t table, std::string_view key,
                            std::string_view value, std::uint64_t cts) {
  BRAID_DASSERT(!key.empty());
  BRAID_DASSERT(key.size() <= kMaxKeyBytes);
  BRAID_DASSERT(value.size() <= kMaxValueBytes);
  BRAID_DASSERT(op != WriteOp::kRemove || value.empty());
  BRAID_DASSERT(op != WriteOp::kRef || value.size() == kRefValueBytes);
  RecordHeader h{0,     static_cast<std::uint8_t>(op),
                 0,     static_cast<std::uint16_t>(key.size()),
                 table, static_cast<std::uint32_t>(value.size()),
                 cts};
  std::memcpy(out, &h, sizeof h);
  char* p = out + sizeof h;
  std::memcpy(p, key.data(), key.size());
  p += key.size();
  if (!value.empty()) std::memcpy(p, value.data(), value.size());
  p += value.size();
  const std::uint32_t size = record_size(h.key_len, h.value_len);
  std::memset(p, 0, static_cast<std::size_t>(out + size - p));
  h.crc = util::crc32c(out + 4, kRecordHeaderBytes - 4 + key.size() + value.size());
  std::memcpy(out, &h.crc, sizeof h.crc);
  return size;
}

std::string numbered_file_name(std::string_view prefix, std::uint64_t number) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%010llu", static_cast<unsigned long long>(number));
  return std::string(prefix) + buf;
}

bool parse_numbered_file_name(std::string_view name, std::string_view prefix,
                              std::uint64_t* number) {
  if (name.size() != prefix.size() + 10 || name.substr(0, prefix.size()) != prefix) return false;
  *number = 0;
  for (std::size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    *number = *number * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return true;
}

std::string part_file_name(std::uint64_t number) { return numbered_file_name("ckpt-", number); }

bool parse_part_file_name(std::string_view name, std::uint64_t* number) {
  return parse_numbered_file_name(name, "ckpt-", number);
}

}  // namespace braid::storage
