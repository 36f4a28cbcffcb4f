// braid-bench ycsb: load once, then every variant (mode, batch size, isolation) round-robin
// for --repeat rounds; --engine runs a peer instead (peers.cc).
#include "command.h"
#include "ycsb/config.h"

namespace braid::bench::ycsb {

namespace {
// The table in the directory must be the one the flags describe: its keys 0 .. records-1 with
// values of the flags' size (the first, the last, and no key past it). Inserts of an earlier
// run (D, E) left keys past the last, which a run with the same flags would insert again.
std::string check_existing(Database& db, Table& table, const Config& cfg) {
  if (cfg.records == 0) return "";
  Result<Transaction> txn = db.begin();
  if (!txn.is_ok()) return txn.status().to_string();
  char key[kMaxKeyBytes];
  for (std::uint64_t i : {std::uint64_t{0}, cfg.records - 1}) {
    make_key(i, cfg.key_bytes, key, cfg.hashed_keys);
    Result<std::string_view> v = txn->get(table, {key, cfg.key_bytes});
    if (!v.is_ok()) {
      return "record " + std::to_string(i) + ": " + v.status().to_string() +
             " (was the database loaded with these --records and --key-bytes?)";
    }
    if (v->size() != cfg.value_bytes) {
      return "record " + std::to_string(i) + " holds " + std::to_string(v->size()) +
             " bytes, not --value-bytes " + std::to_string(cfg.value_bytes);
    }
  }
  make_key(cfg.records, cfg.key_bytes, key, cfg.hashed_keys);
  if (txn->get(table, {key, cfg.key_bytes}).is_ok()) {
    return "the table holds more than --records " + std::to_string(cfg.records) +
           " records (an earlier run inserted some)";
  }
  return "";
}
}  // namespace

// Load: opens the database and loads the table (or opens the one in the directory). Answers 0
// or the exit code (after printing why).
int load_database(const Config& cfg, Setup* s) {
  const bool existing = cfg.load == "existing";
  Options options;
  if (std::string e =
          bench_options(cfg.threads, *std::max_element(cfg.batches.begin(), cfg.batches.end()),
                        cfg.db, &options, existing);
      !e.empty()) {
    std::fprintf(stderr, "braid-bench ycsb: %s\n", e.c_str());
    return 2;
  }
  const auto opening = Clock::now();
  s->db = open_bench_db(options);
  if (s->db == nullptr) return 1;
  Result<Table*> table =
      existing ? s->db->open_table("usertable") : s->db->create_table("usertable");
  if (!table.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s%s\n", table.status().to_string().c_str(),
                 existing ? " (--load existing opens the table an earlier run loaded)" : "");
    return 1;
  }
  s->table = *table;
  if (existing) {
    // The open is what this run measures as its load; the check that the table is the one the
    // flags describe (its last key, and nothing past it) comes after, outside the figure.
    s->load_s = std::chrono::duration<double>(Clock::now() - opening).count();
    if (std::string e = check_existing(*s->db, *s->table, cfg); !e.empty()) {
      std::fprintf(stderr, "braid-bench ycsb: --load existing: %s\n", e.c_str());
      return 1;
    }
  } else if (Status st = load(*s->db, *s->table, cfg, &s->load_s); !st.is_ok()) {
    std::fprintf(stderr, "braid-bench: load failed: %s\n", st.to_string().c_str());
    return 1;
  }
  // Estimated DRAM lines per operation: the descent (a node's 16 lines at each level the LLC
  // does not hold), the OID entry and the version (see estimate_lines in roof.h).
  s->lines_per_txn = estimate_lines(engine_get_path(*s->db, *s->table, cfg.records)) *
                     static_cast<double>(cfg.ops_per_txn);
  const Roof roof = load_roof(cfg.roof);
  s->roof_rate = roof.known ? roof.for_threads(cfg.threads) : 0;
  if (cfg.dist != "uniform") s->zipf = std::make_unique<Zipf>(cfg.records, cfg.theta);
  return 0;
}

}  // namespace braid::bench::ycsb

namespace braid::bench {

using namespace ycsb;  // NOLINT(google-build-using-namespace): the sub-command's own names

int ycsb_main(int argc, char** argv, int first) {
  Config cfg{};
  if (std::string err = parse_config(argc, argv, first, &cfg); !err.empty()) {
    return usage_error("ycsb", err, ycsb_usage());
  }
  if (cfg.engine != "braid") return peer_main(cfg);
  Setup s;
  if (int rc = load_database(cfg, &s); rc != 0) return rc;
  print_header(cfg, s);

  // Run: every variant once per round, round-robin, so each sees the same drift of a noisy
  // machine. rates[i]: txn/s of variants[i] in each round.
  const std::vector<Variant> variants = variants_of(cfg);
  std::vector<std::vector<double>> rates(variants.size());
  // Fresh keys, disjoint per thread: records + t + k * threads, continued across runs.
  std::vector<std::uint64_t> inserts(cfg.threads);
  for (std::uint32_t t = 0; t < cfg.threads; ++t) inserts[t] = cfg.records + t;
  std::uint64_t errors = 0;
  std::string first_error;
  std::uint64_t stream = 0;
  // After the load: the competition is for the measured runs.
  const auto competing = std::make_unique<BackgroundLoad>(cfg.background_load);
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    double seq = 0;  // this round's sequential figure, once it ran
    for (std::size_t mi = 0; mi < variants.size(); ++mi) {
      const Variant& var = variants[mi];
      ModeResult m;
      if (Status st = run_mode(*s.db, *s.table, cfg, s.zipf.get(), var, &inserts, stream++, &m);
          !st.is_ok()) {
        std::fprintf(stderr, "braid-bench: run failed: %s\n", st.to_string().c_str());
        return 1;
      }
      rates[mi].push_back(m.txn_per_s);
      if (var.mode == "sequential") seq = m.txn_per_s;
      errors += m.total.errors;
      if (first_error.empty()) first_error = m.total.first_error;
      if (std::string e = report_run(cfg, s, var, m, rep, seq); !e.empty()) {
        std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
        return 1;
      }
    }
  }
  report_summary(s, variants, rates);
  return run_exit(errors, first_error, "operations");
}

}  // namespace braid::bench
