// Q1* of TPC-CH (CH-benCHmark's Q1: order lines delivered after a date, summed by line number)
// over one district of the home warehouse, as a read-only transaction mixed into TPC-C: a scan
// of about 30,000 order lines, the analytical transaction whose cold records a database under a
// memory budget reads back ahead (Options::scan_read_ahead).
#include "tpcc/generator.h"

namespace braid::bench::tpcc {

Task<Status> TpccGenerator::query1(Tx& tx) {
  constexpr std::uint32_t kLines = 16;  // ol_number is 1..15
  const Begin start = begin();
  const std::uint32_t w = start.w;
  const std::uint32_t d = uniform(rng_, 1, kDistricts);
  std::int64_t quantity[kLines] = {}, amount[kLines] = {};
  std::uint64_t count[kLines] = {};
  bool bad = false;
  const KeyBuf from = dkey(w, d);
  const KeyBuf to = dkey(w, d + 1);
  TPCC_TRY(kQuery1, start,
           co_await tx.scan(*t_.order_line, from.view(), to.view(), 0,
                            [&](std::string_view k, std::string_view v) {
                              OrderLineRow ol;
                              if (!decode(v, &ol)) {
                                bad = true;
                                return false;
                              }
                              if (ol.delivery_d <= 0) return true;  // not delivered yet
                              const auto n = static_cast<unsigned char>(k.back()) % kLines;
                              quantity[n] += ol.quantity;
                              amount[n] += ol.amount;
                              ++count[n];
                              return true;
                            }));
  if (bad) co_return finish(kQuery1, start, bad_row("order_line"));
  for (std::uint32_t n = 0; n < kLines; ++n) {
    sink_ += count[n] + static_cast<std::uint64_t>(quantity[n] + amount[n]);
  }
  TPCC_COMMIT(kQuery1, start);
}

}  // namespace braid::bench::tpcc
