// An external sort of index entries (entry key, secondary-key length, value), for the build of
// a secondary index where the index pages under a budget (DatabaseImpl::build_index). The
// build meets its entries in primary-key order, which scatters them over the secondary keys:
// inserted as they come, every leaf of the new tree stays in use until the end, so the tree
// is whole in memory before anything may evict it. Sorted first, they fill the tree from left
// to right, and the leaves behind the last insert can go out as it grows
// (ColdStore::shrink_unpublished), as an attach's do.
//
// Entries are buffered up to a memory bound, sorted, and spilled as runs (storage/sort_run.h)
// when the bound is reached; drain() merges the runs (at most kMaxFanIn at a time, in passes
// when there are more) with what is still buffered. Memory: the bound, plus a chunk per run
// the merge reads. Runs are removed as soon as they are merged, and by the destructor on any
// path out.
#pragma once

#include <braid/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_system.h"
#include "storage/file_table.h"

namespace braid::engine {

class EntrySorter {
 public:
  // Runs are files of `dir` numbered from `numbers`. `memory_bytes`: the buffer's bound.
  EntrySorter(storage::FileSystem* fs, std::string dir, storage::FileTable* numbers,
              std::size_t memory_bytes);
  ~EntrySorter();
  EntrySorter(const EntrySorter&) = delete;
  EntrySorter& operator=(const EntrySorter&) = delete;

  // `key` at most kMaxKeyBytes. IOError when a run cannot be written.
  Status add(std::string_view key, std::size_t secondary_len, std::uint64_t value);

  using Sink =
      std::function<Status(std::string_view key, std::size_t secondary_len, std::uint64_t value)>;
  // Calls `sink` for every entry added, in key order (equal keys next to each other, in no
  // particular order among themselves); stops at the first error, its own or the sink's. Once.
  Status drain(const Sink& sink);

  std::uint64_t entries() const { return entries_; }
  // Runs written, counting those the merge's passes wrote.
  std::uint64_t runs_written() const { return runs_written_; }

  // Runs one merge reads at once: each holds a chunk in memory (storage::kSortRunChunkBytes).
  static constexpr std::size_t kMaxFanIn = 64;

 private:
  struct Run {
    std::uint64_t number = 0;
    std::uint64_t entries = 0;
  };
  // A buffered entry: its key's first 8 bytes (big-endian, so integers compare as keys do)
  // beside its offset in arena_, so that most comparisons touch no arena byte.
  struct Slot {
    std::uint64_t head = 0;
    std::uint32_t offset = 0;
  };
  std::string_view key_at(std::uint32_t offset) const;
  std::size_t secondary_len_at(std::uint32_t offset) const;
  std::uint64_t value_at(std::uint32_t offset) const;
  void sort_buffer();
  Status spill();
  // Merges `runs` (and the buffer, with `buffer`) into `sink`, removing the runs after.
  Status merge(const std::vector<Run>& runs, bool buffer, const Sink& sink);
  void remove_run(const Run& run);

  storage::FileSystem* fs_;
  std::string dir_;
  storage::FileTable* numbers_;
  std::size_t memory_bytes_;
  std::string arena_;  // entries: [u16 key length][u16 secondary length][u64 value][key]
  std::vector<Slot> slots_;
  std::vector<Run> runs_;  // spilled and not yet merged away
  std::uint64_t entries_ = 0;
  std::uint64_t runs_written_ = 0;
  bool drained_ = false;
};

}  // namespace braid::engine
