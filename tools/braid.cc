// `braid`: the database directory tool.
//
//   braid check DIR   open DIR (recovering it), verify checksums and invariants, and print the
//                     tables, record counts, log size and recovery time
//   braid stats DIR   describe DIR without opening it: catalog, checkpoint slots, log segments
//
// Exit status: 0 fine, 1 the directory failed a check or cannot be read, 2 usage error.
#include <braid/braid.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "engine/database_impl.h"
#include "engine/table.h"
#include "storage/file_system.h"
#include "storage/log_format.h"
#include "storage/recovery.h"

namespace {

using namespace braid;

int usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "braid: %s\n\n", why);
  std::fprintf(
      stderr,
      "usage: braid check DIR   open and recover DIR, verify checksums and invariants\n"
      "       braid stats DIR   describe DIR's catalog, checkpoints and logs (read-only)\n");
  return 2;
}

std::string mib(std::uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

int check(const std::string& dir) {
  Options o;
  o.directory = dir;
  o.create_if_missing = false;
  o.workers = 1;
  o.huge_pages = false;
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::unique_ptr<Database>> db = Database::open(o);
  const double open_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!db.is_ok()) {
    std::fprintf(stderr, "braid check: %s: %s\n", dir.c_str(), db.status().to_string().c_str());
    return 1;
  }
  const DurabilityStats d = (*db)->durability_stats();
  std::printf("%s: opened in %.3f s (recovery %.3f s)\n", dir.c_str(), open_s, d.recovery_seconds);
  std::printf(
      "  recovered: checkpoint records %llu, log transactions %llu, log writes %llu, "
      "log read %s\n",
      static_cast<unsigned long long>(d.recovered_checkpoint_records),
      static_cast<unsigned long long>(d.recovered_transactions),
      static_cast<unsigned long long>(d.recovered_writes), mib(d.recovery_log_bytes).c_str());
  std::printf(
      "  torn log tails %u, transactions dropped after the first hole %llu, checkpoint "
      "fallbacks %u, log generation now %llu\n",
      d.recovery_torn_tails, static_cast<unsigned long long>(d.recovery_dropped_transactions),
      d.recovery_checkpoint_fallbacks, static_cast<unsigned long long>(d.generation));
  int bad = 0;
  std::uint64_t total = 0;
  std::vector<storage::CatalogEntry> cat;
  bool present = false;
  auto fs = storage::make_posix_file_system(false);
  if (Status s = storage::read_catalog(*fs, dir, &cat, &present); !s.is_ok()) {
    std::fprintf(stderr, "braid check: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("  %-24s %14s %14s\n", "table", "records", "index keys");
  for (const auto& e : cat) {
    Result<Table*> t = (*db)->open_table(e.name);
    if (!t.is_ok()) {
      std::printf("  %-24s missing: %s\n", e.name.c_str(), t.status().to_string().c_str());
      ++bad;
      continue;
    }
    std::uint64_t records = 0;
    Transaction tx = (*db)->begin().value();
    Status s = tx.scan(**t, "", "", 0, [&](std::string_view, std::string_view) {
      ++records;
      return true;
    });
    tx.abort();
    // Structure of the index, and every key it holds has a visible record.
    const std::size_t keys = (**t).index().check_invariants();
    if (!s.is_ok() || keys != records) ++bad;
    std::printf("  %-24s %14llu %14zu%s\n", e.name.c_str(),
                static_cast<unsigned long long>(records), keys,
                keys != records ? "  MISMATCH" : "");
    total += records;
  }
  std::vector<std::string> names;
  std::uint64_t log_bytes = 0, logs = 0;
  (void)fs->list(dir, &names);
  for (const auto& n : names) {
    storage::LogName ln{};
    if (!storage::parse_log_file_name(n, &ln)) continue;
    Result<storage::FileId> f = fs->open(dir + "/" + n, {});
    if (!f.is_ok()) continue;
    if (Result<std::uint64_t> n = fs->size(*f); n.is_ok()) log_bytes += *n;
    fs->close(*f);
    ++logs;
  }
  std::printf("  %llu records in %zu tables; log now %llu segments, %s\n",
              static_cast<unsigned long long>(total), cat.size(),
              static_cast<unsigned long long>(logs), mib(log_bytes).c_str());
  if (bad != 0) {
    std::printf("  %d check(s) FAILED\n", bad);
    return 1;
  }
  std::printf("  checksums and invariants OK\n");
  return 0;
}

int stats(const std::string& dir) {
  auto fs = storage::make_posix_file_system(false);
  std::vector<std::string> names;
  if (Status s = fs->list(dir, &names); !s.is_ok()) {
    std::fprintf(stderr, "braid stats: %s\n", s.to_string().c_str());
    return 1;
  }
  std::vector<storage::CatalogEntry> cat;
  bool present = false;
  if (Status s = storage::read_catalog(*fs, dir, &cat, &present); !s.is_ok()) {
    std::fprintf(stderr, "braid stats: %s\n", s.to_string().c_str());
    return 1;
  }
  if (!present) {
    std::fprintf(stderr, "braid stats: %s is not a BraidDB directory (no CATALOG)\n", dir.c_str());
    return 1;
  }
  std::printf("%s: %zu tables:", dir.c_str(), cat.size());
  for (const auto& e : cat) std::printf(" %s", e.name.c_str());
  std::printf("\n");
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    std::string img;
    if (!storage::read_file(*fs, dir + "/" + storage::checkpoint_file_name(slot), &img).is_ok()) {
      std::printf("  checkpoint slot %u: absent\n", slot);
      continue;
    }
    storage::CheckpointInfo info;
    Status s = storage::read_checkpoint(img, &info, nullptr);
    if (!s.is_ok() || !info.valid) {
      std::printf("  checkpoint slot %u: INVALID (%s), %s\n", slot,
                  s.is_ok() ? info.problem.c_str() : s.to_string().c_str(),
                  mib(img.size()).c_str());
      continue;
    }
    std::printf("  checkpoint slot %u: #%llu at commit %llu, generation %llu, %llu records, %s\n",
                slot, static_cast<unsigned long long>(info.header.seq),
                static_cast<unsigned long long>(info.header.cts),
                static_cast<unsigned long long>(info.header.generation),
                static_cast<unsigned long long>(info.trailer.records), mib(img.size()).c_str());
  }
  std::map<std::string, storage::LogName> logs;
  for (const auto& n : names) {
    storage::LogName ln{};
    if (storage::parse_log_file_name(n, &ln)) logs.emplace(n, ln);
  }
  std::uint64_t total = 0;
  for (const auto& [n, ln] : logs) {
    std::string img;
    if (Status s = storage::read_file(*fs, dir + "/" + n, &img); !s.is_ok()) {
      std::printf("  %s: %s\n", n.c_str(), s.to_string().c_str());
      continue;
    }
    storage::SegmentScan sc;
    Status s = storage::scan_segment(img, &sc, nullptr);
    total += img.size();
    std::printf("  %s: %s, %llu blocks, %llu transactions, commits %llu..%llu%s%s\n", n.c_str(),
                mib(img.size()).c_str(), static_cast<unsigned long long>(sc.blocks),
                static_cast<unsigned long long>(sc.txns),
                static_cast<unsigned long long>(sc.min_cts),
                static_cast<unsigned long long>(sc.max_cts), sc.torn ? ", ends in a bad block" : "",
                s.is_ok() ? "" : (", " + s.to_string()).c_str());
  }
  std::printf("  log: %zu segments, %s\n", logs.size(), mib(total).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(nullptr);
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    (void)usage(nullptr);
    return 0;
  }
  if (cmd != "check" && cmd != "stats") return usage(("unknown command '" + cmd + "'").c_str());
  if (argc != 3) return usage(("'" + cmd + "' takes exactly one directory").c_str());
  const std::string dir = argv[2];
  if (dir.empty() || dir[0] == '-') return usage(("bad directory '" + dir + "'").c_str());
  return cmd == "check" ? check(dir) : stats(dir);
}
