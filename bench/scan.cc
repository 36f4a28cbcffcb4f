// braid-bench scan: Umbra's analytical micro-benchmarks (§3, Figs. 5, 6 and 8) at this
// machine's scale, on Database::scan_morsels. A lineitem-like table of fixed-size rows and a
// part-like table are loaded straight to storage; --cached-pct of them is then read into
// memory and both tables stop caching reads (Database::set_cache_reads), so every round meets
// the same share of cold records, each a read of the device.
//
//   q1   TPC-H Q1's shape: every lineitem row filtered on its ship date and folded into a
//        per-worker aggregate by (return flag, line status); the cache holds a random
//        --cached-pct of the table in pages of --page-rows rows (Umbra caches pages: 64 KiB
//        in its Figs. 5 and 6, so a page here is 64 KiB of keys and values by default).
//   q14  TPC-H Q14's probe side: lineitem (all in memory, as in Umbra) filtered to one month,
//        each row's part looked up by key (an index-nested-loop join, Tx::multi_get batches
//        from each morsel); --cached-pct of the part records are in memory.
//
// --io async runs the morsels on workers in ExecMode::kInterleaved, --io-depth morsels in
// flight per worker, each scan reading cold records ahead; --io sync runs them in
// kSequential, one morsel per worker at a time, each cold record a blocking read (Umbra's
// synchronous baseline: one read in flight per thread, more threads for more).
#include "scan.h"
#include "command.h"

#include <braid/braid.h>
#include <braid/tx.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_db.h"
#include "flags.h"
#include "report.h"
#include "util/random.h"
#include "ycsb/ycsb.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kKeyBytes = 8;
constexpr std::uint32_t kShipDays = 2526;            // 1992-01-02 .. 1998-12-01
constexpr std::uint32_t kQ1Cutoff = kShipDays - 90;  // "1998-12-01 - 90 days"
constexpr std::uint32_t kQ14First = 1338;            // 1995-09-01
constexpr std::uint32_t kTypes = 150;                // TPC-H's part types ...
constexpr std::uint32_t kPromoTypes = 25;            // ... of which "PROMO%"
constexpr std::size_t kProbeBatch = 16;              // one multi_get's keys (the engine's width)
constexpr int kGroups = 6;                           // return flag (A, N, R) x line status (F, O)

// A lineitem row's fields, at the front of its value (the rest is padding to --row-bytes).
struct Row {
  std::uint32_t partkey;
  std::uint32_t quantity;
  std::uint64_t price_cents;  // extended price
  std::uint16_t discount;     // hundredths
  std::uint16_t tax;          // hundredths
  std::uint32_t shipdate;     // days since 1992-01-01
  std::uint8_t returnflag;    // 0 A, 1 N, 2 R
  std::uint8_t linestatus;    // 0 F, 1 O
};
constexpr std::uint32_t kRowFields = 26;

Row row_of(std::uint64_t i, std::uint64_t parts) {
  util::Rng rng(util::mix64(i + 0x51ed));
  Row r{};
  r.partkey = static_cast<std::uint32_t>(rng.uniform(parts));
  r.quantity = 1 + static_cast<std::uint32_t>(rng.uniform(50));
  r.price_cents = r.quantity * (90000 + rng.uniform(10000000)) / 100;
  r.discount = static_cast<std::uint16_t>(rng.uniform(11));
  r.tax = static_cast<std::uint16_t>(rng.uniform(9));
  r.shipdate = static_cast<std::uint32_t>(rng.uniform(kShipDays));
  // TPC-H: lines shipped before 1995-06-17 are returned (R) or accepted (A) and finished (F);
  // later ones are not returned (N), and open (O) past that date.
  const bool old = r.shipdate < 1263;
  r.returnflag = old ? static_cast<std::uint8_t>(rng.uniform(2) == 0 ? 0 : 2) : 1;
  r.linestatus = r.shipdate < 1270 ? 0 : 1;
  return r;
}

void encode_row(const Row& r, char* out) {
  char* p = out;
  const auto put = [&p](const auto& x) {
    std::memcpy(p, &x, sizeof x);
    p += sizeof x;
  };
  put(r.partkey);
  put(r.quantity);
  put(r.price_cents);
  put(r.discount);
  put(r.tax);
  put(r.shipdate);
  put(r.returnflag);
  put(r.linestatus);
}

Row decode_row(std::string_view v) {
  Row r{};
  const char* p = v.data();
  const auto get = [&p](auto* x) {
    std::memcpy(x, p, sizeof *x);
    p += sizeof *x;
  };
  get(&r.partkey);
  get(&r.quantity);
  get(&r.price_cents);
  get(&r.discount);
  get(&r.tax);
  get(&r.shipdate);
  get(&r.returnflag);
  get(&r.linestatus);
  return r;
}

bool promo_part(std::uint64_t partkey) {
  return util::mix64(partkey + 0x9a27) % kTypes < kPromoTypes;
}

struct Config {
  std::vector<std::string> queries;  // q1, q14
  std::string io;                    // sync | async
  std::uint64_t rows;
  std::uint64_t parts;
  std::uint32_t row_bytes;
  std::uint32_t part_bytes;
  std::uint32_t cached_pct;
  std::uint32_t page_rows;
  std::uint32_t q14_days;
  std::uint32_t threads;
  std::uint32_t io_depth;
  std::uint32_t morsels_per_worker;
  std::uint32_t repeat;
  std::uint64_t seed;
  std::string json;
  DbFlags db;
};

// Whether row `i` (or part `i`) is among the cached ones: a random --cached-pct of the pages.
bool cached(std::uint64_t i, std::uint32_t page_rows, std::uint32_t pct, std::uint64_t seed) {
  return util::mix64((i / page_rows) ^ (seed * 0x9e3779b97f4a7c15ull)) % 10000 < pct * 100ull;
}

// Warms a table: multi_gets of the keys `wanted` picks, on every worker, interleaved (fast
// whatever --io: the warm-up is not measured).
class WarmGenerator : public TxnGenerator {
 public:
  WarmGenerator(Table& t, std::uint64_t from, std::uint64_t to,
                std::function<bool(std::uint64_t)> wanted, std::atomic<std::uint64_t>* done,
                Outcomes* out)
      : t_(t), next_(from), to_(to), wanted_(std::move(wanted)), done_(done), out_(out) {}
  bool next(Tx& tx, Task<Status>* task) override {
    std::vector<std::uint64_t> ids;
    while (next_ < to_ && ids.size() < kProbeBatch) {
      if (wanted_(next_)) ids.push_back(next_);
      ++next_;
    }
    if (ids.empty()) return false;
    *task = body(tx, std::move(ids));
    return true;
  }
  void finished(const Status& s, std::uint64_t) override { out_->count(s); }

 private:
  Task<Status> body(Tx& tx, std::vector<std::uint64_t> ids) {
    std::vector<char> keys(ids.size() * kKeyBytes);
    std::vector<std::string_view> views;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      make_key(ids[i], kKeyBytes, keys.data() + i * kKeyBytes);
      views.emplace_back(keys.data() + i * kKeyBytes, kKeyBytes);
    }
    std::vector<GetResult> results(ids.size());
    if (Status s = co_await tx.multi_get(t_, views, results); !s.is_ok()) co_return s;
    for (const GetResult& r : results) {
      if (!r.is_ok()) co_return Status::corruption("warm-up: a loaded record is missing");
    }
    done_->fetch_add(ids.size(), std::memory_order_relaxed);
    co_return Status::ok();
  }
  Table& t_;
  std::uint64_t next_;
  const std::uint64_t to_;
  std::function<bool(std::uint64_t)> wanted_;
  std::atomic<std::uint64_t>* done_;
  Outcomes* out_;
};

Status warm(Database& db, Table& t, std::uint64_t n,
            const std::function<bool(std::uint64_t)>& wanted, std::uint32_t threads,
            const char* label) {
  std::atomic<std::uint64_t> done{0};
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < n; ++i) total += wanted(i) ? 1 : 0;
  std::vector<Outcomes> outcomes(threads);
  std::vector<std::unique_ptr<WarmGenerator>> gens;
  std::vector<TxnGenerator*> ptrs;
  for (std::uint32_t w = 0; w < threads; ++w) {
    gens.push_back(std::make_unique<WarmGenerator>(t, n * w / threads, n * (w + 1) / threads,
                                                   wanted, &done, &outcomes[w]));
    ptrs.push_back(gens.back().get());
  }
  ExecOptions e;
  e.mode = ExecMode::kInterleaved;
  e.batch = std::min<std::uint32_t>(16, db.options().slots_per_worker);
  Status s;
  {
    Progress progress(label, "records", &done, total);
    s = db.run(ptrs, e);
  }
  for (const Outcomes& o : outcomes) {
    if (s.is_ok() && o.errors != 0) s = Status::io_error("warm-up: " + o.first_error);
  }
  return s;
}

// One query's figures over one round.
struct Round {
  double seconds = 0;
  std::uint64_t rows = 0;     // lineitem rows the query read
  std::uint64_t matches = 0;  // rows that passed the filter
  std::uint64_t lookups = 0;  // q14: part lookups
  double iops = 0, read_mib_per_s = 0, io_depth = 0;
  std::uint64_t cold_reads = 0;     // records read back
  std::uint64_t cold_read_ios = 0;  // the storage reads that brought them
  double answer = 0;  // q1: sum of charges over every group; q14: promo revenue share (%)
};

struct Q1Agg {
  double sum_qty[kGroups] = {}, sum_base[kGroups] = {}, sum_disc[kGroups] = {},
         sum_charge[kGroups] = {};
  std::uint64_t count[kGroups] = {};
  std::uint64_t rows = 0;
};

struct Q14Agg {
  double promo = 0, total = 0;
  std::uint64_t rows = 0, matches = 0, lookups = 0;
};

// Bulk-loads rows 0..n-1 of `bytes` each straight to storage (nothing kept in memory):
// `fill(i, value)` writes row i's value.
Status load_cold(Database& db, Table& t, std::uint64_t n, std::uint32_t bytes, const char* label,
                 FunctionRef<void(std::uint64_t, char*)> fill) {
  std::atomic<std::uint64_t> done{0};
  Progress progress(label, "rows", &done, n);
  std::vector<char> value(bytes, '\0');
  char key[kKeyBytes];
  std::uint64_t i = 0;
  return db.bulk_load(t,
                      [&](std::string_view* k, std::string_view* v) {
                        if (i == n) return false;
                        make_key(i, kKeyBytes, key);
                        fill(i, value.data());
                        *k = {key, kKeyBytes};
                        *v = {value.data(), value.size()};
                        if (++i % 4096 == 0) done.store(i, std::memory_order_relaxed);
                        return true;
                      },
                      {.keep_in_memory = false});
}

// A query's morsels (parse_config left --io-depth at 1 under sync).
MorselOptions morsel_options(const Config& cfg) {
  MorselOptions mo;
  mo.io_depth = cfg.io_depth;
  mo.morsels_per_worker = cfg.morsels_per_worker;
  return mo;
}

Status run_q1(Database& db, Table& lineitem, const Config& cfg, Round* r) {
  std::vector<Q1Agg> aggs(cfg.threads);
  const MorselOptions mo = morsel_options(cfg);
  Status s = db.scan_morsels(lineitem, "", "", mo, [&](Tx& tx, Morsel m) -> Task<Status> {
    Q1Agg& a = aggs[tx.worker()];
    co_return co_await tx.scan(lineitem, m.begin, m.end, 0,
                               [&a](std::string_view, std::string_view v) {
                                 ++a.rows;
                                 const Row row = decode_row(v);
                                 if (row.shipdate > kQ1Cutoff) return true;
                                 const int g = row.returnflag * 2 + row.linestatus;
                                 const double price = static_cast<double>(row.price_cents) / 100;
                                 const double disc = price * (100 - row.discount) / 100;
                                 a.sum_qty[g] += row.quantity;
                                 a.sum_base[g] += price;
                                 a.sum_disc[g] += disc;
                                 a.sum_charge[g] += disc * (100 + row.tax) / 100;
                                 ++a.count[g];
                                 return true;
                               });
  });
  // The merge step: the workers' aggregates into one.
  Q1Agg total;
  for (const Q1Agg& a : aggs) {
    total.rows += a.rows;
    for (int g = 0; g < kGroups; ++g) {
      total.sum_qty[g] += a.sum_qty[g];
      total.sum_base[g] += a.sum_base[g];
      total.sum_disc[g] += a.sum_disc[g];
      total.sum_charge[g] += a.sum_charge[g];
      total.count[g] += a.count[g];
    }
  }
  r->rows = total.rows;
  for (int g = 0; g < kGroups; ++g) {
    r->matches += total.count[g];
    r->answer += total.sum_charge[g];
  }
  return s;
}

Status run_q14(Database& db, Table& lineitem, Table& part, const Config& cfg, Round* r) {
  std::vector<Q14Agg> aggs(cfg.threads);
  const MorselOptions mo = morsel_options(cfg);
  // TPC-H's month, or a window that wide around it (all of it: every row probes).
  const std::uint32_t q14_first =
      cfg.q14_days >= kShipDays ? 0 : std::min(kQ14First, kShipDays - cfg.q14_days);
  Status s = db.scan_morsels(lineitem, "", "", mo, [&](Tx& tx, Morsel m) -> Task<Status> {
    Q14Agg& a = aggs[tx.worker()];
    std::vector<std::uint32_t> partkeys;
    std::vector<double> revenue;
    Status st =
        co_await tx.scan(lineitem, m.begin, m.end, 0, [&](std::string_view, std::string_view v) {
          ++a.rows;
          const Row row = decode_row(v);
          if (row.shipdate < q14_first || row.shipdate >= q14_first + cfg.q14_days) return true;
          partkeys.push_back(row.partkey);
          revenue.push_back(static_cast<double>(row.price_cents) / 100 * (100 - row.discount) /
                            100);
          return true;
        });
    if (!st.is_ok()) co_return st;
    a.matches += partkeys.size();
    // The probes, a batch at a time: their descents, chain walks and cold reads interleave.
    char keys[kProbeBatch * kKeyBytes];
    std::string_view views[kProbeBatch];
    GetResult results[kProbeBatch];
    for (std::size_t i = 0; i < partkeys.size(); i += kProbeBatch) {
      const std::size_t n = std::min(kProbeBatch, partkeys.size() - i);
      for (std::size_t j = 0; j < n; ++j) {
        make_key(partkeys[i + j], kKeyBytes, keys + j * kKeyBytes);
        views[j] = {keys + j * kKeyBytes, kKeyBytes};
      }
      st = co_await tx.multi_get(part, std::span<const std::string_view>(views, n),
                                 std::span<GetResult>(results, n));
      if (!st.is_ok()) co_return st;
      for (std::size_t j = 0; j < n; ++j) {
        if (results[j].code == Code::kNotFound)
          co_return Status::corruption("q14: a part is missing");
        if (!results[j].is_ok()) co_return Status(results[j].code, "q14: a part lookup failed");
        // The part's type sits at the front of its value: "PROMO..." or another.
        if (results[j].value.starts_with("PROMO")) a.promo += revenue[i + j];
        a.total += revenue[i + j];
      }
      a.lookups += n;
    }
    co_return Status::ok();
  });
  Q14Agg total;
  for (const Q14Agg& a : aggs) {
    total.rows += a.rows;
    total.matches += a.matches;
    total.lookups += a.lookups;
    total.promo += a.promo;
    total.total += a.total;
  }
  r->rows = total.rows;
  r->matches = total.matches;
  r->lookups = total.lookups;
  r->answer = total.total == 0 ? 0 : 100 * total.promo / total.total;
  return s;
}

std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err)) return err;
  cfg->queries = parse_name_list("query", flags.str("query", "q1"), {"q1", "q14"}, &err);
  cfg->io = flags.choice("io", "async", {"sync", "async"});
  cfg->rows = flags.u64("rows", 600'000, 1, std::uint64_t{1} << 34);
  cfg->parts = flags.u64("parts", 0, 0, std::uint64_t{1} << 32);
  cfg->row_bytes = static_cast<std::uint32_t>(flags.u64("row-bytes", 112, kRowFields, 4000));
  cfg->part_bytes = static_cast<std::uint32_t>(flags.u64("part-bytes", 152, 16, 4000));
  cfg->cached_pct = static_cast<std::uint32_t>(flags.u64("cached-pct", 60, 0, 100));
  // Umbra's q1 figures (5 and 6) cache 64 KiB pages; a page of 4 KiB (Fig. 8's size, 32 rows
  // here) leaves a cold run of a few blocks between cached ones, which a device serves at its
  // IOPS rather than its bandwidth (docs/results.md, "Umbra's page").
  cfg->page_rows = static_cast<std::uint32_t>(
      flags.u64("page-rows", std::max<std::uint64_t>(1, (64u << 10) / (kKeyBytes + cfg->row_bytes)),
                1, 1 << 20));
  cfg->q14_days = static_cast<std::uint32_t>(flags.u64("q14-days", 30, 1, kShipDays));
  cfg->threads = static_cast<std::uint32_t>(flags.u64("threads", 1, 1, 256));
  cfg->io_depth = static_cast<std::uint32_t>(flags.u64("io-depth", 0, 0, kMaxMorselDepth));
  cfg->morsels_per_worker = static_cast<std::uint32_t>(
      flags.u64("morsels-per-worker", MorselOptions{}.morsels_per_worker, 1, kMaxMorselsPerWorker));
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 3, 1, 1000));
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  cfg->db = DbFlags::parse(flags);
  if (!err.empty() || !flags.finish(&err)) return err;
  if (cfg->db.dir.empty()) return "scan needs --dir (its tables are loaded to storage)";
  if (cfg->db.memory_budget_mib != 0) {
    return "scan takes no --memory-budget-mib: --cached-pct sets what is in memory";
  }
  if (cfg->queries.size() > 1) {
    return "q1 and q14 cache lineitem differently (a share of it, all of it): run each in a "
           "process of its own";
  }
  if (cfg->parts == 0) cfg->parts = std::max<std::uint64_t>(1, cfg->rows / 30);  // TPC-H's ratio
  if (cfg->io == "sync") {
    if (cfg->io_depth > 1) return "--io sync reads one record at a time: --io-depth must be 1";
    cfg->io_depth = 1;
  } else if (cfg->io_depth == 0) {
    cfg->io_depth = kDefaultMorselDepth;
  }
  return "";
}

}  // namespace

const char* scan_usage() {
  return R"(usage: braid-bench scan --dir PATH [flags]

Umbra's analytical micro-benchmarks (§3) on Database::scan_morsels: a lineitem-like table and
a part-like table loaded to storage, --cached-pct of them in memory, the rest read from the
device on every round (the tables do not cache reads).

  q1   a TPC-H-Q1-like aggregate: every lineitem row filtered on its ship date and folded by
       (return flag, line status) into per-worker aggregates merged at the end; the cached
       share is a random --cached-pct of the table's pages (--page-rows rows each)
  q14  a TPC-H-Q14-like join: lineitem (all in memory) filtered to one month, each row's part
       looked up by key from its morsel (multi_get batches); --cached-pct of the parts cached

  --dir PATH          database directory (new or empty; required)
  --query Q           q1 | q14 (default q1; one per process: they cache lineitem differently)
  --io I              async: workers in ExecMode::kInterleaved, --io-depth morsels in flight
                      each, scans reading cold records ahead; sync: ExecMode::kSequential, one
                      blocking read at a time per worker (default async)
  --threads T         workers (default 1; more than the cores oversubscribe them)
  --io-depth D        morsels in flight per worker (async: 1..64, default 16; sync: 1)
  --cached-pct P      percent of the records in memory (default 60, Umbra's)
  --rows N            lineitem rows (default 600000, TPC-H scale factor 0.1)
  --parts N           part rows (default rows / 30)
  --row-bytes B       lineitem value size (default 112)
  --part-bytes B      part value size (default 152)
  --page-rows N       q1: rows cached or not together (default: a 64 KiB page of keys and
                      values, Umbra's page in Figs. 5 and 6: 546 rows of 112 bytes)
  --q14-days D        q14's ship-date window (default 30, TPC-H's month: 1.2 % of the rows
                      probe; 2526: every row probes, the lookups dominate, as in Umbra)
  --morsels-per-worker M  how finely a scan is cut (default 16)
  --repeat R          rounds of each query (default 3)
  --scan-read-ahead N cold records a scan reads ahead (Options::scan_read_ahead, 0..32, default 32)
  --scan-extent-kib K a scan's own extents, for records it meets in file order
                      (Options::scan_extent_bytes; 0: record by record, default 128)
  --seed N            random seed of the cached pages (default 1)
  --json FILE         append one line per round (default results/braid-bench.jsonl;
                      'none' to skip)
)";
}

int scan_main(int argc, char** argv, int first) {
  Config cfg{};
  if (std::string err = parse_config(argc, argv, first, &cfg); !err.empty()) {
    return usage_error("scan", err, scan_usage());
  }
  const bool async = cfg.io == "async";
  Options options;
  if (std::string e = bench_options(cfg.threads, cfg.io_depth, cfg.db, &options); !e.empty()) {
    std::fprintf(stderr, "braid-bench scan: %s\n", e.c_str());
    return 2;
  }
  options.exec.mode = async ? ExecMode::kInterleaved : ExecMode::kSequential;
  options.pin_workers = cfg.threads <= std::thread::hardware_concurrency();
  std::unique_ptr<Database> db = open_bench_db(options);
  if (db == nullptr) return 1;
  Result<Table*> lineitem = db->create_table("lineitem");
  Result<Table*> part = db->create_table("part");
  if (!lineitem.is_ok() || !part.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s\n",
                 (lineitem.is_ok() ? part.status() : lineitem.status()).to_string().c_str());
    return 1;
  }
  const auto t0 = Clock::now();
  Status s = load_cold(*db, **lineitem, cfg.rows, cfg.row_bytes, "loading lineitem",
                       [&](std::uint64_t i, char* v) { encode_row(row_of(i, cfg.parts), v); });
  if (s.is_ok()) {
    s = load_cold(
        *db, **part, cfg.parts, cfg.part_bytes, "loading part", [&](std::uint64_t i, char* v) {
          const char* type = promo_part(i) ? "PROMO BRUSHED STEEL" : "STANDARD POLISHED TIN";
          std::memset(v, ' ', cfg.part_bytes);
          std::memcpy(v, type, std::min<std::size_t>(cfg.part_bytes, std::strlen(type)));
        });
  }
  const bool q14 = cfg.queries.front() == "q14";
  // What is in memory: q1 wants --cached-pct of lineitem's pages, q14 all of lineitem and
  // --cached-pct of the parts.
  const std::uint32_t page_rows = cfg.page_rows;
  const std::uint32_t pct = cfg.cached_pct;
  const std::uint64_t seed = cfg.seed;
  if (s.is_ok()) {
    s = warm(*db, **lineitem, cfg.rows,
             q14 ? std::function<bool(std::uint64_t)>([](std::uint64_t) { return true; })
                 : std::function<bool(std::uint64_t)>(
                       [=](std::uint64_t i) { return cached(i, page_rows, pct, seed); }),
             cfg.threads, "caching lineitem");
  }
  if (s.is_ok() && q14) {
    s = warm(
        *db, **part, cfg.parts, [=](std::uint64_t i) { return cached(i, 1, pct, seed + 1); },
        cfg.threads, "caching part");
  }
  if (s.is_ok()) s = db->set_cache_reads(**lineitem, false);
  if (s.is_ok()) s = db->set_cache_reads(**part, false);
  if (!s.is_ok()) {
    std::fprintf(stderr, "braid-bench: load failed: %s\n", s.to_string().c_str());
    return 1;
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double in_memory = 100.0 * static_cast<double>(db->stats().live_versions) /
                           static_cast<double>(cfg.rows + cfg.parts);
  std::printf(
      "braid-bench scan: %s lineitem rows of %u B, %s parts of %u B, %u%% cached (%.1f%% of all "
      "records in memory), io %s, %u thread%s, io depth %u, load %.1f s\n",
      with_commas(cfg.rows).c_str(), cfg.row_bytes, with_commas(cfg.parts).c_str(), cfg.part_bytes,
      cfg.cached_pct, in_memory, cfg.io.c_str(), cfg.threads, cfg.threads == 1 ? "" : "s",
      cfg.io_depth, load_s);
  std::printf("  %-5s %5s %9s %12s %12s %9s %8s %6s %14s\n", "query", "round", "seconds",
              "rows_per_s", "lookups/s", "iops", "MiB/s", "depth", "answer");

  std::vector<std::string> labels;
  std::vector<std::vector<double>> rates;
  for (const std::string& q : cfg.queries) {
    labels.push_back(q + " " + cfg.io);
    rates.emplace_back();
  }
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    for (std::size_t qi = 0; qi < cfg.queries.size(); ++qi) {
      const std::string& q = cfg.queries[qi];
      Round r;
      const DatabaseStats before = db->stats();
      const auto start = Clock::now();
      Status st =
          q == "q1" ? run_q1(*db, **lineitem, cfg, &r) : run_q14(*db, **lineitem, **part, cfg, &r);
      r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (!st.is_ok()) {
        std::fprintf(stderr, "braid-bench: %s failed: %s\n", q.c_str(), st.to_string().c_str());
        return 1;
      }
      if (r.rows != cfg.rows) {
        std::fprintf(stderr, "braid-bench: %s read %llu rows of %llu\n", q.c_str(),
                     static_cast<unsigned long long>(r.rows),
                     static_cast<unsigned long long>(cfg.rows));
        return 1;
      }
      const DatabaseStats after = db->stats();
      const ColdFigures f = ColdFigures::of(before, after, r.seconds);
      r.cold_reads = after.cold_reads - before.cold_reads;
      r.cold_read_ios = after.cold_read_ios - before.cold_read_ios;
      r.iops = f.cold_reads_per_s;
      r.read_mib_per_s = f.cold_read_bytes_per_s / (1 << 20);
      r.io_depth = f.io_depth;
      const double rows_per_s = static_cast<double>(r.rows) / r.seconds;
      const double lookups_per_s = static_cast<double>(r.lookups) / r.seconds;
      rates[qi].push_back(q == "q14" ? lookups_per_s : rows_per_s);
      std::printf("  %-5s %5u %9.3f %12.0f %12.0f %9.0f %8.1f %6.1f %14.4g\n", q.c_str(), rep,
                  r.seconds, rows_per_s, lookups_per_s, r.iops, r.read_mib_per_s, r.io_depth,
                  r.answer);
      std::fflush(stdout);
      if (cfg.json == "none") continue;
      JsonObject o;
      o.add("bench", "scan").add("time", iso_time());
      o.add("query", q).add("io", cfg.io).add("threads", cfg.threads);
      o.add("io_depth", cfg.io_depth).add("cached_pct", cfg.cached_pct);
      o.add("rows_per_s", rows_per_s).add("lookups_per_s", lookups_per_s);
      o.add("iops", r.iops).add("read_mib_per_s", r.read_mib_per_s);
      o.add("mean_io_depth", r.io_depth).add("cold_reads", r.cold_reads);
      o.add("cold_read_ios", r.cold_read_ios);
      o.add("seconds", r.seconds).add("rows", r.rows).add("matches", r.matches);
      o.add("lookups", r.lookups).add("answer", r.answer);
      o.add("in_memory_pct", in_memory).add("rows_total", cfg.rows).add("parts", cfg.parts);
      o.add("row_bytes", cfg.row_bytes).add("part_bytes", cfg.part_bytes);
      o.add("q14_days", cfg.q14_days)
          .add("page_rows", cfg.page_rows)
          .add("morsels_per_worker", cfg.morsels_per_worker);
      o.add("scan_read_ahead", cfg.db.scan_read_ahead)
          .add("scan_extent_kib", cfg.db.scan_extent_kib)
          .add("dir", cfg.db.dir);
      o.add("seed", cfg.seed).add("rep", rep).add("repeat", cfg.repeat).add("load_s", load_s);
      o.add("peak_rss_mib", peak_rss_mib());
      o.add_object("machine", machine_description());
      if (std::string e = append_json_line(cfg.json, o); !e.empty()) {
        std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
        return 1;
      }
    }
  }
  std::printf(
      "  rows_per_s: lineitem rows read per second; lookups/s: q14's part probes; iops: "
      "storage reads per second (an extent of neighbouring records is one); depth: mean reads in "
      "flight\n");
  if (cfg.repeat > 1) print_rounds_summary(labels, rates, "rows/s (q1), lookups/s (q14)");
  std::printf("  peak RSS %.1f MiB\n", peak_rss_mib());
  return 0;
}

}  // namespace braid::bench
