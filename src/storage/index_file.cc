#include "storage/index_file.h"

#include "storage/log_format.h"

namespace braid::storage {

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
  if (Status s = out_.begin_entry(kEntryLengthsBytes + key.size()); !s.is_ok()) return s;
  const auto lens = encode_entry_lengths(key, secondary_len);
  out_.append(lens.data(), lens.size());
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
      if (buf.size() - p < kEntryLengthsBytes) return bad(at, "entry overruns its chunk");
      EntryLengths lens;
      const bool valid = decode_entry_lengths(buf.data() + p, &lens);
      p += kEntryLengthsBytes;
      if (!valid || buf.size() - p < lens.key) return bad(at, "bad entry");
      if (Status s = fn(std::string_view(buf.data() + p, lens.key), lens.secondary); !s.is_ok()) {
        return s;
      }
      p += lens.key;
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
