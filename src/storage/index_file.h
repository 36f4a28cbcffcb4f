// Stored secondary indexes (docs/internals/index-paging.md, decision 6, "Secondary indexes").
//
// Format. A file `sidx-N` (N a database-wide file number) is a sequence of chunks (ChunkHeader
// with kIndexFileMagic, `count` entries, `index` from 0, `seq` = N, so a file renamed or
// copied over another is told apart), each at most kIndexChunkBytes of payload: entries of
// [u16 key length][u16 secondary-key length][key bytes], the key being the index's entry key
// (secondary key ‖ primary key), in the tree's order. A list of primary keys (an index's dirty
// keys) has the same form with secondary length 0. The manifest that names the file gives its
// entry count (CkptIndex), and the file ends exactly after its last chunk.
//
// Writing is synchronous (the engine writes a file in bounded steps between transactions); a
// file is synced before a manifest names it.
#pragma once

#include <braid/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "storage/chunk_file.h"
#include "storage/file_system.h"

namespace braid::storage {

inline constexpr std::uint32_t kIndexChunkBytes = 1u << 20;

std::string index_file_name(std::uint64_t number);
bool parse_index_file_name(std::string_view name, std::uint64_t* number);

class IndexFileWriter {
 public:
  // Creates (truncates) `dir`/sidx-`number`.
  Status open(FileSystem* fs, const std::string& dir, std::uint64_t number);
  // Entries in the order they are to be read back. `key` is at most kMaxKeyBytes.
  Status add(std::string_view key, std::size_t secondary_len);
  // Writes the last chunk and syncs the file.
  Status finish() { return out_.finish(true); }
  bool is_open() const { return out_.is_open(); }
  std::uint64_t number() const { return number_; }
  std::uint64_t entries() const { return entries_; }
  std::uint64_t bytes() const { return out_.bytes(); }

 private:
  ChunkWriter out_;
  std::uint64_t number_ = 0;
  std::uint64_t entries_ = 0;
};

// Reads `dir`/sidx-`number`, calling `fn` for each entry in order; Corruption (naming the file
// and offset) when a chunk does not check, the file does not end after its last chunk, or it
// holds other than `entries` entries; IOError when it cannot be read.
Status read_index_file(
    FileSystem* fs, const std::string& dir, std::uint64_t number, std::uint64_t entries,
    const std::function<Status(std::string_view key, std::size_t secondary_len)>& fn);

}  // namespace braid::storage
