// TPC-C's driver side on each worker: a TxnGenerator whose bodies are the five transactions
// (transactions.cc) and Q2* (query2.cc), written as ordinary coroutine transactions with
// single-key operations, scans and secondary-index reads; and what each worker records.
#pragma once

#include <braid/braid.h>
#include <braid/tx.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tpcc/schema.h"
#include "tpcc/tpcc.h"
#include "util/assert.h"
#include "util/random.h"

namespace braid::bench::tpcc {

struct WorkerStats {
  TpccTypeStats type[kTpccTypes];
  std::string first_error;
  std::uint64_t txn_ns = 0;  // TpccResult::txn_s
};

// Worker t's transactions. Parameters and every key and row live in the coroutine frames
// (lifetime rule of <braid/task.h>); the generator outlives the run.

class TpccGenerator : public TxnGenerator {
 public:
  TpccGenerator(const TpccTables& t, const TpccScale& s, const TpccRunConfig& cfg,
                std::uint32_t worker, std::uint32_t workers, const std::atomic<bool>& stop,
                WorkerStats* out)
      : t_(t),
        s_(s),
        cfg_(cfg),
        origin_(next_origin(workers) + worker),
        rng_(cfg.seed * 0x9E3779B97F4A7C15ull + worker),
        types_(cfg.mix, (cfg.seed ^ 0x7970655f6f726472ull) * 0x9E3779B97F4A7C15ull + worker,
               cfg.type_deck, cfg.ch),
        stop_(stop),
        out_(out) {
    for (std::uint32_t w = 1; w <= s.warehouses; ++w) {
      if ((w - 1) % workers == worker) home_.push_back(w);
    }
    BRAID_ASSERT(!home_.empty());
    busy_.assign(s.warehouses + 1, 0);
  }

  bool next(Tx& tx, Task<Status>* task) override {
    TpccType type;
    if (replay_) {
      // The timed run of the transaction just rehearsed: the same draws, so the same keys and
      // rows (TpccRunConfig::rehearse). It runs even when the stop came meanwhile.
      BRAID_ASSERT(cfg_.rehearse);
      rng_ = rehearsed_rng_;
      history_seq_ = rehearsed_history_seq_;
      type = rehearsed_type_;
      rehearsal_ = false;
      replay_ = false;
    } else {
      if (stop_.load(std::memory_order_relaxed)) return false;
      if (cfg_.max_txns_per_worker != 0 && issued_ == cfg_.max_txns_per_worker) return false;
      ++issued_;
      type = types_.next();
      if (cfg_.rehearse) {
        rehearsed_rng_ = rng_;
        rehearsed_history_seq_ = history_seq_;
        rehearsed_type_ = type;
        rehearsal_ = true;
        replay_ = true;
      }
    }
    // One transaction at a time under rehearse (tpcc_run admits only the plain modes): the
    // bodies read rehearsal_ at their end, and finished() attributes its latency by it.
    BRAID_ASSERT(!cfg_.rehearse || open() == 0);
    // Q2* restocks what it finds low (CoroBase §5.2): not read-only.
    const bool reads_only = type == kOrderStatus || type == kStockLevel || type == kQuery1;
    if (Status s =
            tx.configure(TxnOptions::with(cfg_.isolation, cfg_.declare_read_only && reads_only));
        !s.is_ok()) {
      ++out_->type[type].errors;
    }
    switch (type) {
      case kNewOrder:
        *task = new_order(tx);
        break;
      case kPayment:
        *task = payment(tx);
        break;
      case kOrderStatus:
        *task = order_status(tx);
        break;
      case kDelivery:
        *task = delivery(tx);
        break;
      case kStockLevel:
        *task = stock_level(tx);
        break;
      case kQuery2:
        *task = query2(tx);
        break;
      default:
        *task = query1(tx);
        break;
    }
    return true;
  }
  void finished(const Status& s, std::uint64_t latency_ns) override {
    // The bodies classified their own outcome; only a failed commit (a halted durable
    // database) arrives here unannounced.
    if (s.code() == Code::kIOError) error(s);
    // Under rehearse the body that ended is the one next() produced last (one at a time).
    if (!rehearsal_) out_->txn_ns += latency_ns;
  }

 private:
  // History rows have no key of their own in TPC-C; ours is (w, origin, sequence), with an
  // origin per generator that no other run of this process reuses.
  static std::uint32_t next_origin(std::uint32_t workers) {
    static std::atomic<std::uint32_t> next{1};  // 0: the load's rows
    return next.fetch_add(workers);
  }
  // A transaction's start: its home warehouse, chosen uniformly among the worker's warehouses
  // that no other open transaction of this worker is using (TPC-C terminals have a fixed home
  // warehouse; here a worker's interleaved transactions act as its terminals, and two of them
  // meet on a warehouse only when it has more open than warehouses). finish() releases it.
  struct Begin {
    Clock::time_point t;
    std::uint32_t w;
  };
  Begin begin() {
    std::uint32_t free = 0;
    for (const std::uint32_t w : home_) free += busy_[w] == 0 ? 1 : 0;
    std::uint32_t w = home_[rng_.uniform(home_.size())];
    if (free != 0 && busy_[w] != 0) {
      std::uint64_t k = rng_.uniform(free);
      for (const std::uint32_t h : home_) {
        if (busy_[h] == 0 && k-- == 0) {
          w = h;
          break;
        }
      }
    }
    ++busy_[w];
    return {Clock::now(), w};
  }
  std::uint32_t other_warehouse(std::uint32_t w) {
    std::uint32_t o = uniform(rng_, 1, s_.warehouses - 1);
    return o >= w ? o + 1 : o;
  }
  void error(const Status& s) {
    if (out_->first_error.empty()) out_->first_error = s.to_string();
  }

  // The outcome of a body: commit (the worker commits an OK body), rollback, conflict, error.
  // A rehearsal's body ends without committing (TPCC_COMMIT) and records nothing but an
  // error; its non-OK status makes the worker roll it back.
  enum class End : std::uint8_t { kCommit, kRollback };
  Status finish(TpccType type, Begin start, Status s, End end = End::kCommit) {
    BRAID_ASSERT(busy_[start.w] > 0);
    --busy_[start.w];
    TpccTypeStats& st = out_->type[type];
    if (rehearsal_) {
      if (s.is_ok()) return Status::not_found("tpcc: rehearsal");
      if (s.code() != Code::kConflict) {
        ++st.errors;
        error(s);
      }
      return s;
    }
    if (s.is_ok()) {
      if (end == End::kRollback) {
        ++st.rollbacks;
        s = Status::not_found("tpcc: NewOrder rollback (unused item)");
      } else {
        ++st.commits;
      }
      st.latency.record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start.t).count()));
    } else if (s.code() == Code::kConflict) {
      ++st.aborts;
    } else {
      ++st.errors;
      error(s);
    }
    return s;
  }

  // Reads a row, or one field of it; NotFound becomes Corruption (every row the transactions
  // read must exist).
  static Status found(const Result<std::string_view>& r, const char* table) {
    if (r.is_ok()) return Status::ok();
    if (r.code() == Code::kNotFound) {
      return Status::corruption(std::string("tpcc: missing ") + table + " row");
    }
    return r.status();
  }
  template <typename Row>
  static Status read_row(const Result<std::string_view>& r, Row* row, const char* table) {
    if (Status s = found(r, table); !s.is_ok()) return s;
    return decode(*r, row) ? Status::ok() : bad_row(table);
  }
  template <typename Row, typename F>
  static Status read_field(const Result<std::string_view>& r, std::size_t offset, F* out,
                           const char* table) {
    if (Status s = found(r, table); !s.is_ok()) return s;
    return field<Row>(*r, offset, out) ? Status::ok() : bad_row(table);
  }

  // Clause 2.4.
  Task<Status> new_order(Tx& tx);

  // NewOrder's per-line writes: the stock update and the order line.
  Task<Status> order_line(Tx& tx, std::uint32_t w, std::uint32_t d, std::uint32_t o,
                          std::uint32_t i, std::uint32_t item, std::uint32_t supply,
                          std::uint32_t qty, std::int64_t price, StockRow* sr);

  // A customer chosen by last name (the middle one in first-name order, 2.5.2.2) or by id;
  // `*c` and `*row` receive it.
  Task<Status> find_customer(Tx& tx, std::uint32_t w, std::uint32_t d, bool by_name,
                             std::uint32_t* c, CustomerRow* row);

  // Clause 2.5. The warehouse and district updates come last: every Payment of a warehouse
  // writes its row, and under first-updater-wins the time between that write and the commit is
  // the window in which a second Payment of the warehouse conflicts.
  Task<Status> payment(Tx& tx);

  // Clause 2.6: the customer, its newest order (order_by_customer, newest first), its lines.
  Task<Status> order_status(Tx& tx);

  // Clause 2.7, all ten districts in one transaction (the deferred execution of 2.7.2 is
  // run as an ordinary transaction, as CoroBase and ERMIA do).
  Task<Status> delivery(Tx& tx);

  // Clause 2.8: distinct items of the district's last 20 orders with stock under a threshold.
  Task<Status> stock_level(Tx& tx);

  // Q2*'s j-th supplier from `first`: a stride coprime to the table size visits distinct
  // suppliers scattered over it, so their stock rows (below) do not share index leaves.
  std::uint32_t supplier_at(std::uint32_t first, std::uint32_t j) const {
    return static_cast<std::uint32_t>((first + std::uint64_t{j} * kSupplierStride) %
                                      s_.suppliers_table);
  }

  // Q2* (CoroBase §5.2, after ERMIA's TPC-CH): a random region; `suppliers` suppliers (see
  // supplier_at); for those in the region's nations, their stock rows in the home warehouse
  // (supplier s supplies items s+1, s+1+10000, ... as in CH-benCHmark's mod-10000 mapping);
  // stock under the threshold is joined with its item and restocked.
  Task<Status> query2(Tx& tx);
  Task<Status> query1(Tx& tx);

  const TpccTables& t_;
  const TpccScale& s_;
  const TpccRunConfig& cfg_;
  std::uint32_t origin_;
  util::Rng rng_;
  TpccTypeSource types_;
  const std::atomic<bool>& stop_;
  WorkerStats* out_;
  std::vector<std::uint32_t> home_;
  std::vector<std::uint32_t> busy_;  // open transactions per home warehouse
  std::uint64_t issued_ = 0;
  std::uint64_t history_seq_ = 0;
  // rehearse: the body next() produced last is a rehearsal; its timed run comes next, from the
  // draws saved here.
  bool rehearsal_ = false;
  bool replay_ = false;
  util::Rng rehearsed_rng_{0};
  std::uint64_t rehearsed_history_seq_ = 0;
  TpccType rehearsed_type_ = kNewOrder;

  std::uint32_t open() const {
    std::uint32_t n = 0;
    for (const std::uint32_t b : busy_) n += b;
    return n;
  }

 public:
  std::uint64_t sink_ = 0;
};

// A body's early exit on a failed step: its outcome recorded, its status answered.
#define TPCC_TRY(type, start, expr)                                         \
  do {                                                                      \
    if (Status s_ = (expr); !s_.is_ok()) co_return finish(type, start, s_); \
  } while (0)
// A body's end: its commit, or a rehearsal's end without one.
#define TPCC_COMMIT(type, start)                                 \
  do {                                                           \
    if (rehearsal_) co_return finish(type, start, Status::ok()); \
    co_return finish(type, start, co_await tx.commit());         \
  } while (0)

}  // namespace braid::bench::tpcc
