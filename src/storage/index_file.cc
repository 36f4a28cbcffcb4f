#include "storage/index_file.h"

#include <braid/key.h>

#include <cstring>

#include "storage/log_format.h"
#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

namespace {
constexpr std::size_t kEntryHeader = 4;  // u16 key length, u16 secondary length
}  // namespace

std::string index_file_name(std::uint64_t number) { return numbered_file_name("sidx-", number); }

bool parse_index_file_name(std::string_view name, std::uint64_t* number) {
  return parse_numbered_file_name(name, "sidx-", number);
}

IndexFileWriter::~IndexFileWriter() {
  if (open_) fs_->close(file_);
}

Status IndexFileWriter::open(FileSystem* fs, const std::string& dir, std::uint64_t number) {
  BRAID_ASSERT(!open_);
  fs_ = fs;
  number_ = number;
  path_ = dir + "/" + index_file_name(number);
  Result<FileId> f = fs->open(path_, {.create = true});
  if (!f.is_ok()) return f.status();
  file_ = *f;
  open_ = true;
  if (Status s = fs->truncate(file_, 0); !s.is_ok()) return s;
  buf_.reserve(kChunkHeaderBytes + kIndexChunkBytes + kRecordAlign);
  buf_.assign(kChunkHeaderBytes, '\0');
  return Status::ok();
}

Status IndexFileWriter::add(std::string_view key, std::size_t secondary_len) {
  BRAID_ASSERT(open_);
  BRAID_ASSERT(key.size() <= kMaxKeyBytes);
  BRAID_ASSERT(secondary_len <= key.size());
  if (buf_.size() - kChunkHeaderBytes + kEntryHeader + key.size() > kIndexChunkBytes) {
    if (Status s = flush(); !s.is_ok()) return s;
  }
  const std::uint16_t lens[2] = {static_cast<std::uint16_t>(key.size()),
                                 static_cast<std::uint16_t>(secondary_len)};
  buf_.append(reinterpret_cast<const char*>(lens), sizeof lens);
  buf_.append(key);
  ++count_;
  ++entries_;
  return Status::ok();
}

Status IndexFileWriter::flush() {
  if (count_ == 0) return Status::ok();
  const auto len = static_cast<std::uint32_t>(buf_.size() - kChunkHeaderBytes);
  buf_.resize(chunk_bytes(len), '\0');
  seal_chunk(buf_.data(), kIndexFileMagic, count_, chunk_++, number_, len);
  Status s = fs_->write(file_, offset_, buf_.data(), buf_.size());
  if (!s.is_ok()) {
    return Status::io_error("index file '" + path_ + "': " + std::string(s.message()));
  }
  offset_ += buf_.size();
  buf_.assign(kChunkHeaderBytes, '\0');
  count_ = 0;
  return Status::ok();
}

Status IndexFileWriter::finish() {
  BRAID_ASSERT(open_);
  if (Status s = flush(); !s.is_ok()) return s;
  if (Status s = fs_->sync(file_); !s.is_ok()) {
    return Status::io_error("index file '" + path_ + "': " + std::string(s.message()));
  }
  fs_->close(file_);
  open_ = false;
  return Status::ok();
}

Status read_index_file(
    FileSystem* fs, const std::string& dir, std::uint64_t number, std::uint64_t entries,
    const std::function<Status(std::string_view key, std::size_t secondary_len)>& fn) {
  const std::string path = dir + "/" + index_file_name(number);
  Result<FileId> f = fs->open(path, {});
  if (!f.is_ok()) {
    return Status::corruption("stored index file '" + path +
                              "' cannot be opened: " + std::string(f.status().message()));
  }
  struct Closer {
    FileSystem* fs;
    FileId f;
    ~Closer() { fs->close(f); }
  } closer{fs, *f};
  Result<std::uint64_t> size = fs->size(*f);
  if (!size.is_ok()) return size.status();
  auto bad = [&](std::uint64_t at, const std::string& what) {
    return Status::corruption("stored index file '" + path + "' at offset " + std::to_string(at) +
                              ": " + what);
  };
  std::string buf;
  std::uint64_t at = 0;
  std::uint64_t seen = 0;
  for (std::uint64_t chunk = 0; at < *size; ++chunk) {
    if (*size - at < kChunkHeaderBytes) return bad(at, "truncated chunk header");
    ChunkHeader h{};
    std::size_t got = 0;
    if (Status s = fs->read(*f, at, sizeof h, reinterpret_cast<char*>(&h), &got); !s.is_ok()) {
      return s;
    }
    if (got != sizeof h) return bad(at, "truncated chunk header");
    if (h.magic != kIndexFileMagic || h.len > kIndexChunkBytes || h.index != chunk ||
        h.seq != number || chunk_bytes(h.len) > *size - at) {
      return bad(at, "not a chunk of this file");
    }
    buf.resize(kChunkHeaderBytes + h.len);
    if (Status s = fs->read(*f, at, buf.size(), buf.data(), &got); !s.is_ok()) return s;
    if (got != buf.size()) return bad(at, "truncated chunk");
    if (util::crc32c(buf.data() + 4, kChunkHeaderBytes - 4 + h.len) != h.crc) {
      return bad(at, "chunk checksum mismatch");
    }
    std::size_t p = kChunkHeaderBytes;
    for (std::uint32_t i = 0; i < h.count; ++i) {
      if (buf.size() - p < kEntryHeader) return bad(at, "entry overruns its chunk");
      std::uint16_t lens[2];
      std::memcpy(lens, buf.data() + p, sizeof lens);
      p += kEntryHeader;
      if (lens[0] > kMaxKeyBytes || lens[1] > lens[0] || buf.size() - p < lens[0]) {
        return bad(at, "bad entry");
      }
      if (Status s = fn(std::string_view(buf.data() + p, lens[0]), lens[1]); !s.is_ok()) return s;
      p += lens[0];
    }
    if (p != buf.size()) return bad(at, "chunk holds bytes past its entries");
    seen += h.count;
    at += chunk_bytes(h.len);
  }
  if (seen != entries) {
    return bad(at, "holds " + std::to_string(seen) + " entries, its manifest says " +
                       std::to_string(entries));
  }
  return Status::ok();
}

}  // namespace braid::storage
