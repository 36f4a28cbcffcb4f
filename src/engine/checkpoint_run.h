// The state of a running checkpoint (engine/checkpointer.cc drives it, a bounded step per
// worker-0 loop).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cold_store.h"
#include "index/btree.h"
#include "mvcc/txn.h"
#include "mvcc/version.h"
#include "storage/checkpoint.h"
#include "storage/index_file.h"

namespace braid::engine {

// A running checkpoint: a snapshot transaction walking every table in key order.
//
// What it writes per record (the log is the database): a hot version's value; a
// cold record in a checkpoint part as a reference (its part stays); a cold record in a log
// segment as its value, read back without installing it (so log segments always go once a
// checkpoint covers them: they are mostly dead records, parts mostly live ones). Once a chunk
// is written, every version whose value it holds learns that address as its `home`, and every
// cold entry it copied is moved there (Fixup), so the files they named can go.
struct CheckpointFixup {
  std::atomic<std::uint64_t>* slot;  // a copied cold entry: moved from `old` to the new address
  std::uint64_t old;
  mvcc::Version* version;  // or a version whose home becomes the new address
  bool done;
  // Or, neither slot nor version: a record the primary leaf of `key` in `table` names by its
  // cold address `old` (leaf_value), whose leaf value moves instead.
  Table* table = nullptr;
  std::string key;
};

struct CheckpointRun {
  std::unique_ptr<storage::CheckpointWriter> writer;
  mvcc::TxnContext* ctx = nullptr;
  std::uint64_t ticket = 0;
  std::uint64_t cts = 0;
  std::uint64_t seq = 0;
  std::vector<storage::LogStart> starts;
  std::uint32_t table = 0;
  std::uint32_t tables = 0;
  std::string from;
  index::LeafBatch batch;
  std::size_t pos = 0;
  bool batch_loaded = false;
  // The leaf after `batch`, scanned while `batch`'s last records are written so that their
  // prefetch pipeline runs on into it: a leaf holds a few dozen records, about as many as the
  // pipeline is deep, and restarting it at each leaf would leave a third of them unprefetched.
  index::LeafBatch upcoming;
  bool upcoming_loaded = false;
  // Leaves on storage are read through their images, not loaded: a checkpoint visits every
  // leaf once, and loading each put the whole tree back in memory and read it one leaf at a
  // time. `batch` and `upcoming` move together; `ahead` (staging, below) runs further on.
  index::LeafImages images;
  index::LeafImages ahead_images;
  bool scanning = true;
  // The index phase after the scan (Durability::write_indexes): the (table, index) being
  // written, where its tree continues, its file (open while one is written), and the
  // manifest's list so far.
  bool indexes_done = false;
  std::uint32_t index_table = 0;
  std::uint32_t index_slot = 0;
  std::string index_from;
  index::LeafImages index_images;  // a secondary tree's leaves on storage, read, not loaded
  storage::IndexFileWriter index_file;
  std::vector<storage::StoredIndex> stored;
  // Fixups by cookie: cookie c is fixups[c - first_cookie]; the done prefix is dropped.
  std::deque<CheckpointFixup> fixups;
  std::uint64_t first_cookie = 1;
  std::vector<std::uint64_t> keep;                   // files a fixup could not move everyone out of
  std::map<std::uint64_t, std::uint64_t> ref_bytes;  // per older part: bytes referred to
  std::size_t passed = 0;                            // durable parts pass_parts looked at

  // The records to copy out of log segments, read together: at the first one the scan meets
  // that is not staged, the records of that kind in the rest of the batch and in the leaves
  // after it (up to a bound) are read in file order through worker 0's ring (BulkRead); the
  // scan waits for them between loops, then takes each value from `staged` by its entry —
  // a block read once and many reads in flight, where a blocking read per record paid the
  // device's latency each time. A record whose entry moved meanwhile is read alone.
  struct Staged {
    std::uint64_t cts = 0;
    std::uint32_t off = 0;  // in `staged_values`
    std::uint32_t len = 0;
  };
  std::unique_ptr<BulkRead> bulk;  // made at the first batch that needs it
  bool bulk_running = false;
  std::uint32_t staged_batches = 0;  // batches from this one on that the last staging covered
  std::vector<ColdStore::BulkRecord> bulk_refs;
  std::unordered_map<std::uint64_t, Staged> staged;  // by cold entry
  std::string staged_values;
  index::LeafBatch ahead;  // the leaves after the batch, as staging scans them
};

}  // namespace braid::engine
