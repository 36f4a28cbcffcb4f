// An analytical query on the transactional store: total sales per region over a table that
// lives mostly on storage. The table is bulk-loaded straight to the directory (nothing stays in
// memory), then Database::scan_morsels cuts its key range into morsels and runs one coroutine
// per morsel on the workers, several in flight per worker: while one morsel waits for a record
// to come back from storage, the worker scans the others. Each worker folds its rows into its
// own totals (no locks: one worker runs one coroutine at a time); the caller merges them.
// Every morsel reads one snapshot, so sales committed during the report are all in it or all
// out of it.
//
//   sales_report DIR [sales] [workers]   (DIR: a new or empty directory; it is left in place)
#include <braid/braid.h>
#include <braid/tx.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int kRegions = 5;
const char* const kRegionNames[kRegions] = {"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"};

// A sale's value: its region and amount in cents, then a note (padding a row to ~100 bytes).
struct Sale {
  std::uint32_t region;
  std::uint64_t cents;
};
std::string encode(const Sale& s) {
  std::string v(100, '.');
  std::memcpy(v.data(), &s.region, sizeof s.region);
  std::memcpy(v.data() + sizeof s.region, &s.cents, sizeof s.cents);
  return v;
}
Sale decode(std::string_view v) {
  Sale s{};
  std::memcpy(&s.region, v.data(), sizeof s.region);
  std::memcpy(&s.cents, v.data() + sizeof s.region, sizeof s.cents);
  return s;
}
Sale sale_of(std::uint64_t i) {
  return Sale{static_cast<std::uint32_t>((i * 7919) % kRegions), 100 + (i * 104729) % 100000};
}

using Totals = std::array<std::uint64_t, kRegions>;

int fail(const char* what, const braid::Status& s) {
  std::fprintf(stderr, "sales_report: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sales_report DIR [sales] [workers]\n");
    return 2;
  }
  const std::uint64_t sales = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 200000;
  braid::Options options;
  options.directory = argv[1];
  options.workers = argc > 3 ? static_cast<std::uint32_t>(std::atoi(argv[3])) : 2;
  options.exec.mode = braid::ExecMode::kInterleaved;  // workers overlap their morsels' reads
  options.exec.batch = 8;
  auto db = braid::Database::open(options);
  if (!db.is_ok()) return fail("open", db.status());
  auto table = (*db)->create_table("sales");
  if (!table.is_ok()) return fail("create_table", table.status());

  // Load: keys in order, every record written to storage and none kept in memory.
  std::uint64_t next = 0;
  std::string key, value;
  braid::Status s = (*db)->bulk_load(**table,
                                     [&](std::string_view* k, std::string_view* v) {
                                       if (next == sales) return false;
                                       key = std::string(braid::Key().u64(next).view());
                                       value = encode(sale_of(next));
                                       ++next;
                                       *k = key;
                                       *v = value;
                                       return true;
                                     },
                                     {.keep_in_memory = false});
  if (!s.is_ok()) return fail("bulk_load", s);

  // The report: per-worker totals, folded by each morsel's coroutine, merged after.
  std::vector<Totals> per_worker((*db)->options().workers, Totals{});
  braid::MorselOptions morsels;
  morsels.io_depth = 16;  // morsels in flight per worker
  s = (*db)->scan_morsels(**table, "", "", morsels,
                          [&](braid::Tx& tx, braid::Morsel m) -> braid::Task<braid::Status> {
                            Totals& totals = per_worker[tx.worker()];
                            co_return co_await tx.scan(**table, m.begin, m.end, 0,
                                                       [&](std::string_view, std::string_view v) {
                                                         const Sale sale = decode(v);
                                                         totals[sale.region] += sale.cents;
                                                         return true;
                                                       });
                          });
  if (!s.is_ok()) return fail("scan_morsels", s);
  Totals report{};
  for (const Totals& t : per_worker) {
    for (int r = 0; r < kRegions; ++r) report[r] += t[r];
  }

  // The same sums computed directly, to show the report is exact.
  Totals expected{};
  for (std::uint64_t i = 0; i < sales; ++i) expected[sale_of(i).region] += sale_of(i).cents;
  const braid::DatabaseStats stats = (*db)->stats();
  std::printf("%llu sales, %llu records read from storage\n",
              static_cast<unsigned long long>(sales),
              static_cast<unsigned long long>(stats.cold_reads));
  for (int r = 0; r < kRegions; ++r) {
    std::printf("  %-12s %14.2f\n", kRegionNames[r], static_cast<double>(report[r]) / 100);
    if (report[r] != expected[r]) {
      std::fprintf(stderr, "sales_report: %s is %llu, expected %llu\n", kRegionNames[r],
                   static_cast<unsigned long long>(report[r]),
                   static_cast<unsigned long long>(expected[r]));
      return 1;
    }
  }
  return 0;
}
