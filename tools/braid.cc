// `braid`: the database directory tool.
//
//   braid check DIR          recover DIR into memory without writing a byte to it, verify
//                            checksums, the log chain and the index invariants, read every
//                            record on storage back (in file order, many reads in flight) and
//                            match it to its key, check that the index keys, the OID entries in
//                            use, the records read and the engine's record count agree
//                            (recovery drops removed records), and print the tables, record
//                            counts, the read-back's figures, the engine's reclamation counts
//                            and what recovery found; read the stored secondary indexes' files
//                            (checksums, counts, key order)
//   braid repair [--yes] DIR say what a salvage recovery keeps and drops; with --yes, make that
//                            state the database (the damaged files are replaced and deleted)
//   braid stats DIR          describe DIR without recovering it: catalog, checkpoints (with each
//                            table's records: values the newest one holds, references to
//                            records in older files; the secondary indexes each stores), logs
//
// Exit status: 0 fine; 1 damaged (open would fail with Corruption), a check failed, or the
// directory cannot be read; 2 usage error; 3 (check) whole, but a crash left a torn log tail
// or commits that were never acknowledged, which opening drops.
#include <braid/braid.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/database_impl.h"
#include "engine/record_check.h"
#include "engine/table.h"
#include "engine/worker_pool.h"
#include "progress_line.h"
#include "storage/file_system.h"
#include "storage/index_file.h"
#include "storage/log_format.h"
#include "storage/node_segment.h"
#include "storage/recovery.h"
#include "util/progress.h"

namespace {

using namespace braid;

int usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "braid: %s\n\n", why);
  std::fprintf(stderr,
               "usage: braid check DIR          recover DIR in memory (read-only), verify it\n"
               "       braid repair [--yes] DIR say what a salvage keeps and drops; --yes does it\n"
               "       braid stats DIR          describe DIR's catalog, checkpoints and logs\n"
               "exit: 0 fine, 1 damaged or failed, 2 usage, 3 (check) a crash tail to drop\n");
  return 2;
}

// A key as text: printable bytes as they are, others as \xNN, at most 64 bytes shown.
std::string printable(std::string_view key) {
  std::string out;
  for (std::size_t i = 0; i < key.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char b[5];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    }
  }
  if (key.size() > 64) out += "...";
  return out;
}

std::string mib(std::uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

Options tool_options(const std::string& dir, bool read_only, RecoveryMode mode) {
  Options o;
  o.directory = dir;
  o.create_if_missing = false;
  o.read_only = read_only;
  o.recovery = mode;
  o.workers = 1;
  o.pin_workers = false;
  o.huge_pages = false;
  // Recovery's phases (and repair's checkpoint) on a progress line when stderr is a terminal.
  o.progress = tools::ProgressLine::on_stderr().sink();
  return o;
}

void print_recovery(const DurabilityStats& d) {
  std::printf(
      "  recovered: checkpoint records %llu (runs %llu), log transactions %llu, log writes %llu, "
      "log read %s, newest commit %llu\n",
      static_cast<unsigned long long>(d.recovered_checkpoint_records),
      static_cast<unsigned long long>(d.recovered_checkpoint_runs),
      static_cast<unsigned long long>(d.recovered_transactions),
      static_cast<unsigned long long>(d.recovered_writes), mib(d.recovery_log_bytes).c_str(),
      static_cast<unsigned long long>(d.recovery_cutoff));
  std::printf(
      "  logs closed cleanly %u, torn log tails %u, unacknowledged transactions dropped %llu, "
      "checkpoint slots not whole %u\n",
      d.recovery_clean_logs, d.recovery_torn_tails,
      static_cast<unsigned long long>(d.recovery_dropped_transactions),
      d.recovery_checkpoint_fallbacks);
  for (const std::string& t : d.recovery_torn) std::printf("  torn tail: %s\n", t.c_str());
  for (const std::string& p : d.recovery_problems) std::printf("  LOST: %s\n", p.c_str());
}

int check(const std::string& dir) {
  const auto t0 = std::chrono::steady_clock::now();
  // Opened from inside: the read of every record walks the engine's index and OID entries.
  Result<std::unique_ptr<engine::DatabaseImpl>> opened =
      engine::DatabaseImpl::open(tool_options(dir, true, RecoveryMode::kStrict));
  const double open_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!opened.is_ok()) {
    std::fprintf(stderr, "braid check: %s: %s\n", dir.c_str(), opened.status().to_string().c_str());
    if (opened.code() == Code::kCorruption) {
      std::fprintf(stderr,
                   "braid check: DAMAGED: opening it fails; `braid repair %s` says what a "
                   "salvage would keep\n",
                   dir.c_str());
    }
    return 1;
  }
  engine::DatabaseImpl* impl = opened->get();
  const std::unique_ptr<Database> db = engine::WorkerPool::wrap(std::move(opened).value());
  const DurabilityStats d = db->durability_stats();
  std::printf("%s: recovered read-only in %.3f s (recovery %.3f s)\n", dir.c_str(), open_s,
              d.recovery_seconds);
  print_recovery(d);
  int bad = 0;
  std::uint64_t total = 0;
  storage::Catalog cat;
  bool present = false;
  auto fs = storage::make_posix_file_system(false);
  if (Status s = storage::read_catalog(*fs, dir, &cat, &present); !s.is_ok()) {
    std::fprintf(stderr, "braid check: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("  %-24s %14s %14s %12s %12s\n", "table", "records", "index keys", "hot", "cold");
  // Hot: a version in memory; cold: only an address (a checkpoint's reference). The scan below
  // reads every cold record back and verifies it (checksum, table, key).
  struct Counted {
    Table* table = nullptr;
    std::uint64_t hot = 0;
    std::uint64_t cold = 0;
  };
  std::vector<Counted> tables;
  std::uint64_t slots = 0;  // records and deleted ones: what the scans may visit
  for (const auto& e : cat.tables) {
    Result<Table*> t = db->open_table(e.name);
    if (!t.is_ok()) {
      std::printf("  %-24s missing: %s\n", e.name.c_str(), t.status().to_string().c_str());
      ++bad;
      continue;
    }
    Counted c{*t};
    for (std::uint64_t oid = 0; oid < c.table->oids().allocated(); ++oid) {
      const std::uint64_t e = c.table->oids().entry(oid).load(std::memory_order_acquire);
      c.hot += mvcc::entry::is_hot(e) ? 1 : 0;
      c.cold += mvcc::entry::is_cold(e) ? 1 : 0;
    }
    // Records on storage whose leaves name them by address hold no OID entry.
    const std::uint64_t by_address = c.table->named_by_address();
    c.cold += by_address;
    slots += c.table->oids().allocated() + by_address;
    tables.push_back(c);
  }
  std::uint64_t cold_total = 0;
  for (const Counted& c : tables) cold_total += c.cold;
  const util::ProgressMeter::Sink sink = tools::ProgressLine::on_stderr().sink();
  util::ProgressMeter meter(sink, "check: reading every record", "keys and cold records",
                            slots + cold_total);
  std::uint64_t before = 0;  // progress of the tables done
  std::string rows;
  engine::ColdStore::BulkStats bulk;
  const auto t_read = std::chrono::steady_clock::now();
  for (const Counted& c : tables) {
    // The index in key order, then every record on storage read back in file order.
    engine::RecordCheckCounts n;
    Status s = engine::check_records(*impl, *c.table, {}, &n,
                                     [&](std::uint64_t done) { meter.update(before + done); });
    before += c.table->oids().allocated() + c.table->named_by_address() + c.cold;
    bulk.records += n.bulk.records;
    bulk.reads += n.bulk.reads;
    bulk.bytes += n.bulk.bytes;
    // Structure of the index, and every key it holds has a visible record.
    const std::size_t keys = c.table->index().check_invariants();
    // Recovery drops removed records: every OID entry in use holds exactly one record.
    const bool mismatch =
        keys != n.records || c.hot + c.cold != n.records || n.hot + n.cold != n.records;
    if (!s.is_ok() || mismatch) ++bad;
    char row[256];
    std::snprintf(row, sizeof row, "  %-24s %14llu %14zu %12llu %12llu%s\n",
                  c.table->name().c_str(), static_cast<unsigned long long>(n.records), keys,
                  static_cast<unsigned long long>(c.hot), static_cast<unsigned long long>(c.cold),
                  mismatch ? "  MISMATCH" : "");
    rows += row;
    if (!s.is_ok()) rows += "  " + std::string(24, ' ') + " READ FAILED: " + s.to_string() + "\n";
    total += n.records;
  }
  const double read_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
  meter.finish();  // the rows after the progress line, not through it
  std::fputs(rows.c_str(), stdout);
  std::printf("  %llu records in %zu tables, log generation %llu\n",
              static_cast<unsigned long long>(total), cat.tables.size(),
              static_cast<unsigned long long>(cat.generation));
  std::printf(
      "  read back in %.3f s: %llu cold records in file order, %llu reads, %s (%.1f MiB/s)\n",
      read_s, static_cast<unsigned long long>(bulk.records),
      static_cast<unsigned long long>(bulk.reads), mib(bulk.bytes).c_str(),
      read_s > 0 ? static_cast<double>(bulk.bytes) / (1 << 20) / read_s : 0.0);
  const DatabaseStats st = db->stats();
  std::printf(
      "  engine: %llu records (%llu named by address), %llu tombstones pending, %llu OIDs "
      "free, %llu index nodes (%llu free), %llu live versions\n",
      static_cast<unsigned long long>(st.records),
      static_cast<unsigned long long>(st.records_named_by_address),
      static_cast<unsigned long long>(st.tombstones_pending),
      static_cast<unsigned long long>(st.oids_free),
      static_cast<unsigned long long>(st.index_nodes),
      static_cast<unsigned long long>(st.index_nodes_free),
      static_cast<unsigned long long>(st.live_versions));
  std::printf("  memory: version heap %s, index frames %s, OIDs %s\n",
              mib(st.version_heap_bytes).c_str(), mib(st.index_frame_bytes).c_str(),
              mib(st.oid_bytes).c_str());
  // The stored secondary indexes: every chunk checks, the counts match the manifest, and the
  // entries (and the keys written since) are in key order. Their key functions belong to the
  // application, so the entries cannot be derived again here.
  for (const storage::StoredIndex& si : impl->durability()->stored_indexes()) {
    std::uint64_t n[2] = {0, 0};
    Status s;
    for (int dirty = 0; dirty < 2 && s.is_ok(); ++dirty) {
      const std::uint64_t file = dirty != 0 ? si.desc.dirty_file : si.desc.file;
      if (file == 0) continue;
      std::string last;
      bool ordered = true;
      s = storage::read_index_file(fs.get(), dir, file,
                                   dirty != 0 ? si.desc.dirty_entries : si.desc.entries,
                                   [&](std::string_view key, std::size_t) {
                                     ordered = ordered && (n[dirty] == 0 || key > last);
                                     last.assign(key);
                                     ++n[dirty];
                                     return Status::ok();
                                   });
      if (s.is_ok() && !ordered) {
        s = Status::corruption(storage::index_file_name(file) + ": entries out of order");
      }
    }
    std::printf(
        "  stored index '%s' of table %u, key version %llu: %llu entries, %llu keys written "
        "since%s%s\n",
        si.name.c_str(), si.desc.table, static_cast<unsigned long long>(si.desc.key_version),
        static_cast<unsigned long long>(n[0]), static_cast<unsigned long long>(n[1]),
        s.is_ok() ? "" : "  FAILED: ", s.is_ok() ? "" : s.to_string().c_str());
    if (!s.is_ok()) ++bad;
  }
  if (st.records != total) {
    std::printf("  MISMATCH: the engine counts %llu records, the scans %llu\n",
                static_cast<unsigned long long>(st.records),
                static_cast<unsigned long long>(total));
    ++bad;
  }
  if (bad != 0) {
    std::printf("  %d check(s) FAILED\n", bad);
    return 1;
  }
  if (d.recovery_torn_tails != 0 || d.recovery_dropped_transactions != 0) {
    std::printf(
        "  CRASH TAIL: every commit the logs vouch for is there, but opening drops %llu "
        "transaction(s) that were never acknowledged and %u torn log tail(s)\n",
        static_cast<unsigned long long>(d.recovery_dropped_transactions), d.recovery_torn_tails);
    return 3;
  }
  std::printf("  checksums, log chain and invariants OK\n");
  return 0;
}

int repair(const std::string& dir, bool yes) {
  Result<std::unique_ptr<Database>> db =
      Database::open(tool_options(dir, true, RecoveryMode::kSalvage));
  if (!db.is_ok()) {
    std::fprintf(stderr, "braid repair: %s: %s\n", dir.c_str(), db.status().to_string().c_str());
    return 1;
  }
  const DurabilityStats d = (*db)->durability_stats();
  db->reset();
  std::printf("%s: a salvage recovery keeps every commit up to %llu\n", dir.c_str(),
              static_cast<unsigned long long>(d.recovery_cutoff));
  print_recovery(d);
  const bool loss = !d.recovery_problems.empty();
  const bool tail = d.recovery_torn_tails != 0 || d.recovery_dropped_transactions != 0;
  if (!loss && !tail) {
    std::printf("  nothing to repair\n");
    return 0;
  }
  if (loss) {
    std::printf(
        "  it DROPS durable data: the LOST lines above, and %llu transaction(s) found "
        "after the first hole\n",
        static_cast<unsigned long long>(d.recovery_dropped_transactions));
  }
  if (!yes) {
    std::printf(
        "  nothing was written. `braid repair --yes %s` makes this state the database: it "
        "writes a new checkpoint and deletes the damaged files (copy the directory first to "
        "keep them)\n",
        dir.c_str());
    return 1;
  }
  Result<std::unique_ptr<Database>> w =
      Database::open(tool_options(dir, false, RecoveryMode::kSalvage));
  if (!w.is_ok()) {
    std::fprintf(stderr, "braid repair: %s: %s\n", dir.c_str(), w.status().to_string().c_str());
    return 1;
  }
  w->reset();
  Result<std::unique_ptr<Database>> again =
      Database::open(tool_options(dir, true, RecoveryMode::kStrict));
  if (!again.is_ok()) {
    std::fprintf(stderr, "braid repair: the repaired directory does not open: %s\n",
                 again.status().to_string().c_str());
    return 1;
  }
  std::printf("  repaired: %s now opens with every commit up to %llu\n", dir.c_str(),
              static_cast<unsigned long long>(d.recovery_cutoff));
  return 0;
}

int stats(const std::string& dir) {
  auto fs = storage::make_posix_file_system(false);
  std::vector<std::string> names;
  if (Status s = fs->list(dir, &names); !s.is_ok()) {
    std::fprintf(stderr, "braid stats: %s\n", s.to_string().c_str());
    return 1;
  }
  storage::Catalog cat;
  bool present = false;
  if (Status s = storage::read_catalog(*fs, dir, &cat, &present); !s.is_ok()) {
    std::fprintf(stderr, "braid stats: %s\n", s.to_string().c_str());
    return 1;
  }
  if (!present) {
    std::fprintf(stderr, "braid stats: %s is not a BraidDB directory (no CATALOG)\n", dir.c_str());
    return 1;
  }
  std::printf("%s: generation %llu, %zu tables:", dir.c_str(),
              static_cast<unsigned long long>(cat.generation), cat.tables.size());
  for (const auto& e : cat.tables) std::printf(" %s", e.name.c_str());
  std::printf("\n");
  // Index leaves an earlier open sent to storage (Options::page_index_leaves): nothing names
  // them once it closed, and the next writable open removes them.
  {
    std::uint64_t files = 0, bytes = 0;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
      std::uint64_t number = 0;
      if (!storage::parse_node_segment_name(f.path().filename().string(), &number)) continue;
      ++files;
      bytes += f.file_size(ec);
    }
    if (files != 0) {
      std::printf(
          "  node segments: %llu (%s), index leaves of an earlier open: named by nothing, "
          "removed by the next writable open\n",
          static_cast<unsigned long long>(files), mib(bytes).c_str());
    }
  }
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    std::string img;
    if (!storage::read_file(*fs, dir + "/" + storage::checkpoint_file_name(slot), &img).is_ok()) {
      std::printf("  checkpoint slot %u: absent\n", slot);
      continue;
    }
    storage::CheckpointInfo info;
    Status s = storage::read_checkpoint(img, &info);
    if (!s.is_ok() || !info.valid) {
      std::printf("  checkpoint slot %u: INVALID (%s), %s\n", slot,
                  s.is_ok() ? info.problem.c_str() : s.to_string().c_str(),
                  mib(img.size()).c_str());
      continue;
    }
    std::uint64_t bytes = 0;
    for (const storage::CkptPart& p : info.parts) bytes += p.bytes;
    std::printf(
        "  checkpoint slot %u: #%llu at commit %llu, generation %llu, %llu records in %zu "
        "parts (%s), needs %zu other files\n",
        slot, static_cast<unsigned long long>(info.header.seq),
        static_cast<unsigned long long>(info.header.cts),
        static_cast<unsigned long long>(info.header.generation),
        static_cast<unsigned long long>(info.trailer.records), info.parts.size(),
        mib(bytes).c_str(), info.live.size());
    for (const storage::StoredIndex& si : info.indexes) {
      std::printf(
          "    stores index '%s' of table %u (key version %llu): %llu entries in %s, %llu keys "
          "written since%s%s\n",
          si.name.c_str(), si.desc.table, static_cast<unsigned long long>(si.desc.key_version),
          static_cast<unsigned long long>(si.desc.entries),
          storage::index_file_name(si.desc.file).c_str(),
          static_cast<unsigned long long>(si.desc.dirty_entries),
          si.desc.dirty_file != 0 ? " in " : "",
          si.desc.dirty_file != 0 ? storage::index_file_name(si.desc.dirty_file).c_str() : "");
    }
    if (info.under_way) {
      std::printf(
          "    under way: its first %llu parts hold the records up to table %u key '%s' at commit "
          "%llu; the other parts are checkpoint #%llu's, whose records count past that key\n",
          static_cast<unsigned long long>(info.frontier.new_parts), info.frontier.table,
          printable(info.frontier_key).c_str(), static_cast<unsigned long long>(info.frontier.cts),
          static_cast<unsigned long long>(info.frontier.base_seq));
    }
  }
  // The newest whole checkpoint's records per table: those whose value it wrote (the records
  // that were in memory, and cold ones it copied) and its references to records that stay in
  // older files (cold at the checkpoint: an open under a memory budget installs both kinds as
  // addresses, an open without one reads them all). Read part by part, verified; no recovery.
  struct Counter final : storage::Applier {
    std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> by_table;  // values, refs
    Status put(std::uint32_t t, std::string_view, std::string_view, std::uint64_t,
               std::uint64_t) override {
      ++by_table[t].first;
      return Status::ok();
    }
    Status remove(std::uint32_t, std::string_view, std::uint64_t) override { return Status::ok(); }
    Status ref(std::uint32_t t, std::string_view, std::uint64_t) override {
      ++by_table[t].second;
      return Status::ok();
    }
  };
  storage::CheckpointInfo newest;
  for (std::uint32_t slot = 0; slot < 2; ++slot) {
    std::string img;
    storage::CheckpointInfo info;
    if (storage::read_file(*fs, dir + "/" + storage::checkpoint_file_name(slot), &img).is_ok() &&
        storage::read_checkpoint(img, &info).is_ok() && info.valid &&
        (!newest.valid || info.header.seq > newest.header.seq)) {
      newest = std::move(info);
    }
  }
  if (newest.valid) {
    Counter counter;
    if (Status s = storage::read_checkpoint_parts(*fs, dir, newest, &counter); !s.is_ok()) {
      std::printf("  checkpoint #%llu: its parts do not read back: %s\n",
                  static_cast<unsigned long long>(newest.header.seq), s.to_string().c_str());
    } else {
      std::printf("  %-24s %14s %14s   (checkpoint #%llu)\n", "table", "values held", "references",
                  static_cast<unsigned long long>(newest.header.seq));
      for (std::uint32_t id = 0; id < cat.tables.size(); ++id) {
        const auto it = counter.by_table.find(cat.tables[id].id);
        const std::uint64_t values = it == counter.by_table.end() ? 0 : it->second.first;
        const std::uint64_t refs = it == counter.by_table.end() ? 0 : it->second.second;
        std::printf("  %-24s %14llu %14llu\n", cat.tables[id].name.c_str(),
                    static_cast<unsigned long long>(values), static_cast<unsigned long long>(refs));
      }
    }
  }
  std::size_t parts = 0;
  for (const auto& n : names) {
    std::uint64_t number = 0;
    parts += storage::parse_part_file_name(n, &number) ? 1 : 0;
  }
  std::printf("  checkpoint parts present: %zu\n", parts);
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
    std::printf("  %s: %s, %llu blocks, %llu transactions, commits %llu..%llu, acked %llu%s%s%s\n",
                n.c_str(), mib(img.size()).c_str(), static_cast<unsigned long long>(sc.blocks),
                static_cast<unsigned long long>(sc.txns),
                static_cast<unsigned long long>(sc.min_cts),
                static_cast<unsigned long long>(sc.max_cts),
                static_cast<unsigned long long>(sc.acked), sc.torn ? ", ends in a bad block" : "",
                sc.closed ? ", closed" : (sc.next ? ", continues" : ""),
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
  if (cmd != "check" && cmd != "stats" && cmd != "repair") {
    return usage(("unknown command '" + cmd + "'").c_str());
  }
  bool yes = false;
  std::vector<std::string> args;
  for (int i = 2; i < argc; ++i) {
    if (cmd == "repair" && std::strcmp(argv[i], "--yes") == 0) {
      yes = true;
    } else {
      args.emplace_back(argv[i]);
    }
  }
  if (args.size() != 1) return usage(("'" + cmd + "' takes exactly one directory").c_str());
  const std::string dir = args[0];
  if (dir.empty() || dir[0] == '-') return usage(("bad directory '" + dir + "'").c_str());
  if (cmd == "check") return check(dir);
  if (cmd == "repair") return repair(dir, yes);
  return stats(dir);
}
