// Damage to a database directory on the simulated file system, done from outside the engine:
// the directory-damage cases (a checkpoint slot or a log segment deleted, truncated or flipped).
// Shared by the directory-damage sweep and the crash-state enumeration.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "storage/log_format.h"
#include "storage/recovery.h"
#include "storage/sim_fs.h"

namespace braid::test {

// The directory's file names, sorted (segment names are zero-padded: oldest first).
inline std::vector<std::string> files_of(storage::SimFileSystem& fs) {
  std::vector<std::string> names;
  EXPECT_TRUE(fs.list("/db", &names).is_ok());
  std::sort(names.begin(), names.end());
  return names;
}

inline void remove_file(storage::SimFileSystem& fs, const std::string& name) {
  ASSERT_TRUE(fs.remove("/db/" + name).is_ok());
  ASSERT_TRUE(fs.sync_dir("/db").is_ok());
}

inline void truncate_file(storage::SimFileSystem& fs, const std::string& name, std::uint64_t size) {
  Result<storage::FileId> f = fs.open("/db/" + name, {});
  ASSERT_TRUE(f.is_ok());
  ASSERT_TRUE(fs.truncate(*f, size).is_ok());
  ASSERT_TRUE(fs.sync(*f).is_ok());
  fs.close(*f);
}

inline void flip(storage::SimFileSystem& fs, const std::string& name, std::uint64_t at) {
  std::string img;
  ASSERT_TRUE(fs.peek("/db/" + name, &img));
  ASSERT_LT(at, img.size());
  fs.poke("/db/" + name, at, std::string(1, static_cast<char>(img[at] ^ 0x5a)), false);
}

inline std::uint64_t size_of(storage::SimFileSystem& fs, const std::string& name) {
  std::string img;
  EXPECT_TRUE(fs.peek("/db/" + name, &img));
  return img.size();
}

// The checkpoint slots that exist, and the one holding the newest whole checkpoint ("" when
// none is whole).
inline std::vector<std::string> checkpoint_slots(storage::SimFileSystem& fs) {
  std::vector<std::string> out;
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    const std::string name = storage::checkpoint_file_name(slot);
    std::string img;
    if (fs.peek("/db/" + name, &img)) out.push_back(name);
  }
  return out;
}
inline std::string newest_checkpoint(storage::SimFileSystem& fs) {
  std::string best;
  std::uint64_t seq = 0;
  for (const std::string& name : checkpoint_slots(fs)) {
    std::string img;
    EXPECT_TRUE(fs.peek("/db/" + name, &img));
    storage::CheckpointInfo info;
    if (storage::read_checkpoint(img, &info).is_ok() && info.valid && info.header.seq > seq) {
      seq = info.header.seq;
      best = name;
    }
  }
  return best;
}

// Log `log`'s segments, oldest first.
inline std::vector<std::string> segments(storage::SimFileSystem& fs, std::uint32_t log) {
  std::vector<std::string> out;
  for (const std::string& n : files_of(fs)) {
    storage::LogName ln{};
    if (storage::parse_log_file_name(n, &ln) && ln.log == log) out.push_back(n);
  }
  return out;
}

}  // namespace braid::test
