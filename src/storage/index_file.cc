#include "storage/index_file.h"

#include <braid/key.h>

#include <cstring>

#include "storage/log_format.h"
#include "util/assert.h"

namespace braid::storage {

namespace {
constexpr std::size_t kEntryHeader = 4;  // u16 key length, u16 secondary length
}  // namespace

std::string index_file_name(std::uint64_t number) { return numbered_file_name("sidx-", number); }

bool parse_index_file_name(std::string_view name, std::uint64_t* number) {
  return parse_numbered_file_name(name, "sidx-", number);
}

Status IndexFileWriter::open(FileSystem* fs, const std::string& dir, std::uint64_t number) {
  number_ = number;
  return out_.open(fs, dir + "/" + index_file_name(number), "index file", kIndexFileMagic, number,
                   kIndexChunkBytes);
}

Status IndexFileWriter::add(std::string_view key, std::size_t secondary_len) {
  BRAID_ASSERT(key.size() <= kMaxKeyBytes);
  BRAID_ASSERT(secondary_len <= key.size());
  if (Status s = out_.begin_entry(kEntryHeader + key.size()); !s.is_ok()) return s;
  const std::uint16_t lens[2] = {static_cast<std::uint16_t>(key.size()),
                                 static_cast<std::uint16_t>(secondary_len)};
  out_.append(lens, sizeof lens);
  out_.append(key.data(), key.size());
  ++entries_;
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
    return chunk_corruption("stored index file", path, at, what);
  };
  std::string buf;
  std::uint64_t at = 0;
  std::uint64_t seen = 0;
  for (std::uint64_t chunk = 0; at < *size; ++chunk) {
    ChunkHeader h{};
    if (Status s = read_chunk(fs, *f, *size, "stored index file", path, at, kIndexFileMagic, chunk,
                              number, kIndexChunkBytes, &buf, &h);
        !s.is_ok()) {
      return s;
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
