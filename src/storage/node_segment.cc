#include "storage/node_segment.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "storage/cold_address.h"
#include "storage/log_format.h"
#include "util/assert.h"

namespace braid::storage {

static_assert(kDirectAlign % kNodeSlotBytes == 0, "slots tile a block");
static_assert(NodeSegmentWriter::kStageBytes % kDirectAlign == 0, "the stage is whole blocks");
static_assert(kNodeSlotBytes <= kMaxColdSize, "a slot's address holds its size");

std::string node_segment_name(std::uint64_t number) { return numbered_file_name("idx-", number); }

bool parse_node_segment_name(std::string_view name, std::uint64_t* number) {
  return parse_numbered_file_name(name, "idx-", number);
}

void NodeSegmentWriter::FreeDeleter::operator()(char* p) const { std::free(p); }

NodeSegmentWriter::NodeSegmentWriter(FileSystem* fs, FileTable* files, std::string dir,
                                     std::uint64_t segment_bytes)
    : fs_(fs),
      files_(files),
      dir_(std::move(dir)),
      segment_bytes_(segment_bytes),
      stage_(static_cast<char*>(std::aligned_alloc(kDirectAlign, kStageBytes))) {
  BRAID_ASSERT(segment_bytes_ >= kDirectAlign);
  BRAID_ASSERT(segment_bytes_ % kDirectAlign == 0);
  BRAID_ASSERT(segment_bytes_ <= kMaxColdOffset);
  BRAID_ASSERT(stage_ != nullptr);
}

NodeSegmentWriter::~NodeSegmentWriter() {
  for (const auto& [n, f] : open_) fs_->close(f);
}

Status NodeSegmentWriter::open_segment() {
  const std::uint64_t n = files_->allocate();
  const std::string path = dir_ + "/" + node_segment_name(n);
  if (n > kMaxColdSegment) {
    return Status::io_error("cannot create node segment " + path +
                            ": file numbers beyond what an address holds");
  }
  OpenOptions o;
  o.create = true;
  Result<FileId> f = fs_->open(path, o);
  if (!f.is_ok()) return f.status();
  const bool had_previous = file_ >= 0;
  const std::uint64_t previous = number_;
  // The segment left behind needs its handle only until its writes are synced.
  if (had_previous && std::find(unsynced_.begin(), unsynced_.end(), previous) == unsynced_.end()) {
    fs_->close(file_);
    open_.erase(previous);
  }
  file_ = *f;
  open_.emplace(n, file_);
  files_->add(n, path);
  segments_.push_back(n);
  dir_dirty_ = true;
  stage_at_ = 0;
  std::lock_guard<std::mutex> g(live_mutex_);
  live_.emplace(n, 0);
  number_ = n;
  // The one left behind goes if nothing it holds is named any more.
  if (had_previous && live_.at(previous) == 0) {
    live_.erase(previous);
    dead_.push_back(previous);
  }
  return Status::ok();
}

Status NodeSegmentWriter::write_stage() {
  if (staged_ == 0) return Status::ok();
  BRAID_ASSERT(file_ >= 0);
  // Whole blocks: the free slots of the last one go out as zeros, and the next image starts a
  // block of its own (node_segment.h, "Writing").
  const std::uint32_t len = static_cast<std::uint32_t>(round_up(staged_, kDirectAlign));
  std::memset(stage_.get() + staged_, 0, len - staged_);
  if (Status s = fs_->write(file_, stage_at_, stage_.get(), len); !s.is_ok()) {
    return Status::io_error("cannot write node segment " + node_segment_name(number_) + ": " +
                            std::string(s.message()));
  }
  if (std::find(unsynced_.begin(), unsynced_.end(), number_) == unsynced_.end()) {
    unsynced_.push_back(number_);
  }
  stage_at_ += len;
  staged_ = 0;
  return Status::ok();
}

Result<std::uint64_t> NodeSegmentWriter::add(char** slot) {
  if (staged_ == kStageBytes) {
    if (Status s = write_stage(); !s.is_ok()) return s;
  }
  if (file_ < 0 || stage_at_ + staged_ + kNodeSlotBytes > segment_bytes_) {
    if (Status s = write_stage(); !s.is_ok()) return s;
    if (Status s = open_segment(); !s.is_ok()) return s;
  }
  const std::uint64_t offset = stage_at_ + staged_;
  const std::uint64_t address = cold_word(number_, offset, kNodeSlotBytes);
  BRAID_ASSERT(address != 0);  // the number and the offset were checked against the limits
  {
    std::lock_guard<std::mutex> g(live_mutex_);
    ++live_.at(number_);
  }
  *slot = stage_.get() + staged_;
  staged_ += kNodeSlotBytes;
  return address;
}

Status NodeSegmentWriter::flush() { return write_stage(); }

Status NodeSegmentWriter::sync() {
  if (Status s = flush(); !s.is_ok()) return s;
  while (!unsynced_.empty()) {
    const std::uint64_t n = unsynced_.back();
    const FileId f = open_.at(n);
    if (Status s = fs_->sync(f); !s.is_ok()) {
      return Status::io_error("cannot sync node segment " + node_segment_name(n) + ": " +
                              std::string(s.message()));
    }
    unsynced_.pop_back();
    if (f != file_) {
      fs_->close(f);
      open_.erase(n);
    }
  }
  if (dir_dirty_) {
    if (Status s = fs_->sync_dir(dir_); !s.is_ok()) return s;
    dir_dirty_ = false;
  }
  return Status::ok();
}

void NodeSegmentWriter::release(std::uint64_t address) {
  BRAID_ASSERT(is_cold(address));
  const std::uint64_t n = cold(address).segment;
  std::lock_guard<std::mutex> g(live_mutex_);
  const auto it = live_.find(n);
  BRAID_ASSERT(it != live_.end());  // an address this writer answered, released once
  BRAID_ASSERT(it->second > 0);
  if (--it->second != 0 || n == number_) return;
  live_.erase(it);
  dead_.push_back(n);
}

Status NodeSegmentWriter::reap() {
  std::vector<std::uint64_t> dead;
  {
    std::lock_guard<std::mutex> g(live_mutex_);
    dead.swap(dead_);
  }
  Status failed;
  for (const std::uint64_t n : dead) {
    // Its unsynced writes do not matter any more: nothing names what they hold.
    if (const auto it = open_.find(n); it != open_.end()) {
      fs_->close(it->second);
      open_.erase(it);
    }
    unsynced_.erase(std::remove(unsynced_.begin(), unsynced_.end(), n), unsynced_.end());
    segments_.erase(std::remove(segments_.begin(), segments_.end(), n), segments_.end());
    files_->forget(n);
    const std::string path = dir_ + "/" + node_segment_name(n);
    if (Status s = fs_->remove(path); !s.is_ok() && failed.is_ok()) {
      failed =
          Status::io_error("cannot remove node segment " + path + ": " + std::string(s.message()));
    }
  }
  return failed;
}

std::size_t NodeSegmentWriter::live_segments() const {
  std::lock_guard<std::mutex> g(live_mutex_);
  return live_.size();
}

namespace {
// The slot `address` names; Corruption when it names none.
Result<ColdAddress> slot_of(std::uint64_t address) {
  if (!is_cold(address)) return Status::corruption("a node address that is no address");
  const ColdAddress a = cold(address);
  if (a.size != kNodeSlotBytes || a.offset % kNodeSlotBytes != 0) {
    return Status::corruption("a node address that names no slot: " + node_segment_name(a.segment) +
                              " at offset " + std::to_string(a.offset) + ", " +
                              std::to_string(a.size) + " bytes");
  }
  return a;
}

// The whole direct-I/O blocks that hold `slots` slots from `first` on.
struct Span {
  std::uint64_t start;
  std::size_t len;
};
Span blocks_of(const ColdAddress& first, std::size_t slots) {
  const std::uint64_t start = first.offset / kDirectAlign * kDirectAlign;
  const std::uint64_t end = round_up(first.offset + slots * kNodeSlotBytes, kDirectAlign);
  return {start, static_cast<std::size_t>(end - start)};
}

// Reads `span` of `first`'s segment into `buf` and answers where the first slot starts in it;
// IOError when the read fails or the file is unknown, Corruption when the file ends before the
// last slot.
Result<const char*> read_span(FileTable* files, const ColdAddress& first, std::size_t slots,
                              Span span, char* buf) {
  Result<FileTable::Handle> h = files->acquire(first.segment);
  if (!h.is_ok()) return h.status();
  std::size_t got = 0;
  const Status s = files->fs()->read(h->id, span.start, span.len, buf, &got);
  files->release(first.segment);
  const std::string where =
      node_segment_name(first.segment) + " at offset " + std::to_string(first.offset);
  const char* what = slots == 1 ? "image" : "images";
  if (!s.is_ok()) {
    return Status::io_error("cannot read node " + std::string(what) + " in " + where + ": " +
                            std::string(s.message()));
  }
  const std::uint64_t in_buf = first.offset - span.start;
  if (got < in_buf + slots * kNodeSlotBytes) {
    return Status::corruption("node segment " + where + " ends before the " + what);
  }
  return static_cast<const char*>(buf + in_buf);
}
}  // namespace

Result<const char*> read_node_slot(FileTable* files, std::uint64_t address, char* block) {
  Result<ColdAddress> a = slot_of(address);
  if (!a.is_ok()) return a.status();
  const Span span = blocks_of(*a, 1);
  BRAID_DASSERT(span.len == kDirectAlign);  // a slot never straddles two blocks
  return read_span(files, *a, 1, span, block);
}

Status read_node_slots(FileTable* files, std::span<const std::uint64_t> addresses, char* out) {
  std::unique_ptr<char, void (*)(void*)> buf(nullptr, &std::free);
  std::size_t buf_bytes = 0;
  for (const std::uint64_t address : addresses) {
    if (Result<ColdAddress> a = slot_of(address); !a.is_ok()) return a.status();
  }
  for (std::size_t i = 0; i < addresses.size();) {
    const ColdAddress first = cold(addresses[i]);
    std::size_t j = i + 1;
    while (j < addresses.size()) {
      const ColdAddress a = cold(addresses[j]);
      if (a.segment != first.segment || a.offset != first.offset + (j - i) * kNodeSlotBytes) break;
      ++j;
    }
    const Span span = blocks_of(first, j - i);
    if (span.len > buf_bytes) {
      buf.reset(static_cast<char*>(std::aligned_alloc(kDirectAlign, span.len)));
      if (buf == nullptr) return Status::io_error("no memory for a read of node images");
      buf_bytes = span.len;
    }
    Result<const char*> at = read_span(files, first, j - i, span, buf.get());
    if (!at.is_ok()) return at.status();
    std::memcpy(out + i * kNodeSlotBytes, *at, (j - i) * kNodeSlotBytes);
    i = j;
  }
  return Status::ok();
}

}  // namespace braid::storage
