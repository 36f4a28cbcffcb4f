// braid-bench ycsb's flags, and YCSB's core workloads A-F as presets of them.
#include "ycsb/config.h"

namespace braid::bench::ycsb {

std::string parse_config(int argc, char** argv, int first, Config* cfg) {
  Flags flags;
  std::string err;
  if (!flags.parse(argc, argv, first, &err)) return err;
  cfg->records = flags.u64("records", 1'000'000, 1, std::uint64_t{1} << 36);
  cfg->threads = static_cast<std::uint32_t>(flags.u64("threads", 1, 1, 1024));
  cfg->seconds = flags.f64("seconds", 10, 0.01, 86400);
  cfg->txns = flags.u64("txns", 0, 0, std::uint64_t{1} << 40);
  // YCSB's core workloads (Cooper et al., SoCC'10, Table 2 and the workload files): the mix,
  // the request distribution and, for E, scans of 1..100 records; one operation per
  // transaction. Any flag given still overrides its part.
  cfg->workload = flags.choice("workload", "", {"", "a", "b", "c", "d", "e", "f"});
  struct Preset {
    std::uint32_t read, update, rmw, scan, insert;
    const char* dist;
  } preset{100, 0, 0, 0, 0, "uniform"};
  const std::string& w = cfg->workload;
  if (w == "a") preset = {50, 50, 0, 0, 0, "zipf"};
  if (w == "b") preset = {95, 5, 0, 0, 0, "zipf"};
  if (w == "c") preset = {100, 0, 0, 0, 0, "zipf"};
  if (w == "d") preset = {95, 0, 0, 0, 5, "latest"};
  if (w == "e") preset = {0, 0, 0, 95, 5, "zipf"};
  if (w == "f") preset = {50, 0, 50, 0, 0, "zipf"};
  cfg->ops_per_txn =
      static_cast<std::uint32_t>(flags.u64("ops-per-txn", w.empty() ? 10 : 1, 1, 10000));
  const bool any_mix = flags.has("read") || flags.has("update") || flags.has("rmw") ||
                       flags.has("scan") || flags.has("insert");
  const auto mix = [&](const char* name, std::uint32_t preset_pct) {
    return static_cast<std::uint32_t>(flags.u64(name, any_mix ? 0 : preset_pct, 0, 100));
  };
  cfg->read = mix("read", preset.read);
  cfg->update = mix("update", preset.update);
  cfg->rmw = mix("rmw", preset.rmw);
  cfg->scan = mix("scan", preset.scan);
  cfg->insert = mix("insert", preset.insert);
  cfg->scan_uniform = w == "e" && !flags.has("scan-length");
  cfg->scan_length =
      static_cast<std::uint32_t>(flags.u64("scan-length", w == "e" ? 100 : 10, 1, 1'000'000));
  cfg->dist = flags.choice("dist", preset.dist, {"uniform", "zipf", "latest"});
  cfg->engine = flags.choice("engine", "braid", {"braid", "lmdb", "rocksdb"});
  cfg->theta = flags.f64("theta", 0.99, 0.0, 0.999999);
  cfg->key_bytes = static_cast<std::uint32_t>(flags.u64("key-bytes", 8, 4, kMaxKeyBytes));
  cfg->hashed_keys = flags.choice("key-order", "ordered", {"ordered", "hashed"}) == "hashed";
  cfg->value_bytes = static_cast<std::uint32_t>(flags.u64("value-bytes", 8, 0, kMaxValueBytes));
  cfg->cache_mib = flags.u64("cache-mib", 0, 1, std::uint64_t{1} << 30);
  cfg->seed = flags.u64("seed", 1, 0, ~std::uint64_t{0});
  cfg->json = flags.str("json", "results/braid-bench.jsonl");
  cfg->roof = flags.str("roof", "results/roof.json");
  cfg->modes = parse_name_list("mode", flags.str("mode", "interleaved"), ycsb_modes(), &err);
  cfg->repeat = static_cast<std::uint32_t>(flags.u64("repeat", 1, 1, 1000));
  cfg->background_load = static_cast<std::uint32_t>(flags.u64("background-load", 0, 0, 256));
  cfg->scheduler = flags.choice("scheduler", "batch", scheduler_names());
  cfg->isolations = parse_name_list("isolation", flags.str("isolation", "si"), {"si", "ssn"}, &err);
  cfg->declare_read_only = flags.u64("declare-read-only", 0, 0, 1) != 0;
  for (std::uint64_t b : flags.u64_list("batch", {8}, 1, 64)) {
    if (std::find(cfg->batches.begin(), cfg->batches.end(), b) != cfg->batches.end()) {
      err = "--batch lists " + std::to_string(b) + " twice";
    }
    cfg->batches.push_back(static_cast<std::uint32_t>(b));
  }
  cfg->multi_get = flags.u64("multi-get", 0, 0, 1) != 0;
  cfg->db = DbFlags::parse(flags);
  // Straight to storage by default under a budget: a table many times the budget never has
  // to pass through memory.
  cfg->load =
      flags.choice("load", cfg->db.dir.empty() || cfg->db.memory_budget_mib == 0 ? "txn" : "bulk",
                   {"txn", "bulk", "existing"});
  if (!err.empty() || !flags.finish(&err)) return err;
  if (cfg->load != "txn" && cfg->db.dir.empty()) return "--load " + cfg->load + " needs --dir";
  const std::uint32_t sum = cfg->read + cfg->update + cfg->rmw + cfg->scan + cfg->insert;
  if (sum != 100) {
    return "--read + --update + --rmw + --scan + --insert must sum to 100, got " +
           std::to_string(sum);
  }
  if (cfg->key_bytes < 8 && cfg->records > (std::uint64_t{1} << (8 * cfg->key_bytes))) {
    return "--key-bytes " + std::to_string(cfg->key_bytes) + " cannot hold " +
           std::to_string(cfg->records) + " distinct keys";
  }
  if (cfg->hashed_keys && cfg->key_bytes < 8) {
    return "--key-order hashed needs --key-bytes 8 or more (a hash fills the key's first 8 bytes)";
  }
  if (cfg->hashed_keys && cfg->load == "bulk") {
    return "--key-order hashed cannot --load bulk (a bulk load takes keys in ascending order)";
  }
  if (cfg->multi_get && cfg->read != 100) return "--multi-get 1 needs a read-only mix (--read 100)";
  if (flags.has("cache-mib") && cfg->engine != "rocksdb") {
    return cfg->engine == "braid"
               ? std::string(
                     "--cache-mib applies to --engine rocksdb; BraidDB's bound is "
                     "--memory-budget-mib")
               : std::string("--cache-mib applies to --engine rocksdb only");
  }
  if (cfg->engine != "braid") {
    for (const char* f :
         {"mode", "batch", "scheduler", "multi-get", "memory-budget-mib", "load", "log-flusher",
          "sq-poll-cpu", "prefault-mib", "prefault-index-mib", "l2-kib", "log-sync",
          "checkpoint-mib", "reserve-gib", "background-load", "scan-read-ahead", "page-index"}) {
      if (flags.has(f)) return std::string("--") + f + " applies to --engine braid only";
    }
    cfg->modes = {"plain"};  // a peer runs the thread-per-transaction loop
    // In memory unless a directory is given: a temporary one, commits not synced.
    if (cfg->db.dir.empty() && !flags.has("commit")) cfg->db.commit = "async";
  }
  return "";
}

}  // namespace braid::bench::ycsb
