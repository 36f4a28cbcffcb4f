// braid-bench tpcc: flags, the runs (modes × mixes, round-robin), the report and --verify.
#include <braid/braid.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_db.h"
#include "command.h"
#include "flags.h"
#include "profile_marks.h"
#include "report.h"
#include "tpcc/tpcc.h"
#include "util/assert.h"

namespace braid::bench {

const char* tpcc_usage() {
  return R"(usage: braid-bench tpcc [flags]

TPC-C (9 tables, the five transactions, standard mix), TPC-CR (50% StockLevel, 50% OrderStatus,
read-only) and TPC-CH (TPC-C plus 10% Q2*) as coroutine transactions (CoroBase §5.2, §5.8).
Loads --warehouses warehouses, then runs each mix in each mode for --seconds, round-robin.

  --warehouses N     warehouses (default 16: about 8.4 M rows, loaded in ~10 s here); each worker
                     has its own home warehouses, so N >= --threads
  --threads N        workers, one per core (default 1)
  --seconds S        run time per mode and mix (default 5)
  --txns N           instead: each worker runs N transactions (a fixed amount of work, for
                     valgrind: scripts/icache.sh)
  --mix M            tpcc | tpcc-r | tpcc-h | all (these three), or one type alone: new-order |
                     payment | order-status | delivery | stock-level | q2 | q1; or a
                     comma-separated list (default tpcc)
  --ch-query Q       tpcc-h's analytical 10 %: q2 (CoroBase's Q2*, default), q1 (Q1*: one
                     district's order lines summed by line number, a read-only scan) or both
  --mode M           sequential | prefetch | nested | interleaved | auto | hybrid | all, or a
                     comma-separated list (default interleaved); hybrid = interleaved with
                     multi_get in NewOrder, StockLevel and Q2*
  --hybrid           use multi_get (as the hybrid mode) in every listed mode
  --rehearse         an oracle for what hiding every miss could gain, in the plain modes
                     (sequential, prefetch): each transaction first runs and rolls back, then
                     runs again with the same draws, its data now cached; txn_per_s counts only
                     the second runs and their own time. JSON: rehearse, txn_s
  --delivery-hint B  1: Delivery starts its new-order scan past the last order it delivered
                     (default); 0: at the district's first key
  --scheduler P      batch | pipeline | storage-batch | dual-queue | team, or a comma-separated
                     list that runs every mode under each, labelled mode/scheduler (default
                     pipeline: TPC-C's transactions differ in length by 100x, and the batch
                     policy leaves a slot idle until its batch's longest one ends). JSON:
                     scheduler
  --team-admission P  under team: the policy that admits (batch | pipeline | storage-batch |
                     dual-queue; default pipeline)
  --team-size N      under team: most transactions in one team, and the fewest a round
                     resumes (default 8; ExecOptions::team_size)
  --team-wait N      under team: most rounds a transaction is passed over (default 2)
  --batch N          transactions a worker interleaves (default 8)
  --type-order O     arrival | grouped, or both (a list runs every mode under each, labelled
                     mode/grouped): the order in which a worker starts the mix's types. grouped
                     draws --type-deck types at a time and starts them grouped by type, so the
                     open transactions run the same code (STEPS' teams by type); the mix over
                     whole decks is unchanged, a type waits at most one deck, and latency does not
                     count that wait (default arrival). JSON: type_order, type_deck
  --type-deck N      under grouped: types drawn per deck (default 256; 1..4096)
  --isolation I[,I]  si | ssn: snapshot isolation, or serializable (SSN); a list runs every
                     mode under each, labelled mode/ssn (default si). JSON: isolation, aborts
                     per cause and their rates, and per type
  --declare-read-only 0|1  Order-Status and Stock-Level declare themselves read-only
                     (default 1)
  --repeat N         rounds over mixes × modes, round-robin (default 1); prints min/median/max
  --suppliers N      suppliers one Q2* visits (default 100; the table has 10,000)
  --verify           check TPC-C consistency conditions 1-4 after the load and after every run;
                     exit 1 on a violation
  --items N, --customers N
                     shrink the population (items; customers and orders per district) for quick
                     tests; defaults are the spec's 100,000 and 3,000 (smaller is not TPC-C)
  --dir DIR          run on a durable database in DIR (new or empty); default in memory
  --commit C         durable | async (with --dir; default durable)
  --log-sync M       fdatasync | dsync | direct (with --dir; default fdatasync)
  --log-flusher F    none | thread: thread is the oversubscribed baseline of MosaicDB
                     Fig. 10, a background thread that submits the logs (default none)
  --sq-poll-cpu C    off | a CPU: a kernel thread pinned to CPU C submits the workers' I/O
                     (io_uring SQPOLL; DurabilityOptions::sq_poll_cpu; default off)
  --checkpoint-mib N checkpoint after N MiB of log (with --dir; default 1024)
  --prefault-mib N   make N MiB of version memory resident at open, so that the runs do not
                     pay for first-touch page faults as the database grows (default 0)
  --prefault-index-mib N  the same for index nodes, shared by every table's and index's
                     tree (default 0: each tree faults in its own 2 MiB chunks as it grows)
  --l2-kib K         the per-core cache the trees are sized against (Options::l2_cache_bytes;
                     default 0: the machine's L2)
  --memory-budget-mib M  bound the database's memory to M MiB (with --dir): records and
                     index leaves past it are evicted and read back from DIR (default 0: no bound)
  --page-index 0|1|2  with --memory-budget-mib: 0 keeps the index whole in memory, outside
                     the budget, which then bounds versions only; 1 pages its leaves
                     (Options::page_index_leaves); 2 inner nodes too (page_index_inner;
                     default 2)
  --reserve-gib G    address space reserved for versions, and for each table's OIDs, in GiB
                     (default: 1024 for versions, 32 per table): small under valgrind
  --seed N           seed of the population and the inputs (default 1)
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl; 'none')
)";
}

namespace {

using Clock = std::chrono::steady_clock;

// "hybrid" is interleaved with multi_get (CoroBase's Hybrid), so it can run beside the others
// on the same data; --hybrid applies multi_get to every listed mode instead.
std::vector<std::string> tpcc_modes() {
  std::vector<std::string> m = exec_mode_names();
  m.push_back("hybrid");
  return m;
}
const std::vector<std::string> kMixes(std::begin(kTpccMixNames), std::end(kTpccMixNames));

ExecMode exec_mode_of(const std::string& m) {
  if (m == "hybrid") return ExecMode::kInterleaved;
  ExecMode mode = ExecMode::kSequential;
  (void)parse_exec_mode(m, &mode);
  return mode;
}

// A name parse_name_list accepted from kMixes.
TpccMix mix_of(const std::string& m) {
  const auto at = std::find(kMixes.begin(), kMixes.end(), m);
  BRAID_ASSERT(at != kMixes.end());
  return static_cast<TpccMix>(at - kMixes.begin());
}

struct Config {
  TpccScale scale;
  std::uint32_t threads;
  double seconds;
  std::vector<std::string> mixes;
  std::vector<std::string> modes;
  std::vector<std::string> isolations;  // si | ssn
  bool declare_read_only;
  std::uint32_t repeat;
  std::vector<std::string> schedulers;
  std::uint32_t batch;
  std::string team_admission;
  std::uint32_t team_size;
  std::uint32_t team_wait;
  std::vector<std::string> orders;  // arrival | grouped (TpccTypeSource)
  std::uint32_t type_deck;          // under grouped
  std::uint64_t txns;               // per worker, instead of `seconds` (0: run for `seconds`)
  bool hybrid;
  bool rehearse;  // TpccRunConfig::rehearse
  bool delivery_hint;
  std::uint32_t suppliers;
  ChQueries ch;
  bool verify;
  std::uint64_t seed;
  std::string json;
  DbFlags db;
};

JsonObject type_json(const TpccTypeStats& t, double run_s) {
  const std::uint64_t done = t.commits + t.rollbacks;
  const double attempts = static_cast<double>(done + t.aborts);
  JsonObject o;
  o.add("txn_per_s", static_cast<double>(done) / run_s);
  o.add("commits", t.commits).add("rollbacks", t.rollbacks).add("aborts", t.aborts);
  o.add("abort_rate", attempts > 0 ? static_cast<double>(t.aborts) / attempts : 0.0);
  o.add("p50_us", t.latency.quantile(0.50) / 1000.0);
  o.add("p99_us", t.latency.quantile(0.99) / 1000.0);
  return o;
}

// Parse: the command line into a Config. Answers "" or the error to print above the usage.
std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err, {"hybrid", "verify", "rehearse"})) return err;
  cfg->scale.warehouses =
      static_cast<std::uint32_t>(flags.u64("warehouses", 16, 1, kTpccMaxWarehouses));
  cfg->scale.items = static_cast<std::uint32_t>(flags.u64("items", 100'000, 100, 100'000));
  cfg->scale.customers = static_cast<std::uint32_t>(flags.u64("customers", 3000, 10, 3000));
  cfg->threads = static_cast<std::uint32_t>(flags.u64("threads", 1, 1, 1024));
  cfg->seconds = flags.f64("seconds", 5, 0.01, 86400);
  cfg->txns = flags.u64("txns", 0, 0, std::uint64_t{1} << 40);
  const std::string mixes = flags.str("mix", "tpcc");
  if (mixes == "all") {
    cfg->mixes.assign(kMixes.begin(), kMixes.begin() + kTpccStandardMixes);
  } else {
    cfg->mixes = parse_name_list("mix", mixes, kMixes, &err);
  }
  if (err.empty())
    cfg->modes = parse_name_list("mode", flags.str("mode", "interleaved"), tpcc_modes(), &err);
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 1, 1, 1000));
  if (err.empty()) {
    cfg->isolations =
        parse_name_list("isolation", flags.str("isolation", "si"), {"si", "ssn"}, &err);
  }
  cfg->declare_read_only = flags.u64("declare-read-only", 1, 0, 1) != 0;
  if (err.empty()) {
    cfg->schedulers =
        parse_name_list("scheduler", flags.str("scheduler", "pipeline"), scheduler_names(), &err);
  }
  cfg->batch = static_cast<std::uint32_t>(flags.u64("batch", 8, 1, 64));
  std::vector<std::string> admissions;
  for (const std::string& p : scheduler_names()) {
    if (p != "team") admissions.push_back(p);
  }
  cfg->team_admission = flags.choice("team-admission", "pipeline", admissions);
  cfg->team_size = static_cast<std::uint32_t>(flags.u64("team-size", 8, 1, 64));
  cfg->team_wait = static_cast<std::uint32_t>(flags.u64("team-wait", 2, 0, 1000));
  if (err.empty()) {
    cfg->orders = parse_name_list("type-order", flags.str("type-order", "arrival"),
                                  {"arrival", "grouped"}, &err);
  }
  cfg->type_deck =
      static_cast<std::uint32_t>(flags.u64("type-deck", 256, 1, TpccTypeSource::kMaxDeck));
  cfg->hybrid = flags.u64("hybrid", 0, 0, 1) != 0;
  cfg->rehearse = flags.u64("rehearse", 0, 0, 1) != 0;
  cfg->delivery_hint = flags.u64("delivery-hint", 1, 0, 1) != 0;
  cfg->suppliers = static_cast<std::uint32_t>(flags.u64("suppliers", 100, 1, 10000));
  const std::string ch = flags.choice("ch-query", "q2", {"q2", "q1", "both"});
  cfg->ch = ch == "q1" ? ChQueries::kQ1 : ch == "both" ? ChQueries::kBoth : ChQueries::kQ2;
  cfg->verify = flags.u64("verify", 0, 0, 1) != 0;
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  cfg->db = DbFlags::parse(flags);
  if (!err.empty() || !flags.finish(&err)) return err;
  if (cfg->rehearse) {
    for (const std::string& m : cfg->modes) {
      if (m != "sequential" && m != "prefetch") {
        return "--rehearse runs only with --mode sequential or prefetch (a rehearsal and its "
               "timed run must not interleave with other transactions), not " +
               m;
      }
    }
  }
  if (cfg->scale.warehouses < cfg->threads) {
    return "--warehouses " + std::to_string(cfg->scale.warehouses) + " is fewer than --threads " +
           std::to_string(cfg->threads) + " (every worker needs a home warehouse)";
  }
  return "";
}

// What every run of one invocation shares: the loaded database and the figures of its load.
struct Setup {
  std::unique_ptr<Database> db;
  TpccTables tables;
  std::uint64_t records = 0;
  double load_s = 0;
  std::uint64_t verified = 0;  // consistency checks passed so far (--verify)
};

// Load: opens the database and loads the nine tables. Answers 0 or the exit code.
int load_database(const Config& cfg, const Options& options, Setup* s) {
  s->db = open_bench_db(options);
  if (s->db == nullptr) return 1;
  const auto load_start = Clock::now();
  std::atomic<std::uint64_t> warehouses{0};
  Status st;
  {
    Progress progress("loading", "warehouses", &warehouses, cfg.scale.warehouses);
    st = tpcc_load(*s->db, cfg.scale, cfg.threads, cfg.seed, &s->tables, &s->records, &warehouses);
  }
  if (!st.is_ok()) {
    std::fprintf(stderr, "braid-bench: tpcc load failed: %s\n", st.to_string().c_str());
    return 1;
  }
  s->load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
  return 0;
}

void print_header(const Config& cfg, const Setup& s) {
  std::string schedulers;
  for (const std::string& p : cfg.schedulers) schedulers += (schedulers.empty() ? "" : ",") + p;
  std::printf("braid-bench tpcc: %u warehouse%s, %u thread%s, scheduler %s, batch %u%s%s\n",
              cfg.scale.warehouses, cfg.scale.warehouses == 1 ? "" : "s", cfg.threads,
              cfg.threads == 1 ? "" : "s", schedulers.c_str(), cfg.batch,
              cfg.hybrid ? ", hybrid (multi_get)" : "",
              cfg.rehearse ? ", rehearsed (each transaction timed on its second run)" : "");
  std::printf("  load: %s rows in %.2f s (%.0f rows/s)\n", with_commas(s.records).c_str(), s.load_s,
              static_cast<double>(s.records) / s.load_s);
  if (!cfg.db.dir.empty()) {
    const DurabilityStats ds = s.db->durability_stats();
    std::printf("  durability: %s in %s, commit %s\n", ds.io_backend.c_str(), cfg.db.dir.c_str(),
                cfg.db.commit.c_str());
  }
}

// --verify: TPC-C's consistency conditions 1-4 over the whole database. False (after printing
// why) on a violation.
bool verify(const Config& cfg, Setup* s, const std::string& when) {
  if (!cfg.verify) return true;
  std::uint64_t checked = 0;
  if (Status st = tpcc_verify(*s->db, s->tables, cfg.scale, &checked); !st.is_ok()) {
    std::fprintf(stderr, "braid-bench tpcc: verify %s: %s\n", when.c_str(), st.to_string().c_str());
    return false;
  }
  s->verified += checked;
  return true;
}

// A column of the report: a mode under one scheduler and one isolation level.
struct Variant {
  std::string mode;
  std::string scheduler;
  Isolation iso;
  std::string order;  // TpccTypeSource: arrival | grouped
  std::string label;  // mode, then /scheduler, /isolation and /order where a list offered a
                      // choice
};

// One run's measurements beyond TpccResult: what the log did meanwhile.
struct RunFigures {
  double time_s = 0;  // what the rates divide by: the run's time, or under --rehearse txn_s
  double tps = 0;
  double log_mb_s = 0;
  double syncs_s = 0;
  std::uint64_t checkpoints = 0;
  ColdFigures cold;
  double cold_misses_per_txn = 0;
  AbortCauses aborts;
};

// Run: one mix in one mode for cfg.seconds.
Status run_one(const Config& cfg, Setup* s, const std::string& mix, const Variant& v,
               std::uint64_t run_seed, TpccRunConfig* run, TpccResult* r, RunFigures* f) {
  const std::string& mode = v.mode;
  const Isolation iso = v.iso;
  run->isolation = iso;
  run->declare_read_only = cfg.declare_read_only;
  run->mix = mix_of(mix);
  run->hybrid = cfg.hybrid || mode == "hybrid";
  run->suppliers = cfg.suppliers;
  run->ch = cfg.ch;
  run->delivery_hint = cfg.delivery_hint;
  run->exec.mode = exec_mode_of(mode);
  (void)parse_scheduler(v.scheduler, &run->exec.scheduler);  // parse_name_list checked it
  run->exec.batch = cfg.batch;
  (void)parse_scheduler(cfg.team_admission, &run->exec.team_admission);  // a name it accepted
  run->exec.team_size = cfg.team_size;
  run->exec.team_wait = cfg.team_wait;
  run->exec.seed = cfg.seed;
  run->seconds = cfg.seconds;
  run->max_txns_per_worker = cfg.txns;
  run->rehearse = cfg.rehearse;
  run->type_deck = v.order == "grouped" ? cfg.type_deck : 0;
  run->seed = run_seed;
  const DurabilityStats before = s->db->durability_stats();
  const DatabaseStats sbefore = s->db->stats();
  profile_begin();
  Status st = tpcc_run(*s->db, s->tables, cfg.scale, *run, r);
  profile_end((mix + "/" + v.label).c_str());
  if (!st.is_ok()) return st;
  const DurabilityStats after = s->db->durability_stats();
  const DatabaseStats safter = s->db->stats();
  f->cold = ColdFigures::of(sbefore, safter, r->run_s);
  f->aborts = AbortCauses::of(sbefore, safter);
  const std::uint64_t misses =
      (safter.cold_reads - sbefore.cold_reads) + (safter.cold_read_joins - sbefore.cold_read_joins);
  const std::uint64_t txns = r->completed() + r->aborts();
  f->cold_misses_per_txn = txns == 0 ? 0 : static_cast<double>(misses) / static_cast<double>(txns);
  f->time_s = cfg.rehearse ? r->txn_s : r->run_s;
  f->tps = static_cast<double>(r->completed()) / f->time_s;
  f->log_mb_s = static_cast<double>(after.log_bytes - before.log_bytes) / 1e6 / r->run_s;
  f->syncs_s = static_cast<double>(after.log_flushes - before.log_flushes) / r->run_s;
  f->checkpoints = after.checkpoints - before.checkpoints;
  return Status::ok();
}

void print_mix_header(const Config& cfg, const std::string& mix, std::uint32_t rep) {
  std::printf("  %s%s:\n  %-20s %11s %10s %10s %9s %9s %8s   %s\n", mix.c_str(),
              cfg.repeat > 1 ? (" (round " + std::to_string(rep + 1) + ")").c_str() : "", "mode",
              "txn_per_s", "NewOrd/min", "abort_rate", "p50_us", "p99_us", "vs_seq",
              "per type: txn/s (abort rate)");
}

// Report, per run: its table row and its JSON line. `seq`: this round's sequential txn/s for
// the mix, or 0 before sequential ran. Answers "" or the error of appending the JSON line.
std::string report_run(const Config& cfg, const Setup& s, const std::string& mix, const Variant& v,
                       std::uint32_t rep, const TpccRunConfig& run, const TpccResult& r,
                       const RunFigures& f, double seq) {
  const std::string& mode = v.mode;
  const std::string& label = v.label;
  const double attempts = static_cast<double>(r.completed() + r.aborts());
  const double abort_rate = attempts > 0 ? static_cast<double>(r.aborts()) / attempts : 0;
  Histogram all;
  for (const auto& t : r.type) all.merge(t.latency);
  const double no_per_min =
      60.0 * static_cast<double>(r.type[kNewOrder].commits + r.type[kNewOrder].rollbacks) /
      f.time_s;
  char vs[32] = "-";
  if (seq > 0) std::snprintf(vs, sizeof vs, "%.2fx", f.tps / seq);
  std::string per_type;
  for (int k = 0; k < kTpccTypes; ++k) {
    const TpccTypeStats& t = r.type[k];
    const std::uint64_t done = t.commits + t.rollbacks;
    if (done + t.aborts == 0) continue;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s %.0f (%.3f)  ", type_name(static_cast<TpccType>(k)),
                  static_cast<double>(done) / f.time_s,
                  static_cast<double>(t.aborts) / static_cast<double>(done + t.aborts));
    per_type += buf;
  }
  std::printf("  %-20s %11.0f %10.0f %10.4f %9.1f %9.1f %8s   %s\n",
              (label + (cfg.hybrid && mode != "hybrid" ? "+mg" : "")).c_str(), f.tps, no_per_min,
              abort_rate, all.quantile(0.5) / 1000.0, all.quantile(0.99) / 1000.0, vs,
              per_type.c_str());
  if (!cfg.db.dir.empty()) {
    std::printf("  %-12s log %.1f MB/s, %.0f syncs/s, %s checkpoint%s during the run\n", "",
                f.log_mb_s, f.syncs_s, with_commas(f.checkpoints).c_str(),
                f.checkpoints == 1 ? "" : "s");
  }
  if (cfg.db.memory_budget_mib != 0) {
    std::printf(
        "  %-12s hit ratio %.4f, %.2f cold misses/txn, %.0f cold reads/s (%.1f MB/s), io depth "
        "%.1f\n",
        "", f.cold.hit_ratio, f.cold_misses_per_txn, f.cold.cold_reads_per_s,
        f.cold.cold_read_bytes_per_s / 1e6, f.cold.io_depth);
  }
  std::fflush(stdout);
  if (cfg.json == "none") return "";

  const DatabaseStats st = s.db->stats();
  JsonObject o;
  o.add("bench", "tpcc").add("time", iso_time()).add("mix", mix);
  o.add("mode", std::string(mode == "hybrid" ? "interleaved" : mode));
  o.add("hybrid", run.hybrid ? 1 : 0)
      .add("variant", mode + (run.hybrid && mode != "hybrid" ? "+hybrid" : ""));
  o.add("scheduler", v.scheduler).add("batch", cfg.batch);
  if (v.scheduler == "team") {
    o.add("team_admission", cfg.team_admission).add("team_size", cfg.team_size);
    o.add("team_wait", cfg.team_wait);
    // STEPS Table 4's figure: transactions per team resumed.
    o.add("mean_team_size", r.exec.teams == 0 ? 0.0
                                              : static_cast<double>(r.exec.team_members) /
                                                    static_cast<double>(r.exec.teams));
    o.add("max_passed_over", r.exec.max_passed_over);
  }
  o.add("isolation", std::string(to_string(run.isolation)));
  o.add("type_order", v.order).add("type_deck", run.type_deck);
  o.add("declare_read_only", run.declare_read_only ? 1 : 0);
  f.aborts.add_to(o, r.completed() + r.aborts());
  o.add("warehouses", cfg.scale.warehouses).add("items", cfg.scale.items);
  o.add("customers", cfg.scale.customers).add("suppliers", cfg.suppliers);
  o.add("ch_query", cfg.ch == ChQueries::kQ1 ? "q1" : cfg.ch == ChQueries::kBoth ? "both" : "q2");
  o.add("records", s.records).add("threads", cfg.threads).add("seconds", cfg.seconds);
  o.add("commit", cfg.db.dir.empty() ? std::string("none") : cfg.db.commit);
  o.add("log_flusher", cfg.db.log_flusher).add("sq_poll_cpu", cfg.db.sq_poll_cpu);
  o.add("prefault_mib", cfg.db.prefault_mib).add("prefault_index_mib", cfg.db.prefault_index_mib);
  o.add("l2_kib", cfg.db.l2_kib);
  if (!cfg.db.dir.empty()) {
    o.add("log_mb_per_s", f.log_mb_s).add("syncs_per_s", f.syncs_s);
    o.add("checkpoints", f.checkpoints);
  }
  o.add("seed", cfg.seed).add("rep", rep).add("repeat", cfg.repeat);
  o.add("txn_per_s", f.tps).add("new_order_per_min", no_per_min);
  o.add("abort_rate", abort_rate).add("completed", r.completed());
  o.add("aborts", r.aborts()).add("run_s", r.run_s).add("load_s", s.load_s);
  o.add("rehearse", run.rehearse ? 1 : 0).add("txn_s", r.txn_s);
  o.add("delivery_hint", run.delivery_hint ? 1 : 0);
  o.add("p50_us", all.quantile(0.5) / 1000.0).add("p99_us", all.quantile(0.99) / 1000.0);
  o.add("suspends_per_txn", r.exec.transactions > 0 ? static_cast<double>(r.exec.suspends) /
                                                          static_cast<double>(r.exec.transactions)
                                                    : 0.0);
  o.add("auto_batch", r.exec.auto_batch).add("auto_decisions", r.exec.auto_decisions);
  JsonObject types;
  for (int k = 0; k < kTpccTypes; ++k) {
    if (r.type[k].commits + r.type[k].rollbacks + r.type[k].aborts == 0) continue;
    types.add_object(type_name(static_cast<TpccType>(k)), type_json(r.type[k], f.time_s));
  }
  o.add_object("types", types);
  o.add_bool("verified", cfg.verify);
  o.add("peak_rss_bytes", peak_rss_bytes()).add("live_versions", st.live_versions);
  o.add("peak_rss_mib", peak_rss_mib());
  o.add("memory_budget_mib", cfg.db.memory_budget_mib);
  o.add("hit_ratio", f.cold.hit_ratio).add("cold_misses_per_txn", f.cold_misses_per_txn);
  o.add("cold_reads_per_s", f.cold.cold_reads_per_s).add("io_depth", f.cold.io_depth);
  o.add("cold_read_bytes_per_s", f.cold.cold_read_bytes_per_s);
  o.add("live_version_bytes", st.live_version_bytes);
  o.add("index_frame_bytes", st.index_frame_bytes);
  o.add("index_leaves_stored", st.index_leaves_stored);
  o.add("secondary_leaves_stored", st.secondary_leaves_stored);
  o.add("index_leaf_loads", st.index_leaf_loads);
  o.add("index_leaf_loads_async", st.index_leaf_loads_async);
  o.add("index_inner_nodes_stored", st.index_inner_nodes_stored);
  o.add("index_inner_loads", st.index_inner_loads);
  o.add("version_heap_bytes", st.version_heap_bytes);
  o.add("version_bytes_released", st.version_bytes_released);
  o.add_object("machine", machine_description());
  return append_json_line(cfg.json, o);
}

// Report, at the end: per mix the spread over rounds and the ratios between modes; memory;
// what --verify checked.
void report_summary(const Config& cfg, const Setup& s, const std::vector<std::string>& labels,
                    const std::vector<std::vector<std::vector<double>>>& rates) {
  if (cfg.repeat > 1 || labels.size() > 1) {
    for (std::size_t xi = 0; xi < cfg.mixes.size(); ++xi) {
      std::printf("  %s summary:\n", cfg.mixes[xi].c_str());
      print_rounds_summary(labels, rates[xi], "txn/s");
    }
  }
  const DatabaseStats st = s.db->stats();
  std::printf("  peak RSS %.1f MiB, %s live versions", peak_rss_mib(),
              with_commas(st.live_versions).c_str());
  if (st.index_leaf_evictions != 0) {
    std::printf(" (%s leaves on storage, %s of them secondary; %s leaf loads, %s through a ring)",
                with_commas(st.index_leaves_stored).c_str(),
                with_commas(st.secondary_leaves_stored).c_str(),
                with_commas(st.index_leaf_loads).c_str(),
                with_commas(st.index_leaf_loads_async).c_str());
  }
  if (st.index_inner_evictions != 0) {
    std::printf(" (%s inner nodes on storage; %s inner loads)",
                with_commas(st.index_inner_nodes_stored).c_str(),
                with_commas(st.index_inner_loads).c_str());
  }
  std::printf("\n");
  print_memory_line(st);
  if (cfg.verify) {
    std::printf("  verify: TPC-C consistency conditions 1-4 hold (%s checks)\n",
                with_commas(s.verified).c_str());
  }
}

}  // namespace

int tpcc_main(int argc, char** argv, int first) {
  Config cfg{};
  std::string err = parse_config(argc, argv, first, &cfg);
  Options options;
  if (err.empty()) err = bench_options(cfg.threads, cfg.batch, cfg.db, &options);
  if (!err.empty()) {
    return usage_error("tpcc", err, tpcc_usage());
  }
  Setup s;
  if (int rc = load_database(cfg, options, &s); rc != 0) return rc;
  print_header(cfg, s);
  if (!verify(cfg, &s, "after the load")) return 1;

  // Run: every mix in every mode once per round, round-robin. rates[mix][mode]: completed
  // txn/s per round.
  // Each mode under each scheduler, isolation and type order (labelled mode/team/ssn/grouped
  // where there is a choice), side by side.
  std::vector<Variant> variants;
  std::vector<std::string> labels;
  for (const std::string& mode : cfg.modes) {
    for (const std::string& sched : cfg.schedulers) {
      for (const std::string& name : cfg.isolations) {
        for (const std::string& order : cfg.orders) {
          Variant v{mode, sched, Isolation::kSnapshot, order, mode};
          (void)parse_isolation(name, &v.iso);  // a name the parser accepted
          if (cfg.schedulers.size() > 1) v.label += "/" + sched;
          if (cfg.isolations.size() > 1 || v.iso != Isolation::kSnapshot) v.label += "/" + name;
          if (cfg.orders.size() > 1 || order != "arrival") v.label += "/" + order;
          variants.push_back(v);
          labels.push_back(v.label);
        }
      }
    }
  }
  std::vector<std::vector<std::vector<double>>> rates(
      cfg.mixes.size(), std::vector<std::vector<double>>(variants.size()));
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    for (std::size_t xi = 0; xi < cfg.mixes.size(); ++xi) {
      const std::string& mix = cfg.mixes[xi];
      print_mix_header(cfg, mix, rep);
      double seq = 0;  // this round's sequential figure, once it ran
      for (std::size_t mi = 0; mi < variants.size(); ++mi) {
        const std::string& mode = variants[mi].mode;
        TpccRunConfig run;
        TpccResult r;
        RunFigures f;
        if (Status st =
                run_one(cfg, &s, mix, variants[mi], cfg.seed * 7919 + rep * 131 + mi, &run, &r, &f);
            !st.is_ok()) {
          std::fprintf(stderr, "braid-bench: tpcc run failed: %s\n", st.to_string().c_str());
          return 1;
        }
        rates[xi][mi].push_back(f.tps);
        if (mode == "sequential") seq = f.tps;
        if (r.errors() != 0) {
          std::fprintf(stderr, "braid-bench tpcc: %s transactions failed (first: %s)\n",
                       with_commas(r.errors()).c_str(), r.first_error.c_str());
          return 1;
        }
        if (std::string e = report_run(cfg, s, mix, variants[mi], rep, run, r, f, seq);
            !e.empty()) {
          std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
          return 1;
        }
        if (!verify(cfg, &s, "after " + mix + " " + variants[mi].label)) return 1;
      }
    }
  }
  report_summary(cfg, s, labels, rates);
  return 0;
}

}  // namespace braid::bench
