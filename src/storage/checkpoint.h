// Writing a checkpoint chunk by chunk through an IoQueue, so a worker can interleave it with
// transactions (a system transaction, no thread of its own).
//
// A checkpoint is its parts and a manifest (log_format.h). Records go into numbered part files
// (database-wide numbers, at most `part_bytes` each, so a cold entry can name any record in
// them); each record's place is fixed when it is added, so its address is known at once. When
// every part is written and synced (and the directory entries are durable), the manifest —
// header, log starts, the parts, the files the checkpoint's references point into — goes into
// slot seq % 2 and is synced: only then does the checkpoint exist. The other slot keeps the
// previous checkpoint whole until then, so a crash mid-write falls back to it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_system.h"
#include "storage/log_format.h"

namespace braid::storage {

struct CheckpointConfig {
  std::string dir;
  std::uint64_t part_bytes = 64u << 20;     // at most kMaxColdOffset (storage/cold_address.h)
  std::uint32_t chunk_bytes = 1u << 20;     // payload per chunk
  std::function<std::uint64_t()> new_file;  // a part's number
  std::function<void(std::uint64_t, const std::string&)> created;  // a part exists
  // A record added with a cookie is written (readable, not yet durable) at `address`, a cold
  // entry (storage/cold_address.h). Called from reap, on the writer's thread.
  std::function<void(std::uint64_t cookie, std::uint64_t address)> written;
  // A chunk of `records` records is written (readable, not yet durable); from reap.
  std::function<void(std::uint32_t records)> chunk_written;
  // False: parts only (a bulk load, Database::bulk_load). finish() stops once the parts and
  // their directory entries are durable; a later checkpoint refers to their records.
  bool manifest = true;
  // A part is closed once it holds this many bytes (0: parts fill up to part_bytes), and
  // synced as soon as its writes are done, so the parts become durable one by one while the
  // scan goes on (durable_parts()).
  std::uint64_t part_target = 0;
  // Lists the checkpoint's runs in its manifest (log_format.h, CkptRun): the records added
  // between two start_run() calls, split where a chunk ends or a run would pass what a cold
  // word addresses. A record too big for any run leaves the whole list out (the open then
  // reads the parts, as without one).
  bool runs = false;
  // The bytes the run list is expected to reach (the previous checkpoint's list): reserved at
  // once, so a list of tens of MiB is not copied as it doubles, and the manifest is built
  // around it without a second buffer (pages reserved and never written take no memory).
  std::size_t runs_reserve = 0;
};

// The previous checkpoint, as a manifest of a checkpoint under way names it (log_format.h).
struct CheckpointBase {
  std::uint64_t seq = 0;
  std::uint64_t cts = 0;
  std::vector<LogStart> starts;
  std::vector<CkptPart> parts;      // its parts still present
  std::vector<std::uint64_t> live;  // files outside it that its references need
};

class CheckpointWriter {
 public:
  // `starts`: where each log of the header's generation continues the checkpoint.
  CheckpointWriter(FileSystem* fs, IoQueue* queue, const CkptHeader& header,
                   std::vector<LogStart> starts, CheckpointConfig config);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // True when add() may be called now (a chunk buffer is free).
  bool ready();
  // A value record. The answer is its address (a cold entry), or 0 when it cannot have one;
  // with `cookie` != 0 and an address, config.written(cookie, address) follows once the chunk
  // holding it is written.
  Result<std::uint64_t> add(std::uint32_t table, std::string_view key, std::string_view value,
                            std::uint64_t cts, std::uint64_t cookie = 0);
  // A reference to the record's newest version at cold entry `entry` (a log segment or an
  // older part): its file joins the live set.
  Status add_ref(std::uint32_t table, std::string_view key, std::uint64_t entry);
  // With config.runs: the next record added starts a new run (an index leaf begins).
  void start_run() { run_break_ = true; }
  // With config.runs: lists a run of an earlier checkpoint as this one's, its records not
  // read or written (a leaf still on storage as that run: index-paging.md, decision 6). Its
  // part and the files its references need join the live set; `key` must sort after every
  // record added so far. Busy when this checkpoint can no longer list runs, and from then on
  // any record no run can hold fails the checkpoint with Busy too (the list would lose the
  // carried runs): the caller stops carrying and tries again.
  Status carry_run(std::uint32_t table, std::string_view key, std::uint64_t address,
                   std::uint32_t records, std::span<const std::uint64_t> ref_files);
  // The secondary indexes this checkpoint's manifest names (their files written and synced;
  // index_file.h). Before finish() starts on the manifest.
  void set_indexes(std::vector<StoredIndex> indexes) { indexes_ = std::move(indexes); }
  // Records in runs carried so far.
  std::uint64_t carried_records() const { return carried_records_; }
  // Runs listed so far (the open one excluded), and whether the list will be written.
  std::uint64_t runs() const { return run_count_; }
  bool lists_runs() const { return config_.runs && runs_ok_; }
  // The bytes of the run list the manifest holds, once finish() has written it (0 before, or
  // without a list).
  std::size_t run_list_bytes() const { return run_list_bytes_; }
  // After the last add: writes the last chunk, syncs the parts, writes and syncs the manifest
  // (into a new file renamed over its slot: a slot holds a whole manifest or the one before).
  // Call until it answers true (done) or an error; with `wait`, blocks on the device meanwhile.
  Result<bool> finish(bool wait);

  // Parts from the first on that are closed and durable (their directory entries too once a
  // manifest names them), and the last record each one holds.
  std::size_t durable_parts();
  std::uint32_t part_last_table(std::size_t part) const { return files_[part].last_table; }
  const std::string& part_last_key(std::size_t part) const { return files_[part].last_key; }
  // Publishes, synchronously, the manifest of this checkpoint under way: its first `parts`
  // durable parts, then `base`'s. Once it is durable, the previous checkpoint's parts it no
  // longer names may go.
  Status write_under_way(std::size_t parts, const CheckpointBase& base);
  // Until finish() starts on the whole manifest (after it, write_under_way may not be called).
  bool before_manifest() const { return phase_ == Phase::kData || phase_ == Phase::kSyncParts; }

  std::uint64_t records() const { return records_; }
  std::uint64_t bytes() const { return bytes_; }
  const std::vector<CkptPart>& parts() const { return parts_; }
  // Files outside the checkpoint its references need (valid once finish() answered true).
  const std::set<std::uint64_t>& live() const { return live_; }
  const std::string& path() const { return manifest_path_; }

 private:
  struct Part {
    std::uint64_t number;
    std::string path;
    FileId file;
    std::uint32_t writes = 0;  // chunk writes in flight
    bool closed = false;       // no chunk will be added
    bool syncing = false;
    bool synced = false;
    std::uint32_t last_table = 0;
    std::string last_key;
  };
  // Room for one more record of `need` bytes in the active chunk; places a new chunk (and a
  // new part when the chunk might not fit the current one).
  Status make_room(std::uint32_t need);
  Status place_chunk();
  Status submit_chunk();
  Status submit_write(int buffer, FileId file, std::uint64_t offset, const char* data,
                      std::uint32_t len);
  Status submit_sync(FileId file, std::uint64_t tag);
  Status reap(bool wait);
  // Syncs closed parts whose writes are done, a few at a time.
  Status sync_closed();
  void note_last(std::uint32_t table, std::string_view key);
  // The record of `bytes` at `offset` of the last part joins the open run or starts one.
  void note_run(std::uint32_t table, std::string_view key, std::uint64_t offset,
                std::uint32_t bytes, std::uint64_t ref_file);
  void close_run();
  std::string manifest_image(const CkptHeader& header, const std::vector<LogStart>& starts,
                             const std::vector<CkptPart>& parts, std::set<std::uint64_t> live,
                             const std::string& frontier, std::string runs,
                             const std::vector<StoredIndex>& indexes) const;
  // Writes `image` into the slot's new file synchronously, and renames it over the slot.
  Status publish(const std::string& image);
  Status write_manifest();
  Status rename_manifest();

  FileSystem* fs_;
  IoQueue* queue_;
  CkptHeader header_;
  std::vector<LogStart> starts_;
  CheckpointConfig config_;
  std::string manifest_path_;
  std::unique_ptr<char[]> buffers_[2];
  bool busy_[2] = {false, false};
  IoRequest requests_[3];  // each buffer's write and the manifest's, advanced past short writes
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pending_[2];  // (cookie, address)
  std::size_t buffer_part_[2] = {0, 0};       // the part each buffer's write goes to
  std::uint32_t buffer_records_[2] = {0, 0};  // and the records it holds
  bool close_part_ = false;  // the part reached part_target: the next chunk opens one
  int active_ = 0;
  bool placed_ = false;  // the active chunk has its part and offset
  std::uint32_t used_ = 0;
  std::uint32_t count_ = 0;
  std::vector<Part> files_;
  std::vector<CkptPart> parts_;
  std::uint64_t part_offset_ = 0;  // where the active chunk goes in the last part
  std::uint64_t records_ = 0;
  std::uint64_t bytes_ = 0;
  std::set<std::uint64_t> live_;
  // The run list (config.runs): entries encoded as they close, and the open run.
  std::string runs_image_;
  std::uint64_t run_count_ = 0;
  bool runs_ok_ = true;
  bool run_break_ = true;
  CkptRun run_{};
  std::uint64_t run_file_ = 0;
  std::uint64_t run_offset_ = 0;
  std::uint64_t run_bytes_ = 0;
  std::string run_key_;
  std::vector<std::uint64_t> run_refs_;
  std::uint64_t carried_records_ = 0;
  enum class Phase : std::uint8_t { kData, kSyncParts, kManifest, kSyncManifest, kDone };
  Phase phase_ = Phase::kData;
  std::uint32_t writes_in_flight_ = 0;
  std::uint32_t syncs_in_flight_ = 0;
  static constexpr std::uint32_t kSyncsInFlight = 2;
  std::size_t durable_ = 0;  // parts [0, durable_) are synced
  FileId manifest_ = -1;     // the new manifest file (manifest_path_ + ".new")
  std::string manifest_image_;
  std::vector<StoredIndex> indexes_;
  std::size_t run_list_bytes_ = 0;  // of the manifest's run list, once it is written
  Status failure_;
};

}  // namespace braid::storage
