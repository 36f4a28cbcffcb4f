// Q2* of TPC-CH (CoroBase §5.2): the cheapest supplier of a region's items, as a transaction
// mixed into TPC-C, restocking what it finds low.
#include "tpcc/generator.h"

#include <algorithm>
#include <span>

namespace braid::bench::tpcc {

Task<Status> TpccGenerator::query2(Tx& tx) {
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
      TPCC_TRY(kQuery2, start, read_field<StockRow>(r, offsetof(StockRow, quantity), &q, "stock"));
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

}  // namespace braid::bench::tpcc
