// TPC-C / TPC-CR / TPC-CH: schema, population, transactions and consistency checks.
//
// Rows are fixed-layout structs copied in and out of values (money in cents, so the YTD sums of
// consistency condition 1 are exact). Keys use the order-preserving encoding of <braid/key.h>
// through a small fixed buffer (KeyBuf), because every Key local of a transaction coroutine
// lives in its frame and a braid::Key is 258 bytes.
#include "tpcc.h"

#include <braid/braid.h>
#include <braid/tx.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>

#include "util/assert.h"
#include "util/random.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

// ---- Rows ---------------------------------------------------------------------------------------

struct WarehouseRow {
  std::int64_t ytd;  // cents
  std::int32_t tax;  // basis points
  char name[11], street_1[21], street_2[21], city[21], state[3], zip[10];
};
struct DistrictRow {
  std::int64_t ytd;
  std::int32_t tax;
  std::int32_t next_o_id;
  char name[11], street_1[21], street_2[21], city[21], state[3], zip[10];
};
struct CustomerRow {
  std::int64_t credit_lim, balance, ytd_payment;
  std::int32_t discount;  // basis points
  std::int32_t payment_cnt, delivery_cnt;
  std::int64_t since;
  char first[17], middle[3], last[17], street_1[21], street_2[21], city[21], state[3], zip[10],
      phone[17], credit[3];
  char data[501];
};
struct HistoryRow {
  std::int32_t c_id, c_d_id, c_w_id, d_id, w_id;
  std::int64_t date, amount;
  char data[25];
};
struct NewOrderRow {
  std::int32_t o_id;
};
struct OrderRow {
  std::int32_t c_id, carrier_id, ol_cnt, all_local;
  std::int64_t entry_d;
};
struct OrderLineRow {
  std::int32_t i_id, supply_w_id, quantity;
  std::int64_t amount, delivery_d;
  char dist_info[25];
};
struct ItemRow {
  std::int32_t im_id;
  std::int64_t price;
  char name[25], data[51];
};
struct StockRow {
  std::int32_t quantity, ytd, order_cnt, remote_cnt;
  char dist[10][25];
  char data[51];
};
struct SupplierRow {
  std::int32_t nationkey;
  std::int64_t acctbal;
  char name[26], address[41], phone[16], comment[101];
};
struct NationRow {
  std::int32_t regionkey;
  char name[26], comment[153];
};
struct RegionRow {
  char name[26], comment[153];
};

template <typename T>
std::string_view bytes_of(const T& row) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(&row), sizeof row};
}

// A row from a value; false when the value is not a T (a schema bug or a corrupt record).
template <typename T>
bool decode(std::string_view v, T* row) {
  if (v.size() != sizeof(T)) return false;
  std::memcpy(static_cast<void*>(row), v.data(), sizeof(T));
  return true;
}

// One field of a row, where a transaction needs no more: copying a whole 0.3-0.7 KB row touches
// every line of it, and the lines it does not need cost misses in every mode.
template <typename Row, typename F>
bool field(std::string_view v, std::size_t offset, F* out) {
  static_assert(std::is_trivially_copyable_v<F>);
  if (v.size() != sizeof(Row)) return false;
  std::memcpy(out, v.data() + offset, sizeof(F));
  return true;
}

Status bad_row(const char* table) {
  return Status::corruption(std::string("tpcc: a ") + table + " value has the wrong size");
}

// ---- Keys ---------------------------------------------------------------------------------------

// Big-endian integers as <braid/key.h> encodes them (same bytes as Key::u8/u16/u32/u64).
class KeyBuf {
 public:
  KeyBuf& u8(std::uint32_t v) { return put(v, 1); }
  KeyBuf& u32(std::uint32_t v) { return put(v, 4); }
  KeyBuf& u64(std::uint64_t v) { return put(v, 8); }
  // An id field `bytes` wide (the widths below).
  KeyBuf& id(std::uint64_t v, int bytes) { return put(v, bytes); }
  KeyBuf& raw(std::string_view s) {
    BRAID_ASSERT(n_ + s.size() <= sizeof b_);
    std::memcpy(b_ + n_, s.data(), s.size());
    n_ = static_cast<std::uint8_t>(n_ + s.size());
    return *this;
  }
  std::string_view view() const { return {b_, n_}; }
  operator std::string_view() const { return view(); }  // NOLINT

 private:
  KeyBuf& put(std::uint64_t v, int bytes) {
    BRAID_ASSERT(n_ + bytes <= static_cast<int>(sizeof b_));
    BRAID_ASSERT(bytes == 8 || v >> (8 * bytes) == 0);  // the field holds the value
    for (int i = bytes - 1; i >= 0; --i) b_[n_++] = static_cast<char>(v >> (8 * i));
    return *this;
  }
  char b_[47];
  std::uint8_t n_ = 0;
};

// Primary keys: warehouse 2 bytes (at most kTpccMaxWarehouses), district 1, customer 2 (at most
// 3,000), order 4, order line number 1, item 4. Why so narrow: the tree compares keys by their
// first 8 bytes (index/btree.h, "heads") and reads a key's tail and suffix only where heads tie.
// With 4-byte warehouse and customer ids, the customer, order, new-order and order-line keys
// were 9-10 bytes long and a whole leaf of them shared a head, so every search of those tables
// compared suffixes byte by byte over lines it would not otherwise read; at these widths each
// key fits its head. Order ids stay 4 bytes: they grow with the run.
constexpr int kWarehouseIdBytes = 2;
constexpr int kCustomerIdBytes = 2;
constexpr int kOrderIdBytes = 4;
static_assert(kTpccMaxWarehouses < 1u << (8 * kWarehouseIdBytes));
KeyBuf wkey(std::uint32_t w) { return KeyBuf().id(w, kWarehouseIdBytes); }
KeyBuf dkey(std::uint32_t w, std::uint32_t d) { return wkey(w).u8(d); }
KeyBuf ckey(std::uint32_t w, std::uint32_t d, std::uint32_t c) {
  return dkey(w, d).id(c, kCustomerIdBytes);
}
KeyBuf okey(std::uint32_t w, std::uint32_t d, std::uint32_t o) {
  return dkey(w, d).id(o, kOrderIdBytes);
}
KeyBuf olkey(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::uint32_t n) {
  return okey(w, d, o).u8(n);
}
KeyBuf ikey(std::uint32_t i) { return KeyBuf().u32(i); }
KeyBuf skey(std::uint32_t w, std::uint32_t i) { return wkey(w).u32(i); }
KeyBuf hkey(std::uint32_t w, std::uint32_t origin, std::uint64_t seq) {
  return wkey(w).u32(origin).u64(seq);
}
KeyBuf sukey(std::uint32_t s) { return KeyBuf().u32(s); }
// Where the customer id sits in a customer key, and the order id in an order, new-order or
// order-line key: right after the district prefix (a dkey).
constexpr std::size_t kDistrictPrefix = kWarehouseIdBytes + 1;

std::uint32_t read_be(std::string_view k, std::size_t at, std::size_t bytes) {
  BRAID_ASSERT(at + bytes <= k.size());
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(k[at + i]);
  return v;
}
// The order id of an order, new-order or order-line key.
std::uint32_t order_id_of(std::string_view k) { return read_be(k, kDistrictPrefix, kOrderIdBytes); }
// The customer id of a customer key.
std::uint32_t customer_id_of(std::string_view k) {
  return read_be(k, kDistrictPrefix, kCustomerIdBytes);
}

std::string_view cstr(const char* s) { return {s, std::strlen(s)}; }

// Secondary keys. Customer by last name also orders by first name, so a Payment or OrderStatus
// by last name reads its candidates already sorted as clause 2.5.2.2 asks.
bool customer_last_key(std::string_view key, std::string_view value, Key* out) {
  CustomerRow c;
  if (key.size() != kDistrictPrefix + kCustomerIdBytes || !decode(value, &c)) return false;
  out->append_bytes(key.substr(0, kDistrictPrefix)).str(cstr(c.last)).str(cstr(c.first));
  return true;
}
// The range of one last name in customer_by_last (the encoded string is self-delimiting).
void last_name_range(std::uint32_t w, std::uint32_t d, std::string_view last, KeyBuf* begin,
                     KeyBuf* end) {
  Key k;
  k.append_bytes(dkey(w, d).view()).str(last);
  *begin = KeyBuf().raw(k.view());
  std::string succ(k.view());
  succ.back() = static_cast<char>(succ.back() + 1);  // str() ends in 0x00 0x01
  *end = KeyBuf().raw(succ);
}
bool order_customer_key(std::string_view key, std::string_view value, Key* out) {
  OrderRow o;
  if (key.size() != kDistrictPrefix + kOrderIdBytes || !decode(value, &o)) return false;
  out->append_bytes(key.substr(0, kDistrictPrefix))
      .append_bytes(KeyBuf().id(static_cast<std::uint32_t>(o.c_id), kCustomerIdBytes).view())
      .append_bytes(key.substr(kDistrictPrefix, kOrderIdBytes));
  return true;
}

// ---- Random input (clause 2.1.6, 4.3.2) --------------------------------------------------------

constexpr std::uint32_t kCLastLoad = 157;  // C for NURand(255) at load
constexpr std::uint32_t kCLastRun = 223;   // and at run time (|223 - 157| = 66, as 2.1.6.1 asks)
constexpr std::uint32_t kCId = 259;
constexpr std::uint32_t kCItem = 7911;
constexpr std::uint32_t kDistricts = 10;
constexpr std::uint32_t kNations = 25;
constexpr std::uint32_t kRegions = 5;
constexpr std::int32_t kQ2Threshold = 15;
constexpr std::uint64_t kSupplierStride = 7919;  // prime, so coprime to the 10,000 suppliers  //
                                                 // Q2*: stock under this quantity is restocked

std::uint32_t uniform(util::Rng& rng, std::uint32_t lo, std::uint32_t hi) {
  return lo + static_cast<std::uint32_t>(rng.uniform(hi - lo + 1));
}
std::uint32_t nurand(util::Rng& rng, std::uint32_t a, std::uint32_t c, std::uint32_t x,
                     std::uint32_t y) {
  return (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x;
}
void astring(util::Rng& rng, char* out, std::uint32_t lo, std::uint32_t hi) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const std::uint32_t n = uniform(rng, lo, hi);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = kAlnum[rng.uniform(sizeof kAlnum - 1)];
  out[n] = '\0';
}
void nstring(util::Rng& rng, char* out, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) out[i] = static_cast<char>('0' + rng.uniform(10));
  out[n] = '\0';
}
void last_name(std::uint32_t num, char* out) {
  static constexpr const char* kSyl[] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                         "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  out[0] = '\0';
  std::strcat(out, kSyl[num / 100]);
  std::strcat(out, kSyl[(num / 10) % 10]);
  std::strcat(out, kSyl[num % 10]);
}
// Last-name numbers exist for 0 .. min(1000, customers) - 1 (all of 0..999 at spec scale).
std::uint32_t name_range(const TpccScale& s) { return std::min<std::uint32_t>(1000, s.customers); }
std::uint32_t run_last_number(util::Rng& rng, const TpccScale& s) {
  return nurand(rng, 255, kCLastRun, 0, 999) % name_range(s);
}
std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
void original(util::Rng& rng, char* data) {
  // 10 % of item and stock data carry "ORIGINAL" (4.3.3.1).
  if (rng.uniform(10) != 0) return;
  const std::size_t len = std::strlen(data);
  if (len < 8) return;
  std::memcpy(data + rng.uniform(len - 7), "ORIGINAL", 8);
}

// ---- Population -------------------------------------------------------------------------------

// Inserts rows in transactions of kLoadBatch.
class Loader {
 public:
  explicit Loader(Database& db) : db_(db) {}
  Status insert(Table& t, std::string_view key, std::string_view value) {
    if (!tx_ || !tx_->is_active()) {
      Result<Transaction> tx = db_.begin();
      if (!tx.is_ok()) return tx.status();
      tx_.emplace(std::move(tx).value());
    }
    if (Status s = tx_->insert(t, key, value); !s.is_ok()) return s;
    ++rows_;
    if (++pending_ == kLoadBatch) return flush();
    return Status::ok();
  }
  Status flush() {
    pending_ = 0;
    return tx_ && tx_->is_active() ? tx_->commit() : Status::ok();
  }
  std::uint64_t rows() const { return rows_; }

 private:
  static constexpr std::uint32_t kLoadBatch = 512;
  Database& db_;
  std::optional<Transaction> tx_;
  std::uint32_t pending_ = 0;
  std::uint64_t rows_ = 0;
};

#define BRAID_TRY(expr)                             \
  do {                                              \
    if (Status s_ = (expr); !s_.is_ok()) return s_; \
  } while (0)

Status load_items(Loader& l, const TpccTables& t, const TpccScale& s, util::Rng& rng) {
  for (std::uint32_t i = 1; i <= s.items; ++i) {
    ItemRow r{};
    r.im_id = static_cast<std::int32_t>(uniform(rng, 1, 10000));
    r.price = uniform(rng, 100, 10000);
    astring(rng, r.name, 14, 24);
    astring(rng, r.data, 26, 50);
    original(rng, r.data);
    BRAID_TRY(l.insert(*t.item, ikey(i), bytes_of(r)));
  }
  for (std::uint32_t r = 0; r < kRegions; ++r) {
    RegionRow row{};
    std::snprintf(row.name, sizeof row.name, "REGION-%u", r);
    astring(rng, row.comment, 31, 115);
    BRAID_TRY(l.insert(*t.region, KeyBuf().u8(r), bytes_of(row)));
  }
  for (std::uint32_t n = 0; n < kNations; ++n) {
    NationRow row{};
    row.regionkey = static_cast<std::int32_t>(n % kRegions);
    std::snprintf(row.name, sizeof row.name, "NATION-%u", n);
    astring(rng, row.comment, 31, 114);
    BRAID_TRY(l.insert(*t.nation, KeyBuf().u8(n), bytes_of(row)));
  }
  for (std::uint32_t su = 0; su < s.suppliers_table; ++su) {
    SupplierRow row{};
    row.nationkey = static_cast<std::int32_t>(su % kNations);
    row.acctbal = static_cast<std::int64_t>(rng.uniform(1'100'000)) - 100'000;
    std::snprintf(row.name, sizeof row.name, "Supplier#%09u", su);
    astring(rng, row.address, 10, 40);
    nstring(rng, row.phone, 15);
    astring(rng, row.comment, 25, 100);
    BRAID_TRY(l.insert(*t.supplier, sukey(su), bytes_of(row)));
  }
  return Status::ok();
}

void address(util::Rng& rng, char* street_1, char* street_2, char* city, char* state, char* zip) {
  astring(rng, street_1, 10, 20);
  astring(rng, street_2, 10, 20);
  astring(rng, city, 10, 20);
  astring(rng, state, 2, 2);
  nstring(rng, zip, 4);
  std::strcat(zip, "11111");
}

Status load_warehouse(Loader& l, const TpccTables& t, const TpccScale& s, std::uint32_t w,
                      util::Rng& rng) {
  WarehouseRow wr{};
  wr.ytd = 30'000'000;  // 300,000.00
  wr.tax = static_cast<std::int32_t>(uniform(rng, 0, 2000));
  astring(rng, wr.name, 6, 10);
  address(rng, wr.street_1, wr.street_2, wr.city, wr.state, wr.zip);
  BRAID_TRY(l.insert(*t.warehouse, wkey(w), bytes_of(wr)));
  for (std::uint32_t i = 1; i <= s.items; ++i) {
    StockRow r{};
    r.quantity = static_cast<std::int32_t>(uniform(rng, 10, 100));
    for (auto& d : r.dist) astring(rng, d, 24, 24);
    astring(rng, r.data, 26, 50);
    original(rng, r.data);
    BRAID_TRY(l.insert(*t.stock, skey(w, i), bytes_of(r)));
  }
  const std::int64_t now = now_us();
  std::vector<std::uint32_t> perm(s.customers);
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    DistrictRow dr{};
    dr.ytd = 3'000'000;  // 30,000.00: ten districts sum to the warehouse's YTD
    dr.tax = static_cast<std::int32_t>(uniform(rng, 0, 2000));
    dr.next_o_id = static_cast<std::int32_t>(s.customers + 1);
    astring(rng, dr.name, 6, 10);
    address(rng, dr.street_1, dr.street_2, dr.city, dr.state, dr.zip);
    BRAID_TRY(l.insert(*t.district, dkey(w, d), bytes_of(dr)));
    for (std::uint32_t c = 1; c <= s.customers; ++c) {
      CustomerRow cr{};
      cr.credit_lim = 5'000'000;
      cr.balance = -1000;
      cr.ytd_payment = 1000;
      cr.discount = static_cast<std::int32_t>(uniform(rng, 0, 5000));
      cr.payment_cnt = 1;
      cr.since = now;
      astring(rng, cr.first, 8, 16);
      std::strcpy(cr.middle, "OE");
      last_name(c <= name_range(s) ? c - 1 : nurand(rng, 255, kCLastLoad, 0, 999) % name_range(s),
                cr.last);
      address(rng, cr.street_1, cr.street_2, cr.city, cr.state, cr.zip);
      nstring(rng, cr.phone, 16);
      std::strcpy(cr.credit, rng.uniform(10) == 0 ? "BC" : "GC");
      astring(rng, cr.data, 300, 500);
      BRAID_TRY(l.insert(*t.customer, ckey(w, d, c), bytes_of(cr)));
      HistoryRow hr{};
      hr.c_id = static_cast<std::int32_t>(c);
      hr.c_d_id = hr.d_id = static_cast<std::int32_t>(d);
      hr.c_w_id = hr.w_id = static_cast<std::int32_t>(w);
      hr.date = now;
      hr.amount = 1000;
      astring(rng, hr.data, 12, 24);
      BRAID_TRY(l.insert(*t.history, hkey(w, 0, std::uint64_t{d} * s.customers + c), bytes_of(hr)));
    }
    for (std::uint32_t i = 0; i < s.customers; ++i) perm[i] = i + 1;
    for (std::uint32_t i = s.customers; i > 1; --i) std::swap(perm[i - 1], perm[rng.uniform(i)]);
    // The last 900 of 3000 orders (30 %) are undelivered and have new-order rows.
    const std::uint32_t first_new = s.customers - s.customers * 3 / 10 + 1;
    for (std::uint32_t o = 1; o <= s.customers; ++o) {
      OrderRow orow{};
      orow.c_id = static_cast<std::int32_t>(perm[o - 1]);
      orow.carrier_id = o < first_new ? static_cast<std::int32_t>(uniform(rng, 1, 10)) : 0;
      orow.ol_cnt = static_cast<std::int32_t>(uniform(rng, 5, 15));
      orow.all_local = 1;
      orow.entry_d = now;
      BRAID_TRY(l.insert(*t.orders, okey(w, d, o), bytes_of(orow)));
      for (std::int32_t n = 1; n <= orow.ol_cnt; ++n) {
        OrderLineRow ol{};
        ol.i_id = static_cast<std::int32_t>(uniform(rng, 1, s.items));
        ol.supply_w_id = static_cast<std::int32_t>(w);
        ol.quantity = 5;
        ol.amount = o < first_new ? 0 : uniform(rng, 1, 999'999);
        ol.delivery_d = o < first_new ? now : 0;
        astring(rng, ol.dist_info, 24, 24);
        BRAID_TRY(
            l.insert(*t.order_line, olkey(w, d, o, static_cast<std::uint32_t>(n)), bytes_of(ol)));
      }
      if (o >= first_new) {
        const NewOrderRow no{static_cast<std::int32_t>(o)};
        BRAID_TRY(l.insert(*t.new_order, okey(w, d, o), bytes_of(no)));
      }
    }
  }
  return Status::ok();
}

// ---- Transactions -----------------------------------------------------------------------------

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
               cfg.type_deck),
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
    const bool reads_only = type == kOrderStatus || type == kStockLevel;
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
      default:
        *task = query2(tx);
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

#define TPCC_TRY(type, start, expr)                                         \
  do {                                                                      \
    if (Status s_ = (expr); !s_.is_ok()) co_return finish(type, start, s_); \
  } while (0)
// A body's end: its commit, or a rehearsal's end without one.
#define TPCC_COMMIT(type, start)                                \
  do {                                                          \
    if (rehearsal_) co_return finish(type, start, Status::ok()); \
    co_return finish(type, start, co_await tx.commit());        \
  } while (0)

  // Clause 2.4.
  Task<Status> new_order(Tx& tx) {
    const Begin start = begin();
    const std::uint32_t w = start.w;
    const std::uint32_t d = uniform(rng_, 1, kDistricts);
    const std::uint32_t c = nurand(rng_, 1023, kCId, 1, s_.customers);
    const std::uint32_t ol_cnt = uniform(rng_, 5, 15);
    const bool rollback = rng_.uniform(100) == 0;
    std::uint32_t item_ids[15];
    std::uint32_t supply[15];
    std::uint32_t qty[15];
    std::int32_t all_local = 1;
    for (std::uint32_t i = 0; i < ol_cnt; ++i) {
      item_ids[i] = nurand(rng_, 8191, kCItem, 1, s_.items);
      supply[i] = w;
      if (s_.warehouses > 1 && rng_.uniform(100) == 0) {
        supply[i] = other_warehouse(w);
        all_local = 0;
      }
      qty[i] = uniform(rng_, 1, 10);
    }
    if (rollback) item_ids[ol_cnt - 1] = s_.items + 1;  // unused: the transaction rolls back

    std::int32_t w_tax = 0;
    TPCC_TRY(kNewOrder, start,
             read_field<WarehouseRow>(co_await tx.get(*t_.warehouse, wkey(w)),
                                      offsetof(WarehouseRow, tax), &w_tax, "warehouse"));
    DistrictRow dr;
    TPCC_TRY(kNewOrder, start,
             read_row(co_await tx.get(*t_.district, dkey(w, d)), &dr, "district"));
    const std::uint32_t o = static_cast<std::uint32_t>(dr.next_o_id);
    ++dr.next_o_id;
    TPCC_TRY(kNewOrder, start, co_await tx.update(*t_.district, dkey(w, d), bytes_of(dr)));
    std::int32_t c_discount = 0;
    TPCC_TRY(kNewOrder, start,
             read_field<CustomerRow>(co_await tx.get(*t_.customer, ckey(w, d, c)),
                                     offsetof(CustomerRow, discount), &c_discount, "customer"));
    const OrderRow orow{static_cast<std::int32_t>(c), 0, static_cast<std::int32_t>(ol_cnt),
                        all_local, now_us()};
    TPCC_TRY(kNewOrder, start, co_await tx.insert(*t_.orders, okey(w, d, o), bytes_of(orow)));
    const NewOrderRow no{static_cast<std::int32_t>(o)};
    TPCC_TRY(kNewOrder, start, co_await tx.insert(*t_.new_order, okey(w, d, o), bytes_of(no)));

    std::int64_t prices[15];
    if (cfg_.hybrid) {
      // Hybrid: every item, then every stock row, in one multi_get each.
      char keys[15][8];
      std::string_view views[15];
      GetResult got[15];
      for (std::uint32_t i = 0; i < ol_cnt; ++i) {
        const KeyBuf k = ikey(item_ids[i]);
        std::memcpy(keys[i], k.view().data(), k.view().size());
        views[i] = {keys[i], k.view().size()};
      }
      TPCC_TRY(kNewOrder, start,
               co_await tx.multi_get(*t_.item, std::span(views, ol_cnt), std::span(got, ol_cnt)));
      for (std::uint32_t i = 0; i < ol_cnt; ++i) {
        if (got[i].code == Code::kNotFound)
          co_return finish(kNewOrder, start, Status::ok(), End::kRollback);
        ItemRow ir;
        if (!got[i].is_ok() || !decode(got[i].value, &ir)) {
          co_return finish(kNewOrder, start, bad_row("item"));
        }
        prices[i] = ir.price;
        const KeyBuf k = skey(supply[i], item_ids[i]);
        std::memcpy(keys[i], k.view().data(), k.view().size());
        views[i] = {keys[i], k.view().size()};
      }
      TPCC_TRY(kNewOrder, start,
               co_await tx.multi_get(*t_.stock, std::span(views, ol_cnt), std::span(got, ol_cnt)));
      for (std::uint32_t i = 0; i < ol_cnt; ++i) {
        StockRow sr;
        if (!got[i].is_ok() || !decode(got[i].value, &sr)) {
          co_return finish(kNewOrder, start, bad_row("stock"));
        }
        TPCC_TRY(
            kNewOrder, start,
            co_await order_line(tx, w, d, o, i, item_ids[i], supply[i], qty[i], prices[i], &sr));
      }
    } else {
      for (std::uint32_t i = 0; i < ol_cnt; ++i) {
        Result<std::string_view> item = co_await tx.get(*t_.item, ikey(item_ids[i]));
        if (item.code() == Code::kNotFound) {
          co_return finish(kNewOrder, start, Status::ok(), End::kRollback);
        }
        ItemRow ir;
        TPCC_TRY(kNewOrder, start, read_row(item, &ir, "item"));
        StockRow sr;
        TPCC_TRY(kNewOrder, start,
                 read_row(co_await tx.get(*t_.stock, skey(supply[i], item_ids[i])), &sr, "stock"));
        TPCC_TRY(
            kNewOrder, start,
            co_await order_line(tx, w, d, o, i, item_ids[i], supply[i], qty[i], ir.price, &sr));
      }
    }
    sink_ += static_cast<std::uint64_t>(w_tax + dr.tax + c_discount);
    TPCC_COMMIT(kNewOrder, start);
  }

  // NewOrder's per-line writes: the stock update and the order line.
  Task<Status> order_line(Tx& tx, std::uint32_t w, std::uint32_t d, std::uint32_t o,
                          std::uint32_t i, std::uint32_t item, std::uint32_t supply,
                          std::uint32_t qty, std::int64_t price, StockRow* sr) {
    const std::int32_t q = static_cast<std::int32_t>(qty);
    sr->quantity = sr->quantity >= q + 10 ? sr->quantity - q : sr->quantity - q + 91;
    sr->ytd += q;
    ++sr->order_cnt;
    if (supply != w) ++sr->remote_cnt;
    if (Status s = co_await tx.update(*t_.stock, skey(supply, item), bytes_of(*sr)); !s.is_ok()) {
      co_return s;
    }
    OrderLineRow ol{};
    ol.i_id = static_cast<std::int32_t>(item);
    ol.supply_w_id = static_cast<std::int32_t>(supply);
    ol.quantity = q;
    ol.amount = price * q;
    std::memcpy(ol.dist_info, sr->dist[d - 1], sizeof ol.dist_info);
    co_return co_await tx.insert(*t_.order_line, olkey(w, d, o, i + 1), bytes_of(ol));
  }

  // A customer chosen by last name (the middle one in first-name order, 2.5.2.2) or by id;
  // `*c` and `*row` receive it.
  Task<Status> find_customer(Tx& tx, std::uint32_t w, std::uint32_t d, bool by_name,
                             std::uint32_t* c, CustomerRow* row) {
    if (!by_name) {
      *c = nurand(rng_, 1023, kCId, 1, s_.customers);
      co_return read_row(co_await tx.get(*t_.customer, ckey(w, d, *c)), row, "customer");
    }
    char last[17];
    last_name(run_last_number(rng_, s_), last);
    KeyBuf begin, end;
    last_name_range(w, d, last, &begin, &end);
    // At most ~3000/1000 × a few matches per name at spec scale; the bound keeps the frame fixed.
    constexpr std::size_t kMaxMatches = 64;
    std::uint32_t ids[kMaxMatches];
    std::size_t n = 0;
    Status s = co_await tx.scan_index(*t_.customer_by_last, begin, end, kMaxMatches,
                                      [&](std::string_view pk, std::string_view) {
                                        ids[n++] = customer_id_of(pk);
                                        return true;
                                      });
    if (!s.is_ok()) co_return s;
    if (n == 0) co_return Status::corruption("tpcc: no customer named " + std::string(last));
    *c = ids[(n - 1) / 2];  // position ceil(n / 2), 1-based
    co_return read_row(co_await tx.get(*t_.customer, ckey(w, d, *c)), row, "customer");
  }

  // Clause 2.5. The warehouse and district updates come last: every Payment of a warehouse
  // writes its row, and under first-updater-wins the time between that write and the commit is
  // the window in which a second Payment of the warehouse conflicts.
  Task<Status> payment(Tx& tx) {
    const Begin start = begin();
    const std::uint32_t w = start.w;
    const std::uint32_t d = uniform(rng_, 1, kDistricts);
    std::uint32_t c_w = w;
    std::uint32_t c_d = d;
    if (s_.warehouses > 1 && rng_.uniform(100) < 15) {
      c_w = other_warehouse(w);
      c_d = uniform(rng_, 1, kDistricts);
    }
    const bool by_name = rng_.uniform(100) < 60;
    const std::int64_t amount = uniform(rng_, 100, 500'000);
    const std::uint64_t seq = ++history_seq_;

    std::uint32_t c = 0;
    CustomerRow cr;
    TPCC_TRY(kPayment, start, co_await find_customer(tx, c_w, c_d, by_name, &c, &cr));
    cr.balance -= amount;
    cr.ytd_payment += amount;
    ++cr.payment_cnt;
    if (std::strcmp(cr.credit, "BC") == 0) {
      char entry[64];
      const int len = std::snprintf(entry, sizeof entry, "%u %u %u %u %u %lld|", c, c_d, c_w, d, w,
                                    static_cast<long long>(amount));
      // The new entry in front, the old data after it, cut at 500 characters (2.5.2.2).
      char data[sizeof cr.data];
      const std::size_t head = std::min<std::size_t>(static_cast<std::size_t>(len), 500);
      const std::size_t keep = std::min(std::strlen(cr.data), 500 - head);
      std::memcpy(data, entry, head);
      std::memcpy(data + head, cr.data, keep);
      data[head + keep] = '\0';
      std::memcpy(cr.data, data, sizeof data);
    }
    TPCC_TRY(kPayment, start, co_await tx.update(*t_.customer, ckey(c_w, c_d, c), bytes_of(cr)));
    WarehouseRow wr;
    TPCC_TRY(kPayment, start, read_row(co_await tx.get(*t_.warehouse, wkey(w)), &wr, "warehouse"));
    DistrictRow dr;
    TPCC_TRY(kPayment, start, read_row(co_await tx.get(*t_.district, dkey(w, d)), &dr, "district"));
    HistoryRow hr{};
    hr.c_id = static_cast<std::int32_t>(c);
    hr.c_d_id = static_cast<std::int32_t>(c_d);
    hr.c_w_id = static_cast<std::int32_t>(c_w);
    hr.d_id = static_cast<std::int32_t>(d);
    hr.w_id = static_cast<std::int32_t>(w);
    hr.date = now_us();
    hr.amount = amount;
    std::snprintf(hr.data, sizeof hr.data, "%.10s    %.10s", wr.name, dr.name);
    TPCC_TRY(kPayment, start, co_await tx.insert(*t_.history, hkey(w, origin_, seq), bytes_of(hr)));
    wr.ytd += amount;
    dr.ytd += amount;
    TPCC_TRY(kPayment, start, co_await tx.update(*t_.warehouse, wkey(w), bytes_of(wr)));
    TPCC_TRY(kPayment, start, co_await tx.update(*t_.district, dkey(w, d), bytes_of(dr)));
    TPCC_COMMIT(kPayment, start);
  }

  // Clause 2.6: the customer, its newest order (order_by_customer, newest first), its lines.
  Task<Status> order_status(Tx& tx) {
    const Begin start = begin();
    const std::uint32_t w = start.w;
    const std::uint32_t d = uniform(rng_, 1, kDistricts);
    const bool by_name = rng_.uniform(100) < 60;
    std::uint32_t c = 0;
    CustomerRow cr;
    TPCC_TRY(kOrderStatus, start, co_await find_customer(tx, w, d, by_name, &c, &cr));
    const KeyBuf lo = ckey(w, d, c);
    const KeyBuf hi = ckey(w, d, c + 1);
    std::uint32_t o = 0;
    bool found = false;
    TPCC_TRY(kOrderStatus, start,
             co_await tx.scan_index(
                 *t_.order_by_customer, lo, hi, 1,
                 [&](std::string_view pk, std::string_view) {
                   o = order_id_of(pk);
                   found = true;
                   return false;
                 },
                 ScanOrder::kReverse));
    // Every customer has an order at load (one per customer), so one is always found.
    if (!found)
      co_return finish(kOrderStatus, start, Status::corruption("tpcc: customer without order"));
    std::int64_t total = 0;
    TPCC_TRY(kOrderStatus, start,
             co_await tx.scan(*t_.order_line, okey(w, d, o), okey(w, d, o + 1), 0,
                              [&](std::string_view, std::string_view v) {
                                OrderLineRow ol;
                                if (decode(v, &ol)) total += ol.amount;
                                return true;
                              }));
    sink_ += static_cast<std::uint64_t>(total) + static_cast<std::uint64_t>(cr.balance);
    TPCC_COMMIT(kOrderStatus, start);
  }

  // Clause 2.7, all ten districts in one transaction (the deferred execution of 2.7.2 is
  // run as an ordinary transaction, as CoroBase and ERMIA do).
  Task<Status> delivery(Tx& tx) {
    const Begin start = begin();
    const std::uint32_t w = start.w;
    const std::int32_t carrier = static_cast<std::int32_t>(uniform(rng_, 1, 10));
    const std::int64_t now = now_us();
    std::uint32_t delivered[kDistricts + 1] = {};
    for (std::uint32_t d = 1; d <= kDistricts; ++d) {
      std::uint32_t o = 0;
      bool found = false;
      const std::uint32_t from = t_.delivery_hint[w * (kDistricts + 1) + d];
      TPCC_TRY(kDelivery, start,
               co_await tx.scan(*t_.new_order, okey(w, d, from), dkey(w, d + 1), 1,
                                [&](std::string_view k, std::string_view) {
                                  o = order_id_of(k);
                                  found = true;
                                  return false;
                                }));
      if (!found) continue;  // no undelivered order in this district
      delivered[d] = o;
      TPCC_TRY(kDelivery, start, co_await tx.remove(*t_.new_order, okey(w, d, o)));
      OrderRow orow;
      TPCC_TRY(kDelivery, start,
               read_row(co_await tx.get(*t_.orders, okey(w, d, o)), &orow, "order"));
      orow.carrier_id = carrier;
      TPCC_TRY(kDelivery, start, co_await tx.update(*t_.orders, okey(w, d, o), bytes_of(orow)));
      std::int64_t total = 0;
      for (std::int32_t n = 1; n <= orow.ol_cnt; ++n) {
        const KeyBuf k = olkey(w, d, o, static_cast<std::uint32_t>(n));
        OrderLineRow ol;
        TPCC_TRY(kDelivery, start, read_row(co_await tx.get(*t_.order_line, k), &ol, "order line"));
        total += ol.amount;
        ol.delivery_d = now;
        TPCC_TRY(kDelivery, start, co_await tx.update(*t_.order_line, k, bytes_of(ol)));
      }
      const std::uint32_t c = static_cast<std::uint32_t>(orow.c_id);
      CustomerRow cr;
      TPCC_TRY(kDelivery, start,
               read_row(co_await tx.get(*t_.customer, ckey(w, d, c)), &cr, "customer"));
      cr.balance += total;
      ++cr.delivery_cnt;
      TPCC_TRY(kDelivery, start, co_await tx.update(*t_.customer, ckey(w, d, c), bytes_of(cr)));
    }
    if (rehearsal_) co_return finish(kDelivery, start, Status::ok());
    // The hint moves only past what a committed Delivery delivered: a serializable commit
    // can still be refused.
    Status committed = co_await tx.commit();
    if (committed.is_ok()) {
      for (std::uint32_t d = 1; d <= kDistricts; ++d) {
        if (delivered[d] != 0) t_.delivery_hint[w * (kDistricts + 1) + d] = delivered[d] + 1;
      }
    }
    co_return finish(kDelivery, start, std::move(committed));
  }

  // Clause 2.8: distinct items of the district's last 20 orders with stock under a threshold.
  Task<Status> stock_level(Tx& tx) {
    const Begin start = begin();
    const std::uint32_t w = start.w;
    const std::uint32_t d = uniform(rng_, 1, kDistricts);
    const std::int32_t threshold = static_cast<std::int32_t>(uniform(rng_, 10, 20));
    DistrictRow dr;
    TPCC_TRY(kStockLevel, start,
             read_row(co_await tx.get(*t_.district, dkey(w, d)), &dr, "district"));
    const std::uint32_t next = static_cast<std::uint32_t>(dr.next_o_id);
    const std::uint32_t from = next > 20 ? next - 20 : 1;
    // 20 orders × at most 15 lines.
    constexpr std::size_t kMaxItems = 300;
    std::vector<std::uint32_t> items;
    items.reserve(kMaxItems);
    TPCC_TRY(kStockLevel, start,
             co_await tx.scan(*t_.order_line, okey(w, d, from), okey(w, d, next), kMaxItems,
                              [&](std::string_view, std::string_view v) {
                                OrderLineRow ol;
                                if (decode(v, &ol))
                                  items.push_back(static_cast<std::uint32_t>(ol.i_id));
                                return true;
                              }));
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    std::uint32_t low = 0;
    if (cfg_.hybrid) {
      std::vector<KeyBuf> keys(items.size());
      std::vector<std::string_view> views(items.size());
      std::vector<GetResult> got(items.size());
      for (std::size_t i = 0; i < items.size(); ++i) {
        keys[i] = skey(w, items[i]);
        views[i] = keys[i].view();
      }
      TPCC_TRY(kStockLevel, start, co_await tx.multi_get(*t_.stock, views, got));
      for (const GetResult& g : got) {
        std::int32_t q = 0;
        if (!g.is_ok() || !field<StockRow>(g.value, offsetof(StockRow, quantity), &q)) {
          co_return finish(kStockLevel, start, bad_row("stock"));
        }
        if (q < threshold) ++low;
      }
    } else {
      for (const std::uint32_t i : items) {
        std::int32_t q = 0;
        TPCC_TRY(kStockLevel, start,
                 read_field<StockRow>(co_await tx.get(*t_.stock, skey(w, i)),
                                      offsetof(StockRow, quantity), &q, "stock"));
        if (q < threshold) ++low;
      }
    }
    sink_ += low;
    TPCC_COMMIT(kStockLevel, start);
  }

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
  Task<Status> query2(Tx& tx) {
    const Begin start = begin();
    const std::uint32_t w = start.w;
    const std::uint32_t region = uniform(rng_, 0, kRegions - 1);
    const std::uint32_t first = uniform(rng_, 0, s_.suppliers_table - 1);
    const std::uint32_t n_sup = std::min(cfg_.suppliers, s_.suppliers_table);
    bool in_region[kNations] = {};
    TPCC_TRY(kQuery2, start,
             co_await tx.scan(*t_.nation, {}, {}, 0, [&](std::string_view k, std::string_view v) {
               NationRow n;
               if (decode(v, &n) && static_cast<std::uint32_t>(n.regionkey) == region) {
                 in_region[static_cast<unsigned char>(k[0]) % kNations] = true;
               }
               return true;
             }));
    std::vector<std::uint32_t> chosen;  // suppliers of the region
    chosen.reserve(n_sup);
    std::vector<KeyBuf> keys;
    std::vector<std::string_view> views;
    std::vector<GetResult> got;
    if (cfg_.hybrid) {
      keys.resize(n_sup);
      views.resize(n_sup);
      got.resize(n_sup);
      for (std::uint32_t i = 0; i < n_sup; ++i) {
        keys[i] = sukey(supplier_at(first, i));
        views[i] = keys[i].view();
      }
      TPCC_TRY(kQuery2, start, co_await tx.multi_get(*t_.supplier, views, got));
      for (std::uint32_t i = 0; i < n_sup; ++i) {
        std::int32_t nation = 0;
        if (!got[i].is_ok() ||
            !field<SupplierRow>(got[i].value, offsetof(SupplierRow, nationkey), &nation)) {
          co_return finish(kQuery2, start, bad_row("supplier"));
        }
        if (in_region[nation % kNations]) chosen.push_back(supplier_at(first, i));
      }
    } else {
      for (std::uint32_t i = 0; i < n_sup; ++i) {
        const std::uint32_t id = supplier_at(first, i);
        std::int32_t nation = 0;
        TPCC_TRY(kQuery2, start,
                 read_field<SupplierRow>(co_await tx.get(*t_.supplier, sukey(id)),
                                         offsetof(SupplierRow, nationkey), &nation, "supplier"));
        if (in_region[nation % kNations]) chosen.push_back(id);
      }
    }
    // The stock rows of the chosen suppliers.
    std::vector<std::uint32_t> items;
    items.reserve(chosen.size() * 10);
    for (const std::uint32_t su : chosen) {
      for (std::uint32_t k = 0; k < 10; ++k) items.push_back((su + k * 10000) % s_.items + 1);
    }
    std::vector<std::uint32_t> low;          // items whose stock is under the threshold
    std::vector<std::string_view> low_rows;  // views stay valid until the transaction ends
    if (cfg_.hybrid) {
      keys.resize(items.size());
      views.resize(items.size());
      got.assign(items.size(), GetResult{});
      for (std::size_t i = 0; i < items.size(); ++i) {
        keys[i] = skey(w, items[i]);
        views[i] = keys[i].view();
      }
      TPCC_TRY(kQuery2, start, co_await tx.multi_get(*t_.stock, views, got));
      for (std::size_t i = 0; i < items.size(); ++i) {
        std::int32_t q = 0;
        if (!got[i].is_ok() || !field<StockRow>(got[i].value, offsetof(StockRow, quantity), &q)) {
          co_return finish(kQuery2, start, bad_row("stock"));
        }
        if (q < kQ2Threshold) {
          low.push_back(items[i]);
          low_rows.push_back(got[i].value);
        }
      }
    } else {
      for (const std::uint32_t i : items) {
        Result<std::string_view> r = co_await tx.get(*t_.stock, skey(w, i));
        std::int32_t q = 0;
        TPCC_TRY(kQuery2, start,
                 read_field<StockRow>(r, offsetof(StockRow, quantity), &q, "stock"));
        if (q < kQ2Threshold) {
          low.push_back(i);
          low_rows.push_back(*r);
        }
      }
    }
    std::int64_t cheapest = 0;
    for (std::size_t i = 0; i < low.size(); ++i) {
      ItemRow ir;
      TPCC_TRY(kQuery2, start, read_row(co_await tx.get(*t_.item, ikey(low[i])), &ir, "item"));
      if (cheapest == 0 || ir.price < cheapest) cheapest = ir.price;
      StockRow sr;
      if (!decode(low_rows[i], &sr)) co_return finish(kQuery2, start, bad_row("stock"));
      sr.quantity += 50;
      Status s = co_await tx.update(*t_.stock, skey(w, low[i]), bytes_of(sr));
      // The same item twice (small scales wrap the supplier mapping): already restocked.
      if (!s.is_ok()) co_return finish(kQuery2, start, s);
    }
    sink_ += static_cast<std::uint64_t>(cheapest);
    TPCC_COMMIT(kQuery2, start);
  }
#undef TPCC_TRY
#undef TPCC_COMMIT

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

}  // namespace

const char* mix_name(TpccMix mix) { return util::enum_name(mix, kTpccMixNames, "tpcc"); }

const char* type_name(TpccType t) {
  static constexpr const char* kNames[] = {"NewOrder", "Payment",    "OrderStatus",
                                           "Delivery", "StockLevel", "Q2*"};
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

Status tpcc_load(Database& db, const TpccScale& scale, std::uint32_t loaders, std::uint64_t seed,
                 TpccTables* t, std::uint64_t* records,
                 std::atomic<std::uint64_t>* warehouses_done) {
  if (scale.warehouses == 0 || scale.warehouses > kTpccMaxWarehouses) {
    return Status::invalid_argument("tpcc: " + std::to_string(scale.warehouses) +
                                    " warehouses; the keys hold 1.." +
                                    std::to_string(kTpccMaxWarehouses));
  }
  constexpr std::uint32_t kMaxCustomers = (1u << (8 * kCustomerIdBytes)) - 1;
  if (scale.customers == 0 || scale.customers > kMaxCustomers) {
    return Status::invalid_argument("tpcc: " + std::to_string(scale.customers) +
                                    " customers per district; the keys hold 1.." +
                                    std::to_string(kMaxCustomers));
  }
  struct Spec {
    const char* name;
    Table** table;
  };
  const Spec specs[] = {
      {"warehouse", &t->warehouse},   {"district", &t->district},   {"customer", &t->customer},
      {"history", &t->history},       {"new_order", &t->new_order}, {"orders", &t->orders},
      {"order_line", &t->order_line}, {"item", &t->item},           {"stock", &t->stock},
      {"supplier", &t->supplier},     {"nation", &t->nation},       {"region", &t->region}};
  for (const Spec& s : specs) {
    Result<Table*> r = db.create_table(s.name);
    if (!r.is_ok()) return r.status();
    *s.table = *r;
  }
  // Indexes first, so the load maintains them like any other writes.
  Result<Index*> by_last = db.create_index(*t->customer, "customer_by_last", customer_last_key);
  if (!by_last.is_ok()) return by_last.status();
  t->customer_by_last = *by_last;
  Result<Index*> by_cust = db.create_index(*t->orders, "order_by_customer", order_customer_key);
  if (!by_cust.is_ok()) return by_cust.status();
  t->order_by_customer = *by_cust;

  t->delivery_hint.assign((scale.warehouses + 1) * (kDistricts + 1), 1);
  loaders = std::max<std::uint32_t>(1, std::min(loaders, scale.warehouses));
  std::vector<Status> status(loaders);
  std::vector<std::uint64_t> rows(loaders);
  std::vector<std::thread> threads;
  for (std::uint32_t l = 0; l < loaders; ++l) {
    threads.emplace_back([&, l] {
      Loader loader(db);
      util::Rng rng(seed * 1000003 + l);
      Status s = l == 0 ? load_items(loader, *t, scale, rng) : Status::ok();
      for (std::uint32_t w = l + 1; s.is_ok() && w <= scale.warehouses; w += loaders) {
        s = load_warehouse(loader, *t, scale, w, rng);
        if (warehouses_done != nullptr) warehouses_done->fetch_add(1, std::memory_order_relaxed);
      }
      if (s.is_ok()) s = loader.flush();
      status[l] = s;
      rows[l] = loader.rows();
    });
  }
  for (auto& th : threads) th.join();
  *records = 0;
  for (std::uint32_t l = 0; l < loaders; ++l) {
    if (!status[l].is_ok()) return status[l];
    *records += rows[l];
  }
  return Status::ok();
}

TpccTypeSource::TpccTypeSource(TpccMix mix, std::uint64_t seed, std::uint32_t deck)
    : mix_(mix), deck_size_(deck), rng_(seed) {
  BRAID_ASSERT(deck <= kMaxDeck);
  deck_.reserve(deck);
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
      if (r < 10) return kQuery2;
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

namespace {
Status violation(std::uint32_t condition, std::uint32_t w, std::uint32_t d,
                 const std::string& what) {
  return Status::corruption("TPC-C consistency condition " + std::to_string(condition) +
                            " violated at warehouse " + std::to_string(w) +
                            (d != 0 ? ", district " + std::to_string(d) : std::string()) + ": " +
                            what);
}
}  // namespace

Status tpcc_verify(Database& db, const TpccTables& t, const TpccScale& scale,
                   std::uint64_t* checked) {
  *checked = 0;
  Result<Transaction> opened = db.begin();
  if (!opened.is_ok()) return opened.status();
  Transaction tx = std::move(opened).value();
  for (std::uint32_t w = 1; w <= scale.warehouses; ++w) {
    WarehouseRow wr;
    Result<std::string_view> got = tx.get(*t.warehouse, wkey(w));
    if (!got.is_ok() || !decode(*got, &wr)) return violation(1, w, 0, "warehouse row unreadable");
    std::int64_t district_ytd = 0;
    for (std::uint32_t d = 1; d <= kDistricts; ++d) {
      DistrictRow dr;
      Result<std::string_view> dg = tx.get(*t.district, dkey(w, d));
      if (!dg.is_ok() || !decode(*dg, &dr)) return violation(1, w, d, "district row unreadable");
      district_ytd += dr.ytd;

      // 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
      std::int64_t max_o = -1;
      std::int64_t ol_cnt_sum = 0;
      BRAID_TRY(tx.scan(*t.orders, dkey(w, d), dkey(w, d + 1), 0,
                        [&](std::string_view k, std::string_view v) {
                          OrderRow o;
                          if (decode(v, &o)) ol_cnt_sum += o.ol_cnt;
                          max_o = std::max<std::int64_t>(max_o, order_id_of(k));
                          return true;
                        }));
      std::int64_t min_no = -1;
      std::int64_t max_no = -1;
      std::int64_t no_rows = 0;
      BRAID_TRY(tx.scan(*t.new_order, dkey(w, d), dkey(w, d + 1), 0,
                        [&](std::string_view k, std::string_view) {
                          const std::int64_t o = order_id_of(k);
                          if (min_no < 0) min_no = o;
                          max_no = o;
                          ++no_rows;
                          return true;
                        }));
      if (dr.next_o_id - 1 != max_o) {
        return violation(2, w, d,
                         "D_NEXT_O_ID - 1 = " + std::to_string(dr.next_o_id - 1) +
                             " but max(O_ID) = " + std::to_string(max_o));
      }
      if (no_rows > 0 && max_no != max_o) {
        return violation(2, w, d,
                         "max(NO_O_ID) = " + std::to_string(max_no) +
                             " but max(O_ID) = " + std::to_string(max_o));
      }
      // 3: max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER.
      if (no_rows > 0 && max_no - min_no + 1 != no_rows) {
        return violation(3, w, d,
                         std::to_string(no_rows) + " new-order rows for ids " +
                             std::to_string(min_no) + ".." + std::to_string(max_no));
      }
      // 4: sum(O_OL_CNT) = rows in ORDER-LINE.
      std::int64_t ol_rows = 0;
      BRAID_TRY(tx.scan(*t.order_line, dkey(w, d), dkey(w, d + 1), 0,
                        [&](std::string_view, std::string_view) {
                          ++ol_rows;
                          return true;
                        }));
      if (ol_rows != ol_cnt_sum) {
        return violation(4, w, d,
                         "sum(O_OL_CNT) = " + std::to_string(ol_cnt_sum) + " but " +
                             std::to_string(ol_rows) + " order lines");
      }
      *checked += 3;
    }
    // 1: W_YTD = sum(D_YTD).
    if (wr.ytd != district_ytd) {
      return violation(1, w, 0,
                       "W_YTD = " + std::to_string(wr.ytd) +
                           " but sum(D_YTD) = " + std::to_string(district_ytd));
    }
    ++*checked;
  }
  tx.abort();
  return Status::ok();
}

}  // namespace braid::bench
