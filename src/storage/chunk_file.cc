#include "storage/chunk_file.h"

#include <braid/key.h>

#include <cstring>

#include "util/assert.h"
#include "util/crc32c.h"

namespace braid::storage {

ChunkWriter::~ChunkWriter() {
  if (open_) fs_->close(file_);
}

Status ChunkWriter::failed(const Status& s) const {
  return Status::io_error(kind_ + " '" + path_ + "': " + std::string(s.message()));
}

Status ChunkWriter::open(FileSystem* fs, std::string path, std::string_view kind,
                         std::uint32_t magic, std::uint64_t seq, std::uint32_t chunk_bytes) {
  BRAID_ASSERT(!open_);
  fs_ = fs;
  path_ = std::move(path);
  kind_ = kind;
  magic_ = magic;
  seq_ = seq;
  chunk_bytes_ = chunk_bytes;
  Result<FileId> f = fs->open(path_, {.create = true});
  if (!f.is_ok()) return failed(f.status());
  file_ = *f;
  open_ = true;
  if (Status s = fs->truncate(file_, 0); !s.is_ok()) return failed(s);
  buf_.reserve(kChunkHeaderBytes + chunk_bytes_ + kRecordAlign);
  buf_.assign(kChunkHeaderBytes, '\0');
  return Status::ok();
}

Status ChunkWriter::begin_entry(std::size_t bytes) {
  BRAID_ASSERT(open_);
  BRAID_ASSERT(bytes <= chunk_bytes_);
  if (buf_.size() - kChunkHeaderBytes + bytes > chunk_bytes_) {
    if (Status s = flush(); !s.is_ok()) return s;
  }
  ++count_;
  return Status::ok();
}

Status ChunkWriter::flush() {
  if (count_ == 0) return Status::ok();
  const auto len = static_cast<std::uint32_t>(buf_.size() - kChunkHeaderBytes);
  buf_.resize(chunk_bytes(len), '\0');
  seal_chunk(buf_.data(), magic_, count_, chunk_++, seq_, len);
  if (Status s = fs_->write(file_, offset_, buf_.data(), buf_.size()); !s.is_ok()) {
    return failed(s);
  }
  offset_ += buf_.size();
  buf_.assign(kChunkHeaderBytes, '\0');
  count_ = 0;
  return Status::ok();
}

Status ChunkWriter::finish(bool sync) {
  BRAID_ASSERT(open_);
  if (Status s = flush(); !s.is_ok()) return s;
  if (sync) {
    if (Status s = fs_->sync(file_); !s.is_ok()) return failed(s);
  }
  fs_->close(file_);
  open_ = false;
  return Status::ok();
}

Status chunk_corruption(std::string_view kind, const std::string& path, std::uint64_t at,
                        const std::string& what) {
  return Status::corruption(std::string(kind) + " '" + path + "' at offset " + std::to_string(at) +
                            ": " + what);
}

Status read_chunk(FileSystem* fs, FileId file, std::uint64_t size, std::string_view kind,
                  const std::string& path, std::uint64_t at, std::uint32_t magic,
                  std::uint64_t index, std::uint64_t seq, std::uint32_t max_len, std::string* buf,
                  ChunkHeader* h) {
  auto bad = [&](const std::string& what) { return chunk_corruption(kind, path, at, what); };
  if (size - at < kChunkHeaderBytes) return bad("truncated chunk header");
  std::size_t got = 0;
  if (Status s = fs->read(file, at, sizeof *h, reinterpret_cast<char*>(h), &got); !s.is_ok()) {
    return s;
  }
  if (got != sizeof *h) return bad("truncated chunk header");
  if (h->magic != magic || h->len > max_len || h->index != index || h->seq != seq ||
      chunk_bytes(h->len) > size - at) {
    return bad("not a chunk of this file");
  }
  buf->resize(kChunkHeaderBytes + h->len);
  if (Status s = fs->read(file, at, buf->size(), buf->data(), &got); !s.is_ok()) return s;
  if (got != buf->size()) return bad("truncated chunk");
  if (util::crc32c(buf->data() + 4, kChunkHeaderBytes - 4 + h->len) != h->crc) {
    return bad("chunk checksum mismatch");
  }
  return Status::ok();
}

std::array<char, kEntryLengthsBytes> encode_entry_lengths(std::string_view key,
                                                          std::size_t secondary_len) {
  BRAID_ASSERT(key.size() <= kMaxKeyBytes);
  BRAID_ASSERT(secondary_len <= key.size());
  const std::uint16_t lens[2] = {static_cast<std::uint16_t>(key.size()),
                                 static_cast<std::uint16_t>(secondary_len)};
  std::array<char, kEntryLengthsBytes> out;
  static_assert(sizeof lens == sizeof out);
  std::memcpy(out.data(), lens, sizeof lens);
  return out;
}

}  // namespace braid::storage
