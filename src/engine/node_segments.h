// The engine's index::NodeStore (docs/internals/index-paging.md): the trees' evicted leaves
// (primary and secondary) go to node segments in the database's directory
// (storage/node_segment.h), one writer for the whole database, and come back through the cold
// store's file table.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/cold_store.h"
#include "index/node_store.h"
#include "storage/file_system.h"
#include "storage/file_table.h"
#include "storage/node_segment.h"
#include "storage/recovery.h"

namespace braid::engine {

class NodeSegments final : public index::NodeStore {
 public:
  // New segments take their numbers from `files` (whose counter the open raised above every
  // file present) and join it, so reads find them at once.
  // `cold`: whose table of shared leaf reads a synchronous read joins (ColdStore::read_shared).
  NodeSegments(storage::FileSystem* fs, ColdStore* cold, std::string dir,
               std::uint64_t segment_bytes)
      : files_(&cold->files()), cold_(cold), writer_(fs, files_, std::move(dir), segment_bytes) {}

  // add() and flush() are the evicting thread's: the engine evicts leaves from one thread at
  // a time (ColdStore::sweep_leaves), so a slot add() answered stays valid until that
  // thread's flush(). The mutex only keeps a misuse from corrupting the writer.
  Result<std::uint64_t> add(char** slot) override;
  // Writes the staged images, then removes the segments whose images are all released.
  Status flush() override;
  // Any thread: one read of the slot's block. An address in one of the run files
  // (set_run_files) names a checkpoint's run instead, which is read and turned into the image
  // of the leaf it stands for (index-paging.md, decision 6). A read of the same blocks that a
  // transaction on any worker holds is joined (ColdStore::read_shared); otherwise a worker
  // reads through its ring (the read others may join) and spins on it, and a thread without a
  // ring uses pread.
  Status read(std::uint64_t address, char* out) override;
  // Any thread: one read per run of images side by side (and one per checkpoint run).
  Status read_many(std::span<const std::uint64_t> addresses, char* out) override;
  // A run is the checkpoint's, not this store's: its part stays (Durability keeps run files).
  void release(std::uint64_t address) override {
    if (!is_run(address)) writer_.release(address);
  }

  // The parts an open built the trees' leaves over (sorted). Set before the trees are
  // shared, and fixed from then on: nothing else names a run, so reads test it unlocked.
  void set_run_files(std::vector<std::uint64_t> files) { run_files_ = std::move(files); }
  // Whether `address` names a run of a checkpoint (not an image of this store).
  bool is_run(std::uint64_t address) const;
  // The image of the leaf the run at `address` stands for, from its records.
  static Status image_of(const storage::RunRecords& run, std::uint64_t address, char* out);
  // The blocks a leaf at `address` is read from through a ring (ColdPort::read_shared): its
  // image's block, or its run's blocks (`run`: is_run(address)).
  struct Blocks {
    std::uint32_t segment = 0;
    std::uint64_t start = 0;
    std::uint32_t len = 0;
  };
  static Blocks blocks_of(std::uint64_t address, bool run);
  // The leaf's image from the read of blocks_of(address, run) that came back with `got` (bytes,
  // or -errno) into `bytes`: *image points into `bytes` for an image, or at `scratch`
  // (kNodeImageBytes, 64-byte aligned) filled from a run's records. IOError naming the file
  // when the read failed or ended short, Corruption when the run does not decode. Images are
  // not verified here: the tree's install does that.
  static Status image_from(std::uint64_t address, bool run, const char* bytes, std::int64_t got,
                           char* scratch, const char** image);

  std::size_t live_segments() const { return writer_.live_segments(); }

 private:
  // Images need no sync (an open removes every node segment), but a sync now and then bounds
  // what the kernel holds dirty, and the simulated file system's record of unsynced writes.
  static constexpr std::uint64_t kSyncBytes = std::uint64_t{16} << 20;

  // read() through the cold store's shared leaf reads: joins the read a transaction holds, or
  // on a worker issues one through its ring (which others may join) and spins on it. False
  // when neither could be had (no ring and nothing to join, no buffer free, blocks larger than
  // a scan's extent): the caller reads with pread. Else *status says how it ended.
  bool read_shared(std::uint64_t address, bool run, char* out, Status* status);

  storage::FileTable* const files_;
  ColdStore* const cold_;
  std::vector<std::uint64_t> run_files_;
  std::mutex mutex_;
  std::uint64_t flushes_since_sync_ = 0;
  storage::NodeSegmentWriter writer_;
};

}  // namespace braid::engine
