#include "storage/log_writer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

std::string log_file_name(const LogName& n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "log-%06llu-%04u-%010llu",
                static_cast<unsigned long long>(n.generation), n.log,
                static_cast<unsigned long long>(n.segment));
  return buf;
}

bool parse_log_file_name(std::string_view name, LogName* out) {
  // log-GGGGGG-LLLL-SSSSSSSSSS
  if (name.size() != 4 + 6 + 1 + 4 + 1 + 10 || name.substr(0, 4) != "log-" || name[10] != '-' ||
      name[15] != '-') {
    return false;
  }
  auto num = [&](std::size_t at, std::size_t n, std::uint64_t* v) {
    *v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (name[i] < '0' || name[i] > '9') return false;
      *v = *v * 10 + static_cast<std::uint64_t>(name[i] - '0');
    }
    return true;
  };
  std::uint64_t g, l, s;
  if (!num(4, 6, &g) || !num(11, 4, &l) || !num(16, 10, &s)) return false;
  *out = {g, static_cast<std::uint32_t>(l), s};
  return true;
}

LogWriter::LogWriter(FileSystem* fs, std::unique_ptr<IoQueue> queue, LogConfig config,
                     const std::atomic<std::uint64_t>* clock)
    : fs_(fs), queue_(std::move(queue)), config_(std::move(config)), clock_(clock) {}

LogWriter::~LogWriter() {
  // Let the block in flight finish: the queue may still write from our buffer.
  while (in_flight_ && failure_.is_ok()) {
    if (!poll(true, false).is_ok()) break;
  }
  queue_.reset();
  if (file_ >= 0) fs_->close(file_);
}

Status LogWriter::open(std::uint64_t first_segment) {
  // Blocks are padded to 16 bytes even when their contents already are (a next block's payload
  // is 8), so every block, and every record in it, starts at a 16-byte multiple of the file.
  align_ = config_.sync == SyncMethod::kDirect ? kDirectAlign : kRecordAlign;
  capacity_ = static_cast<std::uint32_t>(round_up(config_.buffer_bytes, kDirectAlign));
  // Zero-filled and page-aligned (so aligned for direct I/O), and resident only where a block
  // was placed: the pages a log's blocks never reached cost nothing. Filling the buffers here
  // made every log hold both at their full size from the open on. What a block leaves unused
  // is zeroed as the block is submitted (submit_active), not relied on from here.
  for (int i = 0; i < 2; ++i) {
    if (Status s = arenas_[i].reserve(capacity_, false); !s.is_ok()) return s;
    if (Status s = arenas_[i].ensure_committed(capacity_); !s.is_ok()) {
      return Status::io_error("cannot allocate the log buffers: " + std::string(s.message()));
    }
    buffers_[i] = arenas_[i].base();
    static_assert(kDirectAlign <= 4096, "a mapping's start is page-aligned");
  }
  if (Status s = open_segment(first_segment); !s.is_ok()) return s;
  place_active_block();
  return Status::ok();
}

std::uint64_t LogWriter::allocate_segment() {
  return config_.new_file ? config_.new_file() : segment_ + 1;
}

void LogWriter::place_active_block() {
  BRAID_DASSERT(used_[active_] == 0);
  // A buffer holds at most capacity_ bytes of block: decided now, the block fits wherever it
  // is placed. A segment keeps at least one block however small it is configured.
  // A requested roll waits until the segment holds 1/32 of its size: what it would free
  // is worth a file.
  // A request the segment is too small for is dropped: the checkpoint that asked does not
  // wait for it, and the next one asks again.
  const bool requested = roll_requested_.load(std::memory_order_relaxed);
  const bool asked = requested && offset_ >= config_.segment_bytes / 32;
  block_rolls_ =
      (asked || offset_ + capacity_ > config_.segment_bytes) && offset_ > kSegmentHeaderBytes;
  // A roll it asked for clears the request when the new segment opens (open_segment), which
  // is when position() moves.
  if (requested && !asked) roll_requested_.store(false, std::memory_order_relaxed);
  block_segment_ = block_rolls_ ? allocate_segment() : segment_;
  block_offset_ = block_rolls_ ? kSegmentHeaderBytes : offset_;
}

Status LogWriter::open_segment(std::uint64_t seq) {
  BRAID_ASSERT(file_ < 0);
  segments_.fetch_add(1, std::memory_order_relaxed);
  segment_ = seq;
  path_ = config_.dir + "/" + log_file_name({config_.generation, config_.log, seq});
  OpenOptions o;
  o.create = true;
  o.direct = config_.sync == SyncMethod::kDirect;
  Result<FileId> f = fs_->open(path_, o);
  if (!f.is_ok()) return f.status();
  file_ = *f;
  // A stale file of that name (a crashed open's leftover) must not show old blocks after ours.
  if (Status s = fs_->truncate(file_, 0); !s.is_ok()) return s;
  // The header is written through the same path as blocks (aligned buffer, full 4 KiB), and
  // made durable with the directory entry before any block can depend on it.
  char* h = buffers_[1 - active_];
  BRAID_ASSERT(!in_flight_);
  std::memset(h, 0, kSegmentHeaderBytes);
  SegmentHeader sh{kSegmentMagic, kFormatVersion, config_.log, config_.generation,
                   seq,           next_block_,    0,           0};
  sh.crc = util::crc32c(&sh, offsetof(SegmentHeader, crc));
  std::memcpy(h, &sh, sizeof sh);
  if (Status s = fs_->write(file_, 0, h, kSegmentHeaderBytes); !s.is_ok()) return s;
  if (Status s = fs_->sync(file_); !s.is_ok()) return s;
  if (Status s = fs_->sync_dir(config_.dir); !s.is_ok()) return s;
  offset_ = kSegmentHeaderBytes;
  if (config_.created) config_.created(seq, path_);
  std::lock_guard<std::mutex> g(position_mutex_);
  position_ = {seq, sh.first_block};
  roll_requested_.store(false, std::memory_order_relaxed);
  return Status::ok();
}

void LogWriter::stamp_block(char* buf, std::uint32_t payload, std::uint32_t padded,
                            std::uint64_t seq, std::uint32_t txns, BlockKind kind) const {
  BlockHeader h{0,
                kBlockMagic,
                payload,
                padded,
                seq,
                txns,
                static_cast<std::uint32_t>(kind),
                config_.acked ? config_.acked() : 0,
                0};
  std::memcpy(buf, &h, sizeof h);
  h.crc = util::crc32c(buf + 4, kBlockHeaderBytes - 4 + payload);
  std::memcpy(buf, &h.crc, 4);
}

Status LogWriter::write_marker(BlockKind kind, std::uint64_t seq, std::uint64_t next_segment) {
  BRAID_ASSERT(!in_flight_);
  char* buf = buffers_[1 - active_];
  const std::uint32_t payload = kind == BlockKind::kNext ? sizeof next_segment : 0;
  const auto padded = static_cast<std::uint32_t>(round_up(kBlockHeaderBytes + payload, align_));
  std::memset(buf, 0, padded);
  if (payload != 0) std::memcpy(buf + kBlockHeaderBytes, &next_segment, sizeof next_segment);
  stamp_block(buf, payload, padded, seq, 0, kind);
  if (Status s = fs_->write(file_, offset_, buf, padded); !s.is_ok()) return s;
  if (Status s = fs_->sync(file_); !s.is_ok()) return s;
  offset_ += padded;
  bytes_.fetch_add(padded, std::memory_order_relaxed);
  return Status::ok();
}

Status LogWriter::roll_segment(std::uint64_t next) {
  const std::uint64_t end_block = next_block_++;
  const FileId old_file = file_;
  const std::uint64_t old_offset = offset_;
  const std::string old_path = path_;
  const std::uint64_t old_segment = segment_;
  file_ = -1;
  Status s = open_segment(next);
  const FileId new_file = file_;
  const std::uint64_t new_offset = offset_;
  if (s.is_ok()) {
    // A crash before this block is durable leaves the old segment without it; the new
    // segment's first block (end_block + 1) then tells recovery that one block is missing.
    file_ = old_file;
    offset_ = old_offset;
    s = write_marker(BlockKind::kNext, end_block, segment_);
    file_ = new_file;
    offset_ = new_offset;
  }
  fs_->close(old_file);
  if (!s.is_ok()) return s;
  closed_.push_back({old_path, old_segment});
  return Status::ok();
}

LogWriter::Position LogWriter::position() const {
  std::lock_guard<std::mutex> g(position_mutex_);
  return position_;
}

Status LogWriter::close() {
  if (!failure_.is_ok() || closed_cleanly_ || file_ < 0) return failure_;
  BRAID_ASSERT(idle());
  if (Status s = write_marker(BlockKind::kClose, next_block_++, 0); !s.is_ok()) {
    fail(s);
    return s;
  }
  closed_cleanly_ = true;
  return Status::ok();
}

void LogWriter::fail(Status s) {
  if (failure_.is_ok()) failure_ = std::move(s);
}

Status LogWriter::prepare(std::uint32_t bytes) {
  BRAID_ASSERT(bytes <= max_record_bytes());
  if (!failure_.is_ok()) return failure_;
  while (kBlockHeaderBytes + used_[active_] + bytes > capacity_) {
    // The active buffer is full: it goes as soon as the block in flight is done.
    if (Status s = poll(in_flight_, true); !s.is_ok()) return s;
  }
  if (safe_.load(std::memory_order_relaxed) == kAllDurable) {
    // Pairs with the clock read in durable_clock(): whoever reads a clock value at or past
    // our coming timestamp then reads this bound, not kAllDurable.
    safe_.store(clock_->load(std::memory_order_seq_cst), std::memory_order_seq_cst);
  }
  return Status::ok();
}

char* LogWriter::append(std::uint32_t bytes, std::uint64_t cts) {
  char* buf = buffers_[active_];
  if (used_[active_] == 0) first_append_ = std::chrono::steady_clock::now();
  char* at = buf + kBlockHeaderBytes + used_[active_];
  used_[active_] += bytes;
  ++txns_[active_];
  BRAID_DASSERT(cts > last_cts_);
  last_cts_ = cts;
  appended_bytes_.store(appended_bytes_.load(std::memory_order_relaxed) + bytes,
                        std::memory_order_relaxed);
  BRAID_DASSERT(kBlockHeaderBytes + used_[active_] <= capacity_);
  return at;
}

Status LogWriter::submit_active() {
  BRAID_ASSERT(!in_flight_);
  const int b = active_;
  const std::uint32_t payload = used_[b];
  BRAID_ASSERT(payload != 0);
  const auto padded = static_cast<std::uint32_t>(round_up(kBlockHeaderBytes + payload, align_));
  BRAID_ASSERT(!closed_cleanly_);
  BRAID_ASSERT(padded <= capacity_);
  if (block_rolls_) {
    if (Status s = roll_segment(block_segment_); !s.is_ok()) return s;
    block_rolls_ = false;
  }
  // The addresses versions took at commit (address_of) hold.
  BRAID_ASSERT(segment_ == block_segment_);
  BRAID_ASSERT(offset_ == block_offset_);
  char* buf = buffers_[b];
  if (padded > kBlockHeaderBytes + payload) {
    std::memset(buf + kBlockHeaderBytes + payload, 0, padded - kBlockHeaderBytes - payload);
  }
  stamp_block(buf, payload, padded, next_block_++, txns_[b], BlockKind::kData);

  using Op = IoRequest::Op;
  request_.op = config_.sync == SyncMethod::kDsync ? Op::kWriteDsync : Op::kWriteThenSync;
  request_.file = file_;
  request_.offset = offset_;
  request_.data = buf;
  request_.len = padded;
  request_.user = next_block_ - 1;
  offset_ += padded;
  // Every record appended so far is in this block; later ones take timestamps above this.
  submit_clock_ = clock_->load(std::memory_order_seq_cst);
  in_flight_ = true;
  active_ = 1 - b;
  used_[active_] = 0;
  txns_[active_] = 0;
  place_active_block();
  bytes_.fetch_add(padded, std::memory_order_relaxed);
  submits_.fetch_add(1, std::memory_order_relaxed);
  return submit_pending();
}

Status LogWriter::submit_pending() {
  if (Status s = queue_->submit(request_); !s.is_ok()) {
    in_flight_ = false;
    return s;
  }
  return Status::ok();
}

Status LogWriter::complete(std::int64_t result) {
  BRAID_ASSERT(in_flight_);
  if (result < 0) {
    in_flight_ = false;
    return Status::io_error("log write to '" + path_ +
                            "' failed: " + std::strerror(static_cast<int>(-result)));
  }
  if (static_cast<std::uint64_t>(result) < request_.len) {
    // A short write: the rest goes again (a sync only ever follows a complete write).
    request_.offset += static_cast<std::uint64_t>(result);
    request_.data += result;
    request_.len -= static_cast<std::uint32_t>(result);
    if (config_.sync == SyncMethod::kDirect && (request_.len % kDirectAlign) != 0) {
      in_flight_ = false;
      return Status::io_error("short O_DIRECT write to '" + path_ + "' at an unaligned length");
    }
    return submit_pending();
  }
  in_flight_ = false;
  flushes_.fetch_add(1, std::memory_order_relaxed);
  safe_.store(used_[active_] == 0 ? kAllDurable : submit_clock_, std::memory_order_seq_cst);
  return Status::ok();
}

Status LogWriter::roll_if_idle() {
  if (!failure_.is_ok()) return failure_;
  if (!roll_requested_.load(std::memory_order_relaxed) || in_flight_ || used_[active_] != 0) {
    return Status::ok();
  }
  if (offset_ < config_.segment_bytes / 32 || offset_ <= kSegmentHeaderBytes) {
    roll_requested_.store(false, std::memory_order_relaxed);
    return Status::ok();
  }
  // The active block holds no record, so no address was given out for where it was placed.
  if (Status s = roll_segment(allocate_segment()); !s.is_ok()) {
    fail(s);
    return failure_;
  }
  place_active_block();
  return Status::ok();
}

void LogWriter::reap_after_halt() {
  if (!in_flight_) return;
  IoCompletion done[4];
  const std::size_t n = queue_->poll(done, 4, false);
  for (std::size_t i = 0; i < n && in_flight_; ++i) {
    if (Status s = complete(done[i].result); !s.is_ok()) fail(s);
  }
}

Status LogWriter::poll(bool wait, bool force) {
  if (!failure_.is_ok()) return failure_;
  IoCompletion done[4];
  const std::size_t n = queue_->poll(done, 4, wait && in_flight_);
  for (std::size_t i = 0; i < n; ++i) {
    if (Status s = complete(done[i].result); !s.is_ok()) {
      fail(s);
      return failure_;
    }
  }
  if (Status s = roll_if_idle(); !s.is_ok()) return s;
  if (in_flight_ || used_[active_] == 0) return Status::ok();
  bool go = force || config_.flush_delay_ns == 0 ||
            (config_.flush_bytes != 0 && used_[active_] >= config_.flush_bytes);
  if (!go) {
    const auto waited = std::chrono::steady_clock::now() - first_append_;
    go = static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()) >=
         config_.flush_delay_ns;
  }
  if (!go) return Status::ok();
  if (Status s = submit_active(); !s.is_ok()) {
    fail(s);
    return failure_;
  }
  return Status::ok();
}

std::uint32_t LogWriter::retire_before(std::uint64_t segment,
                                       const std::vector<std::uint64_t>& keep) {
  std::uint32_t n = 0;
  for (auto it = closed_.begin(); it != closed_.end();) {
    if (it->segment >= segment || std::binary_search(keep.begin(), keep.end(), it->segment)) {
      ++it;
      continue;
    }
    // A failed unlink only leaves a file recovery skips (it lies before every start).
    (void)fs_->remove(it->path);
    if (config_.retired) config_.retired(it->segment);
    it = closed_.erase(it);
    ++n;
  }
  retired_.fetch_add(n, std::memory_order_relaxed);
  return n;
}

}  // namespace braid::storage
