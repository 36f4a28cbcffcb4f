// One measured run: threads (the plain loop) or the workers (the engine's modes) for --seconds
// or --txns, and what it measured.
#include "ycsb/workload.h"

namespace braid::bench::ycsb {

// Runs one mode at one batch size for cfg.seconds over the loaded table.
// `inserts`: each thread's next fresh key, carried from run to run.
Status run_mode(Database& db, Table& table, const Config& cfg, const Zipf* zipf, const Variant& var,
                std::vector<std::uint64_t>* inserts, std::uint64_t stream, ModeResult* res) {
  const std::string& mode = var.mode;
  std::atomic<bool> stop{false};
  std::vector<ThreadResult> results(cfg.threads);
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    results[t].next_insert = (*inserts)[t];
    results[t].stream = stream;
  }
  const ExecStats before = db.exec_stats();
  const DurabilityStats dbefore = db.durability_stats();
  const DatabaseStats sbefore = db.stats();
  profile_begin();
  const auto start = Clock::now();
  Status status;
  if (mode == "plain") {
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < cfg.threads; ++t) {
      threads.emplace_back([&, t] {
        PlainApi api{db, table, {}, var.iso, cfg.declare_read_only};
        run_txn_thread(api, cfg, zipf, t, stop, &results[t]);
      });
    }
    stop_after(cfg, stop);
    for (auto& th : threads) th.join();
  } else {
    std::vector<std::unique_ptr<YcsbGenerator>> gens;
    std::vector<TxnGenerator*> ptrs;
    for (std::uint32_t t = 0; t < cfg.threads; ++t) {
      gens.push_back(
          std::make_unique<YcsbGenerator>(table, cfg, zipf, t, stop, &results[t], var.iso));
      ptrs.push_back(gens.back().get());
    }
    ExecOptions exec;
    exec.mode = mode_of(mode);
    (void)parse_scheduler(cfg.scheduler, &exec.scheduler);  // a name flags.choice accepted
    exec.batch = var.batch;
    exec.seed = cfg.seed;
    std::thread timer([&] { stop_after(cfg, stop); });
    status = db.run(ptrs, exec);
    timer.join();
    std::uint64_t sink = 0;
    for (std::uint32_t t = 0; t < cfg.threads; ++t) {
      sink += gens[t]->sink();
      results[t].next_insert = gens[t]->next_insert();
    }
    if (sink == 1) std::fprintf(stderr, " ");
  }
  res->run_s = std::chrono::duration<double>(Clock::now() - start).count();
  profile_end(var.label.c_str());
  res->mode = mode;
  for (std::uint32_t t = 0; t < cfg.threads; ++t) (*inserts)[t] = results[t].next_insert;
  for (const ThreadResult& r : results) res->total.add(r);
  res->exec = exec_delta(before, db.exec_stats());
  res->txn_per_s = static_cast<double>(res->total.commits) / res->run_s;
  const DurabilityStats dafter = db.durability_stats();
  res->log_bytes_per_s = static_cast<double>(dafter.log_bytes - dbefore.log_bytes) / res->run_s;
  res->syncs_per_s = static_cast<double>(dafter.log_flushes - dbefore.log_flushes) / res->run_s;
  const DatabaseStats safter = db.stats();
  res->cold = ColdFigures::of(sbefore, safter, res->total.ops, res->run_s);
  res->aborts = AbortCauses::of(sbefore, safter);
  if (dafter.halted) status = Status::io_error(dafter.halt_reason);
  return status;
}

// Parse: the command line into a Config. Answers "" or the error to print above the usage.

}  // namespace braid::bench::ycsb
