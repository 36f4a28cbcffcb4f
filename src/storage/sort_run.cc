#include "storage/sort_run.h"

#include <cstring>

#include "storage/log_format.h"
#include "util/assert.h"

namespace braid::storage {

namespace {
// The lengths, then the u64 value, then the key.
constexpr std::size_t kEntryHeader = kEntryLengthsBytes + sizeof(std::uint64_t);
}  // namespace

std::string sort_run_file_name(std::uint64_t number) { return numbered_file_name("sort-", number); }

bool parse_sort_run_file_name(std::string_view name, std::uint64_t* number) {
  return parse_numbered_file_name(name, "sort-", number);
}

Status SortRunWriter::open(FileSystem* fs, const std::string& dir, std::uint64_t number) {
  return out_.open(fs, dir + "/" + sort_run_file_name(number), "sort run", kSortRunMagic, number,
                   kSortRunChunkBytes);
}

Status SortRunWriter::add(std::string_view key, std::size_t secondary_len, std::uint64_t value) {
  if (Status s = out_.begin_entry(kEntryHeader + key.size()); !s.is_ok()) return s;
  const auto lens = encode_entry_lengths(key, secondary_len);
  out_.append(lens.data(), lens.size());
  out_.append(&value, sizeof value);
  out_.append(key.data(), key.size());
  ++entries_;
  return Status::ok();
}

SortRunReader::~SortRunReader() {
  if (open_) fs_->close(file_);
}

Status SortRunReader::open(FileSystem* fs, const std::string& dir, std::uint64_t number,
                           std::uint64_t entries) {
  BRAID_ASSERT(!open_);
  fs_ = fs;
  number_ = number;
  entries_ = entries;
  path_ = dir + "/" + sort_run_file_name(number);
  Result<FileId> f = fs->open(path_, {});
  if (!f.is_ok()) {
    return Status::io_error("sort run '" + path_ + "': " + std::string(f.status().message()));
  }
  file_ = *f;
  open_ = true;
  Result<std::uint64_t> size = fs->size(file_);
  if (!size.is_ok()) return size.status();
  size_ = *size;
  return Status::ok();
}

Status SortRunReader::bad(const std::string& what) const {
  return chunk_corruption("sort run", path_, cur_, what);
}

Status SortRunReader::next(bool* more) {
  BRAID_ASSERT(open_);
  if (left_ == 0) {
    cur_ = at_;
    if (at_ >= size_) {
      if (seen_ != entries_) {
        return bad("holds " + std::to_string(seen_) + " entries, the run was written with " +
                   std::to_string(entries_));
      }
      *more = false;
      return Status::ok();
    }
    ChunkHeader h{};
    if (Status s = read_chunk(fs_, file_, size_, "sort run", path_, at_, kSortRunMagic, chunk_,
                              number_, kSortRunChunkBytes, &buf_, &h);
        !s.is_ok()) {
      return s;
    }
    if (h.count == 0) return bad("a chunk of no entry");
    seen_ += h.count;
    if (seen_ > entries_) return bad("holds more entries than the run was written with");
    left_ = h.count;
    pos_ = kChunkHeaderBytes;
    at_ += chunk_bytes(h.len);
    ++chunk_;
  }
  if (buf_.size() - pos_ < kEntryHeader) return bad("entry overruns its chunk");
  EntryLengths lens;
  const bool valid = decode_entry_lengths(buf_.data() + pos_, &lens);
  std::memcpy(&value_, buf_.data() + pos_ + kEntryLengthsBytes, sizeof value_);
  pos_ += kEntryHeader;
  if (!valid || buf_.size() - pos_ < lens.key) return bad("bad entry");
  key_ = std::string_view(buf_.data() + pos_, lens.key);
  secondary_len_ = lens.secondary;
  pos_ += lens.key;
  --left_;
  if (left_ == 0 && pos_ != buf_.size()) return bad("chunk holds bytes past its entries");
  *more = true;
  return Status::ok();
}

}  // namespace braid::storage
