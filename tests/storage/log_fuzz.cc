// Fuzz target for the log reader and recovery: any bytes, as a log segment (and, by the first
// byte's choice, as a checkpoint image), must give OK or a Corruption status from recovery,
// never undefined behaviour. With bit 0 of the first byte set the checksums are recomputed
// first, so the fuzzer reaches the record parser behind them.
//
// Built as `log_fuzzer` (libFuzzer, clang sanitizer builds) and as `log_fuzz_replay`, which runs
// the regression corpus in tests/storage/corpus/ in every build's test suite.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "engine/database_impl.h"
#include "storage/log_format.h"
#include "storage/recovery.h"
#include "storage/sim_fs.h"
#include "util/crc32c.h"

namespace {

using namespace braid;

void fix_checksums(std::string* img) {
  using namespace storage;
  if (img->size() >= kSegmentHeaderBytes) {
    auto h = load<SegmentHeader>(img->data());
    h.crc = util::crc32c(&h, offsetof(SegmentHeader, crc));
    std::memcpy(img->data(), &h, sizeof h);
  }
  std::uint64_t off = kSegmentHeaderBytes;
  while (off + kBlockHeaderBytes <= img->size()) {
    auto b = load<BlockHeader>(img->data() + off);
    if (b.padded_len < kBlockHeaderBytes + b.payload_len || off + b.padded_len > img->size()) break;
    b.crc = util::crc32c(img->data() + off + 4, kBlockHeaderBytes - 4 + b.payload_len);
    std::memcpy(img->data() + off, &b.crc, 4);
    off += b.padded_len;
  }
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "log_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  std::string img(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((mode & 1) != 0) fix_checksums(&img);

  storage::SegmentScan scan;
  const Status direct = storage::scan_segment(img, &scan, nullptr);
  check(direct.is_ok() || direct.code() == Code::kCorruption, "scan_segment: unexpected status");
  storage::CheckpointInfo info;
  const Status ck = storage::read_checkpoint(img, &info);
  check(ck.is_ok() || ck.code() == Code::kCorruption, "read_checkpoint: unexpected status");

  auto fs = std::make_shared<storage::SimFileSystem>(1);
  if (!fs->open_dir("/db", true).is_ok()) return 0;
  check(storage::write_catalog(*fs, "/db", {{{0, "t"}, {1, "u"}}, 0}).is_ok(), "catalog");
  fs->poke((mode & 2) != 0 ? "/db/CHECKPOINT-1" : "/db/log-000000-0000-0000000000", 0, img, true);
  Options o;
  o.directory = "/db";
  o.workers = 1;
  o.slots_per_worker = 2;
  o.external_transactions = 1;
  o.huge_pages = false;
  o.max_version_bytes = std::uint64_t{16} << 20;
  o.max_records_per_table = 1 << 12;
  o.durability.log_buffer_bytes = 16 << 10;
  o.durability.log_segment_bytes = 64 << 10;
  auto db = engine::DatabaseImpl::open(o, fs);
  check(db.is_ok() || db.code() == Code::kCorruption,
        ("recovery: unexpected status " + db.status().to_string()).c_str());
  return 0;
}

#ifdef BRAID_FUZZ_REPLAY
#include <dirent.h>

#include <fstream>
#include <sstream>
#include <vector>

// Replays every file of the given directories; prints how many.
int main(int argc, char** argv) {
  std::size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    DIR* d = ::opendir(argv[i]);
    if (d == nullptr) {
      std::fprintf(stderr, "log_fuzz_replay: cannot open %s\n", argv[i]);
      return 1;
    }
    std::vector<std::string> files;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') files.push_back(std::string(argv[i]) + "/" + e->d_name);
    }
    ::closedir(d);
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string s = ss.str();
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
      ++n;
    }
  }
  std::printf("log_fuzz_replay: %zu inputs, all recovered or reported as Corruption\n", n);
  return n == 0 ? 1 : 0;
}
#endif
