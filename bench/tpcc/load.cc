// TPC-C's initial population (clause 4.3): items, then per warehouse its stock, districts,
// customers with their history, and orders, by several loader threads in transactions of a
// bounded size.
#include "tpcc/tpcc.h"

#include <braid/braid.h>

#include <optional>
#include <thread>
#include <vector>

#include "tpcc/schema.h"

namespace braid::bench {

namespace {
using namespace tpcc;  // NOLINT(google-build-using-namespace): the schema's own names

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

}  // namespace

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

TpccTypeSource::TpccTypeSource(TpccMix mix, std::uint64_t seed, std::uint32_t deck, ChQueries ch)
    : mix_(mix), ch_(ch), deck_size_(deck), rng_(seed) {
  BRAID_ASSERT(deck <= kMaxDeck);
  deck_.reserve(deck);
}

}  // namespace braid::bench
