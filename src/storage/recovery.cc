#include "storage/recovery.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "util/crc32c.h"

namespace braid::storage {

namespace {

Status corrupt(const std::string& where, const std::string& what) {
  return Status::corruption(where + ": " + what);
}

template <typename T>
void put_raw(std::string* s, const T& v) {
  s->append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Applies (or, with apply == nullptr, only checks) the writes of one transaction record.
Status apply_writes(const char* p, std::uint32_t len, std::uint32_t nwrites, std::uint64_t cts,
                    Applier* apply, const std::string& where) {
  const char* end = p + len;
  for (std::uint32_t i = 0; i < nwrites; ++i) {
    if (end - p < static_cast<std::ptrdiff_t>(kWriteHeaderBytes)) {
      return corrupt(where, "write record overruns its transaction");
    }
    const auto w = load<WriteHeader>(p);
    p += kWriteHeaderBytes;
    if (w.op != static_cast<std::uint8_t>(WriteOp::kPut) &&
        w.op != static_cast<std::uint8_t>(WriteOp::kRemove)) {
      return corrupt(where, "unknown write kind " + std::to_string(w.op));
    }
    if (w.key_len == 0 || w.key_len > 255 || w.value_len > 64 * 1024 ||
        (w.op == static_cast<std::uint8_t>(WriteOp::kRemove) && w.value_len != 0)) {
      return corrupt(where, "write record with impossible sizes");
    }
    if (end - p < static_cast<std::ptrdiff_t>(w.key_len) + w.value_len) {
      return corrupt(where, "write record overruns its transaction");
    }
    const std::string_view key(p, w.key_len);
    const std::string_view value(p + w.key_len, w.value_len);
    p += w.key_len + w.value_len;
    if (apply == nullptr) continue;
    Status s = w.op == static_cast<std::uint8_t>(WriteOp::kPut)
                   ? apply->put(w.table, key, value, cts)
                   : apply->remove(w.table, key, cts);
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

// One log: its segments in order, read one at a time, as a stream of transactions.
class LogCursor {
 public:
  LogCursor(FileSystem* fs, std::string dir, std::uint32_t log, std::uint64_t generation)
      : fs_(fs), dir_(std::move(dir)), log_(log), generation_(generation) {}
  void add_segment(std::uint64_t seq, std::string name) { segments_.emplace(seq, std::move(name)); }

  Status check_segments() {
    std::uint64_t prev = 0;
    bool first = true;
    for (const auto& [seq, name] : segments_) {
      if (!first && seq != prev + 1) {
        return corrupt(dir_ + "/" + name, "log " + std::to_string(log_) + " segment " +
                                              std::to_string(prev + 1) + " is missing");
      }
      prev = seq;
      first = false;
    }
    it_ = segments_.begin();
    return Status::ok();
  }

  bool done() const { return done_; }
  std::uint64_t cts() const { return cts_; }
  bool torn() const { return torn_; }
  std::uint64_t blocks() const { return blocks_; }
  std::uint64_t bytes() const { return bytes_; }

  Status apply(Applier* a) { return apply_writes(writes_, len_, nwrites_, cts_, a, where()); }

  // Moves to the next transaction (done() at the end of the log).
  Status advance() {
    for (;;) {
      if (p_ < end_) {
        TxnHeader t{};
        if (txn_at(p_, end_, &t) == nullptr) {
          return corrupt(where(), "transaction record overruns its block");
        }
        if (t.cts <= last_cts_) {
          return corrupt(where(), "commit timestamps out of order in one log");
        }
        last_cts_ = cts_ = t.cts;
        nwrites_ = t.nwrites;
        len_ = t.len;
        writes_ = p_ + kTxnHeaderBytes;
        p_ += kTxnHeaderBytes + t.len;
        return Status::ok();
      }
      if (Status s = next_block(); !s.is_ok()) return s;
      if (done_) return Status::ok();
    }
  }

 private:
  std::string where() const { return dir_ + "/" + (loaded_ ? it_->second : std::string("log")); }

  Status load_segment() {
    const std::string path = dir_ + "/" + it_->second;
    if (Status s = read_file(*fs_, path, &image_); !s.is_ok()) return s;
    bytes_ += image_.size();
    loaded_ = true;
    const bool last = std::next(it_) == segments_.end();
    SegmentHeader h{};
    if (!header_ok(image_, &h)) {
      if (last) {  // created, then the crash came before its header was durable
        torn_ = true;
        done_ = true;
        return Status::ok();
      }
      return corrupt(path, "bad segment header");
    }
    if (h.version != kFormatVersion) {
      return corrupt(path, "unsupported log format version " + std::to_string(h.version) +
                               " (this build reads version " + std::to_string(kFormatVersion) +
                               ")");
    }
    if (h.log != log_ || h.generation != generation_ || h.segment != it_->first) {
      return corrupt(path, "segment header does not match the file name");
    }
    if (expect_block_ != 0 && h.first_block != expect_block_) {
      return corrupt(path, "block sequence gap between segments");
    }
    expect_block_ = h.first_block;
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
        ++it_;
        loaded_ = false;
        continue;
      }
      BlockHeader h{};
      const bool last = std::next(it_) == segments_.end();
      if (!block_ok(image_, off_, &h)) {
        // Only the newest block of a log can be in flight at a crash. A bad block with a good
        // one after it, or in a segment that was followed by another, is damage to durable
        // data.
        BlockHeader after{};
        const bool plausible = h.magic == kBlockMagic && h.padded_len >= kBlockHeaderBytes;
        if (!last || (plausible && block_ok(image_, off_ + h.padded_len, &after))) {
          return corrupt(where(), "corrupt log block at offset " + std::to_string(off_) +
                                      " with durable blocks after it");
        }
        torn_ = true;
        done_ = true;
        return Status::ok();
      }
      if (h.block_seq != expect_block_) {
        return corrupt(where(), "block sequence " + std::to_string(h.block_seq) + ", expected " +
                                    std::to_string(expect_block_));
      }
      ++expect_block_;
      ++blocks_;
      p_ = image_.data() + off_ + kBlockHeaderBytes;
      end_ = p_ + h.payload_len;
      off_ += h.padded_len;
      return Status::ok();
    }
  }

  FileSystem* fs_;
  std::string dir_;
  std::uint32_t log_;
  std::uint64_t generation_;
  std::map<std::uint64_t, std::string> segments_;
  std::map<std::uint64_t, std::string>::iterator it_;
  bool loaded_ = false;
  std::string image_;
  std::uint64_t off_ = 0;
  std::uint64_t expect_block_ = 0;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  bool done_ = false;
  bool torn_ = false;
  std::uint64_t blocks_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t last_cts_ = 0;
  std::uint64_t cts_ = 0;
  std::uint32_t nwrites_ = 0;
  std::uint32_t len_ = 0;
  const char* writes_ = nullptr;
};

}  // namespace

// ---- Catalog ------------------------------------------------------------------------------------

Status read_catalog(FileSystem& fs, const std::string& dir, std::vector<CatalogEntry>* out,
                    bool* present) {
  out->clear();
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
  if (load<std::uint32_t>(img.data() + 4) != kFormatVersion) {
    return corrupt(
        path, "unsupported catalog version " + std::to_string(load<std::uint32_t>(img.data() + 4)));
  }
  const auto count = load<std::uint32_t>(img.data() + 8);
  if (util::crc32c(img.data() + 16, img.size() - 16) != load<std::uint32_t>(img.data() + 12)) {
    return corrupt(path, "checksum mismatch");
  }
  std::size_t at = 16;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (img.size() - at < 6) return corrupt(path, "truncated entry");
    const auto id = load<std::uint32_t>(img.data() + at);
    const auto len = load<std::uint16_t>(img.data() + at + 4);
    at += 6;
    if (img.size() - at < len || id != i) return corrupt(path, "bad entry");
    out->push_back({id, img.substr(at, len)});
    at += len;
  }
  if (at != img.size()) return corrupt(path, "trailing bytes");
  return Status::ok();
}

Status write_catalog(FileSystem& fs, const std::string& dir,
                     const std::vector<CatalogEntry>& entries) {
  std::string body;
  for (const CatalogEntry& e : entries) {
    put_raw(&body, e.id);
    put_raw(&body, static_cast<std::uint16_t>(e.name.size()));
    body += e.name;
  }
  std::string img;
  put_raw(&img, kCatalogMagic);
  put_raw(&img, kFormatVersion);
  put_raw(&img, static_cast<std::uint32_t>(entries.size()));
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

Status read_checkpoint(std::string_view img, CheckpointInfo* info, Applier* apply) {
  *info = {};
  info->bytes = img.size();
  std::vector<std::pair<std::size_t, ChunkHeader>> chunks;
  std::size_t at = 0;
  bool trailer = false;
  while (at < img.size() && !trailer) {
    if (img.size() - at < kChunkHeaderBytes) {
      info->problem = "truncated chunk header";
      return Status::ok();
    }
    const auto c = load<ChunkHeader>(img.data() + at);
    if (img.size() - at - kChunkHeaderBytes < c.len ||
        util::crc32c(img.data() + at + 4, kChunkHeaderBytes - 4 + c.len) != c.crc ||
        c.index != chunks.size()) {
      info->problem =
          "bad chunk " + std::to_string(chunks.size()) + " at offset " + std::to_string(at);
      return Status::ok();
    }
    if (chunks.empty() != (c.magic == kCkptHeaderMagic)) {
      info->problem = "chunk out of place";
      return Status::ok();
    }
    if (c.magic == kCkptHeaderMagic) {
      if (c.len != sizeof(CkptHeader)) {
        info->problem = "bad header chunk";
        return Status::ok();
      }
      info->header = load<CkptHeader>(img.data() + at + kChunkHeaderBytes);
      if (info->header.version != kFormatVersion) {
        return Status::corruption("checkpoint format version " +
                                  std::to_string(info->header.version) + " is not supported");
      }
    } else if (c.magic == kCkptTrailerMagic) {
      if (c.len != sizeof(CkptTrailer)) {
        info->problem = "bad trailer chunk";
        return Status::ok();
      }
      info->trailer = load<CkptTrailer>(img.data() + at + kChunkHeaderBytes);
      trailer = true;
    } else if (c.magic != kCkptDataMagic) {
      info->problem = "unknown chunk kind";
      return Status::ok();
    }
    chunks.emplace_back(at, c);
    at += kChunkHeaderBytes + c.len;
  }
  if (!trailer) {
    info->problem = "no trailer (torn)";
    return Status::ok();
  }
  std::uint64_t records = 0;
  for (const auto& [off, c] : chunks) {
    if (c.magic == kCkptDataMagic) records += c.count;
  }
  if (info->trailer.seq != info->header.seq || info->trailer.records != records ||
      info->trailer.chunks + 2 != chunks.size()) {
    info->problem = "trailer does not match the chunks";
    return Status::ok();
  }
  // Whole and consistent: only now may records be applied.
  for (const auto& [off, c] : chunks) {
    if (c.magic != kCkptDataMagic) continue;
    const char* p = img.data() + off + kChunkHeaderBytes;
    const char* end = p + c.len;
    for (std::uint32_t i = 0; i < c.count; ++i) {
      if (end - p < static_cast<std::ptrdiff_t>(kCkptRecordHeaderBytes)) {
        return Status::corruption("checkpoint record overruns its chunk");
      }
      const auto table = load<std::uint32_t>(p);
      const auto klen = load<std::uint16_t>(p + 4);
      const auto vlen = load<std::uint32_t>(p + 6);
      p += kCkptRecordHeaderBytes;
      if (klen == 0 || klen > 255 || vlen > 64 * 1024 ||
          end - p < klen + static_cast<std::ptrdiff_t>(vlen)) {
        return Status::corruption("checkpoint record with impossible sizes");
      }
      if (apply != nullptr) {
        Status s = apply->put(table, {p, klen}, {p + klen, vlen}, info->header.cts);
        if (!s.is_ok()) return s;
      }
      p += klen + vlen;
    }
    if (p != end) return Status::corruption("checkpoint chunk longer than its records");
  }
  info->valid = true;
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
    for (std::uint32_t i = 0; i < h.txn_count; ++i) {
      TxnHeader t{};
      if (txn_at(p, end, &t) == nullptr) {
        return Status::corruption("transaction record overruns its block");
      }
      if (Status s = apply_writes(p + kTxnHeaderBytes, t.len, t.nwrites, t.cts, apply, "segment");
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

Status recover(FileSystem& fs, const std::string& dir, std::uint64_t base_clock, Applier& apply,
               RecoveryReport* r) {
  const auto t0 = std::chrono::steady_clock::now();
  *r = {};
  std::vector<std::string> names;
  if (Status s = fs.list(dir, &names); !s.is_ok()) return s;
  std::sort(names.begin(), names.end());

  // The newest checkpoint slot that is whole.
  CheckpointInfo best;
  std::string best_image;
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    const std::string name = checkpoint_file_name(slot);
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    std::string img;
    if (Status s = read_file(fs, dir + "/" + name, &img); !s.is_ok()) return s;
    CheckpointInfo info;
    if (Status s = read_checkpoint(img, &info, nullptr); !s.is_ok()) return s;
    if (!info.valid) {
      if (!img.empty()) ++r->checkpoint_fallbacks;
      continue;
    }
    if (!best.valid || info.header.seq > best.header.seq) {
      best = info;
      best_image = std::move(img);
    }
  }
  std::uint64_t base = base_clock;
  if (best.valid) {
    CheckpointInfo again;
    if (Status s = read_checkpoint(best_image, &again, &apply); !s.is_ok()) return s;
    r->checkpoint = true;
    r->checkpoint_seq = best.header.seq;
    r->checkpoint_cts = best.header.cts;
    r->checkpoint_records = best.trailer.records;
    r->generation = best.header.generation;
    base = best.header.cts;
  }
  best_image.clear();
  best_image.shrink_to_fit();

  // The logs of the checkpoint's generation; older generations are covered by it.
  std::map<std::uint32_t, std::unique_ptr<LogCursor>> logs;
  for (const std::string& name : names) {
    LogName ln{};
    if (!parse_log_file_name(name, &ln)) continue;
    if (ln.generation > r->generation) {
      return corrupt(dir + "/" + name, "log generation " + std::to_string(ln.generation) +
                                           " is newer than the newest valid checkpoint's (" +
                                           std::to_string(r->generation) +
                                           "); a checkpoint is missing or corrupt");
    }
    r->old_files.push_back(name);
    if (ln.generation < r->generation) continue;
    auto& c = logs[ln.log];
    if (!c) c = std::make_unique<LogCursor>(&fs, dir, ln.log, ln.generation);
    c->add_segment(ln.segment, name);
    ++r->log_files;
  }
  r->logs = static_cast<std::uint32_t>(logs.size());
  std::vector<LogCursor*> cursors;
  for (auto& [id, c] : logs) {
    if (Status s = c->check_segments(); !s.is_ok()) return s;
    if (Status s = c->advance(); !s.is_ok()) return s;
    cursors.push_back(c.get());
  }

  // Merge in timestamp order while the timestamps stay dense.
  std::uint64_t next = base + 1;
  for (;;) {
    LogCursor* min = nullptr;
    for (LogCursor* c : cursors) {
      while (!c->done() && c->cts() <= base) {
        if (Status s = c->advance(); !s.is_ok()) return s;
      }
      if (!c->done() && (min == nullptr || c->cts() < min->cts())) min = c;
    }
    if (min == nullptr || min->cts() != next) {
      if (min != nullptr && min->cts() < next) {
        return corrupt(dir,
                       "commit timestamp " + std::to_string(min->cts()) + " appears in two logs");
      }
      break;  // the end, or the first hole
    }
    if (Status s = min->apply(&apply); !s.is_ok()) return s;
    ++r->txns_replayed;
    ++next;
    if (Status s = min->advance(); !s.is_ok()) return s;
  }
  // Whatever is left was never acknowledged; read it anyway, so that damage in the middle of a
  // log is reported rather than mistaken for its end.
  for (LogCursor* c : cursors) {
    while (!c->done()) {
      if (c->cts() > base) {
        if (Status s = c->apply(nullptr); !s.is_ok()) return s;
        ++r->txns_dropped;
      }
      if (Status s = c->advance(); !s.is_ok()) return s;
    }
    r->blocks += c->blocks();
    r->log_bytes += c->bytes();
    if (c->torn()) ++r->torn_tails;
  }
  r->cutoff = next - 1;
  r->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::ok();
}

}  // namespace braid::storage
