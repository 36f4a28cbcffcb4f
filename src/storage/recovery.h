// Reading the database directory back: the catalog, the newest valid checkpoint, and every
// log's blocks, replayed in commit-timestamp order (DESIGN §5).
//
// Replay merges the logs (each is in timestamp order) and applies transactions while the
// timestamps stay dense: commit timestamps are handed out one by one and only to committing
// writers, so the first missing number marks the end of what is durable everywhere. What lies
// after it (on some other log) was never acknowledged and is dropped; the engine then writes a
// checkpoint of the recovered state in the next log generation and deletes the old logs, so a
// later recovery can never see those records again (recovery is idempotent).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_system.h"
#include "storage/log_format.h"

namespace braid::storage {

struct CatalogEntry {
  std::uint32_t id;
  std::string name;
};
// Missing file: OK with no entries and *present = false.
Status read_catalog(FileSystem& fs, const std::string& dir, std::vector<CatalogEntry>* out,
                    bool* present);
// Atomically replaces the catalog (tmp file, sync, rename, directory sync).
Status write_catalog(FileSystem& fs, const std::string& dir,
                     const std::vector<CatalogEntry>& entries);

class Applier {
 public:
  virtual ~Applier() = default;
  virtual Status put(std::uint32_t table, std::string_view key, std::string_view value,
                     std::uint64_t cts) = 0;
  virtual Status remove(std::uint32_t table, std::string_view key, std::uint64_t cts) = 0;
};

struct RecoveryReport {
  bool checkpoint = false;  // a valid checkpoint was loaded
  std::uint64_t checkpoint_seq = 0;
  std::uint64_t checkpoint_cts = 0;
  std::uint64_t checkpoint_records = 0;
  std::uint32_t checkpoint_fallbacks = 0;  // slots present but torn or corrupt
  std::uint64_t generation = 0;            // the log generation replayed
  std::uint32_t logs = 0;
  std::uint64_t log_files = 0;
  std::uint64_t log_bytes = 0;
  std::uint64_t blocks = 0;
  std::uint64_t txns_replayed = 0;
  std::uint64_t writes_replayed = 0;
  std::uint64_t txns_dropped = 0;      // durable on their log, but after the first hole
  std::uint32_t torn_tails = 0;        // logs that ended in a torn or corrupt last block
  std::uint64_t cutoff = 1;            // the newest commit timestamp recovered
  std::vector<std::string> old_files;  // log files to delete once a new checkpoint is durable
  double seconds = 0;
};

// Loads the newest valid checkpoint slot and replays the logs after it. `base_clock` is the
// clock of an empty database (the first commit takes base_clock + 1).
Status recover(FileSystem& fs, const std::string& dir, std::uint64_t base_clock, Applier& apply,
               RecoveryReport* report);

struct CheckpointInfo {
  bool valid = false;
  std::string problem;  // why not valid
  CkptHeader header{};
  CkptTrailer trailer{};
  std::uint64_t bytes = 0;
};
// Validates a checkpoint image; with `apply`, then applies its records.
Status read_checkpoint(std::string_view image, CheckpointInfo* info, Applier* apply);

// Statistics of one log segment image without applying it (tools, fuzzing).
struct SegmentScan {
  SegmentHeader header{};
  bool header_ok = false;
  std::uint64_t blocks = 0;
  std::uint64_t txns = 0;
  std::uint64_t valid_bytes = 0;  // where the last good block ends
  std::uint64_t min_cts = 0;
  std::uint64_t max_cts = 0;
  bool torn = false;  // stopped at a bad block
};
Status scan_segment(std::string_view image, SegmentScan* out, Applier* apply);

}  // namespace braid::storage
