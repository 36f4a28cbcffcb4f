// TPC-C's schema as the benchmark stores it: fixed-layout rows copied in and out of values
// (money in cents, so the YTD sums of consistency condition 1 are exact), the primary and
// secondary keys (the order-preserving encoding of <braid/key.h> through a small fixed buffer,
// KeyBuf, because every key local of a transaction coroutine lives in its frame and a
// braid::Key is 258 bytes), and the random input of clauses 2.1.6 and 4.3.2.
#pragma once

#include <braid/braid.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "tpcc/tpcc.h"
#include "util/assert.h"
#include "util/random.h"

namespace braid::bench::tpcc {

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
inline std::string_view bytes_of(const T& row) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(&row), sizeof row};
}

// A row from a value; false when the value is not a T (a schema bug or a corrupt record).
template <typename T>
inline bool decode(std::string_view v, T* row) {
  if (v.size() != sizeof(T)) return false;
  std::memcpy(static_cast<void*>(row), v.data(), sizeof(T));
  return true;
}

// One field of a row, where a transaction needs no more: copying a whole 0.3-0.7 KB row touches
// every line of it, and the lines it does not need cost misses in every mode.
template <typename Row, typename F>
inline bool field(std::string_view v, std::size_t offset, F* out) {
  static_assert(std::is_trivially_copyable_v<F>);
  if (v.size() != sizeof(Row)) return false;
  std::memcpy(out, v.data() + offset, sizeof(F));
  return true;
}

inline Status bad_row(const char* table) {
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
inline KeyBuf wkey(std::uint32_t w) { return KeyBuf().id(w, kWarehouseIdBytes); }
inline KeyBuf dkey(std::uint32_t w, std::uint32_t d) { return wkey(w).u8(d); }
inline KeyBuf ckey(std::uint32_t w, std::uint32_t d, std::uint32_t c) {
  return dkey(w, d).id(c, kCustomerIdBytes);
}
inline KeyBuf okey(std::uint32_t w, std::uint32_t d, std::uint32_t o) {
  return dkey(w, d).id(o, kOrderIdBytes);
}
inline KeyBuf olkey(std::uint32_t w, std::uint32_t d, std::uint32_t o, std::uint32_t n) {
  return okey(w, d, o).u8(n);
}
inline KeyBuf ikey(std::uint32_t i) { return KeyBuf().u32(i); }
inline KeyBuf skey(std::uint32_t w, std::uint32_t i) { return wkey(w).u32(i); }
inline KeyBuf hkey(std::uint32_t w, std::uint32_t origin, std::uint64_t seq) {
  return wkey(w).u32(origin).u64(seq);
}
inline KeyBuf sukey(std::uint32_t s) { return KeyBuf().u32(s); }
// Where the customer id sits in a customer key, and the order id in an order, new-order or
// order-line key: right after the district prefix (a dkey).
constexpr std::size_t kDistrictPrefix = kWarehouseIdBytes + 1;

inline std::uint32_t read_be(std::string_view k, std::size_t at, std::size_t bytes) {
  BRAID_ASSERT(at + bytes <= k.size());
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(k[at + i]);
  return v;
}
// The order id of an order, new-order or order-line key.
inline std::uint32_t order_id_of(std::string_view k) {
  return read_be(k, kDistrictPrefix, kOrderIdBytes);
}
// The customer id of a customer key.
inline std::uint32_t customer_id_of(std::string_view k) {
  return read_be(k, kDistrictPrefix, kCustomerIdBytes);
}

inline std::string_view cstr(const char* s) { return {s, std::strlen(s)}; }

// Secondary keys. Customer by last name also orders by first name, so a Payment or OrderStatus
// by last name reads its candidates already sorted as clause 2.5.2.2 asks.
inline bool customer_last_key(std::string_view key, std::string_view value, Key* out) {
  CustomerRow c;
  if (key.size() != kDistrictPrefix + kCustomerIdBytes || !decode(value, &c)) return false;
  out->append_bytes(key.substr(0, kDistrictPrefix)).str(cstr(c.last)).str(cstr(c.first));
  return true;
}
// The range of one last name in customer_by_last (the encoded string is self-delimiting).
inline void last_name_range(std::uint32_t w, std::uint32_t d, std::string_view last, KeyBuf* begin,
                            KeyBuf* end) {
  Key k;
  k.append_bytes(dkey(w, d).view()).str(last);
  *begin = KeyBuf().raw(k.view());
  std::string succ(k.view());
  succ.back() = static_cast<char>(succ.back() + 1);  // str() ends in 0x00 0x01
  *end = KeyBuf().raw(succ);
}
inline bool order_customer_key(std::string_view key, std::string_view value, Key* out) {
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

inline std::uint32_t uniform(util::Rng& rng, std::uint32_t lo, std::uint32_t hi) {
  return lo + static_cast<std::uint32_t>(rng.uniform(hi - lo + 1));
}
inline std::uint32_t nurand(util::Rng& rng, std::uint32_t a, std::uint32_t c, std::uint32_t x,
                            std::uint32_t y) {
  return (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x;
}
inline void astring(util::Rng& rng, char* out, std::uint32_t lo, std::uint32_t hi) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const std::uint32_t n = uniform(rng, lo, hi);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = kAlnum[rng.uniform(sizeof kAlnum - 1)];
  out[n] = '\0';
}
inline void nstring(util::Rng& rng, char* out, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) out[i] = static_cast<char>('0' + rng.uniform(10));
  out[n] = '\0';
}
inline void last_name(std::uint32_t num, char* out) {
  static constexpr const char* kSyl[] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                         "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  out[0] = '\0';
  std::strcat(out, kSyl[num / 100]);
  std::strcat(out, kSyl[(num / 10) % 10]);
  std::strcat(out, kSyl[num % 10]);
}
// Last-name numbers exist for 0 .. min(1000, customers) - 1 (all of 0..999 at spec scale).
inline std::uint32_t name_range(const TpccScale& s) {
  return std::min<std::uint32_t>(1000, s.customers);
}
inline std::uint32_t run_last_number(util::Rng& rng, const TpccScale& s) {
  return nurand(rng, 255, kCLastRun, 0, 999) % name_range(s);
}
inline std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
inline void original(util::Rng& rng, char* data) {
  // 10 % of item and stock data carry "ORIGINAL" (4.3.3.1).
  if (rng.uniform(10) != 0) return;
  const std::size_t len = std::strlen(data);
  if (len < 8) return;
  std::memcpy(data + rng.uniform(len - 7), "ORIGINAL", 8);
}

}  // namespace braid::bench::tpcc

// A plain function's early return on a failed step (the loader's and the checks').
#define BRAID_TRY(expr)                             \
  do {                                              \
    if (Status s_ = (expr); !s_.is_ok()) return s_; \
  } while (0)
