// Files of checksummed chunks (a ChunkHeader, its payload, zero padding to kRecordAlign),
// written in order and read back a chunk at a time: the stored secondary indexes
// (storage/index_file.h) and an external sort's runs (storage/sort_run.h). Each file kind names
// itself (`kind`) in the errors, with the file's path and the offset.
#pragma once

#include <braid/key.h>
#include <braid/status.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "storage/file_system.h"
#include "storage/log_format.h"

namespace braid::storage {

class ChunkWriter {
 public:
  ChunkWriter() = default;
  ~ChunkWriter();
  ChunkWriter(const ChunkWriter&) = delete;
  ChunkWriter& operator=(const ChunkWriter&) = delete;

  // Creates (truncates) `path`, whose chunks carry `magic` and `seq` and at most `chunk_bytes`
  // of payload each.
  Status open(FileSystem* fs, std::string path, std::string_view kind, std::uint32_t magic,
              std::uint64_t seq, std::uint32_t chunk_bytes);
  // Starts an entry of `bytes` (at most the chunk size), writing the chunk being filled first
  // when the entry would not fit; then append() its bytes.
  Status begin_entry(std::size_t bytes);
  void append(const void* p, std::size_t n) { buf_.append(static_cast<const char*>(p), n); }
  // Writes the last chunk, syncs the file when asked, and closes it.
  Status finish(bool sync);
  bool is_open() const { return open_; }
  const std::string& path() const { return path_; }
  std::uint64_t bytes() const { return offset_; }  // written so far

 private:
  Status flush();
  Status failed(const Status& s) const;
  FileSystem* fs_ = nullptr;
  FileId file_{};
  bool open_ = false;
  std::string path_;
  std::string kind_;
  std::uint32_t magic_ = 0;
  std::uint64_t seq_ = 0;
  std::uint32_t chunk_bytes_ = 0;
  std::uint64_t offset_ = 0;
  std::uint64_t chunk_ = 0;
  std::uint32_t count_ = 0;
  std::string buf_;  // the chunk being filled: header room, then payload
};

// Reads chunk `index` of `file` (`size` bytes, at `path`) at offset `at` into `*buf` (header,
// then payload) and checks it: its magic, index, seq, length (at most `max_len`, inside the
// file) and checksum. Corruption "`kind` '`path`' at offset `at`: ..." when it does not check,
// IOError when it cannot be read.
Status read_chunk(FileSystem* fs, FileId file, std::uint64_t size, std::string_view kind,
                  const std::string& path, std::uint64_t at, std::uint32_t magic,
                  std::uint64_t index, std::uint64_t seq, std::uint32_t max_len, std::string* buf,
                  ChunkHeader* h);

// The Corruption read_chunk reports, for the checks its callers make of the payload.
Status chunk_corruption(std::string_view kind, const std::string& path, std::uint64_t at,
                        const std::string& what);

// An entry key and the length of its secondary-key prefix, as both kinds of file begin an
// entry: [u16 key length][u16 secondary length], the key's bytes following whatever the kind
// puts between.
inline constexpr std::size_t kEntryLengthsBytes = 4;
struct EntryLengths {
  std::uint16_t key = 0;
  std::uint16_t secondary = 0;
};
// The two lengths of `key` (at most kMaxKeyBytes; `secondary_len` at most its size), encoded
// (an external sort's memory holds its entries in the same form).
std::array<char, kEntryLengthsBytes> encode_entry_lengths(std::string_view key,
                                                          std::size_t secondary_len);
// Decodes the lengths at `p`; false when no writer could have written them (a key past
// kMaxKeyBytes, a secondary key longer than the key). Inline: a sort compares through it.
inline bool decode_entry_lengths(const char* p, EntryLengths* out) {
  std::uint16_t lens[2];
  static_assert(sizeof lens == kEntryLengthsBytes);
  std::memcpy(lens, p, sizeof lens);
  out->key = lens[0];
  out->secondary = lens[1];
  return lens[0] <= kMaxKeyBytes && lens[1] <= lens[0];
}

}  // namespace braid::storage
