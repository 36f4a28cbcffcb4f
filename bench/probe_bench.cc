#include "probe_bench.h"
#include "command.h"

#include <braid/braid.h>
#include <braid/tx.h>

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

#include "engine/table.h"
#include "flags.h"
#include "probe/binsearch.h"
#include "probe/btree_probe.h"
#include "probe/bwtree.h"
#include "probe/hash_table.h"
#include "report.h"
#include "roof.h"
#include "runtime/cpu.h"
#include "runtime/frame_allocator.h"
#include "util/random.h"
#include "ycsb/ycsb.h"

namespace braid::bench {
namespace {

using Clock = std::chrono::steady_clock;
using probe::Technique;

// Probe inputs per thread: generated before the clock starts and read sequentially (the
// hardware prefetcher streams them), so the measured loop does lookups and nothing else.
constexpr std::size_t kProbesPerThread = std::size_t{1} << 20;
constexpr std::size_t kChunk = 1024;  // lookups per technique call; the stop flag is read between
// Group sizes tried when --group is not given.
const std::vector<std::uint64_t> kGroupSearch = {1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64};

struct Config {
  std::string structure;
  std::vector<std::uint64_t> keys;
  std::uint32_t key_bytes;
  std::uint32_t delta_pct;  // bwtree: share of the keys inserted after the bulk load
  std::uint32_t max_chain;  // bwtree: deltas on a node before it is consolidated
  std::uint64_t buckets;    // 0: from load factor
  double load_factor;       // 0: fixed buckets
  std::vector<std::string> techniques;
  std::vector<std::uint64_t> groups;  // empty: search
  std::string dist;
  double theta;
  std::vector<std::uint64_t> threads;
  double seconds;
  double search_seconds;
  std::uint32_t repeat;
  std::uint64_t seed;
  std::string roof;
  std::string json;
};

// A bijection on 32-bit words (the murmur3 finalizer): distinct hash keys from distinct indexes.
std::uint32_t mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

// Spreads Zipf ranks over [0, n) so popular keys are not neighbours: multiplication by a prime
// larger than any n here is a bijection modulo n.
std::uint64_t scatter(std::uint64_t rank, std::uint64_t n) {
  constexpr std::uint64_t kPrime = (std::uint64_t{1} << 61) - 1;
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(rank) * kPrime) % n);
}

// Thread t's probe inputs: key_of(rank) for each rank.
template <typename K, typename KeyOf>
void fill_probes(std::vector<std::vector<K>>* probes, std::uint32_t t,
                 const std::vector<std::uint64_t>& ranks, KeyOf&& key_of) {
  if (probes->size() <= t) probes->resize(t + 1);
  std::vector<K>& mine = (*probes)[t];
  mine.clear();
  mine.reserve(ranks.size());
  for (std::uint64_t r : ranks) mine.push_back(key_of(r));
}

// One structure loaded with keys, with per-thread probe inputs.
class Target {
 public:
  virtual ~Target() = default;
  virtual std::uint64_t bytes() const = 0;
  virtual void set_probes(std::uint32_t thread, const std::vector<std::uint64_t>& ranks) = 0;
  // Lookups [off, off + n) of the thread's probes into out.
  virtual void run(std::uint32_t thread, std::size_t off, std::size_t n, Technique tech,
                   std::size_t group, std::uint64_t* out) = 0;
  // The path one lookup takes through memory (for the line-fetch estimate), from thread 0's
  // probes.
  virtual std::vector<PathStep> path() const = 0;
};

template <typename K>
class HashTarget : public Target {
 public:
  Status build(std::uint64_t n, std::uint64_t buckets) {
    if (Status s = table_.init(buckets, n); !s.is_ok()) return s;
    for (std::uint64_t i = 0; i < n; ++i) table_.insert(key(i), static_cast<K>(i));
    return Status::ok();
  }
  std::uint64_t bytes() const override { return table_.bytes(); }
  void set_probes(std::uint32_t t, const std::vector<std::uint64_t>& ranks) override {
    fill_probes(&probes_, t, ranks, key);
  }
  void run(std::uint32_t t, std::size_t off, std::size_t n, Technique tech, std::size_t group,
           std::uint64_t* out) override {
    probe::hash_probe<K>(table_, tech, std::span<const K>(probes_[t].data() + off, n),
                         std::span<std::uint64_t>(out, n), group);
  }
  std::vector<PathStep> path() const override {
    double visited = 0;
    const std::size_t sample = std::min<std::size_t>(probes_[0].size(), 65536);
    for (std::size_t i = 0; i < sample; ++i) visited += table_.nodes_visited(probes_[0][i]);
    visited /= static_cast<double>(std::max<std::size_t>(sample, 1));
    return {{static_cast<double>(table_.buckets() * sizeof(void*)), 1.0},
            {static_cast<double>(table_.size() * sizeof(probe::HashNode<K>)), visited}};
  }

 private:
  static K key(std::uint64_t i) {
    if constexpr (sizeof(K) == 4) {
      return mix32(static_cast<std::uint32_t>(i));
    } else {
      return util::mix64(i);
    }
  }
  probe::HashTable<K> table_;
  std::vector<std::vector<K>> probes_;
};

class BinsearchTarget : public Target {
 public:
  Status build(std::uint64_t n) { return arr_.init(n); }
  std::uint64_t bytes() const override { return arr_.bytes(); }
  void set_probes(std::uint32_t t, const std::vector<std::uint64_t>& ranks) override {
    fill_probes(&probes_, t, ranks, [&](std::uint64_t r) {
      return probe::SortedArray::key_at(scatter(r, arr_.size()));
    });
  }
  void run(std::uint32_t t, std::size_t off, std::size_t n, Technique tech, std::size_t group,
           std::uint64_t* out) override {
    probe::binsearch_probe(arr_, tech, std::span<const std::uint32_t>(probes_[t].data() + off, n),
                           std::span<std::uint64_t>(out, n), group);
  }
  std::vector<PathStep> path() const override {
    // Level j of the implicit search tree has up to 2^j probe points, each its own line, until
    // the remaining range fits one line.
    std::vector<PathStep> p;
    double points = 1;
    for (std::size_t len = arr_.size(); len > 16; len >>= 1, points *= 2) {
      p.push_back({std::min(points * 64, static_cast<double>(arr_.bytes())), 1.0});
    }
    return p;
  }

 private:
  probe::SortedArray arr_;
  std::vector<std::vector<std::uint32_t>> probes_;
};

// The B+-tree of a real table (the same load as ycsb: 8-byte keys 0..n-1, big-endian), so the
// techniques and the engine's interleaved path search the very same nodes.
class BTreeTarget : public Target {
 public:
  Status build(std::uint64_t n, double* load_s) {
    Options options;
    options.workers = 1;
    options.slots_per_worker = 64;
    Result<std::unique_ptr<Database>> db = Database::open(options);
    if (!db.is_ok()) return db.status();
    db_ = std::move(*db);
    Result<Table*> t = db_->create_table("probe");
    if (!t.is_ok()) return t.status();
    table_ = *t;
    records_ = n;
    return ycsb_load(*db_, *table_, n, 8, 8, 1, load_s);
  }
  std::uint64_t bytes() const override { return table_->index().node_count() * index::kNodeBytes; }
  void set_probes(std::uint32_t t, const std::vector<std::uint64_t>& ranks) override {
    fill_probes(&probes_, t, ranks, [&](std::uint64_t r) {
      std::uint64_t k;
      make_key(scatter(r, records()), 8, reinterpret_cast<char*>(&k));
      return k;
    });
  }
  void run(std::uint32_t t, std::size_t off, std::size_t n, Technique tech, std::size_t group,
           std::uint64_t* out) override {
    probe::btree_probe(table_->index(), tech,
                       std::span<const std::uint64_t>(probes_[t].data() + off, n),
                       std::span<std::uint64_t>(out, n), group);
  }
  std::vector<PathStep> path() const override { return btree_path(*table_); }
  std::vector<PathStep> engine_path() const { return engine_get_path(*db_, *table_, records_); }
  std::uint64_t records() const { return records_; }
  Database& db() { return *db_; }
  Table& table() { return *table_; }
  const std::vector<std::uint64_t>& probes(std::uint32_t t) const { return probes_[t]; }

 private:
  std::unique_ptr<Database> db_;
  Table* table_ = nullptr;
  std::uint64_t records_ = 0;
  std::vector<std::vector<std::uint64_t>> probes_;
};

// A Bw-tree of 8-byte keys (a bijective hash of 0..n-1, so inserts land all over the tree):
// the first (100 - delta_pct) % bulk-loaded into base nodes, the rest inserted afterwards in
// random key order, so a lookup meets the delta chains the inserts left (and the splits and
// consolidations they caused).
class BwTreeTarget : public Target {
 public:
  Status build(std::uint64_t n, std::uint32_t delta_pct, std::uint32_t max_chain) {
    probe::BwOptions o;
    o.max_chain = max_chain;
    if (Status s = tree_.init(n, o); !s.is_ok()) return s;
    const std::uint64_t loaded = n - n * delta_pct / 100;
    {
      std::vector<std::pair<std::uint64_t, std::uint64_t>> kv(loaded);
      for (std::uint64_t i = 0; i < loaded; ++i) kv[i] = {key(i), i};
      std::sort(kv.begin(), kv.end());
      std::vector<std::uint64_t> keys(loaded), values(loaded);
      for (std::uint64_t i = 0; i < loaded; ++i) {
        keys[i] = kv[i].first;
        values[i] = kv[i].second;
      }
      if (Status s = tree_.bulk_load(keys, values); !s.is_ok()) return s;
    }
    for (std::uint64_t i = loaded; i < n; ++i) {
      Result<bool> r = tree_.insert(key(i), i);
      if (!r.is_ok()) return r.status();
      BRAID_ASSERT(*r);  // keys are distinct
    }
    stats_ = tree_.stats();
    return Status::ok();
  }
  std::uint64_t bytes() const override { return stats_.bytes; }
  void set_probes(std::uint32_t t, const std::vector<std::uint64_t>& ranks) override {
    fill_probes(&probes_, t, ranks, key);
    if (t == 0) visits_ = count_visits();
  }
  void run(std::uint32_t t, std::size_t off, std::size_t n, Technique tech, std::size_t group,
           std::uint64_t* out) override {
    probe::bwtree_probe(tree_, tech, std::span<const std::uint64_t>(probes_[t].data() + off, n),
                        std::span<std::uint64_t>(out, n), group);
  }
  // What a lookup reads per level (index 0: leaves), means over a sample of thread 0's probes.
  struct Visits {
    std::vector<double> entries, deltas, bases;
    double total(const std::vector<double>& v) const {
      double t = 0;
      for (double x : v) t += x;
      return t;
    }
  };
  // Counted once, on thread 0's probes (set_probes).
  const Visits& visits() const { return visits_; }
  Visits count_visits() const {
    const std::uint32_t h = stats_.height;
    Visits v{std::vector<double>(h, 0), std::vector<double>(h, 0), std::vector<double>(h, 0)};
    const std::size_t sample = std::min<std::size_t>(probes_[0].size(), 65536);
    for (std::size_t i = 0; i < sample; ++i) {
      probe::BwLookup l(tree_, probes_[0][i]);
      bool entry = false;
      do {
        if (l.at() == probe::BwLookup::At::kEntry) {
          entry = true;
          continue;
        }
        const std::uint32_t level = l.level();
        if (entry) v.entries[level] += 1;
        entry = false;
        // A value's step reads a slot of the base just searched: its line is counted as the
        // base's (path() adds one line per base for it).
        if (l.at() == probe::BwLookup::At::kValue) continue;
        (l.at() == probe::BwLookup::At::kBase ? v.bases : v.deltas)[level] += 1;
      } while (l.step());
    }
    const double per = 1.0 / static_cast<double>(std::max<std::size_t>(sample, 1));
    for (std::uint32_t level = 0; level < h; ++level) {
      v.entries[level] *= per;
      v.deltas[level] *= per;
      v.bases[level] *= per;
    }
    return v;
  }
  // Per level, root first: its mapping-table entries, its deltas and its base nodes, each base
  // prefetched as header and keys, then one line for the value or child the search chose.
  std::vector<PathStep> path() const override {
    const Visits& v = visits_;
    std::vector<PathStep> p;
    for (std::uint32_t level = stats_.height; level-- > 0;) {
      const auto pids = static_cast<double>(stats_.pids_per_level[level]);
      p.push_back({pids * sizeof(probe::bw::Ref), v.entries[level]});
      p.push_back({static_cast<double>(stats_.deltas_per_level[level] * sizeof(probe::bw::Delta)),
                   v.deltas[level]});
      p.push_back({pids * static_cast<double>(tree_.base_bytes()),
                   v.bases[level] * static_cast<double>(tree_.base_prefetch_bytes() / 64 + 1)});
    }
    return p;
  }
  const probe::BwTree::Stats& stats() const { return stats_; }
  double mean_leaf_chain() const {
    return static_cast<double>(stats_.deltas_per_level[0]) /
           static_cast<double>(std::max<std::uint64_t>(stats_.pids_per_level[0], 1));
  }

 private:
  static std::uint64_t key(std::uint64_t i) { return util::mix64(i); }
  probe::BwTree tree_;
  probe::BwTree::Stats stats_;
  Visits visits_;
  std::vector<std::vector<std::uint64_t>> probes_;
};

struct Measured {
  double probes_per_s = 0;
  std::uint64_t probes = 0;
  std::uint64_t not_found = 0;
};

// Every thread runs its probes in chunks until the clock stops it.
Measured measure(Target& target, Technique tech, std::size_t group, std::uint32_t threads,
                 double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint32_t> ready{0};
  std::vector<Measured> per(threads);
  std::vector<std::thread> ts;
  for (std::uint32_t t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      runtime::pin_current_thread(t);
      runtime::FrameAllocator frames(std::size_t{16} << 20, true);
      runtime::FrameAllocator::set_current(&frames);
      std::vector<std::uint64_t> out(kChunk);
      std::uint64_t probes = 0, not_found = 0;
      std::size_t off = 0;
      ready.fetch_add(1);
      while (!stop.load(std::memory_order_relaxed)) {
        target.run(t, off, kChunk, tech, group, out.data());
        for (std::uint64_t v : out) not_found += v == probe::kNotFound;
        probes += kChunk;
        off = off + 2 * kChunk > kProbesPerThread ? 0 : off + kChunk;
      }
      runtime::FrameAllocator::set_current(nullptr);
      per[t].probes = probes;
      per[t].not_found = not_found;
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& th : ts) th.join();
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  Measured m;
  for (const Measured& p : per) {
    m.probes += p.probes;
    m.not_found += p.not_found;
  }
  m.probes_per_s = static_cast<double>(m.probes) / s;
  return m;
}

// The engine's interleaved path: each probe is a one-get read-only transaction.
class GetGenerator : public TxnGenerator {
 public:
  GetGenerator(Table& table, const std::vector<std::uint64_t>& keys, const std::atomic<bool>& stop)
      : table_(table), keys_(keys), stop_(stop) {}
  bool next(Tx& tx, Task<Status>* out) override {
    if (stop_.load(std::memory_order_relaxed)) return false;
    *out = get(tx, keys_[pos_]);
    pos_ = pos_ + 1 == keys_.size() ? 0 : pos_ + 1;
    return true;
  }
  void finished(const Status& s, std::uint64_t) override {
    if (s.is_ok()) {
      ++probes;
    } else {
      ++not_found;
    }
  }
  std::uint64_t probes = 0;
  std::uint64_t not_found = 0;

 private:
  Task<Status> get(Tx& tx, std::uint64_t key) {
    Result<std::string_view> v =
        co_await tx.get(table_, {reinterpret_cast<const char*>(&key), sizeof key});
    if (!v.is_ok()) co_return v.status();
    co_return co_await tx.commit();
  }
  Table& table_;
  const std::vector<std::uint64_t>& keys_;
  const std::atomic<bool>& stop_;
  std::size_t pos_ = 0;
};

Measured measure_engine(BTreeTarget& target, std::size_t group, double seconds, Status* status) {
  std::atomic<bool> stop{false};
  GetGenerator gen(target.table(), target.probes(0), stop);
  TxnGenerator* gens[] = {&gen};
  ExecOptions exec;
  exec.mode = ExecMode::kInterleaved;
  exec.scheduler = SchedulerPolicy::kPipeline;
  exec.batch = static_cast<std::uint32_t>(group);
  const auto start = Clock::now();
  std::thread timer([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
  });
  *status = target.db().run(gens, exec);
  timer.join();
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  Measured m;
  m.probes = gen.probes;
  m.not_found = gen.not_found;
  m.probes_per_s = static_cast<double>(gen.probes) / s;
  return m;
}

std::uint64_t default_keys(const std::string& structure) {
  if (structure == "binsearch") return std::uint64_t{1} << 28;  // 1 GiB of 4-byte keys
  if (structure == "btree" || structure == "bwtree") return 20'000'000;
  return 10'000'000;
}

}  // namespace

const char* probe_usage() {
  return R"(usage: braid-bench probe [flags]

Independent lookups over one structure by each technique (Killer Nanoseconds): naive (no
prefetch), gp (group prefetching), amac (a circular buffer of hand-written state machines),
coro (sequential code with prefetch + co_await, interleaved by BraidDB's Task runtime) and,
for the B+-tree, engine (one-get transactions on the engine's interleaved path).

  --structure S      hash | binsearch | btree | bwtree (default hash)
  --keys LIST        keys to load, comma-separated sizes for a sweep (default: hash
                     10000000, binsearch 268435456 = 1 GiB, btree and bwtree 20000000)
  --key-bytes B      hash keys: 4 | 8 (default 4; binsearch keys are 4 B, btree and bwtree 8 B)
  --delta-pct P      bwtree: percent of the keys inserted after the bulk load, as delta
                     records, so lookups meet delta chains (0..100, default 10)
  --max-chain N      bwtree: deltas on a node before it is consolidated (1..1024, default 8)
  --buckets N        hash buckets (default 100000, as in the paper)
  --load-factor F    hash keys per bucket; sets the bucket count from --keys instead
  --technique LIST   naive,gp,amac,coro[,engine] (default all that apply)
  --group LIST       lookups in flight per thread, 1..64, comma-separated; without it each
                     technique runs at its best group size, found by a short search
  --search-seconds S time per group size while searching (default 0.1)
  --dist D           uniform | zipf (default uniform)
  --theta X          Zipf skew (default 0.99)
  --threads LIST     threads, comma-separated (default 1)
  --seconds S        measured time per result (default 2)
  --seed N           random seed (default 1)
  --repeat R         measure every row R times round-robin and print min / median / max
                     (default 1): on a noisy machine, the fair comparison
  --roof FILE        the roof saved by 'braid-bench roof' (default results/roof.json), or
                     'measure': a quick roof measured now, before the runs
  --json FILE        append results as JSON lines (default results/braid-bench.jsonl; 'none')
)";
}

namespace {

// Parse: the command line into a Config. Answers "" or the error to print above the usage.
std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err)) return err;
  cfg->structure = flags.choice("structure", "hash", {"hash", "binsearch", "btree", "bwtree"});
  cfg->keys = flags.u64_list("keys", {default_keys(cfg->structure)}, 1, std::uint64_t{1} << 31);
  cfg->key_bytes = static_cast<std::uint32_t>(flags.u64("key-bytes", 4, 4, 8));
  cfg->delta_pct = static_cast<std::uint32_t>(flags.u64("delta-pct", 10, 0, 100));
  cfg->max_chain = static_cast<std::uint32_t>(flags.u64("max-chain", 8, 1, 1024));
  cfg->buckets = flags.u64("buckets", 100'000, 1, std::uint64_t{1} << 32);
  cfg->load_factor = flags.has("load-factor") ? flags.f64("load-factor", 1, 0.001, 1e6) : 0;
  const std::string techs = flags.str(
      "technique", cfg->structure == "btree" ? "naive,gp,amac,coro,engine" : "naive,gp,amac,coro");
  if (flags.has("group")) cfg->groups = flags.u64_list("group", {}, 1, runtime::kMaxGroup);
  cfg->search_seconds = flags.f64("search-seconds", 0.1, 0.001, 60);
  cfg->dist = flags.choice("dist", "uniform", {"uniform", "zipf"});
  cfg->theta = flags.f64("theta", 0.99, 0.0, 0.999999);
  cfg->threads = flags.u64_list("threads", {1}, 1, 1024);
  cfg->seconds = flags.f64("seconds", 2, 0.001, 86400);
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 1, 1, 1000));
  cfg->roof = flags.str("roof", "results/roof.json");
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  if (!flags.finish(&err)) return err;
  cfg->techniques = split_commas(techs);
  for (const std::string& t : cfg->techniques) {
    const bool engine = t == "engine";
    if (!engine && !probe::technique_of(t)) {
      return "--technique must list naive, gp, amac, coro or engine, got '" + t + "'";
    }
    if (engine && cfg->structure != "btree") {
      return "--technique engine is only for --structure btree";
    }
  }
  if (cfg->key_bytes != 4 && cfg->key_bytes != 8) {
    return "--key-bytes must be 4 or 8, got " + std::to_string(cfg->key_bytes);
  }
  if (cfg->structure != "hash" && flags.has("key-bytes")) {
    return "--key-bytes is for --structure hash";
  }
  if (cfg->structure != "bwtree" && (flags.has("delta-pct") || flags.has("max-chain"))) {
    return "--delta-pct and --max-chain are for --structure bwtree";
  }
  for (std::uint64_t k : cfg->keys) {
    if (cfg->structure == "hash" && cfg->key_bytes == 4 && k > (std::uint64_t{1} << 32)) {
      return "--keys " + std::to_string(k) + " exceeds what 4-byte keys can hold";
    }
  }
  return "";
}

// One structure at one size, built, with every thread's probe inputs set.
struct Built {
  std::uint64_t keys = 0;
  std::uint64_t buckets = 0;  // hash only
  std::unique_ptr<Target> target;
  BTreeTarget* btree = nullptr;  // the target, for --structure btree (the engine technique)
  BwTreeTarget* bwtree = nullptr;
  double lines_per_probe = 0;  // estimated DRAM lines per lookup
  double engine_lines = 0;     // the same for one engine get (btree only)
};

// Load: builds the structure with `keys` keys and the probe inputs of `max_threads` threads.
// Answers 0 or the exit code (after printing why).
int build(const Config& cfg, std::uint64_t keys, std::uint32_t max_threads, Built* b) {
  const auto build_start = Clock::now();
  Status built;
  b->keys = keys;
  b->buckets = cfg.buckets;
  if (cfg.structure == "hash") {
    if (cfg.load_factor > 0) {
      b->buckets = std::max<std::uint64_t>(
          1, static_cast<std::uint64_t>(static_cast<double>(keys) / cfg.load_factor));
    }
    if (cfg.key_bytes == 4) {
      auto t = std::make_unique<HashTarget<std::uint32_t>>();
      built = t->build(keys, b->buckets);
      b->target = std::move(t);
    } else {
      auto t = std::make_unique<HashTarget<std::uint64_t>>();
      built = t->build(keys, b->buckets);
      b->target = std::move(t);
    }
  } else if (cfg.structure == "binsearch") {
    auto t = std::make_unique<BinsearchTarget>();
    built = t->build(keys);
    b->target = std::move(t);
  } else if (cfg.structure == "bwtree") {
    auto t = std::make_unique<BwTreeTarget>();
    built = t->build(keys, cfg.delta_pct, cfg.max_chain);
    b->bwtree = t.get();
    b->target = std::move(t);
  } else {
    auto t = std::make_unique<BTreeTarget>();
    double load_s = 0;
    built = t->build(keys, &load_s);
    b->btree = t.get();
    b->target = std::move(t);
  }
  if (!built.is_ok()) {
    std::fprintf(stderr, "braid-bench probe: cannot build the %s: %s\n", cfg.structure.c_str(),
                 built.to_string().c_str());
    return 1;
  }
  std::unique_ptr<Zipf> zipf;
  if (cfg.dist == "zipf") zipf = std::make_unique<Zipf>(keys, cfg.theta);
  for (std::uint32_t t = 0; t < max_threads; ++t) {
    util::Rng rng(cfg.seed * 7919 + t);
    std::vector<std::uint64_t> ranks(kProbesPerThread);
    for (auto& r : ranks) r = zipf ? zipf->next(rng) : rng.uniform(keys);
    b->target->set_probes(t, ranks);
  }
  const double build_s = std::chrono::duration<double>(Clock::now() - build_start).count();
  b->lines_per_probe = estimate_lines(b->target->path());
  b->engine_lines = b->btree != nullptr ? estimate_lines(b->btree->engine_path()) : 0;
  std::string detail;
  if (cfg.structure == "hash") {
    detail = ", " + std::to_string(cfg.key_bytes) + "-byte keys, " + with_commas(b->buckets) +
             " buckets";
  } else if (b->bwtree != nullptr) {
    const probe::BwTree::Stats& st = b->bwtree->stats();
    const BwTreeTarget::Visits& v = b->bwtree->visits();
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  ", %u%% inserted after the load, %u levels, %s nodes, mean leaf chain %.2f "
                  "(consolidated past %u); a lookup reads %.1f entries, %.1f deltas (%.1f on "
                  "leaves), %.1f base nodes",
                  cfg.delta_pct, st.height, with_commas(st.pids).c_str(),
                  b->bwtree->mean_leaf_chain(), cfg.max_chain, v.total(v.entries),
                  v.total(v.deltas), v.deltas[0], v.total(v.bases));
    detail = buf;
  }
  std::printf(
      "braid-bench probe: %s, %s keys (%.1f MiB)%s, %s; built in %.1f s; about %.1f "
      "DRAM lines per lookup\n",
      cfg.structure.c_str(), with_commas(keys).c_str(),
      static_cast<double>(b->target->bytes()) / (1 << 20), detail.c_str(), cfg.dist.c_str(),
      build_s, b->lines_per_probe);
  std::printf("  %-9s %7s %6s %14s %9s %14s %8s\n", "technique", "threads", "group", "probes_per_s",
              "vs_naive", "lines_per_s", "of_roof");
  return 0;
}

// One measured row: a technique at one group size.
struct Row {
  std::string name;
  bool engine;
  Technique tech;
  std::uint64_t group;
  bool searched;
  std::vector<double> rates;  // probes/s, one per round
  bool naive() const { return !engine && tech == Technique::kNaive; }
  std::string label() const {
    return naive() ? name : name + "@" + std::to_string(group) + (searched ? "*" : "");
  }
};

Measured run_row(const Built& b, const Row& r, std::uint64_t group, std::uint32_t threads,
                 double seconds, Status* status) {
  return r.engine ? measure_engine(*b.btree, group, seconds, status)
                  : measure(*b.target, r.tech, group, threads, seconds);
}

// The rows at `threads` threads: each technique at the given group sizes, or at the best of a
// short search.
std::vector<Row> plan_rows(const Config& cfg, const Built& b, std::uint32_t threads,
                           Status* status) {
  std::vector<Row> rows;
  for (const std::string& tname : cfg.techniques) {
    Row r{tname, tname == "engine", Technique::kCoro, 1, false, {}};
    if (r.engine && threads != 1) {
      std::fprintf(stderr, "  (engine runs on one worker here; skipped at %u threads)\n", threads);
      continue;
    }
    if (!r.engine) r.tech = *probe::technique_of(tname);
    if (r.naive()) {
      rows.push_back(r);
      continue;
    }
    if (!cfg.groups.empty()) {
      for (std::uint64_t g : cfg.groups) {
        r.group = g;
        rows.push_back(r);
      }
      continue;
    }
    double best = -1;
    for (std::uint64_t g : kGroupSearch) {
      Status st;
      const double rate = run_row(b, r, g, threads, cfg.search_seconds, &st).probes_per_s;
      if (!st.is_ok()) {
        *status = st;
        return rows;
      }
      if (rate > best) {
        best = rate;
        r.group = g;
      }
    }
    r.searched = true;
    rows.push_back(r);
  }
  return rows;
}

// Report, per measurement: its table row and its JSON line. Answers "" or the error of
// appending the JSON line.
std::string report_row(const Config& cfg, const Built& b, const Row& r, const Measured& m,
                       std::uint32_t threads, std::uint32_t rep, double naive_rate,
                       double roof_rate) {
  const double lines = r.engine ? b.engine_lines : b.lines_per_probe;
  const double line_rate = m.probes_per_s * lines;
  char vs[32] = "-";
  if (naive_rate > 0) std::snprintf(vs, sizeof vs, "%.2fx", m.probes_per_s / naive_rate);
  char of[32] = "-";
  if (roof_rate > 0) std::snprintf(of, sizeof of, "%.0f%%", 100 * line_rate / roof_rate);
  std::printf("  %-9s %7u %5llu%s %14.0f %9s %14.0f %8s\n", r.name.c_str(), threads,
              static_cast<unsigned long long>(r.group), r.searched ? "*" : " ", m.probes_per_s, vs,
              line_rate, of);
  std::fflush(stdout);
  if (cfg.json == "none") return "";
  JsonObject o;
  o.add("bench", "probe").add("time", iso_time()).add("structure", cfg.structure);
  o.add("technique", r.name).add("keys", b.keys).add("bytes", b.target->bytes());
  o.add("key_bytes", cfg.structure == "hash"        ? cfg.key_bytes
                     : cfg.structure == "binsearch" ? 4u
                                                    : 8u);
  if (cfg.structure == "hash") o.add("buckets", b.buckets);
  if (b.bwtree != nullptr) {
    const probe::BwTree::Stats& st = b.bwtree->stats();
    o.add("delta_pct", cfg.delta_pct).add("max_chain", cfg.max_chain);
    o.add("mean_leaf_chain", b.bwtree->mean_leaf_chain()).add("height", st.height);
    o.add("nodes", st.pids);
    const BwTreeTarget::Visits& v = b.bwtree->visits();
    o.add("entries_per_lookup", v.total(v.entries)).add("deltas_per_lookup", v.total(v.deltas));
    o.add("bases_per_lookup", v.total(v.bases));
  }
  o.add("group", r.group).add_bool("group_searched", r.searched).add("threads", threads);
  o.add("dist", cfg.dist).add("theta", cfg.theta).add("seconds", cfg.seconds);
  o.add("seed", cfg.seed).add("rep", rep).add("repeat", cfg.repeat);
  o.add("probes", m.probes).add("probes_per_s", m.probes_per_s);
  o.add("vs_naive", naive_rate > 0 ? m.probes_per_s / naive_rate : 0.0);
  o.add("lines_per_probe", lines).add("line_fetches_per_s", line_rate);
  if (roof_rate > 0) {
    o.add("roof_lines_per_s", roof_rate).add("roof_fraction", line_rate / roof_rate);
  }
  o.add_object("machine", machine_description());
  return append_json_line(cfg.json, o);
}

// Run: every row once per round, round-robin (so each sees the same drift of a noisy machine),
// then the spread and ratios over the rounds. Answers 0 or the exit code.
int run_rows(const Config& cfg, const Built& b, std::uint32_t threads, double roof_rate,
             std::vector<Row>* rows) {
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    double naive_rate = 0;
    for (Row& r : *rows) {
      Status status;
      const Measured m = run_row(b, r, r.group, threads, cfg.seconds, &status);
      if (!status.is_ok()) {
        std::fprintf(stderr, "braid-bench probe: %s\n", status.to_string().c_str());
        return 1;
      }
      if (m.not_found != 0) {
        // Every probe names a loaded key: a miss is a wrong answer, not a statistic.
        std::fprintf(stderr, "braid-bench probe: %s answered not-found for %s of %s probes\n",
                     r.name.c_str(), with_commas(m.not_found).c_str(),
                     with_commas(m.probes).c_str());
        return 1;
      }
      r.rates.push_back(m.probes_per_s);
      if (r.naive()) naive_rate = m.probes_per_s;
      if (std::string e = report_row(cfg, b, r, m, threads, rep, naive_rate, roof_rate);
          !e.empty()) {
        std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
        return 1;
      }
    }
  }
  if (cfg.repeat > 1) {
    std::vector<std::string> labels;
    std::vector<std::vector<double>> rates;
    for (const Row& r : *rows) {
      labels.push_back(r.label());
      rates.push_back(r.rates);
    }
    print_rounds_summary(labels, rates, "probes/s");
  }
  return 0;
}

}  // namespace

int probe_main(int argc, char** argv, int first) {
  Config cfg{};
  if (std::string err = parse_config(argc, argv, first, &cfg); !err.empty()) {
    return usage_error("probe", err, probe_usage());
  }
  const Roof roof = load_roof(cfg.roof);
  if (roof.known) {
    std::printf("roof (%s): %.1f M lines/s per core, %.1f M on all cores\n", cfg.roof.c_str(),
                roof.per_core_lines_per_s / 1e6, roof.all_cores_lines_per_s / 1e6);
  } else {
    std::fprintf(stderr,
                 "braid-bench probe: no roof in %s (run 'braid-bench roof' first); results "
                 "carry no roof_fraction\n",
                 cfg.roof.c_str());
  }
  const std::uint32_t max_threads =
      static_cast<std::uint32_t>(*std::max_element(cfg.threads.begin(), cfg.threads.end()));
  for (std::uint64_t keys : cfg.keys) {
    Built b;
    if (int rc = build(cfg, keys, max_threads, &b); rc != 0) return rc;
    for (std::uint64_t threads64 : cfg.threads) {
      const auto threads = static_cast<std::uint32_t>(threads64);
      Status status;
      std::vector<Row> rows = plan_rows(cfg, b, threads, &status);
      if (!status.is_ok()) {
        std::fprintf(stderr, "braid-bench probe: %s\n", status.to_string().c_str());
        return 1;
      }
      const double roof_rate = roof.known ? roof.for_threads(threads) : 0;
      if (int rc = run_rows(cfg, b, threads, roof_rate, &rows); rc != 0) return rc;
    }
  }
  return 0;
}

}  // namespace braid::bench
