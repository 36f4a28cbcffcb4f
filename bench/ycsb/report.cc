// braid-bench ycsb's output: the table, one JSON line per run, the round summary.
#include "command.h"
#include "ycsb/config.h"

namespace braid::bench::ycsb {

void print_header(const Config& cfg, const Setup& s) {
  std::string batch_list;
  for (std::uint32_t b : cfg.batches) {
    batch_list += (batch_list.empty() ? "" : ",") + std::to_string(b);
  }
  std::printf(
      "braid-bench ycsb: %s records, %u thread%s, %u ops/txn, %s%s, %s%s, key %u B, value %u B, "
      "scheduler %s, batch %s\n",
      with_commas(cfg.records).c_str(), cfg.threads, cfg.threads == 1 ? "" : "s", cfg.ops_per_txn,
      mix_name(cfg).c_str(), cfg.multi_get ? " (multi_get)" : "", cfg.dist.c_str(),
      cfg.dist == "zipf" ? (" theta " + std::to_string(cfg.theta).substr(0, 4)).c_str() : "",
      cfg.key_bytes, cfg.value_bytes, cfg.scheduler.c_str(), batch_list.c_str());
  std::printf("  load (%s): %.2f s (%.0f records/s)\n", cfg.load.c_str(), s.load_s,
              static_cast<double>(cfg.records) / s.load_s);
  if (!cfg.db.dir.empty()) {
    const DurabilityStats ds = s.db->durability_stats();
    std::printf("  durability: %s in %s, commit %s, log sync %s\n", ds.io_backend.c_str(),
                cfg.db.dir.c_str(), cfg.db.commit.c_str(), cfg.db.log_sync.c_str());
    if (cfg.db.log_flusher != "none") std::printf("  log flusher: a background thread\n");
  }
  std::printf("  about %.1f DRAM lines per transaction (estimate)\n", s.lines_per_txn);
  std::printf("  %-14s %12s %12s %10s %9s %9s %10s %8s %8s\n", "mode", "txn_per_s", "ops_per_s",
              "abort_rate", "p50_us", "p99_us", "susp/txn", "vs_seq", "of_roof");
}

// The JSON fields every engine's run has: the workload as configured and as run (operations by
// type, attempts included), and its figures. The caller adds the engine's own.
void add_run_fields(JsonObject& o, const Config& cfg, const ModeResult& m, const RunFigures& f,
                    std::uint32_t rep, double load_s) {
  o.add("mode", m.mode).add("workload", cfg.workload);
  o.add("records", cfg.records).add("threads", cfg.threads).add("seconds", cfg.seconds);
  o.add("txns_per_thread", cfg.txns);
  o.add("ops_per_txn", cfg.ops_per_txn).add("read", cfg.read).add("update", cfg.update);
  o.add("rmw", cfg.rmw).add("scan", cfg.scan).add("insert", cfg.insert);
  o.add("scan_length", cfg.scan_length).add("scan_uniform", cfg.scan_uniform ? 1 : 0);
  o.add("dist", cfg.dist).add("theta", cfg.theta);
  o.add("key_bytes", cfg.key_bytes).add("value_bytes", cfg.value_bytes).add("seed", cfg.seed);
  o.add("key_order", cfg.hashed_keys ? "hashed" : "ordered");
  o.add("rep", rep).add("repeat", cfg.repeat).add("background_load", cfg.background_load);
  o.add("txn_per_s", m.txn_per_s).add("ops_per_s", f.ops_per_s).add("abort_rate", f.abort_rate);
  o.add("p50_us", f.p50_us).add("p99_us", f.p99_us).add("load_s", load_s).add("run_s", m.run_s);
  o.add("commits", m.total.commits).add("aborts", m.total.aborts);
  o.add("errors", m.total.errors);
  const auto& n = m.total.by_op;
  o.add("ops_read", n[0]).add("ops_update", n[1]).add("ops_rmw", n[2]);
  o.add("ops_scan", n[3]).add("ops_insert", n[4]);
  o.add("peak_rss_bytes", peak_rss_bytes());
  o.add("peak_rss_mib", peak_rss_mib());
}

// Report, per run: its table row and its JSON line. `seq`: this round's sequential txn/s, or
// 0 before sequential ran. Answers "" or the error of appending the JSON line.
std::string report_run(const Config& cfg, const Setup& s, const Variant& var, const ModeResult& m,
                       std::uint32_t rep, double seq) {
  const RunFigures f = RunFigures::of(m);
  const double susp = m.exec.transactions > 0 ? static_cast<double>(m.exec.suspends) /
                                                    static_cast<double>(m.exec.transactions)
                                              : 0;
  const double line_rate = m.txn_per_s * s.lines_per_txn;
  char vs[32] = "-";
  if (seq > 0) std::snprintf(vs, sizeof vs, "%.2fx", m.txn_per_s / seq);
  char of[32] = "-";
  if (s.roof_rate > 0) std::snprintf(of, sizeof of, "%.0f%%", 100 * line_rate / s.roof_rate);
  std::printf("  %-14s %12.0f %12.0f %10.4f %9.2f %9.2f %10.1f %8s %8s\n", var.label.c_str(),
              m.txn_per_s, f.ops_per_s, f.abort_rate, f.p50_us, f.p99_us, susp, vs, of);
  const double c50 = m.total.commit_latency.quantile(0.50) / 1000.0;
  const double c99 = m.total.commit_latency.quantile(0.99) / 1000.0;
  if (!cfg.db.dir.empty()) {
    std::printf("  %-14s log %.1f MB/s, %.0f syncs/s, commit latency p50 %.0f us, p99 %.0f us\n",
                "", m.log_bytes_per_s / 1e6, m.syncs_per_s, c50, c99);
  }
  if (cfg.db.memory_budget_mib != 0) {
    std::printf(
        "  %-14s hit ratio %.4f (leaves %.4f, inner nodes %.4f), %.0f cold reads/s (%.1f MB/s), "
        "io depth %.1f, %s evictions\n",
        "", m.cold.hit_ratio, m.cold.leaf_hit_ratio, m.cold.inner_hit_ratio,
        m.cold.cold_reads_per_s, m.cold.cold_read_bytes_per_s / 1e6, m.cold.io_depth,
        with_commas(m.cold.evictions).c_str());
  }
  std::fflush(stdout);
  if (cfg.json == "none") return "";

  const DatabaseStats st = s.db->stats();
  JsonObject o;
  o.add("bench", "ycsb").add("time", iso_time());
  o.add("engine", "braid").add("engine_version", BRAID_VERSION);
  add_run_fields(o, cfg, m, f, rep, s.load_s);
  o.add("scheduler", cfg.scheduler).add("batch", var.batch);
  o.add("isolation", std::string(to_string(var.iso)));
  o.add("declare_read_only", cfg.declare_read_only ? 1 : 0);
  m.aborts.add_to(o, m.total.commits + m.total.aborts);
  o.add("multi_get", cfg.multi_get ? 1 : 0).add("load", cfg.load);
  o.add("commit", cfg.db.dir.empty() ? std::string("none") : cfg.db.commit);
  o.add("log_flusher", cfg.db.log_flusher).add("sq_poll_cpu", cfg.db.sq_poll_cpu);
  o.add("prefault_mib", cfg.db.prefault_mib).add("prefault_index_mib", cfg.db.prefault_index_mib);
  o.add("l2_kib", cfg.db.l2_kib);
  if (!cfg.db.dir.empty()) {
    o.add("dir", cfg.db.dir).add("log_sync", cfg.db.log_sync);
    o.add("log_bytes_per_s", m.log_bytes_per_s).add("syncs_per_s", m.syncs_per_s);
    o.add("commit_p50_us", c50).add("commit_p99_us", c99);
  }
  o.add("suspends_per_txn", susp).add("auto_batch", m.exec.auto_batch);
  o.add("auto_decisions", m.exec.auto_decisions).add("live_versions", st.live_versions);
  o.add("memory_budget_mib", cfg.db.memory_budget_mib).add("hit_ratio", m.cold.hit_ratio);
  o.add("leaf_hit_ratio", m.cold.leaf_hit_ratio).add("inner_hit_ratio", m.cold.inner_hit_ratio);
  o.add("page_index", cfg.db.memory_budget_mib != 0 ? cfg.db.page_index : 0);
  o.add("scan_read_ahead", cfg.db.scan_read_ahead);
  o.add("cold_reads_per_s", m.cold.cold_reads_per_s).add("io_depth", m.cold.io_depth);
  o.add("cold_records_per_s", m.cold.cold_records_per_s);
  o.add("cold_read_bytes_per_s", m.cold.cold_read_bytes_per_s);
  o.add("evictions", m.cold.evictions).add("live_version_bytes", st.live_version_bytes);
  o.add("index_nodes", st.index_nodes).add("index_leaves_stored", st.index_leaves_stored);
  o.add("index_nodes_free", st.index_nodes_free);
  o.add("index_leaf_evictions", st.index_leaf_evictions);
  o.add("index_leaf_loads", st.index_leaf_loads);
  o.add("index_leaf_loads_async", st.index_leaf_loads_async);
  o.add("index_leaf_read_joins", st.index_leaf_read_joins);
  o.add("index_inner_nodes_stored", st.index_inner_nodes_stored);
  o.add("index_inner_evictions", st.index_inner_evictions);
  o.add("index_inner_loads", st.index_inner_loads);
  o.add("index_leaf_write_errors", st.index_leaf_write_errors);
  o.add("index_frame_bytes_released", st.index_frame_bytes_released);
  o.add("version_heap_bytes", st.version_heap_bytes);
  o.add("index_frame_bytes", st.index_frame_bytes).add("oid_bytes", st.oid_bytes);
  o.add("index_run_list_bytes", st.index_run_list_bytes);
  o.add("records_named_by_address", st.records_named_by_address);
  o.add("records_demoted", st.records_demoted);
  o.add("version_bytes_released", st.version_bytes_released);
  o.add("lines_per_txn", s.lines_per_txn).add("line_fetches_per_s", line_rate);
  if (s.roof_rate > 0) {
    o.add("roof_lines_per_s", s.roof_rate);
    o.add("roof_fraction", line_rate / s.roof_rate);
  }
  o.add_object("machine", machine_description());
  return append_json_line(cfg.json, o);
}

// Report, at the end: memory, and with several rounds or variants their spread and ratios.
void report_summary(const Setup& s, const std::vector<Variant>& variants,
                    const std::vector<std::vector<double>>& rates) {
  const DatabaseStats st = s.db->stats();
  std::printf("  peak RSS %.1f MiB, %s live versions, %s index nodes", peak_rss_mib(),
              with_commas(st.live_versions).c_str(), with_commas(st.index_nodes).c_str());
  if (st.index_leaf_evictions != 0) {
    std::printf(
        " (%s leaves on storage; %s leaf evictions, %s loads, %s of them async)",
        with_commas(st.index_leaves_stored).c_str(), with_commas(st.index_leaf_evictions).c_str(),
        with_commas(st.index_leaf_loads).c_str(), with_commas(st.index_leaf_loads_async).c_str());
  }
  if (st.index_inner_evictions != 0) {
    std::printf(" (%s inner nodes on storage; %s inner evictions, %s loads)",
                with_commas(st.index_inner_nodes_stored).c_str(),
                with_commas(st.index_inner_evictions).c_str(),
                with_commas(st.index_inner_loads).c_str());
  }
  std::printf("\n");
  print_memory_line(st);
  std::vector<std::string> labels;
  for (const Variant& v : variants) labels.push_back(v.label);
  print_rounds_summary(labels, rates, "txn/s");
}

}  // namespace braid::bench::ycsb
