// YCSB's table: keys and values, loaded through transactions or bulk_load, and the index path
// a get walks (for the line-fetch estimate).
#include "ycsb/config.h"

namespace braid::bench {

using namespace ycsb;  // NOLINT(google-build-using-namespace): the sub-command's own names

std::vector<PathStep> btree_path(Table& table) {
  std::vector<PathStep> path;
  for (std::size_t nodes : table.index().level_sizes()) {
    path.push_back({static_cast<double>(nodes * index::kNodeBytes),
                    static_cast<double>(index::kNodeBytes / 64)});
  }
  return path;
}

std::vector<PathStep> engine_get_path(Database& db, Table& table, std::uint64_t records) {
  std::vector<PathStep> path = btree_path(table);
  path.push_back({static_cast<double>(records * sizeof(std::uint64_t)), 1.0});
  path.push_back({static_cast<double>(db.stats().live_version_bytes), 1.0});
  return path;
}

void fill_value(char* v, std::uint32_t n, std::uint64_t salt) {
  for (std::uint32_t i = 0; i < n; ++i) v[i] = static_cast<char>('a' + (salt + i) % 26);
}

Status ycsb_bulk_load(Database& db, Table& table, std::uint64_t records, std::uint32_t key_bytes,
                      std::uint32_t value_bytes, const BulkLoadOptions& options, const char* label,
                      double* seconds) {
  std::atomic<std::uint64_t> done{0};
  const auto start = Clock::now();
  BulkLoadOptions counted = options;
  counted.expected_records = records;
  Status s;
  {
    Progress progress(label, "records", &done, records);
    std::vector<char> value(value_bytes);
    char key[kMaxKeyBytes];
    std::uint64_t i = 0;
    s = db.bulk_load(
        table,
        [&](std::string_view* k, std::string_view* v) {
          if (i == records) return false;
          make_key(i, key_bytes, key);
          fill_value(value.data(), value_bytes, i);
          *k = {key, key_bytes};
          *v = {value.data(), value.size()};
          if (++i % 4096 == 0) done.store(i, std::memory_order_relaxed);
          return true;
        },
        counted);
    done.store(i, std::memory_order_relaxed);
  }
  *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return s;
}

void make_key(std::uint64_t i, std::uint32_t bytes, char* out, bool hashed) {
  // On the measured path: one store for the common 8-byte key, so the driver costs little next
  // to the operation it measures.
  if (hashed) {
    BRAID_ASSERT(bytes >= 8);  // parse_flags: a hash needs the whole head to stay distinct
    i = util::mix64(i);
  }
  if (bytes >= 8) {
    const std::uint64_t be = __builtin_bswap64(i);
    std::memcpy(out, &be, 8);
    if (bytes == 8) return;
  } else {
    for (std::uint32_t b = 0; b < bytes; ++b)
      out[b] = static_cast<char>(i >> (8 * (bytes - 1 - b)));
  }
  const std::uint32_t head = std::min<std::uint32_t>(bytes, 8);
  std::uint64_t f = util::mix64(i);
  for (std::uint32_t b = head; b < bytes; ++b) {
    out[b] = static_cast<char>('A' + (f % 26));
    f = f / 26 + 0x9e37;
  }
}

}  // namespace braid::bench
