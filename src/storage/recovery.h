// Reading the database directory back: the catalog, the newest valid checkpoint, and every
// log's blocks, replayed in commit-timestamp order (docs/internals/durability.md).
//
// Replay merges the logs (each is in timestamp order) and applies transactions while the
// timestamps stay dense: every timestamp handed out is logged, so the first missing number
// marks the end of what is durable everywhere. Completeness is not inferred from that alone:
// the checkpoint names where each log continues it, each closed segment names its successor,
// and each block records the durable clock of its time (log_format.h). A hole below that clock,
// a missing segment, or a bad block with durable data after it is Corruption; what lies after
// a hole that no block vouches for was never acknowledged and is dropped. The engine then
// writes a checkpoint in a new log generation and deletes the old logs, so a later recovery
// can never see those records again (recovery is idempotent).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_system.h"
#include "storage/file_table.h"
#include "storage/log_format.h"
#include "util/progress.h"

namespace braid::storage {

struct CatalogEntry {
  std::uint32_t id;
  std::string name;
};
struct Catalog {
  std::vector<CatalogEntry> tables;
  // The log generation of the newest open, written once its checkpoint is durable: recovery
  // must find a checkpoint of at least this generation (a lost newest checkpoint is detected
  // even where the older one's logs are still there).
  std::uint64_t generation = 0;
};
// Missing file: OK with an empty catalog and *present = false.
Status read_catalog(FileSystem& fs, const std::string& dir, Catalog* out, bool* present);
// Atomically replaces the catalog (tmp file, sync, rename, directory sync).
Status write_catalog(FileSystem& fs, const std::string& dir, const Catalog& catalog);

struct CheckpointInfo;

class Applier {
 public:
  virtual ~Applier() = default;
  // `address`: where the record lies, as a cold entry (storage/cold_address.h), or 0 when it cannot
  // be named (the engine may then keep only the value).
  virtual Status put(std::uint32_t table, std::string_view key, std::string_view value,
                     std::uint64_t cts, std::uint64_t address) = 0;
  virtual Status remove(std::uint32_t table, std::string_view key, std::uint64_t cts) = 0;
  // A checkpoint's reference: the record's newest version is at cold entry `entry`.
  virtual Status ref(std::uint32_t table, std::string_view key, std::uint64_t entry) = 0;
  // The checkpoint's records are all in (the log's follow). Until then every key is new: a
  // checkpoint holds each key once and recovery starts from empty tables.
  virtual void checkpoint_applied() {}
  // The secondary indexes the checkpoint stores (storage/index_file.h), before its records
  // are applied; not called for a checkpoint under way, which stores none.
  virtual void stored_indexes(const std::vector<StoredIndex>& /*indexes*/) {}
  // Whether the applier takes a checkpoint's run list instead of its records (the engine's
  // index pages: it builds each tree over the runs and reads none of the parts).
  virtual bool adopts_runs() const { return false; }
  // It may take `info->runs` (moved out, the list kept for the open's life without a copy):
  // recovery reads no run after this call.
  virtual Status adopt_runs(CheckpointInfo* info);
};

// Strict: any missing or damaged file that held durable data is Corruption (naming file and
// offset); only a torn tail no later durable write vouches for is taken as the end of a log.
// Salvage: the same damage is recorded in `problems`, the damaged log ends there, and recovery
// opens the longest prefix of the commit order that is whole.
enum class RecoveryMode : std::uint8_t { kStrict, kSalvage };

struct RecoveryReport {
  bool checkpoint = false;  // a valid checkpoint was loaded
  std::uint64_t checkpoint_seq = 0;
  std::uint64_t checkpoint_cts = 0;
  std::uint64_t checkpoint_records = 0;    // applied from its parts
  std::uint64_t checkpoint_runs = 0;       // in its run list
  bool checkpoint_adopted = false;         // its run list taken instead of its records (adopt_runs)
  bool checkpoint_under_way = false;       // the manifest of a checkpoint under way
  std::uint32_t checkpoint_fallbacks = 0;  // slots present but torn or corrupt
  std::uint64_t generation = 0;            // the log generation replayed
  std::uint64_t max_generation = 0;        // the highest generation of any file present
  std::uint64_t max_file = 0;              // the highest file number of any segment present
  std::uint32_t logs = 0;
  std::uint64_t log_files = 0;
  std::uint64_t log_bytes = 0;
  std::uint64_t blocks = 0;
  std::uint64_t txns_replayed = 0;
  std::uint64_t writes_replayed = 0;
  std::uint64_t txns_dropped = 0;     // durable on their log, but after the first hole
  std::uint32_t torn_tails = 0;       // logs that ended in a torn or corrupt last block
  std::uint32_t clean_logs = 0;       // logs that ended in their close block
  std::uint64_t cutoff = 1;           // the newest commit timestamp recovered
  std::uint64_t acked = 0;            // the highest durable clock any block records
  std::vector<std::string> torn;      // where each torn tail starts ("file at offset N")
  std::vector<std::string> problems;  // damage found (only kSalvage gets this far with any)
  // Every log segment and checkpoint part present, by number: cold entries may point into
  // any of them until the open's checkpoint says which ones it still needs; the next
  // generation makes the rest obsolete.
  std::map<std::uint64_t, std::string> numbered_files;
  double seconds = 0;
};

// Loads the newest usable checkpoint slot and replays the logs after it. `base_clock` is the
// clock of an empty database (the first commit takes base_clock + 1); `catalog_generation` is
// the catalog's generation. Reads only. `progress` (may be empty) hears of the checkpoint's
// records and the logs' bytes as they are read.
Status recover(FileSystem& fs, const std::string& dir, std::uint64_t base_clock,
               std::uint64_t catalog_generation, Applier& apply, RecoveryMode mode,
               RecoveryReport* report, const util::ProgressMeter::Sink& progress);

// One entry of a run list, pointing into the CheckpointInfo it was read from.
struct RunView {
  CkptRun run{};
  const char* ref_files = nullptr;  // run.ref_files u64s, unaligned
  std::string_view key;
};

struct CheckpointInfo {
  bool valid = false;
  std::vector<StoredIndex> indexes;  // the indexes chunk (format 6), in its order
  std::string problem;               // why not valid
  CkptHeader header{};
  std::vector<LogStart> starts;
  std::vector<CkptPart> parts;
  std::vector<std::uint64_t> live;  // files outside the checkpoint its references need
  CkptTrailer trailer{};
  std::uint64_t bytes = 0;
  // A checkpoint under way (log_format.h): its frontier, past which the previous
  // checkpoint's parts and the logs from the header's starts hold the state.
  bool under_way = false;
  CkptFrontier frontier{};
  std::string frontier_key;
  // Whether (table, key) lies past the frontier (always, for a whole checkpoint).
  bool past_frontier(std::uint32_t table, std::string_view key) const;
  // The run list (log_format.h, CkptRun), when the checkpoint wrote one: the runs chunk's
  // payload as it is (~30 bytes a leaf; read with next_run), and how many runs it holds. Runs
  // in files of the live chunk are carried over from an earlier checkpoint: their records are
  // the checkpoint's too, though none of its parts holds them (`carried_records`).
  std::string runs;
  std::uint64_t run_count = 0;
  std::uint64_t carried_records = 0;
  bool carried(const RunView& r) const;
};
// The entry at `*at` of a valid manifest's run list; advances `*at` past it.
RunView next_run(std::string_view runs, std::size_t* at);
// Validates a checkpoint manifest image (log_format.h); Corruption only for another format
// version, otherwise `valid` and `problem` say.
Status read_checkpoint(std::string_view image, CheckpointInfo* info);
// The same, taking the image: the run list keeps the image's buffer instead of a copy of it
// (the list is nearly all of a manifest, tens of MiB for tens of millions of records).
Status read_checkpoint(std::string&& image, CheckpointInfo* info);
// Reads the parts of a valid manifest chunk by chunk, verifying each (checksum, order, the
// checkpoint's seq, the manifest's counts) and, with `apply`, applying the records as it goes:
// the parts were durable before the manifest, so any mismatch is Corruption naming the part.
// `meter`, when given, counts records.
// `applied`, when given, receives the records applied (a checkpoint under way skips the
// previous checkpoint's records up to its frontier).
Status read_checkpoint_parts(FileSystem& fs, const std::string& dir, const CheckpointInfo& info,
                             Applier* apply, util::ProgressMeter* meter = nullptr,
                             std::uint64_t* applied = nullptr);

// The records of the run at `address` (a CkptRun's), as the index leaf they stand for: each
// key and the address its leaf names the record by (its own for a value, the target for a
// reference). Every record is checked (checksum, one table, keys strictly ascending, no
// removal, the run filled exactly); IOError when the read fails, Corruption naming the part
// and offset otherwise. `keys` point into `bytes`.
struct RunRecords {
  std::uint32_t table = 0;
  std::string bytes;
  std::vector<std::string_view> keys;
  std::vector<std::uint64_t> values;
  // Per record, for a reader that applies them (recovery without adopting runs): whether it is
  // a reference, and a value record's value and commit timestamp.
  std::vector<bool> refs;
  std::vector<std::string_view> payloads;
  std::vector<std::uint64_t> cts;
};
Status read_run(FileTable* files, std::uint64_t address, RunRecords* out);
// The same from the run's bytes, read by the caller (`bytes`: the run's size of them).
Status decode_run(std::uint64_t address, const char* bytes, RunRecords* out);
// The runs at `addresses`, into out[0..addresses.size()), with one read per stretch of runs
// that lie one after another in a part (a checkpoint wrote its leaves so): a scan over leaves
// on storage reads the part nearly sequentially, not a block per leaf. Errors as read_run's.
Status read_runs(FileTable* files, std::span<const std::uint64_t> addresses, RunRecords* out);

// Statistics of one log segment image without applying it (tools, fuzzing).
struct SegmentScan {
  SegmentHeader header{};
  bool header_ok = false;
  std::uint64_t blocks = 0;
  std::uint64_t txns = 0;
  std::uint64_t valid_bytes = 0;  // where the last good block ends
  std::uint64_t last_block = 0;   // where the last good block starts (0: none)
  std::uint32_t last_block_txns = 0;
  std::uint64_t min_cts = 0;
  std::uint64_t max_cts = 0;
  bool torn = false;    // stopped at a bad block
  bool next = false;    // ends in the block naming the next segment
  bool closed = false;  // ends in the log's close block
  std::uint64_t acked = 0;
};
Status scan_segment(std::string_view image, SegmentScan* out, Applier* apply);

}  // namespace braid::storage
