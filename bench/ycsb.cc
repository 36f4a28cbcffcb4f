#include "ycsb.h"

#include <braid/braid.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "flags.h"
#include "report.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::uint64_t records;
  std::uint32_t threads;
  double seconds;
  std::uint32_t ops_per_txn;
  std::uint32_t read, update, rmw, scan, insert;  // percent
  std::uint32_t scan_length;
  std::string dist;
  double theta;
  std::uint32_t key_bytes;
  std::uint32_t value_bytes;
  std::uint64_t seed;
  std::string json;
};

enum class Op : std::uint8_t { kRead, kUpdate, kRmw, kScan, kInsert };

struct ThreadResult {
  std::uint64_t commits = 0;
  std::uint64_t aborts = 0;
  std::uint64_t ops = 0;
  std::uint64_t errors = 0;
  std::string first_error;
  Histogram latency;
};

void pin_to_core(std::uint32_t i) {
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(i % n, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort
}

void fill_value(char* v, std::uint32_t n, std::uint64_t salt) {
  for (std::uint32_t i = 0; i < n; ++i) v[i] = static_cast<char>('a' + (salt + i) % 26);
}

std::string mix_name(const Config& c) {
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

Status load(Database& db, Table& table, const Config& cfg, double* load_seconds) {
  std::atomic<std::uint64_t> done{0};
  std::vector<std::thread> threads;
  std::vector<Status> status(cfg.threads);
  const auto start = Clock::now();
  {
    Progress progress("loading", &done, cfg.records);
    for (std::uint32_t t = 0; t < cfg.threads; ++t) {
      threads.emplace_back([&, t] {
        pin_to_core(t);
        const std::uint64_t lo = cfg.records * t / cfg.threads;
        const std::uint64_t hi = cfg.records * (t + 1) / cfg.threads;
        std::vector<char> value(cfg.value_bytes);
        char key[kMaxKeyBytes];
        constexpr std::uint64_t kBatch = 1000;
        for (std::uint64_t i = lo; i < hi;) {
          Result<Transaction> tx = db.begin();
          if (!tx.is_ok()) {
            status[t] = tx.status();
            return;
          }
          const std::uint64_t end = std::min(hi, i + kBatch);
          for (std::uint64_t j = i; j < end; ++j) {
            make_key(j, cfg.key_bytes, key);
            fill_value(value.data(), cfg.value_bytes, j);
            Status s = tx->insert(table, {key, cfg.key_bytes}, {value.data(), value.size()});
            if (!s.is_ok()) {
              status[t] = s;
              return;
            }
          }
          if (Status s = tx->commit(); !s.is_ok()) {
            status[t] = s;
            return;
          }
          done.fetch_add(end - i, std::memory_order_relaxed);
          i = end;
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  *load_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& s : status) {
    if (!s.is_ok()) return s;
  }
  return Status::ok();
}

void run_thread(Database& db, Table& table, const Config& cfg, const Zipf* zipf, std::uint32_t t,
                const std::atomic<bool>& stop, ThreadResult* out) {
  pin_to_core(t);
  util::Rng rng(cfg.seed * 1000003 + t + 1);
  std::vector<char> value(cfg.value_bytes);
  char key[kMaxKeyBytes];
  std::uint64_t next_insert = cfg.records + t;  // disjoint per thread: records + t + k*threads
  std::uint64_t salt = 0;
  auto pick = [&]() -> std::uint64_t {
    if (zipf != nullptr) return util::mix64(zipf->next(rng)) % cfg.records;
    return rng.uniform(cfg.records);
  };
  auto choose = [&]() -> Op {
    std::uint32_t r = static_cast<std::uint32_t>(rng.uniform(100));
    if (r < cfg.read) return Op::kRead;
    r -= cfg.read;
    if (r < cfg.update) return Op::kUpdate;
    r -= cfg.update;
    if (r < cfg.rmw) return Op::kRmw;
    r -= cfg.rmw;
    if (r < cfg.scan) return Op::kScan;
    return Op::kInsert;
  };
  auto fail = [&](const Status& s) {
    ++out->errors;
    if (out->first_error.empty()) out->first_error = s.to_string();
  };
  std::uint64_t sink = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    const auto t0 = Clock::now();
    Result<Transaction> begun = db.begin();
    if (!begun.is_ok()) {
      fail(begun.status());
      return;
    }
    Transaction tx = std::move(begun).value();
    bool aborted = false;
    for (std::uint32_t k = 0; k < cfg.ops_per_txn && !aborted; ++k) {
      const Op op = choose();
      Status s;
      if (op == Op::kInsert) {
        make_key(next_insert, cfg.key_bytes, key);
        next_insert += cfg.threads;
      } else {
        make_key(pick(), cfg.key_bytes, key);
      }
      const std::string_view kv(key, cfg.key_bytes);
      switch (op) {
        case Op::kRead: {
          Result<std::string_view> r = tx.get(table, kv);
          if (r.is_ok()) {
            sink += r->size();
          } else {
            s = r.status();
          }
          break;
        }
        case Op::kUpdate:
          fill_value(value.data(), cfg.value_bytes, ++salt);
          s = tx.update(table, kv, {value.data(), value.size()});
          break;
        case Op::kRmw: {
          Result<std::string_view> r = tx.get(table, kv);
          if (!r.is_ok()) {
            s = r.status();
            break;
          }
          std::memcpy(value.data(), r->data(), std::min<std::size_t>(r->size(), value.size()));
          if (!value.empty()) value[0] = static_cast<char>(value[0] + 1);
          s = tx.update(table, kv, {value.data(), value.size()});
          break;
        }
        case Op::kScan: {
          std::uint32_t n = 0;
          s = tx.scan(table, kv, {}, cfg.scan_length, [&](std::string_view, std::string_view v) {
            sink += v.size();
            ++n;
            return true;
          });
          break;
        }
        case Op::kInsert:
          fill_value(value.data(), cfg.value_bytes, ++salt);
          s = tx.insert(table, kv, {value.data(), value.size()});
          break;
      }
      ++out->ops;
      if (s == Code::kConflict) {
        aborted = true;  // the engine already aborted the transaction
      } else if (!s.is_ok()) {
        fail(s);
        tx.abort();
        aborted = true;
      }
    }
    if (!aborted) {
      Status s = tx.commit();
      if (s.is_ok()) {
        ++out->commits;
        out->latency.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()));
        continue;
      }
      if (s != Code::kConflict) fail(s);
    }
    ++out->aborts;
  }
  if (sink == 1) std::fprintf(stderr, " ");  // keep the reads observable to the optimizer
}

std::string iso_time() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

}  // namespace

const char* ycsb_usage() {
  return R"(usage: braid-bench ycsb [flags]

YCSB-style transactions over one table. Loads --records records, then runs for --seconds.

  --records N        records to load (default 1000000)
  --threads T        threads, one per core (default 1)
  --seconds S        measured run time (default 10)
  --ops-per-txn K    operations per transaction (default 10)
  --read R           percent reads           \
  --update U         percent blind updates    |  must sum to 100;
  --rmw M            percent read-modify-write|  default: --read 100
  --scan C           percent scans            |
  --insert I         percent inserts         /
  --scan-length L    records per scan (default 10)
  --dist D           uniform | zipf (default uniform)
  --theta X          Zipf skew in [0, 1) (default 0.99)
  --key-bytes B      key length 4..255 (default 8)
  --value-bytes V    value length 0..65536 (default 8)
  --seed N           random seed (default 1)
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl;
                     'none' to skip)
)";
}

Zipf::Zipf(std::uint64_t n, double theta) : n_(n), theta_(theta) {
  zetan_ = 0;
  for (std::uint64_t i = 1; i <= n; ++i) zetan_ += 1.0 / std::pow(static_cast<double>(i), theta);
  const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
  alpha_ = 1.0 / (1.0 - theta);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan_);
  half_pow_theta_ = 1.0 + std::pow(0.5, theta);
}

std::uint64_t Zipf::next(util::Rng& rng) const {
  const double u = rng.unit();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < half_pow_theta_) return std::min<std::uint64_t>(1, n_ - 1);
  const auto r =
      static_cast<std::uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
  return std::min(r, n_ - 1);
}

void make_key(std::uint64_t i, std::uint32_t bytes, char* out) {
  // On the measured path: one store for the common 8-byte key, so the driver costs little next
  // to the operation it measures.
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

int ycsb_main(int argc, char** argv, int first) {
  Flags flags;
  std::string err;
  Config cfg{};
  if (flags.parse(argc, argv, first, &err)) {
    cfg.records = flags.u64("records", 1'000'000, 1, std::uint64_t{1} << 36);
    cfg.threads = static_cast<std::uint32_t>(flags.u64("threads", 1, 1, 1024));
    cfg.seconds = flags.f64("seconds", 10, 0.01, 86400);
    cfg.ops_per_txn = static_cast<std::uint32_t>(flags.u64("ops-per-txn", 10, 1, 10000));
    const bool any_mix = flags.has("read") || flags.has("update") || flags.has("rmw") ||
                         flags.has("scan") || flags.has("insert");
    cfg.read = static_cast<std::uint32_t>(flags.u64("read", any_mix ? 0 : 100, 0, 100));
    cfg.update = static_cast<std::uint32_t>(flags.u64("update", 0, 0, 100));
    cfg.rmw = static_cast<std::uint32_t>(flags.u64("rmw", 0, 0, 100));
    cfg.scan = static_cast<std::uint32_t>(flags.u64("scan", 0, 0, 100));
    cfg.insert = static_cast<std::uint32_t>(flags.u64("insert", 0, 0, 100));
    cfg.scan_length = static_cast<std::uint32_t>(flags.u64("scan-length", 10, 1, 1'000'000));
    cfg.dist = flags.choice("dist", "uniform", {"uniform", "zipf"});
    cfg.theta = flags.f64("theta", 0.99, 0.0, 0.999999);
    cfg.key_bytes = static_cast<std::uint32_t>(flags.u64("key-bytes", 8, 4, kMaxKeyBytes));
    cfg.value_bytes = static_cast<std::uint32_t>(flags.u64("value-bytes", 8, 0, kMaxValueBytes));
    cfg.seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
    cfg.json = flags.str("json", "results/braid-bench.jsonl");
    if (flags.finish(&err)) {
      if (cfg.read + cfg.update + cfg.rmw + cfg.scan + cfg.insert != 100) {
        err = "--read + --update + --rmw + --scan + --insert must sum to 100, got " +
              std::to_string(cfg.read + cfg.update + cfg.rmw + cfg.scan + cfg.insert);
      } else if (cfg.key_bytes < 8 && cfg.records > (std::uint64_t{1} << (8 * cfg.key_bytes))) {
        err = "--key-bytes " + std::to_string(cfg.key_bytes) + " cannot hold " +
              std::to_string(cfg.records) + " distinct keys";
      }
    }
  }
  if (!err.empty()) {
    std::fprintf(stderr, "braid-bench ycsb: %s\n\n%s", err.c_str(), ycsb_usage());
    return 2;
  }

  Options options;
  options.workers = cfg.threads;
  options.slots_per_worker = 4;
  Result<std::unique_ptr<Database>> opened = Database::open(options);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "braid-bench: cannot open database: %s\n",
                 opened.status().to_string().c_str());
    return 1;
  }
  Database& db = **opened;
  Result<Table*> table = db.create_table("usertable");
  if (!table.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s\n", table.status().to_string().c_str());
    return 1;
  }

  double load_s = 0;
  if (Status s = load(db, **table, cfg, &load_s); !s.is_ok()) {
    std::fprintf(stderr, "braid-bench: load failed: %s\n", s.to_string().c_str());
    return 1;
  }

  std::unique_ptr<Zipf> zipf;
  if (cfg.dist == "zipf") zipf = std::make_unique<Zipf>(cfg.records, cfg.theta);

  std::atomic<bool> stop{false};
  std::vector<ThreadResult> results(cfg.threads);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    threads.emplace_back(run_thread, std::ref(db), std::ref(**table), std::cref(cfg), zipf.get(), t,
                         std::cref(stop), &results[t]);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
  stop.store(true);
  for (auto& th : threads) th.join();
  const double run_s = std::chrono::duration<double>(Clock::now() - start).count();

  ThreadResult total;
  for (auto& r : results) {
    total.commits += r.commits;
    total.aborts += r.aborts;
    total.ops += r.ops;
    total.errors += r.errors;
    if (total.first_error.empty()) total.first_error = r.first_error;
    total.latency.merge(r.latency);
  }
  const DatabaseStats st = db.stats();
  const double txn_per_s = static_cast<double>(total.commits) / run_s;
  const double ops_per_s = static_cast<double>(total.ops) / run_s;
  const double attempts = static_cast<double>(total.commits + total.aborts);
  const double abort_rate = attempts > 0 ? static_cast<double>(total.aborts) / attempts : 0;
  const double p50 = total.latency.quantile(0.50) / 1000.0;
  const double p99 = total.latency.quantile(0.99) / 1000.0;
  const std::uint64_t rss = peak_rss_bytes();

  std::printf(
      "braid-bench ycsb: %s records, %u thread%s, %u ops/txn, %s, %s%s, key %u B, value %u B\n",
      with_commas(cfg.records).c_str(), cfg.threads, cfg.threads == 1 ? "" : "s", cfg.ops_per_txn,
      mix_name(cfg).c_str(), cfg.dist.c_str(),
      cfg.dist == "zipf" ? (" theta " + std::to_string(cfg.theta).substr(0, 4)).c_str() : "",
      cfg.key_bytes, cfg.value_bytes);
  std::printf("  %-14s %14s\n", "metric", "value");
  std::printf("  %-14s %14.2f\n", "load_s", load_s);
  std::printf("  %-14s %14.0f\n", "load_rec_per_s", static_cast<double>(cfg.records) / load_s);
  std::printf("  %-14s %14.2f\n", "run_s", run_s);
  std::printf("  %-14s %14.0f\n", "txn_per_s", txn_per_s);
  std::printf("  %-14s %14.0f\n", "ops_per_s", ops_per_s);
  std::printf("  %-14s %14.4f\n", "abort_rate", abort_rate);
  std::printf("  %-14s %14.2f\n", "p50_us", p50);
  std::printf("  %-14s %14.2f\n", "p99_us", p99);
  std::printf("  %-14s %14.1f\n", "peak_rss_mib", static_cast<double>(rss) / (1 << 20));
  std::printf("  %-14s %14s\n", "live_versions", with_commas(st.live_versions).c_str());
  std::printf("  %-14s %14s\n", "index_nodes", with_commas(st.index_nodes).c_str());
  if (total.errors != 0) {
    std::printf("  %-14s %14s  (first: %s)\n", "errors", with_commas(total.errors).c_str(),
                total.first_error.c_str());
  }

  if (cfg.json != "none") {
    JsonObject o;
    o.add("bench", "ycsb").add("time", iso_time());
    o.add("records", cfg.records).add("threads", cfg.threads).add("seconds", cfg.seconds);
    o.add("ops_per_txn", cfg.ops_per_txn).add("read", cfg.read).add("update", cfg.update);
    o.add("rmw", cfg.rmw).add("scan", cfg.scan).add("insert", cfg.insert);
    o.add("scan_length", cfg.scan_length).add("dist", cfg.dist).add("theta", cfg.theta);
    o.add("key_bytes", cfg.key_bytes).add("value_bytes", cfg.value_bytes).add("seed", cfg.seed);
    o.add("txn_per_s", txn_per_s).add("ops_per_s", ops_per_s).add("abort_rate", abort_rate);
    o.add("p50_us", p50).add("p99_us", p99).add("load_s", load_s).add("run_s", run_s);
    o.add("commits", total.commits).add("aborts", total.aborts).add("errors", total.errors);
    o.add("peak_rss_bytes", rss).add("live_versions", st.live_versions);
    o.add("index_nodes", st.index_nodes);
    o.add_object("machine", machine_description());
    if (std::string e = append_json_line(cfg.json, o); !e.empty()) {
      std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
      return 1;
    }
  }
  if (total.errors != 0) {
    std::fprintf(stderr, "braid-bench: %s operations failed (first: %s)\n",
                 with_commas(total.errors).c_str(), total.first_error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace braid::bench
