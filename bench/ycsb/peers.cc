// braid-bench ycsb --engine lmdb|rocksdb: the same keys, values and transactions on a peer
// engine through bench/peer.h, on --threads application threads.
#include "command.h"
#include "ycsb/config.h"

namespace braid::bench::ycsb {

int peer_main(const Config& cfg) {
  // The peer's directory: --dir (new or empty), or a temporary one removed at the end.
  std::string dir = cfg.db.dir;
  const bool temporary = dir.empty();
  std::error_code ec;
  if (temporary) {
    char tmpl[] = "/tmp/braid-bench-peer-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      std::fprintf(stderr, "braid-bench ycsb: cannot create a temporary directory\n");
      return 1;
    }
    dir = tmpl;
  } else if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    std::fprintf(stderr, "braid-bench ycsb: --dir %s exists and is not empty; give a new path\n",
                 dir.c_str());
    return 2;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) std::filesystem::remove_all(dir, e);
    }
  } cleanup{temporary ? dir : std::string()};
  PeerConfig pc;
  pc.dir = dir;
  pc.durable = cfg.db.commit == "durable";
  pc.records = cfg.records;
  pc.key_bytes = cfg.key_bytes;
  pc.value_bytes = cfg.value_bytes;
  pc.cache_bytes = cfg.cache_mib << 20;
  Result<std::unique_ptr<PeerEngine>> opened = open_peer(cfg.engine, pc);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "braid-bench ycsb: --engine %s: %s\n", cfg.engine.c_str(),
                 opened.status().to_string().c_str());
    return opened.code() == Code::kNotFound ? 3 : 1;
  }
  PeerEngine& engine = **opened;
  const auto t0 = Clock::now();
  if (Status s = load_peer(engine, cfg); !s.is_ok()) {
    std::fprintf(stderr, "braid-bench: %s load failed: %s\n", cfg.engine.c_str(),
                 s.to_string().c_str());
    return 1;
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::unique_ptr<Zipf> zipf;
  if (cfg.dist != "uniform") zipf = std::make_unique<Zipf>(cfg.records, cfg.theta);
  std::printf(
      "braid-bench ycsb --engine %s (%s %s): %s records, %u thread%s, %u ops/txn, %s, %s, key %u "
      "B, value %u B, commit %s\n",
      cfg.engine.c_str(), engine.name().c_str(), engine.version().c_str(),
      with_commas(cfg.records).c_str(), cfg.threads, cfg.threads == 1 ? "" : "s", cfg.ops_per_txn,
      mix_name(cfg).c_str(), cfg.dist.c_str(), cfg.key_bytes, cfg.value_bytes,
      cfg.db.commit.c_str());
  std::printf("  load: %.2f s (%.0f records/s), directory %s%s\n", load_s,
              static_cast<double>(cfg.records) / load_s, dir.c_str(),
              temporary ? " (temporary)" : "");
  std::printf("  %-14s %12s %12s %10s %9s %9s\n", "engine", "txn_per_s", "ops_per_s", "abort_rate",
              "p50_us", "p99_us");
  std::vector<std::uint64_t> inserts(cfg.threads);
  for (std::uint32_t t = 0; t < cfg.threads; ++t) inserts[t] = cfg.records + t;
  std::vector<std::vector<double>> rates(1);
  std::uint64_t errors = 0;
  std::string first_error;
  for (std::uint32_t rep = 0; rep < cfg.repeat; ++rep) {
    const ModeResult m = run_peer(engine, cfg, zipf.get(), &inserts, rep);
    rates[0].push_back(m.txn_per_s);
    errors += m.total.errors;
    if (first_error.empty()) first_error = m.total.first_error;
    const RunFigures f = RunFigures::of(m);
    std::printf("  %-14s %12.0f %12.0f %10.4f %9.2f %9.2f\n", cfg.engine.c_str(), m.txn_per_s,
                f.ops_per_s, f.abort_rate, f.p50_us, f.p99_us);
    std::fflush(stdout);
    if (cfg.json == "none") continue;
    JsonObject o;
    o.add("bench", "ycsb").add("time", iso_time());
    o.add("engine", engine.name()).add("engine_version", engine.version());
    add_run_fields(o, cfg, m, f, rep, load_s);
    o.add("commit", cfg.db.commit).add("dir", dir).add("cache_mib", cfg.cache_mib);
    o.add_object("machine", machine_description());
    if (std::string e = append_json_line(cfg.json, o); !e.empty()) {
      std::fprintf(stderr, "braid-bench: %s\n", e.c_str());
      return 1;
    }
  }
  std::printf("  peak RSS %.1f MiB\n", peak_rss_mib());
  print_rounds_summary({cfg.engine}, rates, "txn/s");
  return run_exit(errors, first_error, "operations");
}

}  // namespace braid::bench::ycsb
