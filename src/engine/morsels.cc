// Morsel-driven scans (Database::scan_morsels): a key range cut at index separators into
// morsels, each run as a read-only transaction on a worker, a bounded number in flight per
// worker, all at one snapshot that a transaction of the calling thread keeps alive.
#include "engine/worker_pool.h"

#include <braid/database.h>
#include <braid/tx.h>

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "engine/checks.h"
#include "engine/database_impl.h"
#include "engine/table.h"
#include "engine/tx_state.h"
#include "util/assert.h"

namespace braid {

namespace {

// The body every morsel runs: the snapshot first (before the morsel reads anything), then the
// caller's function. Arguments by value: the task starts after the submission returns.
Task<Status> morsel_body(engine::DatabaseImpl* db, std::uint64_t snapshot, const MorselFunction* fn,
                         Morsel morsel, Tx& tx) {
  db->share_snapshot(detail::TxState::of(tx)->ctx, snapshot);
  co_return co_await (*fn)(tx, morsel);
}

Status check_morsel_options(const MorselOptions& o) {
  if (o.morsels_per_worker == 0 || o.morsels_per_worker > kMaxMorselsPerWorker) {
    return Status::invalid_argument("scan_morsels: morsels_per_worker must be 1.." +
                                    std::to_string(kMaxMorselsPerWorker));
  }
  return Status::ok();
}

// The morsels a worker runs at once. Each is a transaction in one of the worker's slots, so the
// caller's depth and the default are both held to the slots: an explicit depth beyond them is
// the caller's mistake, the default quietly fits.
Result<std::uint32_t> morsel_depth(const MorselOptions& o, const Options& db) {
  const std::uint32_t max_depth = std::min(kMaxMorselDepth, db.slots_per_worker);
  BRAID_ASSERT(max_depth >= 1);
  if (o.io_depth == 0) return std::min(kDefaultMorselDepth, max_depth);
  if (o.io_depth > max_depth) {
    return Status::invalid_argument("scan_morsels: io_depth must be 1.." +
                                    std::to_string(max_depth) +
                                    " (kMaxMorselDepth and Options::slots_per_worker), or 0 for "
                                    "the default");
  }
  return o.io_depth;
}

}  // namespace

Status Database::scan_morsels(Table& table, std::string_view begin, std::string_view end,
                              const MorselOptions& options, MorselFunction fn) {
  if (Status s = impl_->refuse_on_worker("Database::scan_morsels()"); !s.is_ok()) return s;
  if (table.owner() != impl_.get()) {
    return Status::invalid_argument("scan_morsels: table '" + table.name() +
                                    "' belongs to another database");
  }
  if (!fn) return Status::invalid_argument("scan_morsels: empty morsel function");
  if (!end.empty() && begin >= end) {
    return Status::invalid_argument("scan_morsels: empty range (begin >= end)");
  }
  if (Status s = check_morsel_options(options); !s.is_ok()) return s;
  Result<std::uint32_t> resolved = morsel_depth(options, impl_->options());
  if (!resolved.is_ok()) return resolved.status();
  const std::uint32_t depth = *resolved;
  // The snapshot's keeper: while it is open the horizon stays at or below its snapshot, so
  // every morsel may read at that snapshot however late it starts.
  Result<Transaction> keeper = impl_->begin(TxnOptions::with(Isolation::kSnapshot, true));
  if (!keeper.is_ok()) {
    return Status(keeper.status().code(),
                  "scan_morsels: " + std::string(keeper.status().message()));
  }
  const std::uint64_t snapshot = keeper->snapshot();
  const std::uint32_t workers = impl_->options().workers;

  // Cuts at index separators; the tree may change meanwhile, which moves only the balance.
  const std::vector<std::string> cuts =
      table.index().split_keys(begin, end, std::size_t{workers} * options.morsels_per_worker - 1);
  const auto count = static_cast<std::uint32_t>(cuts.size() + 1);
  const auto bound = [&](std::uint32_t i) -> std::string_view {
    if (i == 0) return begin;
    if (i == count) return end;
    return cuts[i - 1];
  };

  struct Flight {
    Pending pending;
    std::uint32_t worker;
  };
  std::deque<Flight> flights;
  std::vector<std::uint32_t> in_flight(workers, 0);
  Status first;
  std::uint32_t next = 0;
  const auto settle = [&](Flight& f) {
    Status s = f.pending.wait();
    --in_flight[f.worker];
    if (!s.is_ok() && first.is_ok()) first = std::move(s);
  };
  while (next < count || !flights.empty()) {
    // Fill every worker up to the depth, least loaded first.
    while (next < count && first.is_ok()) {
      const auto w = static_cast<std::uint32_t>(
          std::min_element(in_flight.begin(), in_flight.end()) - in_flight.begin());
      if (in_flight[w] >= depth) break;
      const Morsel m{bound(next), bound(next + 1), next, count};
      engine::DatabaseImpl* db = impl_.get();
      SubmitOptions so;
      so.worker = static_cast<std::int32_t>(w);
      so.txn = TxnOptions::with(Isolation::kSnapshot, true);
      Result<Pending> p = workers_->submit(
          [db, snapshot, f = &fn, m](Tx& tx) { return morsel_body(db, snapshot, f, m, tx); }, so);
      if (!p.is_ok()) {
        // The worker's queue is full (other submitters): wait for one of ours, then retry.
        if (p.status() == Code::kBusy && !flights.empty()) break;
        if (first.is_ok()) first = p.status();
        break;
      }
      flights.push_back({std::move(p).value(), w});
      ++in_flight[w];
      ++next;
    }
    if (!first.is_ok()) next = count;  // skip what has not started
    if (flights.empty()) break;
    // Whatever ended already, then the oldest (morsels are alike, so it ends about first).
    bool any = false;
    for (auto it = flights.begin(); it != flights.end();) {
      if (!it->pending.ready()) {
        ++it;
        continue;
      }
      settle(*it);
      it = flights.erase(it);
      any = true;
    }
    if (!any) {
      settle(flights.front());
      flights.pop_front();
    }
  }
  keeper->abort();
  return first;
}

}  // namespace braid
