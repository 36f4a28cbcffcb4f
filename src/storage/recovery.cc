#include "storage/recovery.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "storage/cold_address.h"
#include "storage/index_file.h"
#include "storage/node_segment.h"
#include "storage/sort_run.h"
#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

namespace {

Status corrupt(const std::string& where, std::string_view what) {
  return Status::corruption(where + ": " + std::string(what));
}

template <typename T>
void put_raw(std::string* s, const T& v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof v);
}

// The cold entry of the record of `size` bytes at `offset` in file `file`, or 0.
std::uint64_t address_of(std::uint64_t file, std::uint64_t offset, std::uint32_t size) {
  return cold_word(file, offset, size);
}

// Applies (or, with apply == nullptr, only checks) the writes of one transaction record; `base`
// is where file `file` starts in memory (the records' addresses).
Status apply_writes(const char* p, std::uint32_t len, std::uint32_t nwrites, std::uint64_t cts,
                    Applier* apply, const std::string& where, const char* base,
                    std::uint64_t file) {
  const char* end = p + len;
  for (std::uint32_t i = 0; i < nwrites; ++i) {
    RecordView w;
    // The block's CRC covered these bytes; the record's own is for reads of it alone.
    if (std::string_view e =
            decode_record(p, static_cast<std::size_t>(end - p), RecordCheck::kBlockChecked, &w);
        !e.empty()) {
      return corrupt(where, e);
    }
    if (w.cts != cts) return corrupt(where, "write record of another transaction");
    if (w.op == WriteOp::kRef) return corrupt(where, "a checkpoint reference in a log");
    const auto offset = static_cast<std::uint64_t>(p - base);
    p += w.size;
    if (apply == nullptr) continue;
    Status s = w.op == WriteOp::kPut
                   ? apply->put(w.table, w.key, w.value, cts, address_of(file, offset, w.size))
                   : apply->remove(w.table, w.key, cts);
    if (!s.is_ok()) return s;
  }
  if (p != end) return corrupt(where, "transaction record longer than its writes");
  return Status::ok();
}

// The transaction record at p (before end): its header, or why it does not fit.
const char* txn_at(const char* p, const char* end, TxnHeader* t) {
  if (end - p < static_cast<std::ptrdiff_t>(kTxnHeaderBytes)) return nullptr;
  *t = load<TxnHeader>(p);
  if (end - p - static_cast<std::ptrdiff_t>(kTxnHeaderBytes) <
      static_cast<std::ptrdiff_t>(t->len)) {
    return nullptr;
  }
  return p + kTxnHeaderBytes;
}

bool header_ok(std::string_view image, SegmentHeader* h) {
  if (image.size() < kSegmentHeaderBytes) return false;
  *h = load<SegmentHeader>(image.data());
  return h->magic == kSegmentMagic && util::crc32c(h, offsetof(SegmentHeader, crc)) == h->crc;
}

// The block at `off`, if it is whole and its checksum holds.
bool block_ok(std::string_view image, std::uint64_t off, BlockHeader* h) {
  if (off + kBlockHeaderBytes > image.size()) return false;
  *h = load<BlockHeader>(image.data() + off);
  if (h->magic != kBlockMagic || h->padded_len < kBlockHeaderBytes + h->payload_len ||
      off + h->padded_len > image.size()) {
    return false;
  }
  return util::crc32c(image.data() + off + 4, kBlockHeaderBytes - 4 + h->payload_len) == h->crc;
}

// Whether a whole block starts anywhere at or after `from`: a bad block with one after it was
// durable data, not a write torn by a crash (at most one block per log is in flight).
bool block_after(std::string_view image, std::uint64_t from) {
  for (std::uint64_t off = from; off + kBlockHeaderBytes <= image.size(); ++off) {
    if (load<std::uint32_t>(image.data() + off + 4) != kBlockMagic) continue;
    BlockHeader h{};
    if (block_ok(image, off, &h)) return true;
  }
  return false;
}

std::string at(const std::string& path, std::uint64_t off) {
  return path + " at offset " + std::to_string(off);
}

// Damage found during recovery: Corruption in kStrict; in kSalvage recorded, and the caller
// stops reading what it damaged (*stop).
class Damage {
 public:
  Damage(RecoveryMode mode, RecoveryReport* r) : mode_(mode), r_(r) {}
  Status operator()(const std::string& what) {
    if (mode_ == RecoveryMode::kStrict) return Status::corruption(what);
    r_->problems.push_back(what);
    return Status::ok();
  }
  bool strict() const { return mode_ == RecoveryMode::kStrict; }

 private:
  RecoveryMode mode_;
  RecoveryReport* r_;
};

// One log: its segments from the checkpoint's start on, read one at a time, as a stream of
// transactions. Checks the chain the writer leaves (log_format.h): the start segment and block
// the checkpoint names, each closed segment's kNext block naming the next one, block numbers
// consecutive across segments, and the close block as the very last.
class LogCursor {
 public:
  LogCursor(FileSystem* fs, std::string dir, std::uint32_t log, std::uint64_t generation,
            LogStart start, Damage* damage)
      : fs_(fs),
        dir_(std::move(dir)),
        log_(log),
        generation_(generation),
        start_(start),
        damage_(damage) {}
  void add_segment(std::uint64_t seq, std::string name) { segments_.emplace(seq, std::move(name)); }

  // Before reading: the start segment is there (names only).
  Status check_segments() {
    it_ = segments_.begin();
    const std::string log =
        "log " + std::to_string(log_) + " of generation " + std::to_string(generation_);
    if (segments_.empty() || segments_.begin()->first != start_.segment) {
      done_ = true;
      return (*damage_)(dir_ + "/" + log_file_name({generation_, log_, start_.segment}) +
                        " is missing: the checkpoint names it as where " + log + " continues it");
    }
    // Segment numbers are database-wide (a log's segments are increasing, not consecutive):
    // a missing one shows as a kNext block naming a file that is not there, or as a segment
    // whose first block is not the one expected.
    return Status::ok();
  }

  std::uint32_t log() const { return log_; }
  bool done() const { return done_; }
  std::uint64_t cts() const { return cts_; }
  bool torn() const { return torn_; }
  bool clean() const { return clean_; }
  const std::string& torn_where() const { return torn_where_; }
  std::uint64_t blocks() const { return blocks_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t acked() const { return acked_; }
  const std::string& acked_where() const { return acked_where_; }

  Status apply(Applier* a) {
    return apply_writes(writes_, len_, nwrites_, cts_, a, where(), image_.data(), it_->first);
  }

  // Moves to the next transaction (done() at the end of the log).
  Status advance() {
    for (;;) {
      if (done_) return Status::ok();
      if (p_ < end_) {
        TxnHeader t{};
        if (txn_at(p_, end_, &t) == nullptr) {
          return stop(where() + ": transaction record overruns its block");
        }
        if (t.cts <= last_cts_) {
          return stop(where() + ": commit timestamps out of order in one log");
        }
        last_cts_ = cts_ = t.cts;
        nwrites_ = t.nwrites;
        len_ = t.len;
        writes_ = p_ + kTxnHeaderBytes;
        p_ += kTxnHeaderBytes + t.len;
        return Status::ok();
      }
      if (Status s = next_block(); !s.is_ok()) return s;
    }
  }

  // Damage: Corruption, or (salvage) this log ends here.
  Status stop(const std::string& what) {
    done_ = true;
    p_ = end_ = nullptr;
    return (*damage_)(what);
  }

 private:
  std::string path() const { return dir_ + "/" + it_->second; }
  std::string where() const { return loaded_ ? path() : dir_; }
  bool last() const { return std::next(it_) == segments_.end(); }

  Status load_segment() {
    const std::string file = path();
    if (Status s = read_file(*fs_, file, &image_); !s.is_ok()) return s;
    bytes_ += image_.size();
    loaded_ = true;
    const bool first = it_ == segments_.begin();
    SegmentHeader h{};
    if (!header_ok(image_, &h)) {
      // A new segment's header is durable before anything depends on it: before the kNext
      // block that names it, before any block in it, and (the first segment of a generation)
      // before the checkpoint that names it. Only a newest segment none of those exist for
      // may have been torn by a crash while it was created.
      if (last() && !first && !prev_next_ && !block_after(image_, 0)) {
        torn_ = true;
        torn_where_ = at(file, 0);
        done_ = true;
        return Status::ok();
      }
      return stop(at(file, 0) + ": bad segment header");
    }
    if (!readable_format(h.version)) {
      done_ = true;
      return Status::corruption(file + ": unsupported log format version " +
                                std::to_string(h.version) + " (this build reads " +
                                readable_formats() + ")");
    }
    if (h.log != log_ || h.generation != generation_ || h.segment != it_->first) {
      return stop(at(file, 0) + ": segment header does not match the file name");
    }
    // A segment closed without its kNext block (a crash right after the next segment was
    // created) is missing exactly that block.
    const std::uint64_t expect =
        first ? start_.block : (prev_next_ ? expect_block_ : expect_block_ + 1);
    if (h.first_block != expect) {
      return stop(at(file, 0) + ": segment starts at block " + std::to_string(h.first_block) +
                  ", expected " + std::to_string(expect) + " (blocks are missing)");
    }
    expect_block_ = h.first_block;
    prev_next_ = false;
    off_ = kSegmentHeaderBytes;
    return Status::ok();
  }

  Status next_block() {
    for (;;) {
      if (!loaded_) {
        if (it_ == segments_.end()) {
          done_ = true;
          return Status::ok();
        }
        if (Status s = load_segment(); !s.is_ok()) return s;
        if (done_) return Status::ok();
      }
      if (off_ >= image_.size()) {
        if (last()) {  // the end of the log, after a crash (a clean close ends in kClose)
          done_ = true;
          return Status::ok();
        }
        ++it_;
        loaded_ = false;
        continue;
      }
      BlockHeader h{};
      if (!block_ok(image_, off_, &h)) {
        // Only the newest block of a log can be in flight at a crash: the last one of the
        // log, or a closed segment's kNext block (written after the next segment exists,
        // before any block goes there; the next segment's first block number then shows
        // whether more than that one block is missing).
        if (block_after(image_, off_ + 1)) {
          return stop(at(path(), off_) + ": corrupt log block with durable blocks after it");
        }
        if (!last()) {
          ++it_;
          loaded_ = false;
          continue;
        }
        torn_ = true;
        torn_where_ = at(path(), off_);
        done_ = true;
        return Status::ok();
      }
      if (h.acked > acked_) {
        acked_ = h.acked;
        acked_where_ = "block " + std::to_string(h.block_seq) + " of " + at(path(), off_);
      }
      if (h.block_seq != expect_block_) {
        return stop(at(path(), off_) + ": block " + std::to_string(h.block_seq) + ", expected " +
                    std::to_string(expect_block_) + " (blocks are missing)");
      }
      ++expect_block_;
      ++blocks_;
      const std::uint64_t here = off_;
      off_ += h.padded_len;
      switch (static_cast<BlockKind>(h.kind)) {
        case BlockKind::kData:
          p_ = image_.data() + here + kBlockHeaderBytes;
          end_ = p_ + h.payload_len;
          return Status::ok();
        case BlockKind::kNext: {
          const std::uint64_t next =
              h.payload_len == sizeof(std::uint64_t)
                  ? load<std::uint64_t>(image_.data() + here + kBlockHeaderBytes)
                  : 0;
          if (next <= it_->first || block_after(image_, off_)) {
            return stop(at(path(), here) + ": malformed segment-end block");
          }
          if (last() || std::next(it_)->first != next) {
            return stop(at(path(), here) + " names " + log_file_name({generation_, log_, next}) +
                        " as the next segment, which is missing");
          }
          prev_next_ = true;
          ++it_;
          loaded_ = false;
          continue;
        }
        case BlockKind::kClose:
          if (!last() || block_after(image_, off_)) {
            return stop(at(path(), here) + ": the log continues after its close block");
          }
          clean_ = true;
          done_ = true;
          return Status::ok();
      }
      return stop(at(path(), here) + ": unknown block kind " + std::to_string(h.kind));
    }
  }

  FileSystem* fs_;
  std::string dir_;
  std::uint32_t log_;
  std::uint64_t generation_;
  LogStart start_;
  Damage* damage_;
  std::map<std::uint64_t, std::string> segments_;
  std::map<std::uint64_t, std::string>::iterator it_;
  bool loaded_ = false;
  bool prev_next_ = false;  // the previous segment ended in its kNext block
  std::string image_;
  std::uint64_t off_ = 0;
  std::uint64_t expect_block_ = 0;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  bool done_ = false;
  bool torn_ = false;
  bool clean_ = false;
  std::string torn_where_;
  std::uint64_t blocks_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t acked_ = 0;
  std::string acked_where_;
  std::uint64_t last_cts_ = 0;
  std::uint64_t cts_ = 0;
  std::uint32_t nwrites_ = 0;
  std::uint32_t len_ = 0;
  const char* writes_ = nullptr;
};

}  // namespace

// ---- Catalog ------------------------------------------------------------------------------------

// CATALOG: u32 magic, u32 version, u32 count, u32 crc (over everything after it), u64
// generation, then count x {u32 id, u16 name_len, name}.
Status read_catalog(FileSystem& fs, const std::string& dir, Catalog* out, bool* present) {
  *out = {};
  *present = false;
  std::vector<std::string> names;
  if (Status s = fs.list(dir, &names); !s.is_ok()) return s;
  if (std::find(names.begin(), names.end(), std::string(kCatalogName)) == names.end()) {
    return Status::ok();
  }
  *present = true;
  const std::string path = dir + "/" + std::string(kCatalogName);
  std::string img;
  if (Status s = read_file(fs, path, &img); !s.is_ok()) return s;
  if (img.size() < 16 || load<std::uint32_t>(img.data()) != kCatalogMagic) {
    return corrupt(path, "not a BraidDB catalog");
  }
  if (!readable_format(load<std::uint32_t>(img.data() + 4))) {
    return corrupt(path, "unsupported catalog version " +
                             std::to_string(load<std::uint32_t>(img.data() + 4)) +
                             " (this build reads " + readable_formats() + ")");
  }
  const auto count = load<std::uint32_t>(img.data() + 8);
  if (img.size() < 24 ||
      util::crc32c(img.data() + 16, img.size() - 16) != load<std::uint32_t>(img.data() + 12)) {
    return corrupt(path, "checksum mismatch");
  }
  out->generation = load<std::uint64_t>(img.data() + 16);
  std::size_t at = 24;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (img.size() - at < 6) return corrupt(path, "truncated entry");
    const auto id = load<std::uint32_t>(img.data() + at);
    const auto len = load<std::uint16_t>(img.data() + at + 4);
    at += 6;
    if (img.size() - at < len || id != i) return corrupt(path, "bad entry");
    out->tables.push_back({id, img.substr(at, len)});
    at += len;
  }
  if (at != img.size()) return corrupt(path, "trailing bytes");
  return Status::ok();
}

Status write_catalog(FileSystem& fs, const std::string& dir, const Catalog& catalog) {
  std::string body;
  put_raw(&body, catalog.generation);
  for (const CatalogEntry& e : catalog.tables) {
    put_raw(&body, e.id);
    put_raw(&body, static_cast<std::uint16_t>(e.name.size()));
    body += e.name;
  }
  std::string img;
  put_raw(&img, kCatalogMagic);
  put_raw(&img, kFormatVersion);
  put_raw(&img, static_cast<std::uint32_t>(catalog.tables.size()));
  put_raw(&img, util::crc32c(body));
  img += body;
  const std::string tmp = dir + "/CATALOG.tmp";
  const std::string path = dir + "/" + std::string(kCatalogName);
  Result<FileId> f = fs.open(tmp, {.create = true});
  if (!f.is_ok()) return f.status();
  Status s = fs.truncate(*f, 0);
  if (s.is_ok()) s = fs.write(*f, 0, img.data(), img.size());
  if (s.is_ok()) s = fs.sync(*f);
  fs.close(*f);
  if (s.is_ok()) s = fs.rename(tmp, path);
  if (s.is_ok()) s = fs.sync_dir(dir);
  return s;
}

// ---- Checkpoints --------------------------------------------------------------------------------

namespace {

// The run list's own shape, before a part is read: every entry whole, keys in order, every run
// inside a part of the checkpoint, and as many records as the parts hold. Why not, or "".
std::string check_runs(CheckpointInfo& info) {
  std::map<std::uint64_t, std::uint64_t> part_bytes;
  for (const CkptPart& p : info.parts) part_bytes[p.file] = p.bytes;
  info.carried_records = 0;
  std::string_view runs = info.runs;
  std::size_t at = 0;
  std::uint64_t records = 0;
  std::uint32_t last_table = 0;
  std::string last_key;
  for (std::uint64_t i = 0; i < info.run_count; ++i) {
    const std::string where = "run " + std::to_string(i) + " of the run list";
    if (runs.size() - at < sizeof(CkptRun)) return where + " is cut off";
    const auto r = load<CkptRun>(runs.data() + at);
    if (r.key_len > kMaxKeyBytes || r.records == 0 || r.ref_files > r.records ||
        runs.size() - at < run_entry_bytes(r)) {
      return where + " is malformed";
    }
    const RunView v = next_run(runs, &at);
    if (i > 0 &&
        (v.run.table < last_table || (v.run.table == last_table && v.key.compare(last_key) <= 0))) {
      return where + " is out of key order";
    }
    if (!is_cold(v.run.address)) return where + " has no address";
    const ColdAddress a = cold(v.run.address);
    const auto part = part_bytes.find(a.segment);
    if (info.carried(v)) {
      info.carried_records += v.run.records;  // read and checked where it lies
    } else if (part == part_bytes.end() || a.offset + a.size > part->second) {
      return where + " lies outside the checkpoint's parts";
    } else {
      records += v.run.records;
    }
    last_table = v.run.table;
    last_key.assign(v.key);
  }
  if (at != runs.size()) return "the run list is longer than its runs";
  if (records != info.trailer.records) return "the run list does not hold every record";
  return {};
}

// Everything read_checkpoint checks but the run list's entries: that list's bytes are left in
// `*runs_in` (a view of `img`), for the caller to copy or to keep `img` for. `problem` says what is
// wrong, if anything.
Status parse_manifest(std::string_view img, CheckpointInfo* info, std::string_view* runs_in) {
  *info = {};
  *runs_in = {};
  info->bytes = img.size();
  // The manifest's chunks, in order: header, parts, live, the frontier of a checkpoint under
  // way (only there), trailer.
  std::size_t at = 0;
  bool stored_indexes = false;
  for (std::uint32_t i = 0;; ++i) {
    if (img.size() - at < kChunkHeaderBytes) {
      info->problem = at == img.size() ? "no trailer (torn)" : "truncated chunk header";
      return Status::ok();
    }
    const auto c = load<ChunkHeader>(img.data() + at);
    if (img.size() - at - kChunkHeaderBytes < c.len ||
        util::crc32c(img.data() + at + 4, kChunkHeaderBytes - 4 + c.len) != c.crc || c.index != i) {
      info->problem = "bad chunk " + std::to_string(i) + " at offset " + std::to_string(at);
      return Status::ok();
    }
    // A checkpoint under way lists no runs (it is written without a budget only) and stores
    // no index; a whole one may list runs, then store indexes.
    const bool frontier = i == 3 && c.magic == kCkptFrontierMagic;
    const bool runs = i == 3 && c.magic == kCkptRunsMagic && info->header.version >= 5;
    const bool indexes = c.magic == kCkptIndexesMagic && info->header.version >= 6 &&
                         !info->under_way && info->indexes.empty() &&
                         i == (info->run_count != 0 ? 4u : 3u);
    const std::uint32_t expect = i == 0     ? kCkptHeaderMagic
                                 : i == 1   ? kCkptPartsMagic
                                 : i == 2   ? kCkptLiveMagic
                                 : frontier ? kCkptFrontierMagic
                                 : runs     ? kCkptRunsMagic
                                 : indexes  ? kCkptIndexesMagic
                                            : kCkptTrailerMagic;
    const std::uint32_t optional =
        (info->under_way || info->run_count != 0 ? 1u : 0u) + (stored_indexes ? 1u : 0u);
    if (c.magic != expect || i > 3u + optional) {
      info->problem = "chunk out of place";
      return Status::ok();
    }
    const char* p = img.data() + at + kChunkHeaderBytes;
    bool last = false;
    switch (c.magic) {
      case kCkptHeaderMagic: {
        if (c.len < sizeof(std::uint32_t)) {
          info->problem = "bad header chunk";
          return Status::ok();
        }
        const auto version = load<std::uint32_t>(p);
        if (!readable_format(version)) {
          return Status::corruption("checkpoint format version " + std::to_string(version) +
                                    " is not supported (this build reads " + readable_formats() +
                                    ")");
        }
        if (c.len < sizeof(CkptHeader)) {
          info->problem = "bad header chunk";
          return Status::ok();
        }
        info->header = load<CkptHeader>(p);
        if (info->header.logs > kMaxLogs ||
            c.len != sizeof(CkptHeader) + std::uint64_t{info->header.logs} * sizeof(LogStart)) {
          info->problem = "bad header chunk";
          return Status::ok();
        }
        for (std::uint32_t l = 0; l < info->header.logs; ++l) {
          info->starts.push_back(load<LogStart>(p + sizeof(CkptHeader) + l * sizeof(LogStart)));
          if (info->starts.back().log != l) {
            info->problem = "bad log starts in the header chunk";
            return Status::ok();
          }
        }
        break;
      }
      case kCkptPartsMagic:
        if (c.len != std::uint64_t{c.count} * sizeof(CkptPart)) {
          info->problem = "bad parts chunk";
          return Status::ok();
        }
        for (std::uint32_t k = 0; k < c.count; ++k) {
          info->parts.push_back(load<CkptPart>(p + k * sizeof(CkptPart)));
        }
        break;
      case kCkptLiveMagic:
        if (c.len != std::uint64_t{c.count} * sizeof(std::uint64_t)) {
          info->problem = "bad live-file chunk";
          return Status::ok();
        }
        for (std::uint32_t k = 0; k < c.count; ++k) {
          info->live.push_back(load<std::uint64_t>(p + k * sizeof(std::uint64_t)));
        }
        break;
      case kCkptFrontierMagic: {
        if (c.len < sizeof(CkptFrontier)) {
          info->problem = "bad frontier chunk";
          return Status::ok();
        }
        info->frontier = load<CkptFrontier>(p);
        const CkptFrontier& f = info->frontier;
        if (c.len != sizeof(CkptFrontier) + std::uint64_t{f.key_len} || f.key_len > kMaxKeyBytes ||
            f.new_parts > info->parts.size() || f.base_seq >= info->header.seq ||
            f.cts < info->header.cts) {
          info->problem = "bad frontier chunk";
          return Status::ok();
        }
        info->frontier_key.assign(p + sizeof(CkptFrontier), f.key_len);
        info->under_way = true;
        break;
      }
      case kCkptRunsMagic:
        if (c.count == 0) {
          info->problem = "empty runs chunk";
          return Status::ok();
        }
        *runs_in = std::string_view(p, c.len);
        info->run_count = c.count;
        break;
      case kCkptIndexesMagic: {
        std::size_t off = 0;
        for (std::uint32_t k = 0; k < c.count; ++k) {
          StoredIndex si;
          if (c.len - off < sizeof(CkptIndex)) {
            info->problem = "bad indexes chunk";
            return Status::ok();
          }
          si.desc = load<CkptIndex>(p + off);
          if (si.desc.name_len == 0 || si.desc.name_len > kMaxTableNameBytes ||
              si.desc.key_version == 0 || si.desc.file == 0 ||
              c.len - off < index_entry_bytes(si.desc)) {
            info->problem = "bad indexes chunk";
            return Status::ok();
          }
          si.name.assign(p + off + sizeof(CkptIndex), si.desc.name_len);
          off += index_entry_bytes(si.desc);
          info->indexes.push_back(std::move(si));
        }
        if (c.count == 0 || off != c.len) {
          info->problem = "bad indexes chunk";
          return Status::ok();
        }
        stored_indexes = true;
        break;
      }
      default:
        if (c.len != sizeof(CkptTrailer)) {
          info->problem = "bad trailer chunk";
          return Status::ok();
        }
        info->trailer = load<CkptTrailer>(p);
        last = true;
        break;
    }
    if (c.seq != info->header.seq) {
      info->problem = "chunk of another checkpoint";
      return Status::ok();
    }
    at += chunk_bytes(c.len);
    if (last) break;
  }
  std::uint64_t records = 0;
  for (const CkptPart& part : info->parts) records += part.records;
  if (info->trailer.seq != info->header.seq || info->trailer.records != records ||
      info->trailer.parts != info->parts.size() || info->trailer.live != info->live.size() ||
      at != img.size()) {
    info->problem = "trailer does not match the manifest";
    return Status::ok();
  }
  return Status::ok();
}

// The second half of read_checkpoint, once `info->runs` holds the list.
void check_manifest_runs(CheckpointInfo* info) {
  if (!info->problem.empty()) return;
  if (info->run_count != 0) {
    if (std::string e = check_runs(*info); !e.empty()) {
      info->problem = e;
      return;
    }
  }
  info->valid = true;
}

}  // namespace

Status read_checkpoint(std::string_view img, CheckpointInfo* info) {
  std::string_view runs;
  if (Status s = parse_manifest(img, info, &runs); !s.is_ok()) return s;
  info->runs.assign(runs);
  check_manifest_runs(info);
  return Status::ok();
}

Status read_checkpoint(std::string&& img, CheckpointInfo* info) {
  std::string_view runs;
  if (Status s = parse_manifest(img, info, &runs); !s.is_ok()) return s;
  if (!runs.empty()) {
    // The list is nearly all of the image: the image's buffer becomes the list's.
    const auto from = static_cast<std::size_t>(runs.data() - img.data());
    const std::size_t len = runs.size();
    img.erase(0, from);
    img.resize(len);
    info->runs = std::move(img);
  }
  check_manifest_runs(info);
  return Status::ok();
}

Status Applier::adopt_runs(CheckpointInfo*) {
  BRAID_ASSERT(false);  // only an applier that adopts_runs() is asked
  return Status::ok();
}

RunView next_run(std::string_view runs, std::size_t* at) {
  RunView v;
  v.run = load<CkptRun>(runs.data() + *at);
  v.ref_files = runs.data() + *at + sizeof(CkptRun);
  v.key = runs.substr(*at + sizeof(CkptRun) + std::size_t{v.run.ref_files} * 8, v.run.key_len);
  *at += run_entry_bytes(v.run);
  return v;
}

bool CheckpointInfo::carried(const RunView& r) const {
  return std::find(live.begin(), live.end(), cold(r.run.address).segment) != live.end();
}

bool CheckpointInfo::past_frontier(std::uint32_t table, std::string_view key) const {
  if (!under_way) return true;
  if (table != frontier.table) return table > frontier.table;
  return key.compare(frontier_key) > 0;
}

Status read_checkpoint_parts(FileSystem& fs, const std::string& dir, const CheckpointInfo& info,
                             Applier* apply, util::ProgressMeter* meter, std::uint64_t* applied) {
  BRAID_ASSERT(info.valid);
  if (applied != nullptr) *applied = 0;
  std::string buf;
  std::uint64_t records_before = 0;  // in the parts before this one
  // The run list, if any, followed record by record: each run starts where it says, with the
  // key it says, and holds its records side by side; the runs hold every record, in order.
  RunView run;
  std::uint32_t in_run = 0;  // records of `run` met so far
  std::uint64_t run_end = 0;
  std::size_t run_at = 0;
  std::uint64_t runs_met = 0;
  auto follow_run = [&](const CkptPart& part, std::uint64_t off,
                        const RecordView& w) -> std::string {
    if (in_run == run.run.records) {
      do {  // carried runs lie outside the parts
        if (runs_met == info.run_count) return "a record after the last run of the run list";
        run = next_run(info.runs, &run_at);
        ++runs_met;
      } while (info.carried(run));
      in_run = 0;
      const ColdAddress a = cold(run.run.address);
      if (a.segment != part.file || a.offset != off) {
        return "run " + std::to_string(runs_met - 1) + " of the run list does not start here";
      }
      if (run.run.table != w.table || run.key != w.key) {
        return "run " + std::to_string(runs_met - 1) + " of the run list names another key";
      }
    } else if (off != run_end) {
      return "run " + std::to_string(runs_met - 1) + " of the run list is not contiguous";
    }
    ++in_run;
    run_end = off + w.size;
    const ColdAddress a = cold(run.run.address);
    if (in_run == run.run.records && run_end != a.offset + a.size) {
      return "run " + std::to_string(runs_met - 1) + " of the run list has another size";
    }
    return {};
  };
  for (std::size_t index = 0; index < info.parts.size(); ++index) {
    const CkptPart& part = info.parts[index];
    // Under way: the previous checkpoint's parts count only past the frontier.
    const bool base = info.under_way && index >= info.frontier.new_parts;
    const std::uint64_t seq = base ? info.frontier.base_seq : info.header.seq;
    const std::string path = dir + "/" + part_file_name(part.file);
    Result<FileId> f = fs.open(path, {});
    if (!f.is_ok()) {
      return Status::corruption(path + " cannot be read (" + f.status().to_string() +
                                "): checkpoint #" + std::to_string(info.header.seq) +
                                " names it as its part");
    }
    fs.will_need(*f, 0, part.bytes);
    std::uint64_t off = 0;
    std::uint64_t records = 0;
    Status s;
    for (std::uint64_t chunk = 0; chunk < part.chunks && s.is_ok(); ++chunk) {
      char h_bytes[kChunkHeaderBytes];
      std::size_t got = 0;
      s = fs.read(*f, off, kChunkHeaderBytes, h_bytes, &got);
      if (!s.is_ok()) break;
      const auto h = load<ChunkHeader>(h_bytes);
      if (got != kChunkHeaderBytes || h.magic != kCkptDataMagic || h.index != chunk ||
          h.seq != seq || h.len > part.bytes) {
        s = corrupt(at(path, off), "bad checkpoint chunk header");
        break;
      }
      buf.resize(kChunkHeaderBytes + h.len);
      std::memcpy(buf.data(), h_bytes, kChunkHeaderBytes);
      s = fs.read(*f, off + kChunkHeaderBytes, h.len, buf.data() + kChunkHeaderBytes, &got);
      if (!s.is_ok()) break;
      if (got != h.len || util::crc32c(buf.data() + 4, kChunkHeaderBytes - 4 + h.len) != h.crc) {
        s = corrupt(at(path, off), "checkpoint chunk checksum mismatch");
        break;
      }
      const char* p = buf.data() + kChunkHeaderBytes;
      const char* end = p + h.len;
      for (std::uint32_t i = 0; i < h.count; ++i) {
        RecordView w;
        if (std::string_view e =
                decode_record(p, static_cast<std::size_t>(end - p), RecordCheck::kBlockChecked, &w);
            !e.empty() || w.op == WriteOp::kRemove) {
          s = corrupt(at(path, off), e.empty() ? "a removal in a checkpoint" : e);
          break;
        }
        const std::uint64_t record_off = off + static_cast<std::uint64_t>(p - buf.data());
        p += w.size;
        if (info.run_count != 0) {
          if (std::string e = follow_run(part, record_off, w); !e.empty()) {
            s = corrupt(at(path, record_off), e);
            break;
          }
        }
        if (apply == nullptr) continue;
        if (base && !info.past_frontier(w.table, w.key)) continue;
        if (!base && info.under_way && info.past_frontier(w.table, w.key)) {
          s = corrupt(at(path, off), "a record past the frontier of the checkpoint under way");
          break;
        }
        if (w.op == WriteOp::kRef) {
          const auto e = load<std::uint64_t>(w.value.data());
          if (!is_cold(e)) {
            s = corrupt(at(path, off), "a checkpoint reference that is not an address");
            break;
          }
          s = apply->ref(w.table, w.key, e);
        } else {
          s = apply->put(w.table, w.key, w.value, w.cts, address_of(part.file, record_off, w.size));
        }
        if (!s.is_ok()) break;
        if (applied != nullptr) ++*applied;
      }
      if (s.is_ok() && p != end) s = corrupt(at(path, off), "chunk longer than its records");
      records += h.count;
      off += chunk_bytes(h.len);
      if (meter != nullptr) meter->update(records_before + records);
    }
    records_before += records;
    fs.close(*f);
    if (!s.is_ok()) return s;
    if (off != part.bytes || records != part.records) {
      return corrupt(path, "does not match checkpoint #" + std::to_string(info.header.seq) +
                               "'s manifest (" + std::to_string(off) + " bytes, " +
                               std::to_string(records) + " records; the manifest says " +
                               std::to_string(part.bytes) + " and " + std::to_string(part.records) +
                               ")");
    }
  }
  // The counts agree (check_runs), so every record met its run and every run in the parts was
  // met whole (only carried ones may follow the last).
  BRAID_ASSERT(info.run_count == 0 || in_run == run.run.records);
  // The carried runs' records, read where they lie (older parts, which the live chunk names).
  if (info.carried_records == 0) return Status::ok();
  FileTable files(&fs, false);
  for (std::uint64_t f : info.live) files.add(f, dir + "/" + part_file_name(f));
  RunRecords records;
  std::size_t at = 0;
  std::uint64_t carried = 0;
  for (std::uint64_t i = 0; i < info.run_count; ++i) {
    const RunView v = next_run(info.runs, &at);
    if (!info.carried(v)) continue;
    const ColdAddress a = cold(v.run.address);
    const std::string where = part_file_name(a.segment) + " at offset " + std::to_string(a.offset);
    if (Status s = read_run(&files, v.run.address, &records); !s.is_ok()) {
      return Status(s.code(), "checkpoint #" + std::to_string(info.header.seq) +
                                  ", a run carried over: " + std::string(s.message()));
    }
    if (records.table != v.run.table || records.keys.size() != v.run.records ||
        records.keys.front() != v.key) {
      return corrupt(where, "does not hold the run checkpoint #" + std::to_string(info.header.seq) +
                                " carried over");
    }
    carried += records.keys.size();
    if (apply == nullptr) continue;
    for (std::size_t k = 0; k < records.keys.size(); ++k) {
      Status s = records.refs[k] ? apply->ref(records.table, records.keys[k], records.values[k])
                                 : apply->put(records.table, records.keys[k], records.payloads[k],
                                              records.cts[k], records.values[k]);
      if (!s.is_ok()) return s;
      if (applied != nullptr) ++*applied;
    }
  }
  BRAID_ASSERT(carried == info.carried_records);
  if (meter != nullptr) meter->update(records_before + carried);
  return Status::ok();
}

namespace {

// The records of the run at `a`, whose bytes are `bytes` (a.size of them): see read_run.
Status decode_run(const ColdAddress& a, const char* bytes, RunRecords* out) {
  out->keys.clear();
  out->values.clear();
  out->refs.clear();
  out->payloads.clear();
  out->cts.clear();
  out->bytes.assign(bytes, a.size);
  const char* p = out->bytes.data();
  const char* const stop = p + out->bytes.size();
  while (p < stop) {
    RecordView w;
    const std::uint64_t off = a.offset + static_cast<std::uint64_t>(p - out->bytes.data());
    const std::string where = part_file_name(a.segment) + " at offset " + std::to_string(off);
    if (std::string_view e =
            decode_record(p, static_cast<std::size_t>(stop - p), RecordCheck::kCrc, &w);
        !e.empty()) {
      return corrupt(where, "in a run: " + std::string(e));
    }
    const bool first = out->keys.empty();
    if (w.op == WriteOp::kRemove || (!first && w.table != out->table) ||
        (!first && w.key.compare(out->keys.back()) <= 0)) {
      return corrupt(where, "a run's records are not one leaf's");
    }
    std::uint64_t value = address_of(a.segment, off, w.size);
    if (w.op == WriteOp::kRef) {
      value = load<std::uint64_t>(w.value.data());
      if (!is_cold(value)) return corrupt(where, "a checkpoint reference that is not an address");
    }
    out->table = w.table;
    out->keys.push_back(w.key);
    out->values.push_back(value);
    out->refs.push_back(w.op == WriteOp::kRef);
    out->payloads.push_back(w.value);
    out->cts.push_back(w.cts);
    p += w.size;
  }
  if (out->keys.empty()) {
    return corrupt(part_file_name(a.segment) + " at offset " + std::to_string(a.offset),
                   "an empty run");
  }
  return Status::ok();
}

// Reads bytes [first.offset, last_end) of `first`'s part, in whole blocks, into `buf`; answers
// where first.offset lies in it.
Result<const char*> read_part_span(FileTable* files, const ColdAddress& first,
                                   std::uint64_t last_end,
                                   std::unique_ptr<char, void (*)(void*)>* buf) {
  const std::uint64_t start = first.offset / kDirectAlign * kDirectAlign;
  const std::uint64_t end = round_up(last_end, kDirectAlign);
  const std::string where =
      part_file_name(first.segment) + " at offset " + std::to_string(first.offset);
  buf->reset(static_cast<char*>(std::aligned_alloc(kDirectAlign, end - start)));
  if (*buf == nullptr) return Status::io_error("no memory to read runs in " + where);
  Result<FileTable::Handle> h = files->acquire(first.segment);
  if (!h.is_ok()) return h.status();
  std::size_t got = 0;
  const Status read = files->fs()->read(h->id, start, end - start, buf->get(), &got);
  files->release(first.segment);
  if (!read.is_ok()) {
    return Status::io_error("cannot read runs in " + where + ": " + std::string(read.message()));
  }
  if (got < last_end - start) return corrupt(where, "the part ends inside a run");
  return static_cast<const char*>(buf->get() + (first.offset - start));
}

}  // namespace

Status decode_run(std::uint64_t address, const char* bytes, RunRecords* out) {
  return decode_run(cold(address), bytes, out);
}

Status read_run(FileTable* files, std::uint64_t address, RunRecords* out) {
  return read_runs(files, std::span<const std::uint64_t>(&address, 1), out);
}

Status read_runs(FileTable* files, std::span<const std::uint64_t> addresses, RunRecords* out) {
  // A stretch: runs of one part, each starting at most a block past the one before ends (a
  // chunk's header lies between two leaves where a chunk ended), at most kMaxStretch bytes.
  constexpr std::uint64_t kMaxStretch = std::uint64_t{1} << 20;
  std::unique_ptr<char, void (*)(void*)> buf(nullptr, &std::free);
  for (std::size_t i = 0; i < addresses.size();) {
    const ColdAddress first = cold(addresses[i]);
    std::uint64_t end = first.offset + first.size;
    std::size_t j = i + 1;
    for (; j < addresses.size(); ++j) {
      const ColdAddress a = cold(addresses[j]);
      if (a.segment != first.segment || a.offset < end || a.offset - end > kDirectAlign ||
          a.offset + a.size - first.offset > kMaxStretch) {
        break;
      }
      end = a.offset + a.size;
    }
    Result<const char*> at = read_part_span(files, first, end, &buf);
    if (!at.is_ok()) return at.status();
    for (std::size_t k = i; k < j; ++k) {
      const ColdAddress a = cold(addresses[k]);
      if (Status s = decode_run(a, *at + (a.offset - first.offset), &out[k]); !s.is_ok()) return s;
    }
    i = j;
  }
  return Status::ok();
}

// ---- Segments -----------------------------------------------------------------------------------

Status scan_segment(std::string_view image, SegmentScan* out, Applier* apply) {
  *out = {};
  out->header_ok = header_ok(image, &out->header);
  if (!out->header_ok) {
    out->torn = true;
    return Status::ok();
  }
  std::uint64_t off = kSegmentHeaderBytes;
  out->valid_bytes = off;
  while (off < image.size()) {
    BlockHeader h{};
    if (!block_ok(image, off, &h)) {
      out->torn = true;
      break;
    }
    const char* p = image.data() + off + kBlockHeaderBytes;
    const char* end = p + h.payload_len;
    out->acked = std::max(out->acked, h.acked);
    out->last_block = off;
    out->last_block_txns = h.txn_count;
    if (h.kind != static_cast<std::uint32_t>(BlockKind::kData)) {
      out->next = h.kind == static_cast<std::uint32_t>(BlockKind::kNext);
      out->closed = h.kind == static_cast<std::uint32_t>(BlockKind::kClose);
      ++out->blocks;
      off += h.padded_len;
      out->valid_bytes = off;
      continue;
    }
    for (std::uint32_t i = 0; i < h.txn_count; ++i) {
      TxnHeader t{};
      if (txn_at(p, end, &t) == nullptr) {
        return Status::corruption("transaction record overruns its block");
      }
      if (Status s = apply_writes(p + kTxnHeaderBytes, t.len, t.nwrites, t.cts, apply, "segment",
                                  image.data(), out->header.segment);
          !s.is_ok()) {
        return s;
      }
      if (out->min_cts == 0) out->min_cts = t.cts;
      out->max_cts = std::max(out->max_cts, t.cts);
      ++out->txns;
      p += kTxnHeaderBytes + t.len;
    }
    if (p != end) return Status::corruption("block payload longer than its transactions");
    ++out->blocks;
    off += h.padded_len;
    out->valid_bytes = off;
  }
  return Status::ok();
}

// ---- Recovery -----------------------------------------------------------------------------------

namespace {

struct LogFile {
  LogName n;
  std::string name;
};

// Whether a log file holds any whole block (an unreadable one counts as holding data).
// The logs after a checkpoint under way: a write at or before the frontier with a timestamp
// at or below the new checkpoint's is in its parts already (and the previous checkpoint's copy
// was not applied), so it is skipped; everything else replays as after a whole checkpoint.
class PastFrontier final : public Applier {
 public:
  PastFrontier(const CheckpointInfo& c, Applier* to) : c_(c), to_(to) {}
  Status put(std::uint32_t table, std::string_view key, std::string_view value, std::uint64_t cts,
             std::uint64_t address) override {
    if (covered(table, key, cts)) return Status::ok();
    return to_->put(table, key, value, cts, address);
  }
  Status remove(std::uint32_t table, std::string_view key, std::uint64_t cts) override {
    if (covered(table, key, cts)) return Status::ok();
    return to_->remove(table, key, cts);
  }
  Status ref(std::uint32_t table, std::string_view key, std::uint64_t entry) override {
    return to_->ref(table, key, entry);
  }
  void checkpoint_applied() override { to_->checkpoint_applied(); }

 private:
  bool covered(std::uint32_t table, std::string_view key, std::uint64_t cts) const {
    return cts <= c_.frontier.cts && !c_.past_frontier(table, key);
  }
  const CheckpointInfo& c_;
  Applier* to_;
};

bool holds_block(FileSystem& fs, const std::string& path) {
  std::string img;
  return !read_file(fs, path, &img).is_ok() || block_after(img, 0);
}

// Whether checkpoint `c` can be continued from the files present: the start segment of every
// log it names exists, no log of its generation is unknown to it, and no newer generation holds
// log data (a newer generation's segments without blocks are what an open that crashed before
// its checkpoint was durable leaves behind).
bool continues(FileSystem& fs, const std::string& dir, const CheckpointInfo& c,
               const std::vector<LogFile>& files,
               const std::map<std::uint64_t, std::string>& numbered, std::string* why) {
  for (const CkptPart& p : c.parts) {
    const auto it = numbered.find(p.file);
    if (it == numbered.end() || it->second != part_file_name(p.file)) {
      *why = dir + "/" + part_file_name(p.file) + " is missing: checkpoint #" +
             std::to_string(c.header.seq) + " names it as its part";
      return false;
    }
  }
  for (std::uint64_t f : c.live) {
    if (numbered.count(f) == 0) {
      *why = dir + ": file number " + std::to_string(f) + " is missing: checkpoint #" +
             std::to_string(c.header.seq) + " refers to records in it";
      return false;
    }
  }
  const std::uint64_t g = c.header.generation;
  for (const LogFile& f : files) {
    if (f.n.generation > g) {
      if (holds_block(fs, dir + "/" + f.name)) {
        *why = dir + "/" + f.name + " holds log data of generation " +
               std::to_string(f.n.generation) + ", newer than checkpoint #" +
               std::to_string(c.header.seq) + "'s (" + std::to_string(g) +
               "): the checkpoint that log continues is missing or damaged";
        return false;
      }
    } else if (f.n.generation == g && f.n.log >= c.starts.size()) {
      *why = dir + "/" + f.name + " belongs to a log checkpoint #" + std::to_string(c.header.seq) +
             " does not name";
      return false;
    }
  }
  for (const LogStart& st : c.starts) {
    bool found = false;
    for (const LogFile& f : files) {
      found = found || (f.n.generation == g && f.n.log == st.log && f.n.segment == st.segment);
    }
    if (!found) {
      *why = dir + "/" + log_file_name({g, st.log, st.segment}) + " is missing: checkpoint #" +
             std::to_string(c.header.seq) + " names it as where log " + std::to_string(st.log) +
             " continues it";
      return false;
    }
  }
  return true;
}

}  // namespace

Status recover(FileSystem& fs, const std::string& dir, std::uint64_t base_clock,
               std::uint64_t catalog_generation, Applier& apply, RecoveryMode mode,
               RecoveryReport* r, const util::ProgressMeter::Sink& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  *r = {};
  Damage damage(mode, r);
  std::vector<std::string> names;
  if (Status s = fs.list(dir, &names); !s.is_ok()) return s;
  std::sort(names.begin(), names.end());
  std::vector<LogFile> files;
  for (const std::string& name : names) {
    LogName ln{};
    std::uint64_t part = 0;
    if (parse_log_file_name(name, &ln)) {
      files.push_back({ln, name});
      r->max_generation = std::max(r->max_generation, ln.generation);
      r->max_file = std::max(r->max_file, ln.segment);
      r->numbered_files[ln.segment] = name;
    } else if (parse_part_file_name(name, &part)) {
      r->max_file = std::max(r->max_file, part);
      r->numbered_files[part] = name;
    } else if (std::uint64_t node = 0;
               parse_node_segment_name(name, &node) || parse_sort_run_file_name(name, &node)) {
      r->max_file = std::max(r->max_file, node);
    } else if (std::uint64_t sidx = 0; parse_index_file_name(name, &sidx)) {
      r->max_file = std::max(r->max_file, sidx);
      r->numbered_files[sidx] = name;
    }
  }

  // Both checkpoint slots, newest valid first.
  CheckpointInfo slots[2];
  std::string slot_problems;
  std::vector<int> valid;
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    const std::string name = checkpoint_file_name(slot);
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    std::string image;
    if (Status s = read_file(fs, dir + "/" + name, &image); !s.is_ok()) return s;
    if (Status s = read_checkpoint(std::move(image), &slots[slot]); !s.is_ok()) {
      return Status::corruption(dir + "/" + name + ": " + std::string(s.message()));
    }
    if (!slots[slot].valid) {
      ++r->checkpoint_fallbacks;
      slot_problems +=
          "; " + dir + "/" + name + " is not a whole checkpoint (" + slots[slot].problem + ")";
      continue;
    }
    r->max_generation = std::max(r->max_generation, slots[slot].header.generation);
    valid.push_back(static_cast<int>(slot));
  }
  std::sort(valid.begin(), valid.end(),
            [&](int a, int b) { return slots[a].header.seq > slots[b].header.seq; });

  // The checkpoint to continue. A newer slot that is not whole was torn while it was written
  // (its logs are not retired before it is durable) or damaged since; either way the older one
  // recovers everything if its logs are all there, and if they are not, that is damage.
  int chosen = -1;
  std::string why;
  for (int slot : valid) {
    std::string why_not;
    if (slots[slot].header.generation < catalog_generation) {
      why_not = dir + "/" + checkpoint_file_name(slot) + " holds checkpoint #" +
                std::to_string(slots[slot].header.seq) + " of generation " +
                std::to_string(slots[slot].header.generation) + ", but the catalog says the " +
                "database reached generation " + std::to_string(catalog_generation) +
                ": its newer checkpoint is missing or damaged" + slot_problems;
    } else if (continues(fs, dir, slots[slot], files, r->numbered_files, &why_not)) {
      chosen = slot;
      break;
    }
    if (why.empty()) why = why_not;
    if (damage.strict()) break;
  }
  if (chosen < 0 && !valid.empty()) {
    if (Status s = damage(why); !s.is_ok()) return s;
    chosen = valid.front();  // salvage: continue what can be continued
  }
  // The other slot's run list (tens of MiB at scale) goes before the logs replay.
  for (int slot = 0; slot < 2; ++slot) {
    if (slot != chosen) std::string().swap(slots[slot].runs);
  }
  // Without a whole checkpoint, only a database whose first open crashed before its first
  // checkpoint was durable is whole: the catalog has not reached a generation yet, and its logs
  // hold no block (they are created before that checkpoint, and written only after it).
  bool blocks = false;
  if (valid.empty()) {  // only here: a normal open must not read every log file twice
    for (const LogFile& f : files) blocks = blocks || holds_block(fs, dir + "/" + f.name);
  }
  if (valid.empty() && (catalog_generation != 0 || blocks)) {
    std::string img;
    SegmentHeader h{};
    if (!files.empty() && read_file(fs, dir + "/" + files.front().name, &img).is_ok() &&
        header_ok(img, &h) && !readable_format(h.version)) {
      return Status::corruption(dir + "/" + files.front().name +
                                ": unsupported log format version " + std::to_string(h.version) +
                                " (this build reads " + readable_formats() + ")");
    }
    if (Status s = damage(
            dir + ": no whole checkpoint, but the " +
            (blocks ? std::string("logs hold commits")
                    : "catalog says the database reached generation " +
                          std::to_string(catalog_generation)) +
            (slot_problems.empty() ? std::string(" (both slots are missing)") : slot_problems));
        !s.is_ok()) {
      return s;
    }
  }

  std::uint64_t base = base_clock;
  std::vector<LogStart> starts;
  std::unique_ptr<PastFrontier> past;  // the logs' applier after a checkpoint under way
  Applier* log_apply = &apply;
  if (chosen >= 0) {
    CheckpointInfo& c = slots[chosen];
    util::ProgressMeter meter(progress, "recovery: checkpoint", "records", c.trailer.records);
    if (!c.under_way && !c.indexes.empty()) apply.stored_indexes(c.indexes);
    if (c.run_count != 0 && apply.adopts_runs()) {
      // The parts are read record by record as their leaves load, each checked then.
      if (Status s = apply.adopt_runs(&c); !s.is_ok()) return s;
      r->checkpoint_records = c.trailer.records + c.carried_records;
      r->checkpoint_adopted = true;
    } else if (Status s = read_checkpoint_parts(fs, dir, c, &apply, &meter, &r->checkpoint_records);
               !s.is_ok()) {
      return s;
    }
    apply.checkpoint_applied();
    meter.finish();
    r->checkpoint = true;
    r->checkpoint_runs = c.run_count;
    r->checkpoint_seq = c.header.seq;
    r->checkpoint_cts = c.header.cts;
    r->checkpoint_under_way = c.under_way;
    r->generation = c.header.generation;
    base = c.header.cts;
    starts = c.starts;
    if (c.under_way) {
      past = std::make_unique<PastFrontier>(c, &apply);
      log_apply = past.get();
    }
  }
  // The logs that continue the checkpoint; everything else present is obsolete.
  std::vector<std::unique_ptr<LogCursor>> logs;
  logs.reserve(starts.size());
  for (const LogStart& st : starts) {
    logs.push_back(std::make_unique<LogCursor>(&fs, dir, st.log, r->generation, st, &damage));
  }
  std::uint64_t log_bytes = 0;  // for the progress report only
  for (const LogFile& f : files) {
    if (chosen >= 0 && f.n.generation == r->generation && f.n.log < starts.size() &&
        f.n.segment >= starts[f.n.log].segment) {
      logs[f.n.log]->add_segment(f.n.segment, f.name);
      ++r->log_files;
      if (progress) {
        // Only a progress report's total depends on it: a size that cannot be had counts 0.
        const Result<std::uint64_t> n = file_size(fs, dir + "/" + f.name);
        log_bytes += n.is_ok() ? *n : 0;
      }
    }
  }
  static const util::ProgressMeter::Sink kNone;  // a new database has no log to speak of
  util::ProgressMeter meter(logs.empty() ? kNone : progress, "recovery: log", "bytes", log_bytes);
  const auto bytes_read = [&logs] {
    std::uint64_t n = 0;
    for (const auto& c : logs) n += c->bytes();
    return n;
  };
  r->logs = static_cast<std::uint32_t>(logs.size());
  for (auto& c : logs) {
    if (Status s = c->check_segments(); !s.is_ok()) return s;
    if (Status s = c->advance(); !s.is_ok()) return s;
  }

  // Merge in timestamp order while the timestamps stay dense.
  std::uint64_t next = base + 1;
  for (;;) {
    LogCursor* min = nullptr;
    for (auto& c : logs) {
      while (!c->done() && c->cts() <= base) {
        if (Status s = c->advance(); !s.is_ok()) return s;
      }
      if (!c->done() && (min == nullptr || c->cts() < min->cts())) min = c.get();
    }
    if (min == nullptr || min->cts() != next) {
      if (min != nullptr && min->cts() < next) {
        if (Status s = min->stop(dir + ": commit timestamp " + std::to_string(min->cts()) +
                                 " appears in two logs");
            !s.is_ok()) {
          return s;
        }
        continue;
      }
      break;  // the end, or the first hole
    }
    // Checked whole before any of it is applied: a transaction is never half replayed.
    if (Status s = min->apply(nullptr); !s.is_ok()) {
      if (Status d = min->stop(std::string(s.message())); !d.is_ok()) return d;
      continue;
    }
    if (Status s = min->apply(log_apply); !s.is_ok()) return s;
    ++r->txns_replayed;
    if (r->txns_replayed % 1024 == 0 && meter.enabled()) meter.update(bytes_read());
    ++next;
    if (Status s = min->advance(); !s.is_ok()) return s;
  }
  // Whatever is left was never acknowledged, unless a block vouches for it; read it anyway, so
  // that damage in the middle of a log is reported rather than mistaken for its end.
  for (auto& c : logs) {
    while (!c->done()) {
      if (c->cts() > base) {
        if (Status s = c->apply(nullptr); !s.is_ok()) {
          if (Status d = c->stop(std::string(s.message())); !d.is_ok()) return d;
          break;
        }
        ++r->txns_dropped;
      }
      if (Status s = c->advance(); !s.is_ok()) return s;
    }
    r->blocks += c->blocks();
    r->log_bytes += c->bytes();
    if (c->torn()) {
      ++r->torn_tails;
      r->torn.push_back(c->torn_where());
    }
    if (c->clean()) ++r->clean_logs;
  }
  meter.set_total(std::max(log_bytes, bytes_read()));
  meter.finish();
  r->cutoff = next - 1;
  if (chosen >= 0 && slots[chosen].under_way && r->cutoff < slots[chosen].frontier.cts) {
    // Its new parts hold the state at its snapshot for the keys before the frontier, the logs
    // the rest: with commits below the snapshot missing, no prefix of the commit order can be
    // put together (salvage neither). It was written once they were all durable.
    std::string what = dir + "/" + checkpoint_file_name(static_cast<std::uint32_t>(chosen)) +
                       " is checkpoint #" + std::to_string(slots[chosen].header.seq) +
                       " under way, written once every commit up to " +
                       std::to_string(slots[chosen].frontier.cts) +
                       " was durable, but the logs end at commit " + std::to_string(r->cutoff);
    for (const std::string& t : r->torn) what += "; a log ends in a bad block: " + t;
    return Status::corruption(what);
  }
  std::string acked_where;
  for (auto& c : logs) {
    if (c->acked() > r->acked) {
      r->acked = c->acked();
      acked_where = c->acked_where();
    }
  }
  if (r->acked > r->cutoff) {
    std::string what = dir + ": commit " + std::to_string(next) +
                       " is missing from every log, but " + acked_where +
                       " records every commit up to " + std::to_string(r->acked) +
                       " as durable: durable commits " + std::to_string(next) + ".." +
                       std::to_string(r->acked) + " are lost";
    for (const std::string& t : r->torn) what += "; a log ends in a bad block: " + t;
    if (Status s = damage(what); !s.is_ok()) return s;
  }
  r->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::ok();
}

}  // namespace braid::storage
