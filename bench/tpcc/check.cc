// TPC-C's consistency conditions 1-4 (clause 3.3.2), checked over a snapshot after a load
// and after every run.
#include "tpcc/tpcc.h"

#include <braid/braid.h>

#include <map>
#include <string>

#include "tpcc/schema.h"

namespace braid::bench {

using namespace tpcc;  // NOLINT(google-build-using-namespace): the schema's own names

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
