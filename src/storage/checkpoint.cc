#include "storage/checkpoint.h"

#include <cstring>

#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

namespace {
constexpr std::uint64_t kSyncTag = 7;  // buffers are 0 and 1; queues keep 63 bits of a tag
}  // namespace

CheckpointWriter::CheckpointWriter(FileSystem* fs, IoQueue* queue, std::string dir,
                                   const CkptHeader& header, std::vector<LogStart> starts,
                                   std::uint32_t chunk_bytes)
    : fs_(fs),
      queue_(queue),
      dir_(std::move(dir)),
      header_(header),
      starts_(std::move(starts)),
      chunk_bytes_(chunk_bytes) {
  BRAID_ASSERT(starts_.size() <= kMaxLogs);
  header_.logs = static_cast<std::uint32_t>(starts_.size());
  BRAID_ASSERT(sizeof(CkptHeader) + starts_.size() * sizeof(LogStart) <= chunk_bytes_);
  path_ = dir_ + "/" + checkpoint_file_name(static_cast<std::uint32_t>(header.seq % 2));
  for (auto& b : buffers_)
    b = std::make_unique_for_overwrite<char[]>(chunk_bytes_ + kChunkHeaderBytes);
}

CheckpointWriter::~CheckpointWriter() {
  // Buffers must outlive the requests that name them.
  while (writes_in_flight_ > 0 || queue_->in_flight() > 0) {
    IoCompletion c[4];
    const std::size_t n = queue_->poll(c, 4, true);
    if (n == 0) break;
    for (std::size_t i = 0; i < n; ++i) {
      if (c[i].user != kSyncTag && writes_in_flight_ > 0) --writes_in_flight_;
    }
  }
  if (file_ >= 0) fs_->close(file_);
}

Status CheckpointWriter::begin() {
  std::vector<std::string> names;
  if (Status s = fs_->list(dir_, &names); !s.is_ok()) return s;
  const std::string base = path_.substr(dir_.size() + 1);
  bool existed = false;
  for (const auto& n : names) existed = existed || n == base;
  Result<FileId> f = fs_->open(path_, {.create = true});
  if (!f.is_ok()) return f.status();
  file_ = *f;
  if (Status s = fs_->truncate(file_, 0); !s.is_ok()) return s;
  if (!existed) {
    if (Status s = fs_->sync_dir(dir_); !s.is_ok()) return s;
  }
  char* p = buffers_[active_].get() + kChunkHeaderBytes;
  std::memcpy(p, &header_, sizeof header_);
  if (!starts_.empty()) {
    std::memcpy(p + sizeof header_, starts_.data(), starts_.size() * sizeof(LogStart));
  }
  used_ = static_cast<std::uint32_t>(sizeof header_ + starts_.size() * sizeof(LogStart));
  return submit_chunk(kCkptHeaderMagic, 0);
}

Status CheckpointWriter::submit_chunk(std::uint32_t magic, std::uint32_t count) {
  char* buf = buffers_[active_].get();
  ChunkHeader h{0, magic, used_, count, chunk_index_++};
  std::memcpy(buf, &h, sizeof h);
  h.crc = util::crc32c(buf + 4, kChunkHeaderBytes - 4 + used_);
  std::memcpy(buf, &h.crc, 4);
  IoRequest r;
  r.op = IoRequest::Op::kWrite;
  r.file = file_;
  r.offset = offset_;
  r.data = buf;
  r.len = kChunkHeaderBytes + used_;
  r.user = static_cast<std::uint64_t>(active_);
  if (Status s = queue_->submit(r); !s.is_ok()) return s;
  offset_ += r.len;
  busy_[active_] = true;
  requests_[active_] = r;
  ++writes_in_flight_;
  active_ = 1 - active_;
  used_ = 0;
  count_ = 0;
  return Status::ok();
}

Status CheckpointWriter::reap(bool wait) {
  IoCompletion c[4];
  const std::size_t n = queue_->poll(c, 4, wait);
  for (std::size_t i = 0; i < n; ++i) {
    if (c[i].user == kSyncTag) {
      if (c[i].result < 0) {
        failure_ = Status::io_error("checkpoint sync of '" + path_ +
                                    "' failed: " + std::strerror(static_cast<int>(-c[i].result)));
      } else {
        phase_ = Phase::kDone;
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
    busy_[c[i].user] = false;
    // A failed chunk is not retried: this checkpoint fails and the previous one stays in
    // force (the next attempt starts over).
    if (c[i].result < 0 && failure_.is_ok()) {
      failure_ = Status::io_error("checkpoint write to '" + path_ +
                                  "' failed: " + std::strerror(static_cast<int>(-c[i].result)));
    }
  }
  return failure_;
}

bool CheckpointWriter::ready() {
  if (!busy_[active_]) return true;
  (void)reap(false);
  return !busy_[active_];
}

Status CheckpointWriter::add(std::uint32_t table, std::string_view key, std::string_view value) {
  if (!failure_.is_ok()) return failure_;
  const std::uint32_t need =
      kCkptRecordHeaderBytes + static_cast<std::uint32_t>(key.size() + value.size());
  if (used_ + need > chunk_bytes_) {
    ++data_chunks_;
    if (Status s = submit_chunk(kCkptDataMagic, count_); !s.is_ok()) return s;
    while (busy_[active_]) {
      if (Status s = reap(true); !s.is_ok()) return s;
    }
  }
  char* p = buffers_[active_].get() + kChunkHeaderBytes + used_;
  const auto klen = static_cast<std::uint16_t>(key.size());
  const auto vlen = static_cast<std::uint32_t>(value.size());
  std::memcpy(p, &table, 4);
  std::memcpy(p + 4, &klen, 2);
  std::memcpy(p + 6, &vlen, 4);
  std::memcpy(p + kCkptRecordHeaderBytes, key.data(), key.size());
  if (!value.empty()) std::memcpy(p + kCkptRecordHeaderBytes + key.size(), value.data(), vlen);
  used_ += need;
  ++count_;
  ++records_;
  return Status::ok();
}

Result<bool> CheckpointWriter::finish(bool wait) {
  if (!failure_.is_ok()) return failure_;
  if (phase_ == Phase::kDone) return true;
  if (phase_ == Phase::kData) {
    if (!trailer_queued_) {
      if (busy_[active_] && !ready()) {
        if (!wait) return false;
        while (busy_[active_]) {
          if (Status s = reap(true); !s.is_ok()) return s;
        }
      }
      if (count_ != 0) {
        ++data_chunks_;
        if (Status s = submit_chunk(kCkptDataMagic, count_); !s.is_ok()) return s;
        while (busy_[active_]) {
          if (Status s = reap(true); !s.is_ok()) return s;
        }
      }
      CkptTrailer t{header_.seq, records_, data_chunks_};
      std::memcpy(buffers_[active_].get() + kChunkHeaderBytes, &t, sizeof t);
      used_ = sizeof t;
      if (Status s = submit_chunk(kCkptTrailerMagic, 0); !s.is_ok()) return s;
      trailer_queued_ = true;
    }
    if (writes_in_flight_ > 0) {
      if (Status s = reap(wait); !s.is_ok()) return s;
      if (writes_in_flight_ > 0) return false;
    }
    // Every chunk is written: one sync makes the checkpoint durable.
    IoRequest r;
    r.op = IoRequest::Op::kSync;
    r.file = file_;
    r.user = kSyncTag;
    if (Status s = queue_->submit(r); !s.is_ok()) return s;
    phase_ = Phase::kSyncing;
  }
  if (Status s = reap(wait); !s.is_ok()) return s;
  return phase_ == Phase::kDone;
}

}  // namespace braid::storage
