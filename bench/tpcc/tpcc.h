// braid-bench tpcc: TPC-C, TPC-CR and TPC-CH over the public API (CoroBase §5.2, §5.8).
//
// The nine TPC-C tables plus CH-benCHmark's supplier, nation and region; the five TPC-C
// transactions and Q2* written as ordinary coroutine transactions with single-key operations,
// scans and secondary-index reads (customer by last name, order by customer); `hybrid` swaps in
// multi_get where CoroBase's Hybrid does (NewOrder's items and stock, StockLevel's stock, Q2*'s
// suppliers and stock). Exposed here so tests can load, run and verify at small scale.
#pragma once

#include <braid/database.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "report.h"
#include "util/enum_names.h"
#include "util/random.h"

namespace braid::bench {

int tpcc_main(int argc, char** argv, int first);
const char* tpcc_usage();

// The standard mixes, then one mix per transaction type (that type only: for measuring a type on
// its own, e.g. its instruction footprint; TpccMix::kNewOrderOnly + type is that type's mix).
enum class TpccMix : std::uint8_t {
  kTpcc,
  kTpccR,
  kTpccH,
  kNewOrderOnly,
  kPaymentOnly,
  kOrderStatusOnly,
  kDeliveryOnly,
  kStockLevelOnly,
  kQuery2Only,
  kQuery1Only,
};
inline constexpr const char* kTpccMixNames[] = {
    "tpcc",         "tpcc-r",   "tpcc-h",      "new-order", "payment",
    "order-status", "delivery", "stock-level", "q2",        "q1"};
static_assert(util::names_every(kTpccMixNames, TpccMix::kQuery1Only));
inline constexpr std::size_t kTpccStandardMixes = 3;  // "all" runs these
const char* mix_name(TpccMix mix);

// Transaction types, in the order of every per-type array.
enum TpccType : std::uint8_t {
  kNewOrder,
  kPayment,
  kOrderStatus,
  kDelivery,
  kStockLevel,
  kQuery2,
  kQuery1,
  kTpccTypes
};
static_assert(static_cast<int>(TpccMix::kQuery1Only) - static_cast<int>(TpccMix::kNewOrderOnly) ==
              kQuery1 - kNewOrder);

// TPC-CH's analytical transactions in the tpcc-h mix (its 10 %): CoroBase's Q2* (restocks what
// it finds low), a Q1* (CH-benCHmark Q1 over one district's order lines: a scan, read-only),
// or both, half each.
enum class ChQueries : std::uint8_t { kQ2, kQ1, kBoth };
const char* type_name(TpccType t);

// Warehouse ids are 2 bytes in the keys (tpcc.cc, "Primary keys").
inline constexpr std::uint32_t kTpccMaxWarehouses = 0xffff;

struct TpccScale {
  std::uint32_t warehouses = 4;  // at most kTpccMaxWarehouses
  // Spec values by default; tests shrink them (not a valid TPC-C scale then).
  std::uint32_t items = 100'000;
  std::uint32_t customers = 3'000;  // per district; also the orders loaded per district
  std::uint32_t suppliers_table = 10'000;
};

struct TpccTables {
  Table* warehouse = nullptr;
  Table* district = nullptr;
  Table* customer = nullptr;
  Table* history = nullptr;
  Table* new_order = nullptr;
  Table* orders = nullptr;
  Table* order_line = nullptr;
  Table* item = nullptr;
  Table* stock = nullptr;
  Table* supplier = nullptr;
  Table* nation = nullptr;
  Table* region = nullptr;
  Index* customer_by_last = nullptr;   // (w, d, c_last, c_first) → customer
  Index* order_by_customer = nullptr;  // (w, d, c, o) → order
  // Per (warehouse, district): no undelivered order has a smaller id. Delivery starts its
  // new-order scan here (as ERMIA does) instead of at the district's first key. Removed keys
  // are reclaimed now, and under snapshot isolation the hint gains nothing (16 warehouses:
  // 0.98x-1.02x round by round), but a serializable scan from the district's first key covers
  // the leaves where reclamation is removing delivered keys, and each removal changes the
  // leaf it read (a phantom abort): at 2 warehouses, 8 slots, SSN, Delivery ran 27 txn/s
  // without the hint against 451-480 with it (issue 51). `--delivery-hint 0` measures it.
  // Only the warehouse's own worker touches its entries.
  mutable std::vector<std::uint32_t> delivery_hint;
};

// Creates the tables and indexes and loads the initial population with `loaders` threads
// (warehouse w by loader (w - 1) % loaders). `records` receives the rows loaded;
// `warehouses_done`, when given, counts warehouses as they finish (for a progress line).
Status tpcc_load(Database& db, const TpccScale& scale, std::uint32_t loaders, std::uint64_t seed,
                 TpccTables* tables, std::uint64_t* records,
                 std::atomic<std::uint64_t>* warehouses_done = nullptr);

struct TpccRunConfig {
  TpccMix mix = TpccMix::kTpcc;
  bool hybrid = false;
  // Delivery starts its new-order scan at TpccTables::delivery_hint (false: at the
  // district's first key, the reclaimed new-order keys gone from the index).
  bool delivery_hint = true;
  std::uint32_t suppliers = 100;  // suppliers one Q2* visits
  ChQueries ch = ChQueries::kQ2;  // tpcc-h's analytical share
  ExecOptions exec;
  double seconds = 1;
  // Stop after this many transactions per worker instead (0: run for `seconds`).
  std::uint64_t max_txns_per_worker = 0;
  std::uint64_t seed = 1;
  Isolation isolation = Isolation::kSnapshot;
  // Order-Status and Stock-Level declare themselves read-only (TxnOptions::read_only).
  bool declare_read_only = true;
  // The order in which a worker starts the mix's types (TpccTypeSource): 0, as drawn; N,
  // drawn in decks of N and started grouped by type.
  std::uint32_t type_deck = 0;
  // An oracle for what hiding every miss could gain: each transaction runs twice, first as a
  // rehearsal that rolls back (and counts nothing), then for real with the same draws, finding
  // its index nodes, entries and versions cached by the rehearsal. TpccResult::txn_s counts
  // only the timed runs. One transaction at a time: the plain modes only (InvalidArgument
  // otherwise). The timed run does the same work: the rehearsal's inserts left the index when
  // it rolled back, so the timed run inserts them again (only the leaf splits they caused stay).
  bool rehearse = false;
};

// Which type a worker's next transaction is: drawn from the mix, from a stream of its own (so
// that both orders below start the same types). With deck == 0, in the order drawn. With
// deck == N, N draws at a time, handed out grouped by type (a sorted deck): the transactions a
// worker has open are then mostly of one type and run the same code, the team STEPS forms
// (Harizopoulos & Ailamaki §4: teams by transaction type). Each deck holds exactly the types
// the drawn order would have started at those positions, so the mix over whole decks is the
// same, and no type waits longer than one deck. A transaction's latency still starts at its
// launch: the time it spent behind its deck is not counted (the generator is a closed loop
// and has no arrival time to count from).
class TpccTypeSource {
 public:
  static constexpr std::uint32_t kMaxDeck = 4096;
  TpccTypeSource(TpccMix mix, std::uint64_t seed, std::uint32_t deck,
                 ChQueries ch = ChQueries::kQ2);
  TpccType next();

 private:
  TpccType draw();
  TpccMix mix_;
  ChQueries ch_;
  std::uint32_t deck_size_;  // 0: the drawn order
  util::Rng rng_;
  std::vector<TpccType> deck_;  // drained from deck_pos_
  std::size_t deck_pos_ = 0;
};

struct TpccTypeStats {
  std::uint64_t commits = 0;
  std::uint64_t rollbacks = 0;  // NewOrder's intended 1 % (a completed transaction by the spec)
  std::uint64_t aborts = 0;     // conflicts
  std::uint64_t errors = 0;     // anything else (reported, fails the run)
  Histogram latency;            // body start to end, committed and rolled back
};

struct TpccResult {
  TpccTypeStats type[kTpccTypes];
  std::string first_error;
  double run_s = 0;
  // The transactions' own time, summed over workers: their latencies from admission to end
  // (TxnGenerator::finished), rehearsals excluded. With one transaction at a time this is the
  // run's time spent in them; under rehearse, the timed runs' time.
  double txn_s = 0;
  ExecStats exec;
  std::uint64_t completed() const;  // commits + rollbacks
  std::uint64_t aborts() const;
  std::uint64_t errors() const;
};

// Runs the mix on the database's workers. Worker t's home warehouses are those with
// (w - 1) % workers == t; each transaction takes a home among them that no other open
// transaction of the worker uses, when there is one (see TpccGenerator::begin). Needs
// warehouses >= workers.
Status tpcc_run(Database& db, const TpccTables& tables, const TpccScale& scale,
                const TpccRunConfig& cfg, TpccResult* result);

// TPC-C consistency conditions 1-4 (clause 3.3.2) over the committed state. OK, or Corruption
// naming the first violation; `checked` receives the number of district-level checks made.
Status tpcc_verify(Database& db, const TpccTables& tables, const TpccScale& scale,
                   std::uint64_t* checked);

}  // namespace braid::bench
