// Running TPC-C: the mixes and their type decks, one generator per worker, and the run's
// results by transaction type.
#include "tpcc/tpcc.h"

#include <braid/braid.h>

#include <atomic>
#include <chrono>
#include <iterator>
#include <thread>
#include <vector>

#include "tpcc/generator.h"

namespace braid::bench {

using namespace tpcc;  // NOLINT(google-build-using-namespace): the schema's own names

const char* mix_name(TpccMix mix) { return util::enum_name(mix, kTpccMixNames, "tpcc"); }

const char* type_name(TpccType t) {
  static constexpr const char* kNames[] = {"NewOrder",   "Payment", "OrderStatus", "Delivery",
                                           "StockLevel", "Q2*",     "Q1*"};
  static_assert(std::size(kNames) == kTpccTypes);
  return t < kTpccTypes ? kNames[t] : "?";
}

std::uint64_t TpccResult::completed() const {
  std::uint64_t n = 0;
  for (const auto& t : type) n += t.commits + t.rollbacks;
  return n;
}
std::uint64_t TpccResult::aborts() const {
  std::uint64_t n = 0;
  for (const auto& t : type) n += t.aborts;
  return n;
}
std::uint64_t TpccResult::errors() const {
  std::uint64_t n = 0;
  for (const auto& t : type) n += t.errors;
  return n;
}

TpccType TpccTypeSource::next() {
  if (deck_size_ == 0) return draw();
  if (deck_pos_ == deck_.size()) {
    deck_.clear();
    for (std::uint32_t i = 0; i < deck_size_; ++i) deck_.push_back(draw());
    std::sort(deck_.begin(), deck_.end());
    deck_pos_ = 0;
  }
  return deck_[deck_pos_++];
}

TpccType TpccTypeSource::draw() {
  const std::uint32_t r = static_cast<std::uint32_t>(rng_.uniform(100));
  switch (mix_) {
    case TpccMix::kTpccR:
      return r < 50 ? kStockLevel : kOrderStatus;
    case TpccMix::kTpccH:  // CoroBase §5.2: 10 % Q2*, 40 / 38 / 4 / 4 / 4
      if (r < 10) {
        if (ch_ == ChQueries::kBoth) return r < 5 ? kQuery2 : kQuery1;
        return ch_ == ChQueries::kQ1 ? kQuery1 : kQuery2;
      }
      if (r < 50) return kNewOrder;
      if (r < 88) return kPayment;
      if (r < 92) return kOrderStatus;
      if (r < 96) return kDelivery;
      return kStockLevel;
    case TpccMix::kTpcc:  // 45 / 43 / 4 / 4 / 4
      break;
    default:
      return static_cast<TpccType>(static_cast<int>(mix_) -
                                   static_cast<int>(TpccMix::kNewOrderOnly));
  }
  if (r < 45) return kNewOrder;
  if (r < 88) return kPayment;
  if (r < 92) return kOrderStatus;
  if (r < 96) return kDelivery;
  return kStockLevel;
}

Status tpcc_run(Database& db, const TpccTables& tables, const TpccScale& scale,
                const TpccRunConfig& cfg, TpccResult* result) {
  const std::uint32_t workers = db.options().workers;
  if (scale.warehouses < workers) {
    return Status::invalid_argument("tpcc: " + std::to_string(workers) + " workers need at least " +
                                    std::to_string(workers) + " warehouses (one home each)");
  }
  const ExecMode mode = cfg.exec.mode;
  if (cfg.rehearse && mode != ExecMode::kSequential && mode != ExecMode::kPrefetch) {
    return Status::invalid_argument(
        "tpcc: rehearse runs only in the plain modes (sequential, prefetch): a rehearsal and its "
        "timed run must not interleave with other transactions");
  }
  std::atomic<bool> stop{false};
  std::vector<WorkerStats> stats(workers);
  std::vector<std::unique_ptr<TpccGenerator>> gens;
  std::vector<TxnGenerator*> ptrs;
  for (std::uint32_t i = 0; i < workers; ++i) {
    gens.push_back(
        std::make_unique<TpccGenerator>(tables, scale, cfg, i, workers, stop, &stats[i]));
    ptrs.push_back(gens.back().get());
  }
  const ExecStats before = db.exec_stats();
  const auto start = Clock::now();
  std::thread timer;
  if (cfg.max_txns_per_worker == 0) {
    timer = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
      stop.store(true);
    });
  }
  Status s = db.run(ptrs, cfg.exec);
  stop.store(true);
  if (timer.joinable()) timer.join();
  const double run_s = std::chrono::duration<double>(Clock::now() - start).count();
  *result = TpccResult{};
  result->run_s = run_s;
  for (const WorkerStats& w : stats) {
    for (int k = 0; k < kTpccTypes; ++k) {
      TpccTypeStats& to = result->type[k];
      const TpccTypeStats& from = w.type[k];
      to.commits += from.commits;
      to.rollbacks += from.rollbacks;
      to.aborts += from.aborts;
      to.errors += from.errors;
      to.latency.merge(from.latency);
    }
    result->txn_s += static_cast<double>(w.txn_ns) / 1e9;
    if (result->first_error.empty()) result->first_error = w.first_error;
  }
  std::uint64_t sink = 0;
  for (auto& g : gens) sink += g->sink_;
  if (sink == 1) std::fprintf(stderr, " ");  // keeps the reads' results alive
  result->exec = exec_delta(before, db.exec_stats());
  return s;
}

}  // namespace braid::bench
