// The five TPC-C transactions (clauses 2.4-2.8), as TpccGenerator's bodies.
#include "tpcc/generator.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>

namespace braid::bench::tpcc {

Task<Status> TpccGenerator::new_order(Tx& tx) {
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
  TPCC_TRY(kNewOrder, start, read_row(co_await tx.get(*t_.district, dkey(w, d)), &dr, "district"));
  const std::uint32_t o = static_cast<std::uint32_t>(dr.next_o_id);
  ++dr.next_o_id;
  TPCC_TRY(kNewOrder, start, co_await tx.update(*t_.district, dkey(w, d), bytes_of(dr)));
  std::int32_t c_discount = 0;
  TPCC_TRY(kNewOrder, start,
           read_field<CustomerRow>(co_await tx.get(*t_.customer, ckey(w, d, c)),
                                   offsetof(CustomerRow, discount), &c_discount, "customer"));
  const OrderRow orow{static_cast<std::int32_t>(c), 0, static_cast<std::int32_t>(ol_cnt), all_local,
                      now_us()};
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
      TPCC_TRY(kNewOrder, start,
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
      TPCC_TRY(kNewOrder, start,
               co_await order_line(tx, w, d, o, i, item_ids[i], supply[i], qty[i], ir.price, &sr));
    }
  }
  sink_ += static_cast<std::uint64_t>(w_tax + dr.tax + c_discount);
  TPCC_COMMIT(kNewOrder, start);
}

Task<Status> TpccGenerator::order_line(Tx& tx, std::uint32_t w, std::uint32_t d, std::uint32_t o,
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

Task<Status> TpccGenerator::find_customer(Tx& tx, std::uint32_t w, std::uint32_t d, bool by_name,
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

Task<Status> TpccGenerator::payment(Tx& tx) {
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

Task<Status> TpccGenerator::order_status(Tx& tx) {
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

Task<Status> TpccGenerator::delivery(Tx& tx) {
  const Begin start = begin();
  const std::uint32_t w = start.w;
  const std::int32_t carrier = static_cast<std::int32_t>(uniform(rng_, 1, 10));
  const std::int64_t now = now_us();
  std::uint32_t delivered[kDistricts + 1] = {};
  for (std::uint32_t d = 1; d <= kDistricts; ++d) {
    std::uint32_t o = 0;
    bool found = false;
    const std::uint32_t from = cfg_.delivery_hint ? t_.delivery_hint[w * (kDistricts + 1) + d] : 1;
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

Task<Status> TpccGenerator::stock_level(Tx& tx) {
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

}  // namespace braid::bench::tpcc
