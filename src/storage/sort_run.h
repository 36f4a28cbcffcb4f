// Sorted runs of an external sort, spilled to the database's directory: the entries of a
// secondary index built under a budget (engine/entry_sort.h), where holding them all, or the
// tree they make, in memory would pass the budget by the size of the index.
//
// Format. A file `sort-N` (N a database-wide file number) is a sequence of chunks (ChunkHeader
// with kSortRunMagic, `count` entries, `index` from 0, `seq` = N), each at most
// kSortRunChunkBytes of payload: entries of [u16 key length][u16 secondary-key length][u64
// value][key bytes], in the order they were added. The writer's caller keeps the entry count.
//
// A run lives only while the build that wrote it runs: it is read back by the same process,
// never synced, removed when the build ends (whatever its outcome), and removed by the next
// open when a crash left it (Durability::recover_and_open_logs). It is still checked as it is
// read (a damaged run fails the build with Corruption rather than give it wrong entries).
#pragma once

#include <braid/status.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/chunk_file.h"
#include "storage/file_system.h"

namespace braid::storage {

// Small: a merge holds one chunk of each run it reads.
inline constexpr std::uint32_t kSortRunChunkBytes = 64u << 10;

std::string sort_run_file_name(std::uint64_t number);
bool parse_sort_run_file_name(std::string_view name, std::uint64_t* number);

class SortRunWriter {
 public:
  // Creates (truncates) `dir`/sort-`number`.
  Status open(FileSystem* fs, const std::string& dir, std::uint64_t number);
  // `key` is at most kMaxKeyBytes, `secondary_len` at most its length.
  Status add(std::string_view key, std::size_t secondary_len, std::uint64_t value);
  // Writes the last chunk and closes the file (no sync: see above).
  Status finish() { return out_.finish(false); }
  std::uint64_t entries() const { return entries_; }

 private:
  ChunkWriter out_;
  std::uint64_t entries_ = 0;
};

// Reads a run back an entry at a time (a merge pulls from several at once).
class SortRunReader {
 public:
  SortRunReader() = default;
  ~SortRunReader();
  SortRunReader(const SortRunReader&) = delete;
  SortRunReader& operator=(const SortRunReader&) = delete;

  // Opens `dir`/sort-`number`, which holds `entries` entries.
  Status open(FileSystem* fs, const std::string& dir, std::uint64_t number, std::uint64_t entries);
  // Moves to the next entry; *more false past the last one. Corruption (naming the file and
  // offset) when a chunk does not check or the file holds other than `entries` entries;
  // IOError when it cannot be read.
  Status next(bool* more);
  // The current entry, valid until the next call to next().
  std::string_view key() const { return key_; }
  std::size_t secondary_len() const { return secondary_len_; }
  std::uint64_t value() const { return value_; }

 private:
  Status bad(const std::string& what) const;
  FileSystem* fs_ = nullptr;
  FileId file_{};
  bool open_ = false;
  std::string path_;
  std::uint64_t number_ = 0;
  std::uint64_t size_ = 0;
  std::uint64_t entries_ = 0;
  std::uint64_t seen_ = 0;   // entries of the chunks read so far
  std::uint64_t at_ = 0;     // the next chunk's offset
  std::uint64_t cur_ = 0;    // the current chunk's offset (what errors name)
  std::uint64_t chunk_ = 0;  // the next chunk's index
  std::uint32_t left_ = 0;   // entries of the current chunk not yet returned
  std::size_t pos_ = 0;      // the next entry's offset in buf_
  std::string buf_;
  std::string_view key_;
  std::size_t secondary_len_ = 0;
  std::uint64_t value_ = 0;
};

}  // namespace braid::storage
