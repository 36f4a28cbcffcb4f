// braid-bench steps: STEPS' microbenchmark (Harizopoulos & Ailamaki, CIDR 2005, §3.2, Fig. 5).
// N transactions each fetch one record through the index (begin, get, commit), three ways:
//   team        interleaved under the `team` scheduler, batch N: the N run as one team, each
//               resumed after the others at every suspension;
//   serial      the same interleaved code, batch 1: the N one after another (STEPS' "Shore");
//   sequential  the plain-call mode, one after another (the engine's fastest serial code).
// Each cold (the caches start empty; STEPS flushed between successive fetches, which `serial`
// and `sequential` do too: every transaction starts cold) and warm (the same N fetches ran just
// before). What it measures is L1-I misses, under `valgrind --tool=callgrind` with the marks of
// bench/profile_marks.h (scripts/icache.sh): each (way, cache, N) is one dump labelled
// steps/<way>/<cache>/<N>. Run natively it reports the wall time per fetch, which at these
// sizes is mostly the run's start and end: a smoke test, not a figure.
#include "steps.h"
#include "command.h"

#include <braid/braid.h>
#include <braid/tx.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_db.h"
#include "flags.h"
#include "profile_marks.h"
#include "report.h"
#include "util/random.h"
#include "ycsb/ycsb.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::uint64_t records;
  std::vector<std::uint32_t> members;
  std::vector<std::string> ways;
  std::uint32_t repeat;
  std::uint64_t seed;
  std::string json;
  DbFlags db;
};

const std::vector<std::string> kWays = {"team", "serial", "sequential"};

// N single-get transactions on fixed keys; `flush_between` empties the simulated caches
// before every transaction after the first (cold serial runs).
class FetchGenerator : public TxnGenerator {
 public:
  FetchGenerator(Table& table, const std::vector<std::uint64_t>& keys, bool flush_between)
      : table_(table), keys_(keys), flush_between_(flush_between) {}
  bool next(Tx& tx, Task<Status>* task) override {
    if (issued_ == keys_.size()) return false;
    if (flush_between_ && issued_ != 0) profile_flush_caches();
    *task = fetch(tx, keys_[issued_++]);
    return true;
  }
  void finished(const Status& s, std::uint64_t) override {
    if (s.is_ok()) {
      ++commits;
    } else if (first_error.empty()) {
      first_error = s.to_string();
    }
  }
  std::uint64_t commits = 0;
  std::uint64_t found = 0;
  std::string first_error;

 private:
  Task<Status> fetch(Tx& tx, std::uint64_t k) {
    char key[8];
    make_key(k, 8, key);
    Result<std::string_view> v = co_await tx.get(table_, std::string_view(key, 8));
    if (v.is_ok()) ++found;
    co_return v.is_ok() ? Status::ok() : v.status();
  }
  Table& table_;
  const std::vector<std::uint64_t>& keys_;
  const bool flush_between_;
  std::size_t issued_ = 0;
};

ExecOptions exec_for(const std::string& way, std::uint32_t n) {
  ExecOptions e;
  e.mode = way == "sequential" ? ExecMode::kSequential : ExecMode::kInterleaved;
  e.scheduler = way == "team" ? SchedulerPolicy::kTeam : SchedulerPolicy::kPipeline;
  e.batch = way == "team" ? n : 1;
  e.team_size = n;  // one team of all N
  return e;
}

// One measured run of N fetches; answers "" or the error.
std::string run_once(Database& db, Table& table, const std::vector<std::uint64_t>& keys,
                     const std::string& way, bool cold, double* ns_per_fetch) {
  const auto n = static_cast<std::uint32_t>(keys.size());
  const ExecOptions e = exec_for(way, n);
  FetchGenerator warmup(table, keys, false);
  FetchGenerator gen(table, keys, cold && way != "team");
  profile_begin();  // the simulated caches start empty
  if (!cold) {
    TxnGenerator* const w[] = {&warmup};
    if (Status s = db.run(w, e); !s.is_ok()) return s.to_string();
    profile_zero();  // counts from here; the caches stay warm
  }
  const auto start = Clock::now();
  TxnGenerator* const g[] = {&gen};
  Status s = db.run(g, e);
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  profile_end(("steps/" + way + "/" + (cold ? "cold" : "warm") + "/" + std::to_string(n)).c_str());
  if (!s.is_ok()) return s.to_string();
  if (!gen.first_error.empty()) return gen.first_error;
  if (gen.commits != n || gen.found != n) {
    return "steps: " + std::to_string(gen.found) + " of " + std::to_string(n) +
           " fetches found their record";
  }
  *ns_per_fetch = ns / n;
  return "";
}

std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err)) return err;
  cfg->records = flags.u64("records", 100'000, 16, std::uint64_t{1} << 34);
  for (std::uint64_t m : flags.u64_list("members", {1, 2, 4, 8, 12, 16}, 1, 16)) {
    cfg->members.push_back(static_cast<std::uint32_t>(m));
  }
  cfg->ways = parse_name_list("way", flags.str("way", "all"), kWays, &err);
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 1, 1, 1000));
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  cfg->db = DbFlags::parse(flags);
  if (!err.empty() || !flags.finish(&err)) return err;
  return "";
}

}  // namespace

const char* steps_usage() {
  return R"(usage: braid-bench steps [flags]

STEPS' microbenchmark (CIDR 2005, Fig. 5): N transactions each fetch one record by key
(begin, index fetch, commit), as one team (interleaved, team scheduler, batch N), one after
another on the same interleaved code (serial), and one after another in plain calls
(sequential); with cold and with warm caches. The figure it exists for is L1-I misses per
additional member: run it under callgrind with scripts/icache.sh (one dump per way, cache and
N). Natively it prints the wall time per fetch, which at these sizes is mostly the run's start.

  --records N        records loaded, 8-byte keys and values (default 100000)
  --members N[,N]    team sizes N, at most 16 (default 1,2,4,8,12,16)
  --way W[,W]        team | serial | sequential | all (default all)
  --repeat R         rounds (default 1)
  --seed S           picks the keys (default 1)
  --reserve-gib G    address space reserved for versions (small under valgrind)
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl; 'none')
)";
}

int steps_main(int argc, char** argv, int first) {
  Config cfg{};
  Options options;
  std::string err = parse_config(argc, argv, first, &cfg);
  if (err.empty()) err = bench_options(1, 16, cfg.db, &options);
  if (!err.empty()) {
    return usage_error("steps", err, steps_usage());
  }
  std::unique_ptr<Database> db = open_bench_db(options);
  if (db == nullptr) return 1;
  Result<Table*> table = db->create_table("steps");
  if (!table.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s\n", table.status().to_string().c_str());
    return 1;
  }
  double load_s = 0;
  if (Status s = ycsb_load(*db, **table, cfg.records, 8, 8, 1, &load_s); !s.is_ok()) {
    std::fprintf(stderr, "braid-bench: load failed: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("braid-bench steps: %s records; one index fetch per transaction\n",
              with_commas(cfg.records).c_str());
  std::printf("  %-11s %-5s %3s %12s\n", "way", "cache", "N", "ns/fetch");
  util::Rng rng(cfg.seed);
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    for (const std::uint32_t n : cfg.members) {
      std::vector<std::uint64_t> keys(n);
      for (auto& k : keys) k = rng.uniform(cfg.records);
      for (const std::string& way : cfg.ways) {
        for (const bool cold : {true, false}) {
          double ns = 0;
          if (std::string e = run_once(*db, **table, keys, way, cold, &ns); !e.empty()) {
            std::fprintf(stderr, "braid-bench steps: %s %s N=%u: %s\n", way.c_str(),
                         cold ? "cold" : "warm", n, e.c_str());
            return 1;
          }
          std::printf("  %-11s %-5s %3u %12.0f\n", way.c_str(), cold ? "cold" : "warm", n, ns);
          if (cfg.json == "none") continue;
          JsonObject o;
          o.add("bench", "steps").add("time", iso_time()).add("way", way);
          o.add("cache", std::string(cold ? "cold" : "warm")).add("members", n);
          o.add("ns_per_fetch", ns).add("records", cfg.records).add("rep", rep);
          o.add("seed", cfg.seed);
          o.add_object("machine", machine_description());
          if (std::string e = append_json_line(cfg.json, o); !e.empty()) {
            std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
            return 1;
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace braid::bench
