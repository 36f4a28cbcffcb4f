#include "storage/checkpoint.h"

#include <algorithm>
#include <cstring>

#include "storage/cold_address.h"
#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

namespace {
// Buffers are tags 0 and 1; a part's sync is kPartSyncTag + its index; queues keep 63 bits of
// a tag.
constexpr std::uint64_t kManifestTag = 2;
constexpr std::uint64_t kManifestSyncTag = 3;
constexpr std::uint64_t kPartSyncTag = 1u << 16;
bool is_sync(std::uint64_t tag) { return tag == kManifestSyncTag || tag >= kPartSyncTag; }

std::string io_failure(bool manifest, const char* what, const std::string& path,
                       std::int64_t result) {
  return std::string(manifest ? "checkpoint " : "bulk load ") + what + " '" + path +
         "' failed: " + std::strerror(static_cast<int>(-result));
}

// Appends one chunk (header, payload, padding) to `out`.
void put_chunk(std::string* out, std::uint32_t magic, std::uint32_t count, std::uint64_t index,
               std::uint64_t seq, const std::string& payload) {
  const std::size_t at = out->size();
  out->resize(at + chunk_bytes(static_cast<std::uint32_t>(payload.size())), '\0');
  std::memcpy(out->data() + at + kChunkHeaderBytes, payload.data(), payload.size());
  seal_chunk(out->data() + at, magic, count, index, seq,
             static_cast<std::uint32_t>(payload.size()));
}

template <typename T>
void append(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

CheckpointWriter::CheckpointWriter(FileSystem* fs, IoQueue* queue, const CkptHeader& header,
                                   std::vector<LogStart> starts, CheckpointConfig config)
    : fs_(fs),
      queue_(queue),
      header_(header),
      starts_(std::move(starts)),
      config_(std::move(config)) {
  if (config_.runs && config_.runs_reserve != 0) {
    runs_image_.reserve(config_.runs_reserve + config_.runs_reserve / 64 + (64u << 10));
  }
  BRAID_ASSERT(starts_.size() <= kMaxLogs);
  BRAID_ASSERT(config_.part_bytes <= kMaxColdOffset);
  BRAID_ASSERT(config_.chunk_bytes % kRecordAlign == 0);
  BRAID_ASSERT(kChunkHeaderBytes + config_.chunk_bytes <= config_.part_bytes);
  // The biggest record must fit one chunk.
  BRAID_ASSERT(record_size(kMaxKeyBytes, kMaxValueBytes) <= config_.chunk_bytes);
  header_.logs = static_cast<std::uint32_t>(starts_.size());
  manifest_path_ =
      config_.dir + "/" + checkpoint_file_name(static_cast<std::uint32_t>(header.seq % 2));
  for (auto& b : buffers_) {
    b = std::make_unique_for_overwrite<char[]>(kChunkHeaderBytes + config_.chunk_bytes);
  }
}

CheckpointWriter::~CheckpointWriter() {
  // Buffers must outlive the requests that name them.
  while (writes_in_flight_ + syncs_in_flight_ > 0 && queue_->in_flight() > 0) {
    IoCompletion c[4];
    const std::size_t n = queue_->poll(c, 4, true);  // none: a timed-out wait; wait again
    for (std::size_t i = 0; i < n; ++i) {
      if (is_sync(c[i].user)) {
        if (syncs_in_flight_ > 0) --syncs_in_flight_;
      } else if (writes_in_flight_ > 0) {
        --writes_in_flight_;
      }
    }
  }
  for (const Part& p : files_) fs_->close(p.file);
  if (manifest_ >= 0) fs_->close(manifest_);
}

Status CheckpointWriter::place_chunk() {
  // A new part when a whole chunk might not fit the current one: every record's offset is
  // then final when it is added.
  if (files_.empty() || close_part_ ||
      part_offset_ + kChunkHeaderBytes + config_.chunk_bytes > config_.part_bytes) {
    if (!files_.empty()) files_.back().closed = true;
    close_part_ = false;
    const std::uint64_t number = config_.new_file();
    const std::string path = config_.dir + "/" + part_file_name(number);
    Result<FileId> f = fs_->open(path, {.create = true});
    if (!f.is_ok()) return f.status();
    // A stale file of that name (a crashed checkpoint's leftover) must not show old chunks.
    if (Status s = fs_->truncate(*f, 0); !s.is_ok()) {
      fs_->close(*f);
      return s;
    }
    files_.push_back({number, path, *f});
    parts_.push_back({number, 0, 0, 0});
    if (config_.created) config_.created(number, path);
    part_offset_ = 0;
  }
  placed_ = true;
  return Status::ok();
}

Status CheckpointWriter::make_room(std::uint32_t need) {
  if (placed_ && (used_ + need > config_.chunk_bytes || close_part_)) {
    if (Status s = submit_chunk(); !s.is_ok()) return s;
    while (busy_[active_]) {
      if (Status s = reap(true); !s.is_ok()) return s;
    }
  }
  if (!placed_) return place_chunk();
  return Status::ok();
}

Status CheckpointWriter::submit_write(int buffer, FileId file, std::uint64_t offset,
                                      const char* data, std::uint32_t len) {
  IoRequest r;
  r.op = IoRequest::Op::kWrite;
  r.file = file;
  r.offset = offset;
  r.data = data;
  r.len = len;
  r.user = static_cast<std::uint64_t>(buffer);
  if (Status s = queue_->submit(r); !s.is_ok()) return s;
  requests_[buffer] = r;
  ++writes_in_flight_;
  return Status::ok();
}

Status CheckpointWriter::submit_sync(FileId file, std::uint64_t tag) {
  IoRequest r;
  r.op = IoRequest::Op::kSync;
  r.file = file;
  r.user = tag;
  if (Status s = queue_->submit(r); !s.is_ok()) return s;
  ++syncs_in_flight_;
  return Status::ok();
}

Status CheckpointWriter::submit_chunk() {
  BRAID_ASSERT(placed_);
  char* buf = buffers_[active_].get();
  CkptPart& part = parts_.back();
  ChunkHeader h{0, kCkptDataMagic, used_, count_, part.chunks, header_.seq};
  std::memcpy(buf, &h, sizeof h);
  h.crc = util::crc32c(buf + 4, kChunkHeaderBytes - 4 + used_);
  std::memcpy(buf, &h.crc, 4);
  const auto len = static_cast<std::uint32_t>(chunk_bytes(used_));
  // Records are padded to kRecordAlign, so the chunk needs no padding of its own.
  BRAID_ASSERT(len == kChunkHeaderBytes + used_);
  if (Status s = submit_write(active_, files_.back().file, part_offset_, buf, len); !s.is_ok()) {
    return s;
  }
  busy_[active_] = true;
  buffer_part_[active_] = files_.size() - 1;
  buffer_records_[active_] = count_;
  ++files_.back().writes;
  part_offset_ += len;
  part.bytes = part_offset_;
  part.records += count_;
  ++part.chunks;
  bytes_ += len;
  active_ = 1 - active_;
  used_ = 0;
  count_ = 0;
  placed_ = false;
  return Status::ok();
}

Status CheckpointWriter::reap(bool wait) {
  IoCompletion c[4];
  const std::size_t n = queue_->poll(c, 4, wait);
  for (std::size_t i = 0; i < n; ++i) {
    if (is_sync(c[i].user)) {
      --syncs_in_flight_;
      const bool part = c[i].user >= kPartSyncTag;
      if (part) {
        Part& f = files_[c[i].user - kPartSyncTag];
        f.syncing = false;
        f.synced = c[i].result >= 0;
      }
      if (c[i].result < 0 && failure_.is_ok()) {
        failure_ = Status::io_error(io_failure(
            config_.manifest, "sync of",
            part ? files_[c[i].user - kPartSyncTag].path : manifest_path_ + ".new", c[i].result));
      }
      continue;
    }
    IoRequest& r = requests_[c[i].user];
    if (c[i].result >= 0 && static_cast<std::uint64_t>(c[i].result) < r.len && failure_.is_ok()) {
      // A short write is not an error (the kernel may split a write): the rest goes again.
      r.offset += static_cast<std::uint64_t>(c[i].result);
      r.data += c[i].result;
      r.len -= static_cast<std::uint32_t>(c[i].result);
      if (Status s = queue_->submit(r); !s.is_ok()) failure_ = s;
      if (failure_.is_ok()) continue;
    }
    --writes_in_flight_;
    if (c[i].user == kManifestTag) {
      if (c[i].result < 0 && failure_.is_ok()) {
        failure_ =
            Status::io_error(io_failure(true, "write to", manifest_path_ + ".new", c[i].result));
      }
      continue;
    }
    busy_[c[i].user] = false;
    Part& part = files_[buffer_part_[c[i].user]];
    --part.writes;
    // A failed chunk is not retried: this checkpoint fails and the last manifest stays in
    // force (the next attempt starts over).
    if (c[i].result < 0 && failure_.is_ok()) {
      failure_ = Status::io_error(io_failure(config_.manifest, "write to", part.path, c[i].result));
    }
    auto& pending = pending_[c[i].user];
    if (failure_.is_ok() && config_.chunk_written)
      config_.chunk_written(buffer_records_[c[i].user]);
    if (failure_.is_ok() && config_.written) {
      for (const auto& [cookie, address] : pending) config_.written(cookie, address);
    }
    pending.clear();
  }
  if (failure_.is_ok() && phase_ == Phase::kData) failure_ = sync_closed();
  return failure_;
}

Status CheckpointWriter::sync_closed() {
  for (std::size_t i = durable_; i < files_.size() && syncs_in_flight_ < kSyncsInFlight; ++i) {
    Part& f = files_[i];
    if (!f.closed || f.writes > 0 || f.syncing || f.synced) continue;
    if (Status s = submit_sync(f.file, kPartSyncTag + i); !s.is_ok()) return s;
    f.syncing = true;
  }
  return Status::ok();
}

std::size_t CheckpointWriter::durable_parts() {
  while (durable_ < files_.size() && files_[durable_].synced) ++durable_;
  return durable_;
}

void CheckpointWriter::note_last(std::uint32_t table, std::string_view key) {
  Part& f = files_.back();
  f.last_table = table;
  f.last_key.assign(key);
  if (config_.part_target != 0 && part_offset_ + kChunkHeaderBytes + used_ >= config_.part_target) {
    close_part_ = true;
  }
}

bool CheckpointWriter::ready() {
  if (!busy_[active_]) return true;
  (void)reap(false);
  return !busy_[active_];
}

Result<std::uint64_t> CheckpointWriter::add(std::uint32_t table, std::string_view key,
                                            std::string_view value, std::uint64_t cts,
                                            std::uint64_t cookie) {
  if (!failure_.is_ok()) return failure_;
  const std::uint32_t need =
      record_size(static_cast<std::uint32_t>(key.size()), static_cast<std::uint32_t>(value.size()));
  if (Status s = make_room(need); !s.is_ok()) return s;
  char* p = buffers_[active_].get() + kChunkHeaderBytes + used_;
  encode_record(p, WriteOp::kPut, table, key, value, cts);
  const std::uint64_t offset = part_offset_ + kChunkHeaderBytes + used_;
  const std::uint64_t address = cold_word(files_.back().number, offset, need);
  note_run(table, key, offset, need, 0);
  if (address != 0 && cookie != 0) pending_[active_].emplace_back(cookie, address);
  used_ += need;
  ++count_;
  ++records_;
  note_last(table, key);
  return address;
}

Status CheckpointWriter::add_ref(std::uint32_t table, std::string_view key, std::uint64_t entry) {
  if (!failure_.is_ok()) return failure_;
  BRAID_ASSERT(is_cold(entry));
  const std::uint32_t need = record_size(static_cast<std::uint32_t>(key.size()), kRefValueBytes);
  if (Status s = make_room(need); !s.is_ok()) return s;
  char v[kRefValueBytes];
  std::memcpy(v, &entry, sizeof v);
  encode_record(buffers_[active_].get() + kChunkHeaderBytes + used_, WriteOp::kRef, table, key,
                {v, sizeof v}, header_.cts);
  live_.insert(cold(entry).segment);
  note_run(table, key, part_offset_ + kChunkHeaderBytes + used_, need, cold(entry).segment);
  used_ += need;
  ++count_;
  ++records_;
  note_last(table, key);
  return Status::ok();
}

void CheckpointWriter::note_run(std::uint32_t table, std::string_view key, std::uint64_t offset,
                                std::uint32_t bytes, std::uint64_t ref_file) {
  if (!lists_runs()) return;
  // Side by side in the chunk (a new chunk starts past its header, never at the run's end),
  // and within what a cold word addresses.
  const bool joins = !run_break_ && run_.records != 0 && run_file_ == files_.back().number &&
                     offset == run_offset_ + run_bytes_ && run_bytes_ + bytes <= kMaxColdSize;
  if (!joins) {
    close_run();
    if (bytes > kMaxColdSize || cold_word(files_.back().number, offset, bytes) == 0) {
      runs_ok_ = false;  // no run can hold this record: no list at all
      if (carried_records_ != 0 && failure_.is_ok()) {
        failure_ = Status::busy(
            "checkpoint: a record too big for a run of the index's leaves "
            "after runs were carried over");
      }
      return;
    }
    run_ = {table, 0, 0, static_cast<std::uint32_t>(key.size()), 0};
    run_file_ = files_.back().number;
    run_offset_ = offset;
    run_bytes_ = 0;
    run_key_.assign(key);
    run_refs_.clear();
  }
  run_break_ = false;
  run_bytes_ += bytes;
  ++run_.records;
  if (ref_file != 0 && std::find(run_refs_.begin(), run_refs_.end(), ref_file) == run_refs_.end()) {
    run_refs_.push_back(ref_file);
  }
}

Status CheckpointWriter::carry_run(std::uint32_t table, std::string_view key, std::uint64_t address,
                                   std::uint32_t records,
                                   std::span<const std::uint64_t> ref_files) {
  if (!failure_.is_ok()) return failure_;
  if (!lists_runs()) return Status::busy("checkpoint: lists no runs, so it cannot carry one");
  BRAID_ASSERT(is_cold(address));
  BRAID_ASSERT(records != 0);
  close_run();
  run_break_ = true;
  const CkptRun r{table, records, address, static_cast<std::uint32_t>(key.size()),
                  static_cast<std::uint32_t>(ref_files.size())};
  const std::size_t start = runs_image_.size();
  append(&runs_image_, r);
  for (std::uint64_t f : ref_files) {
    append(&runs_image_, f);
    live_.insert(f);
  }
  runs_image_ += key;
  runs_image_.resize(start + run_entry_bytes(r), '\0');
  ++run_count_;
  live_.insert(cold(address).segment);
  carried_records_ += records;
  return Status::ok();
}

void CheckpointWriter::close_run() {
  if (run_.records == 0) return;
  run_.address = cold_word(run_file_, run_offset_, run_bytes_);
  BRAID_ASSERT(run_.address != 0);
  run_.ref_files = static_cast<std::uint32_t>(run_refs_.size());
  const std::size_t start = runs_image_.size();
  append(&runs_image_, run_);
  for (std::uint64_t f : run_refs_) append(&runs_image_, f);
  runs_image_ += run_key_;
  runs_image_.resize(start + run_entry_bytes(run_), '\0');
  ++run_count_;
  run_.records = 0;
}

std::string CheckpointWriter::manifest_image(const CkptHeader& header,
                                             const std::vector<LogStart>& starts,
                                             const std::vector<CkptPart>& parts,
                                             std::set<std::uint64_t> live,
                                             const std::string& frontier, std::string runs,
                                             const std::vector<StoredIndex>& indexes) const {
  std::string head;
  append(&head, header);
  for (const LogStart& st : starts) append(&head, st);
  std::string list;
  std::uint64_t records = 0;
  for (const CkptPart& p : parts) {
    append(&list, p);
    records += p.records;
    live.erase(p.file);  // the manifest's parts are not "outside" it
  }
  std::string outside;
  for (std::uint64_t f : live) append(&outside, f);
  const CkptTrailer t{header.seq, records, parts.size(), live.size()};
  std::string trailer;
  append(&trailer, t);
  std::string image;
  std::uint64_t index = 0;
  put_chunk(&image, kCkptHeaderMagic, 0, index++, header.seq, head);
  put_chunk(&image, kCkptPartsMagic, static_cast<std::uint32_t>(parts.size()), index++, header.seq,
            list);
  put_chunk(&image, kCkptLiveMagic, static_cast<std::uint32_t>(live.size()), index++, header.seq,
            outside);
  if (!frontier.empty()) put_chunk(&image, kCkptFrontierMagic, 0, index++, header.seq, frontier);
  if (run_count_ != 0 && !runs.empty()) {
    // The run list is nearly all of a manifest (~30 bytes a leaf): the image is built around
    // its buffer, the chunks before it moved in front, so the list is never held twice.
    const auto len = static_cast<std::uint32_t>(runs.size());
    const std::size_t before = image.size();
    runs.reserve(before + chunk_bytes(len) + chunk_bytes(sizeof t));
    runs.insert(0, before + kChunkHeaderBytes, '\0');
    std::memcpy(runs.data(), image.data(), before);
    runs.resize(before + chunk_bytes(len), '\0');
    seal_chunk(runs.data() + before, kCkptRunsMagic, static_cast<std::uint32_t>(run_count_),
               index++, header.seq, len);
    image = std::move(runs);
  }
  if (!indexes.empty()) {
    std::string list;
    for (const StoredIndex& i : indexes) {
      BRAID_ASSERT(i.desc.name_len == i.name.size());
      const std::size_t start = list.size();
      append(&list, i.desc);
      list += i.name;
      list.resize(start + index_entry_bytes(i.desc), '\0');
    }
    put_chunk(&image, kCkptIndexesMagic, static_cast<std::uint32_t>(indexes.size()), index++,
              header.seq, list);
  }
  put_chunk(&image, kCkptTrailerMagic, 0, index, header.seq, trailer);
  return image;
}

Status CheckpointWriter::publish(const std::string& image) {
  const std::string tmp = manifest_path_ + ".new";
  Result<FileId> f = fs_->open(tmp, {.create = true});
  if (!f.is_ok()) return f.status();
  Status s = fs_->truncate(*f, 0);
  if (s.is_ok()) s = fs_->write(*f, 0, image.data(), image.size());
  if (s.is_ok()) s = fs_->sync(*f);
  fs_->close(*f);
  // The parts' names are durable before a manifest naming them can be.
  if (s.is_ok()) s = fs_->sync_dir(config_.dir);
  if (s.is_ok()) s = fs_->rename(tmp, manifest_path_);
  if (s.is_ok()) s = fs_->sync_dir(config_.dir);
  return s;
}

Status CheckpointWriter::write_under_way(std::size_t parts, const CheckpointBase& base) {
  if (!failure_.is_ok()) return failure_;
  BRAID_ASSERT(before_manifest());
  BRAID_ASSERT(parts >= 1);
  BRAID_ASSERT(parts <= durable_parts());
  BRAID_ASSERT(base.seq < header_.seq);
  // The header is the previous checkpoint's position (the logs replay from there); the
  // frontier says how far the new parts reach.
  CkptHeader h = header_;
  h.cts = base.cts;
  h.logs = static_cast<std::uint32_t>(base.starts.size());
  std::vector<CkptPart> list(parts_.begin(), parts_.begin() + static_cast<std::ptrdiff_t>(parts));
  list.insert(list.end(), base.parts.begin(), base.parts.end());
  std::set<std::uint64_t> live = live_;
  live.insert(base.live.begin(), base.live.end());
  const Part& last = files_[parts - 1];
  const CkptFrontier f{base.seq, header_.cts, parts, last.last_table,
                       static_cast<std::uint32_t>(last.last_key.size())};
  std::string frontier;
  append(&frontier, f);
  frontier += last.last_key;
  // A checkpoint under way stores no index: an open from it rebuilds them (the logs it
  // replays start before any stored index's entries were taken).
  if (Status s = publish(manifest_image(h, base.starts, list, std::move(live), frontier, {}, {}));
      !s.is_ok()) {
    failure_ = s;
    return s;
  }
  return Status::ok();
}

Status CheckpointWriter::write_manifest() {
  close_run();
  // More runs than a chunk's count can say: listed by none (they would be ~100 GiB of parts).
  const bool runs = lists_runs() && run_count_ <= 0xffffffffu;
  run_list_bytes_ = runs ? runs_image_.size() : 0;
  manifest_image_ = manifest_image(header_, starts_, parts_, live_, {},
                                   runs ? std::move(runs_image_) : std::string(), indexes_);
  std::string().swap(runs_image_);
  for (const CkptPart& p : parts_) live_.erase(p.file);
  Result<FileId> f = fs_->open(manifest_path_ + ".new", {.create = true});
  if (!f.is_ok()) return f.status();
  manifest_ = *f;
  if (Status s = fs_->truncate(manifest_, 0); !s.is_ok()) return s;
  // The parts' names are durable before the manifest that depends on them can be.
  if (Status s = fs_->sync_dir(config_.dir); !s.is_ok()) return s;
  return submit_write(static_cast<int>(kManifestTag), manifest_, 0, manifest_image_.data(),
                      static_cast<std::uint32_t>(manifest_image_.size()));
}

Status CheckpointWriter::rename_manifest() {
  fs_->close(manifest_);
  manifest_ = -1;
  Status s = fs_->rename(manifest_path_ + ".new", manifest_path_);
  if (s.is_ok()) s = fs_->sync_dir(config_.dir);
  return s;
}

Result<bool> CheckpointWriter::finish(bool wait) {
  if (!failure_.is_ok()) return failure_;
  for (;;) {
    switch (phase_) {
      case Phase::kData:
        if (placed_ && count_ != 0) {
          if (busy_[active_]) {
            if (!ready() && !wait) return false;
            while (busy_[active_]) {
              if (Status s = reap(true); !s.is_ok()) return s;
            }
          }
          if (Status s = submit_chunk(); !s.is_ok()) return s;
        }
        placed_ = false;
        if (writes_in_flight_ > 0) {
          if (Status s = reap(wait); !s.is_ok()) return s;
          if (writes_in_flight_ > 0) return false;
        }
        // Every chunk is written: one sync per part makes them durable.
        phase_ = Phase::kSyncParts;
        break;
      case Phase::kSyncParts:
      case Phase::kSyncManifest:
        // A few at a time: a load may have many parts, and the queue is short.
        if (phase_ == Phase::kSyncParts) {
          for (Part& f : files_) f.closed = true;
          if (Status s = sync_closed(); !s.is_ok()) return s;
        }
        if (syncs_in_flight_ > 0) {
          if (Status s = reap(wait); !s.is_ok()) return s;
          if (syncs_in_flight_ > 0) return false;
        }
        if (phase_ == Phase::kSyncParts && durable_parts() < files_.size()) break;
        if (phase_ == Phase::kSyncManifest) {
          if (Status s = rename_manifest(); !s.is_ok()) return s;
          phase_ = Phase::kDone;
          return true;
        }
        if (!config_.manifest) {
          if (Status s = fs_->sync_dir(config_.dir); !s.is_ok()) return s;
          phase_ = Phase::kDone;
          return true;
        }
        if (Status s = write_manifest(); !s.is_ok()) return s;
        phase_ = Phase::kManifest;
        break;
      case Phase::kManifest: {
        if (writes_in_flight_ > 0) {
          if (Status s = reap(wait); !s.is_ok()) return s;
          if (writes_in_flight_ > 0) return false;
        }
        if (Status s = submit_sync(manifest_, kManifestSyncTag); !s.is_ok()) return s;
        phase_ = Phase::kSyncManifest;
        break;
      }
      case Phase::kDone:
        return true;
    }
  }
}

}  // namespace braid::storage
