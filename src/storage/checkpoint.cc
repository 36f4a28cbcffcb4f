#include "storage/checkpoint.h"

#include <cstring>

#include "storage/cold_address.h"
#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

namespace {
// Buffers are tags 0 and 1; queues keep 63 bits of a tag.
constexpr std::uint64_t kManifestTag = 2;
constexpr std::uint64_t kSyncTag = 7;

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
  char* p = out->data() + at;
  ChunkHeader h{0, magic, static_cast<std::uint32_t>(payload.size()), count, index, seq};
  std::memcpy(p, &h, sizeof h);
  std::memcpy(p + kChunkHeaderBytes, payload.data(), payload.size());
  h.crc = util::crc32c(p + 4, kChunkHeaderBytes - 4 + payload.size());
  std::memcpy(p, &h.crc, 4);
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
      if (c[i].user == kSyncTag) {
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
  if (files_.empty() ||
      part_offset_ + kChunkHeaderBytes + config_.chunk_bytes > config_.part_bytes) {
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
  if (placed_ && used_ + need > config_.chunk_bytes) {
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

Status CheckpointWriter::submit_sync(FileId file) {
  IoRequest r;
  r.op = IoRequest::Op::kSync;
  r.file = file;
  r.user = kSyncTag;
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
    if (c[i].user == kSyncTag) {
      --syncs_in_flight_;
      if (c[i].result < 0 && failure_.is_ok()) {
        failure_ = Status::io_error(io_failure(config_.manifest, "sync of",
                                               config_.manifest ? manifest_path_ : config_.dir,
                                               c[i].result));
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
        failure_ = Status::io_error(io_failure(true, "write to", manifest_path_, c[i].result));
      }
      continue;
    }
    busy_[c[i].user] = false;
    // A failed chunk is not retried: this checkpoint fails and the previous one stays in
    // force (the next attempt starts over).
    if (c[i].result < 0 && failure_.is_ok()) {
      failure_ = Status::io_error(
          io_failure(config_.manifest, "write to", files_.back().path, c[i].result));
    }
    auto& pending = pending_[c[i].user];
    if (failure_.is_ok() && config_.written) {
      for (const auto& [cookie, address] : pending) config_.written(cookie, address);
    }
    pending.clear();
  }
  return failure_;
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
  const std::uint64_t address =
      cold_word(files_.back().number, part_offset_ + kChunkHeaderBytes + used_, need);
  if (address != 0 && cookie != 0) pending_[active_].emplace_back(cookie, address);
  used_ += need;
  ++count_;
  ++records_;
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
  used_ += need;
  ++count_;
  ++records_;
  return Status::ok();
}

Status CheckpointWriter::write_manifest() {
  std::string header;
  append(&header, header_);
  for (const LogStart& st : starts_) append(&header, st);
  std::string parts;
  for (const CkptPart& p : parts_) append(&parts, p);
  // Parts of this checkpoint are not "outside" it.
  for (const CkptPart& p : parts_) live_.erase(p.file);
  std::string live;
  for (std::uint64_t f : live_) append(&live, f);
  const CkptTrailer t{header_.seq, records_, parts_.size(), live_.size()};
  std::string trailer;
  append(&trailer, t);
  manifest_image_.clear();
  put_chunk(&manifest_image_, kCkptHeaderMagic, 0, 0, header_.seq, header);
  put_chunk(&manifest_image_, kCkptPartsMagic, static_cast<std::uint32_t>(parts_.size()), 1,
            header_.seq, parts);
  put_chunk(&manifest_image_, kCkptLiveMagic, static_cast<std::uint32_t>(live_.size()), 2,
            header_.seq, live);
  put_chunk(&manifest_image_, kCkptTrailerMagic, 0, 3, header_.seq, trailer);
  Result<FileId> f = fs_->open(manifest_path_, {.create = true});
  if (!f.is_ok()) return f.status();
  manifest_ = *f;
  if (Status s = fs_->truncate(manifest_, 0); !s.is_ok()) return s;
  // The parts' names (and the slot's, on the first checkpoints) are durable before the
  // manifest that depends on them can be.
  if (Status s = fs_->sync_dir(config_.dir); !s.is_ok()) return s;
  return submit_write(static_cast<int>(kManifestTag), manifest_, 0, manifest_image_.data(),
                      static_cast<std::uint32_t>(manifest_image_.size()));
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
        while (phase_ == Phase::kSyncParts && next_sync_ < files_.size() &&
               syncs_in_flight_ < kSyncsInFlight) {
          if (Status s = submit_sync(files_[next_sync_++].file); !s.is_ok()) return s;
        }
        if (syncs_in_flight_ > 0) {
          if (Status s = reap(wait); !s.is_ok()) return s;
          if (syncs_in_flight_ > 0) return false;
        }
        if (phase_ == Phase::kSyncParts && next_sync_ < files_.size()) break;
        if (phase_ == Phase::kSyncManifest) {
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
        if (Status s = submit_sync(manifest_); !s.is_ok()) return s;
        phase_ = Phase::kSyncManifest;
        break;
      }
      case Phase::kDone:
        return true;
    }
  }
}

}  // namespace braid::storage
