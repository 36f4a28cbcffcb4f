// On-disk formats of the database directory (docs/log-format.md is the prose version; keep the
// two in step). All integers little-endian; every checksum is CRC32C.
//
//   CATALOG                    table ids and names (rewritten atomically: tmp, sync, rename)
//   CHECKPOINT-0, CHECKPOINT-1 two alternating checkpoint manifests (header, log starts, the
//                              checkpoint's parts and the files its references need)
//   ckpt-SSSSSSSSSS            a checkpoint part: addressable records; S is its file number
//   log-GGGGGG-LLLL-SSSSSSSSSS redo log segments: generation G, log L (worker, or the
//                              application-thread log = number of workers), segment S
//
// A log segment is a 4 KiB segment header followed by blocks. A block is what one group
// commit writes: a 48-byte header, then transaction records, then padding to `padded_len`
// (4 KiB multiples when the log is written with O_DIRECT). One CRC covers a block's header and
// payload, so a torn or corrupt group commit is detected as a whole.
//
// The directory knows what must exist, so recovery detects a missing or damaged
// file instead of inferring completeness from timestamps:
//   * a checkpoint names, per log of its generation, the segment and block that continue it;
//   * a segment that is closed for the next one ends in a kNext block naming it, written once
//     the next segment is durable; a log closed cleanly ends in a kClose block;
//   * every block carries `acked`: the durable clock when it was submitted. Every commit at or
//     below it was on disk on every log, so a recovery that stops below it lost durable data.
#pragma once

#include <braid/options.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "util/crc32c.h"

namespace braid::storage {

// Files are written in kFormatVersion and read back to kOldestFormatVersion: version 5 added
// the run list of a checkpoint's manifest (CkptRun), which a version-4 manifest lacks and a
// version-4 build would not know (it refuses version 5 by its number, not by a bad chunk);
// version 6 the stored secondary indexes (CkptIndex, storage/index_file.h).
inline constexpr std::uint32_t kFormatVersion = 6;
inline constexpr std::uint32_t kOldestFormatVersion = 4;
inline bool readable_format(std::uint32_t version) {
  return version >= kOldestFormatVersion && version <= kFormatVersion;
}
inline std::string readable_formats() {
  return "versions " + std::to_string(kOldestFormatVersion) + " to " +
         std::to_string(kFormatVersion);
}
inline constexpr std::uint64_t kSegmentMagic = 0x474f4c4449415242ull;  // "BRAIDLOG"
inline constexpr std::uint32_t kBlockMagic = 0x314b4c42u;              // "BLK1"
inline constexpr std::uint32_t kSegmentHeaderBytes = 4096;
inline constexpr std::uint32_t kBlockHeaderBytes = 48;
inline constexpr std::uint32_t kTxnHeaderBytes = 16;
inline constexpr std::uint32_t kRecordHeaderBytes = 24;
// Blocks, transaction headers and write records start at multiples of this in a segment file,
// so a write record's address fits a cold entry (storage/cold_address.h: offsets and sizes in
// 16-byte units).
inline constexpr std::uint32_t kRecordAlign = 16;
inline constexpr std::uint32_t kDirectAlign = 4096;

// kRef appears only in checkpoint parts: the record's newest version lives elsewhere (a log
// segment or an older part), and the 8-byte value is its cold entry (storage/cold_address.h).
enum class WriteOp : std::uint8_t { kPut = 1, kRemove = 2, kRef = 3 };
inline constexpr std::uint32_t kRefValueBytes = 8;

struct SegmentHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t log;
  std::uint64_t generation;
  std::uint64_t segment;
  std::uint64_t first_block;  // block_seq of the segment's first block
  std::uint32_t reserved;
  std::uint32_t crc;  // over the 44 bytes before it
};
static_assert(sizeof(SegmentHeader) == 48);

enum class BlockKind : std::uint32_t {
  kData = 0,   // txn_count transaction records
  kNext = 1,   // the segment's last block: payload u64, the next segment's number
  kClose = 2,  // the log's last block, written at a clean close: no payload
};

struct BlockHeader {
  std::uint32_t crc;  // over bytes [4, kBlockHeaderBytes + payload_len)
  std::uint32_t magic;
  std::uint32_t payload_len;
  std::uint32_t padded_len;  // bytes the block occupies, header included
  std::uint64_t block_seq;   // per log, consecutive across segments, from 1
  std::uint32_t txn_count;
  std::uint32_t kind;      // BlockKind
  std::uint64_t acked;     // the durable clock at submission: every commit <= it was on disk
  std::uint64_t reserved;  // 0; keeps the payload 16-byte aligned
};
static_assert(sizeof(BlockHeader) == kBlockHeaderBytes);

// A transaction record in a block payload: this header, then `nwrites` write records; `len`
// counts the write records' bytes (padding included).
struct TxnHeader {
  std::uint64_t cts;
  std::uint32_t len;
  std::uint32_t nwrites;
};
static_assert(sizeof(TxnHeader) == kTxnHeaderBytes);
static_assert(kTxnHeaderBytes % kRecordAlign == 0 && kBlockHeaderBytes % kRecordAlign == 0);

// A write record: this header, the key, the value, zero padding to a multiple of kRecordAlign.
// It verifies on its own (its CRC covers header, key and value, and it names its table, key and
// commit timestamp), so a cold read of just these bytes can tell a right record from damage
// or a wrong address.
struct RecordHeader {
  std::uint32_t crc;  // over bytes [4, kRecordHeaderBytes + key_len + value_len) of the record
  std::uint8_t op;    // WriteOp
  std::uint8_t zero;
  std::uint16_t key_len;
  std::uint32_t table;
  std::uint32_t value_len;  // 0 for a remove
  std::uint64_t cts;
};
static_assert(sizeof(RecordHeader) == kRecordHeaderBytes);

inline std::uint64_t round_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Bytes a write record occupies, padding included.
inline std::uint32_t record_size(std::uint32_t key_len, std::uint32_t value_len) {
  return static_cast<std::uint32_t>(
      round_up(std::uint64_t{kRecordHeaderBytes} + key_len + value_len, kRecordAlign));
}

// Writes the record of one write at `out` (record_size(key, value) bytes, padding zeroed) and
// answers its size.
std::uint32_t encode_record(char* out, WriteOp op, std::uint32_t table, std::string_view key,
                            std::string_view value, std::uint64_t cts);

// One decoded write record; key and value point into the bytes decoded.
struct RecordView {
  WriteOp op;
  std::uint32_t table;
  std::uint64_t cts;
  std::string_view key;
  std::string_view value;
  std::uint32_t size;  // bytes occupied, padding included
};

// Decodes the record at p (at most `avail` bytes). Empty, or what is wrong with it (static
// text): a size that cannot be, a record overrunning `avail`, or (with kCrc) a checksum that
// does not hold. Recovery decodes records inside a block whose own CRC already covered them
// (kBlockChecked); a record read alone, as a cold read fetches it, needs kCrc. Inline and free
// of allocation: a scan that reads cold records from its extents decodes every one of them.
enum class RecordCheck : std::uint8_t { kBlockChecked, kCrc };
inline std::string_view decode_record(const char* p, std::size_t avail, RecordCheck check,
                                      RecordView* out) {
  if (avail < kRecordHeaderBytes) return "write record overruns its transaction";
  const auto h = load<RecordHeader>(p);
  if (h.op != static_cast<std::uint8_t>(WriteOp::kPut) &&
      h.op != static_cast<std::uint8_t>(WriteOp::kRemove) &&
      h.op != static_cast<std::uint8_t>(WriteOp::kRef)) {
    return "unknown write kind";
  }
  if (h.zero != 0 || h.key_len == 0 || h.key_len > kMaxKeyBytes || h.value_len > kMaxValueBytes ||
      (h.op == static_cast<std::uint8_t>(WriteOp::kRemove) && h.value_len != 0) ||
      (h.op == static_cast<std::uint8_t>(WriteOp::kRef) && h.value_len != kRefValueBytes)) {
    return "write record with impossible sizes";
  }
  // Timestamps count commits from 1: the top bit never occurs. It is an in-memory stamp's owner
  // bit, and a checkpoint before e9396b3 could write one (Protocol::commit_stamp_of); read back,
  // it would name a transaction long ended and its readers would wait on it for good.
  if ((h.cts >> 63) != 0) return "write record with an impossible timestamp";
  const std::uint32_t size = record_size(h.key_len, h.value_len);
  if (avail < size) return "write record overruns its transaction";
  if (check == RecordCheck::kCrc &&
      util::crc32c(p + 4, kRecordHeaderBytes - 4 + h.key_len + h.value_len) != h.crc) {
    return "write record checksum mismatch";
  }
  out->op = static_cast<WriteOp>(h.op);
  out->table = h.table;
  out->cts = h.cts;
  out->key = {p + kRecordHeaderBytes, h.key_len};
  out->value = {p + kRecordHeaderBytes + h.key_len, h.value_len};
  out->size = size;
  return {};
}

struct LogName {
  std::uint64_t generation;
  std::uint32_t log;
  std::uint64_t segment;
};
std::string log_file_name(const LogName& n);
// False for names that are not log segments.
bool parse_log_file_name(std::string_view name, LogName* out);

// Checkpoints. A checkpoint is its parts (numbered files of records, written as the scan goes)
// and a manifest written last into slot seq % 2. Both are sequences of chunks: a ChunkHeader,
// `len` payload bytes, zero padding to a multiple of kRecordAlign (so every record in a part
// starts at a 16-byte multiple of its file and a cold entry can name it).
//   part:     data chunks (kCkptDataMagic) of write records (kPut with the value, or kRef);
//             chunk indexes from 0 within the part; every chunk carries the checkpoint's seq.
//   manifest: the header chunk (CkptHeader, then `logs` LogStarts), the parts chunk (CkptPart
//             per part, in order), the live chunk (u64 numbers of the files outside the
//             checkpoint that its kRef records point into), for a checkpoint under way the
//             frontier chunk (CkptFrontier, then its key), for a checkpoint that lists its
//             runs the runs chunk (CkptRun entries), the trailer (CkptTrailer).
// A manifest is valid when every chunk checks and the trailer matches it; its parts are
// verified as they are read (they were durable before the manifest was written).
//
// A checkpoint under way (a manifest with a frontier chunk) lets a checkpoint delete the
// previous one's parts as it passes them, so the directory never holds two whole checkpoints:
// its first `new_parts` parts are the new checkpoint's, durable, holding every record up to
// the frontier (table, key) as of commit `cts`; the other parts are the previous checkpoint's
// (seq `base_seq`), whose records up to the frontier do not count. The header is the previous
// checkpoint's cts and log starts: the logs replay from there, and a write at or before the
// frontier with a timestamp at or below the frontier's `cts` is already in the new parts.
inline constexpr std::uint32_t kCkptHeaderMagic = 0x31484b43u;    // "CKH1"
inline constexpr std::uint32_t kCkptDataMagic = 0x31444b43u;      // "CKD1"
inline constexpr std::uint32_t kCkptPartsMagic = 0x31504b43u;     // "CKP1"
inline constexpr std::uint32_t kCkptLiveMagic = 0x314c4b43u;      // "CKL1"
inline constexpr std::uint32_t kCkptTrailerMagic = 0x31544b43u;   // "CKT1"
inline constexpr std::uint32_t kCkptFrontierMagic = 0x31464b43u;  // "CKF1"
inline constexpr std::uint32_t kCkptRunsMagic = 0x31524b43u;      // "CKR1"
inline constexpr std::uint32_t kCkptIndexesMagic = 0x31494b43u;   // "CKI1"
inline constexpr std::uint32_t kIndexFileMagic = 0x31534b43u;     // "CKS1"
inline constexpr std::uint32_t kSortRunMagic = 0x31524f53u;       // "SOR1" (storage/sort_run.h)
inline constexpr std::uint32_t kChunkHeaderBytes = 32;

struct ChunkHeader {
  std::uint32_t crc;  // over bytes [4, kChunkHeaderBytes + len)
  std::uint32_t magic;
  std::uint32_t len;    // payload bytes, padding excluded
  std::uint32_t count;  // records (data chunks) or entries
  std::uint64_t index;  // chunk number in the file, from 0
  std::uint64_t seq;    // the checkpoint's
};
static_assert(sizeof(ChunkHeader) == kChunkHeaderBytes);
static_assert(kChunkHeaderBytes % kRecordAlign == 0);
inline std::uint64_t chunk_bytes(std::uint32_t len) {
  return kChunkHeaderBytes + round_up(len, kRecordAlign);
}
// Writes a chunk's header before the `len` payload bytes that follow `p`, its checksum last.
void seal_chunk(char* p, std::uint32_t magic, std::uint32_t count, std::uint64_t index,
                std::uint64_t seq, std::uint32_t len);

struct CkptHeader {
  std::uint32_t version;
  std::uint32_t tables;
  std::uint64_t seq;         // checkpoint number, from 1; the manifest's slot is seq % 2
  std::uint64_t cts;         // snapshot: every transaction with a commit timestamp <= cts
  std::uint64_t generation;  // the log generation that continues after it
  std::uint32_t logs;        // log starts that follow the header in its chunk
  std::uint32_t reserved;
};
static_assert(sizeof(CkptHeader) == 40);

// Where log `log` of the checkpoint's generation continues it: every record with a commit
// timestamp above the checkpoint's is in segment `segment` or a later one, and that segment's
// first block is `block`. Segments before it may be deleted (unless the live chunk names
// them); it and every later one must exist.
struct LogStart {
  std::uint32_t log;
  std::uint32_t reserved;
  std::uint64_t segment;
  std::uint64_t block;
};
static_assert(sizeof(LogStart) == 24);
inline constexpr std::uint32_t kMaxLogs = 4096;

struct CkptPart {
  std::uint64_t file;  // its number: the file is ckpt-<file>
  std::uint64_t bytes;
  std::uint64_t records;
  std::uint64_t chunks;
};
static_assert(sizeof(CkptPart) == 32);

struct CkptFrontier {
  std::uint64_t base_seq;   // the previous checkpoint's: its parts' chunks carry it
  std::uint64_t cts;        // the new checkpoint's snapshot
  std::uint64_t new_parts;  // the first new_parts parts are the new checkpoint's
  std::uint32_t table;      // the frontier: the last record the new parts hold
  std::uint32_t key_len;    // the key follows
};
static_assert(sizeof(CkptFrontier) == 32);

// A run (docs/internals/index-paging.md, decision 6): the records the checkpoint wrote for one
// index leaf, side by side in one chunk of one part, so that a leaf can be rebuilt from them
// alone. Each entry of the runs chunk is a CkptRun, then `ref_files` u64 numbers of the files
// the run's references point into (so a run carried into a later checkpoint keeps them), then
// the run's first key, then zeros to a multiple of 8. Runs are listed in key order (table id,
// then key) and hold every record of the checkpoint, each once.
struct CkptRun {
  std::uint32_t table;
  std::uint32_t records;
  std::uint64_t address;  // a cold word (cold_address.h): part, first record's offset, bytes
  std::uint32_t key_len;
  std::uint32_t ref_files;
};
static_assert(sizeof(CkptRun) == 24);
inline std::uint64_t run_entry_bytes(const CkptRun& r) {
  return round_up(sizeof(CkptRun) + std::uint64_t{r.ref_files} * 8 + r.key_len, 8);
}

// A stored secondary index (storage/index_file.h), an entry of the indexes chunk, which comes
// right before the trailer when the checkpoint stores any: the CkptIndex, then the index's
// name, then zeros to a multiple of 8. `file` holds the index's entries as the tree held them
// after the checkpoint's snapshot (every entry the snapshot's state needs, maybe stale ones too,
// which readers filter); `dirty_file` (0: none) the primary keys written since, whose entries
// an attach derives again from their records.
struct CkptIndex {
  std::uint32_t table;
  std::uint32_t name_len;
  std::uint64_t key_version;  // the caller's version of the key function (never 0)
  std::uint64_t file;         // sidx-<file>
  std::uint64_t entries;
  std::uint64_t dirty_file;
  std::uint64_t dirty_entries;
};
static_assert(sizeof(CkptIndex) == 48);
inline std::uint64_t index_entry_bytes(const CkptIndex& i) {
  return round_up(sizeof(CkptIndex) + std::uint64_t{i.name_len}, 8);
}
struct StoredIndex {
  CkptIndex desc{};
  std::string name;
};

struct CkptTrailer {
  std::uint64_t seq;
  std::uint64_t records;  // over all parts
  std::uint64_t parts;
  std::uint64_t live;  // entries of the live chunk
};
static_assert(sizeof(CkptTrailer) == 32);

inline std::string checkpoint_file_name(std::uint32_t slot) {
  return "CHECKPOINT-" + std::to_string(slot);
}
// A file named by its prefix and its database-wide number in ten digits ("ckpt-0000000012"),
// and the number such a name holds (false: the name is not of that form).
std::string numbered_file_name(std::string_view prefix, std::uint64_t number);
bool parse_numbered_file_name(std::string_view name, std::string_view prefix,
                              std::uint64_t* number);
std::string part_file_name(std::uint64_t number);
// False for names that are not checkpoint parts.
bool parse_part_file_name(std::string_view name, std::uint64_t* number);
inline constexpr std::string_view kCatalogName = "CATALOG";
inline constexpr std::uint32_t kCatalogMagic = 0x43445242u;  // "BRDC"

}  // namespace braid::storage
