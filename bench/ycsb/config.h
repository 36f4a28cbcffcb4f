// braid-bench ycsb's shared vocabulary: the invocation's configuration, what a thread and a run
// measure, the variants an invocation alternates, and the functions its files provide. The
// transaction machinery itself (plans, keys, bodies, the loops and the generator) lives in one
// unit, workload.cc, with internal linkage: it runs once per operation on the measured path.
#pragma once

#include <braid/braid.h>
#include <braid/tx.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "background_load.h"
#include "bench_db.h"
#include "engine/table.h"
#include "flags.h"
#include "peer.h"
#include "profile_marks.h"
#include "report.h"
#include "roof.h"

#include "ycsb/ycsb.h"

namespace braid::bench::ycsb {

using Clock = std::chrono::steady_clock;

struct Config {
  std::uint64_t records;
  std::uint32_t threads;
  double seconds;
  std::uint64_t txns;  // per thread, instead of `seconds` (0: run for `seconds`)
  std::uint32_t ops_per_txn;
  std::uint32_t read, update, rmw, scan, insert;  // percent
  std::uint32_t scan_length;
  bool scan_uniform;     // scans of 1..scan_length records, uniformly (YCSB E), or exactly that
  std::string dist;      // uniform | zipf | latest
  std::string workload;  // a..f (YCSB's core workloads), or "" for the flags' own mix
  std::string engine;    // braid | lmdb | rocksdb
  double theta;
  std::uint32_t key_bytes;
  // --key-order hashed: record i's key is a bijective hash of i (YCSB's insertorder=hashed), so
  // keys are spread over the key space and loaded in random order; ordered: i itself.
  bool hashed_keys;
  std::uint32_t value_bytes;
  std::uint64_t seed;
  std::string json;
  std::string roof;
  std::vector<std::string> modes;       // in the order given; every mode for --mode all
  std::vector<std::string> isolations;  // --isolation: si | ssn, one or a list (alternated)
  bool declare_read_only;         // a transaction of reads and scans declares itself read-only
  std::uint32_t repeat;           // rounds over `modes`, round-robin
  std::uint32_t background_load;  // competing threads during the runs (bench/background_load.h)
  std::string scheduler;
  std::vector<std::uint32_t> batches;  // --batch, one or a list (swept for interleaving modes)
  bool multi_get;
  std::string load;  // "txn" | "bulk"
  // --engine rocksdb: one cache of this many MiB holds the block cache, the index and filter
  // blocks and the memtables, and reads bypass the page cache (0: a cache that holds the data).
  std::uint64_t cache_mib;
  DbFlags db;
};

// Execution modes by name; "plain" is the bench's own thread-per-transaction loop over the
// synchronous API: no workers, no coroutines — the yardstick `sequential` must match.
inline std::vector<std::string> ycsb_modes() {
  std::vector<std::string> m = {"plain"};
  for (const std::string& n : exec_mode_names()) m.push_back(n);
  return m;
}

inline ExecMode mode_of(const std::string& m) {
  ExecMode mode = ExecMode::kSequential;  // "plain" runs no engine mode
  (void)parse_exec_mode(m, &mode);
  return mode;
}

enum class Op : std::uint8_t { kRead, kUpdate, kRmw, kScan, kInsert };

struct ThreadResult {
  std::uint64_t commits = 0;
  std::uint64_t aborts = 0;
  std::uint64_t ops = 0;
  std::array<std::uint64_t, 5> by_op{};  // ops by Op: the mix as run
  std::uint64_t errors = 0;
  std::string first_error;
  Histogram latency;
  Histogram commit_latency;  // commit to acknowledgement (databases with a directory)
  // The thread's next fresh key: set before a run, left where the run stopped, so the next
  // mode's inserts continue past every key an earlier mode inserted.
  std::uint64_t next_insert = 0;
  // Which run of the invocation this is: each run draws its own keys. Replaying one stream
  // would hand later runs the records earlier ones read back (under a memory budget, a hit
  // ratio of 0.75 at a 25 % budget in the second round).
  std::uint64_t stream = 0;

  // A run's total: the counts and histograms of every thread.
  void add(const ThreadResult& r) {
    commits += r.commits;
    aborts += r.aborts;
    ops += r.ops;
    for (std::size_t k = 0; k < by_op.size(); ++k) by_op[k] += r.by_op[k];
    errors += r.errors;
    if (first_error.empty()) first_error = r.first_error;
    latency.merge(r.latency);
    commit_latency.merge(r.commit_latency);
  }
};

inline std::string mix_name(const Config& c) {
  std::string s;
  auto part = [&](const char* n, std::uint32_t p) {
    if (p == 0) return;
    if (!s.empty()) s += "/";
    s += n + std::to_string(p);
  };
  part("read", c.read);
  part("update", c.update);
  part("rmw", c.rmw);
  part("scan", c.scan);
  part("insert", c.insert);
  return s;
}

// One measured configuration: a mode, and for the interleaving modes a batch size. With a
// --batch list each interleaving mode runs once per size, labelled mode@size, so a sweep (and
// every mode at its own best size, CoroBase §5's methodology) shares one load and one
// round-robin.
// With an --isolation list each runs under every isolation, labelled mode/ssn, side by side.
struct Variant {
  std::string mode;
  std::uint32_t batch;
  std::string label;
  Isolation iso = Isolation::kSnapshot;
};

inline std::vector<Variant> variants_of(const Config& cfg) {
  std::vector<Variant> out;
  for (const std::string& m : cfg.modes) {
    // Only nested and interleaved interleave exactly `batch` transactions: sequential,
    // prefetch and plain run one at a time, and auto picks its own size.
    const bool sweeps = (m == "nested" || m == "interleaved") && cfg.batches.size() > 1;
    const std::vector<std::uint32_t> batches =
        sweeps ? cfg.batches : std::vector<std::uint32_t>{cfg.batches.front()};
    for (std::uint32_t b : batches) {
      for (const std::string& iso_name : cfg.isolations) {
        Variant v{m, b, sweeps ? m + "@" + std::to_string(b) : m};
        (void)parse_isolation(iso_name, &v.iso);  // a name the parser accepted
        if (cfg.isolations.size() > 1 || v.iso != Isolation::kSnapshot) v.label += "/" + iso_name;
        out.push_back(v);
      }
    }
  }
  return out;
}

struct ModeResult {
  std::string mode;
  AbortCauses aborts;
  double txn_per_s = 0;
  ThreadResult total;
  double run_s = 0;
  ExecStats exec;
  double log_bytes_per_s = 0;
  double syncs_per_s = 0;
  ColdFigures cold;
};

// A run's end: after --seconds, or (--txns) when every thread has run its transactions and
// `stop` is set by whoever saw that.
inline void stop_after(const Config& cfg, std::atomic<bool>& stop) {
  if (cfg.txns != 0) return;
  std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
  stop.store(true);
}

// What every run of one invocation shares: the loaded database and the figures of its load.
struct Setup {
  std::unique_ptr<Database> db;
  Table* table = nullptr;
  double load_s = 0;
  double lines_per_txn = 0;  // estimated DRAM lines per transaction
  double roof_rate = 0;      // the machine's line rate at cfg.threads, 0 if unknown
  std::unique_ptr<Zipf> zipf;
};

// A run's figures every engine reports.
struct RunFigures {
  double abort_rate, ops_per_s, p50_us, p99_us;
  static RunFigures of(const ModeResult& m) {
    const double attempts = static_cast<double>(m.total.commits + m.total.aborts);
    return {attempts > 0 ? static_cast<double>(m.total.aborts) / attempts : 0,
            static_cast<double>(m.total.ops) / m.run_s, m.total.latency.quantile(0.50) / 1000.0,
            m.total.latency.quantile(0.99) / 1000.0};
  }
};

// workload.cc: one mode at one batch size for cfg.seconds over the loaded table. `inserts`: each
// thread's next fresh key, carried from run to run.
Status run_mode(Database& db, Table& table, const Config& cfg, const Zipf* zipf, const Variant& var,
                std::vector<std::uint64_t>* inserts, std::uint64_t stream, ModeResult* res);
// workload.cc: the table loaded through transactions (or by bulk_load, per cfg.load).
Status load(Database& db, Table& table, const Config& cfg, double* load_seconds);
// workload.cc: the same workload on a peer engine, and its load.
ModeResult run_peer(PeerEngine& engine, const Config& cfg, const Zipf* zipf,
                    std::vector<std::uint64_t>* inserts, std::uint64_t stream);
Status load_peer(PeerEngine& engine, const Config& cfg);
// parse.cc: the flags; an error message, or "" when they parse.
std::string parse_config(int argc, char** argv, int first, Config* cfg);
// main.cc: opens and loads the database every run of the invocation shares (an exit code).
int load_database(const Config& cfg, Setup* s);
// report.cc: the table and the JSON lines.
void print_header(const Config& cfg, const Setup& s);
// The JSON fields every engine's run has; the caller adds the engine's own.
void add_run_fields(JsonObject& o, const Config& cfg, const ModeResult& m, const RunFigures& f,
                    std::uint32_t rep, double load_s);
std::string report_run(const Config& cfg, const Setup& s, const Variant& var, const ModeResult& m,
                       std::uint32_t rep, double seq);
void report_summary(const Setup& s, const std::vector<Variant>& variants,
                    const std::vector<std::vector<double>>& rates);
// peers.cc: braid-bench ycsb --engine lmdb|rocksdb.
int peer_main(const Config& cfg);

}  // namespace braid::bench::ycsb
