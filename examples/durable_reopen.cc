// A durable database: every commit is in the directory's log once commit() returns
// (CommitMode::kDurable), so closing and reopening — or a crash — keeps it. This program writes
// an order book, takes a checkpoint, writes more, closes the database, opens the directory
// again and checks that every order is there.
//
//   durable_reopen DIR        (DIR: a new or empty directory; it is left in place)
#include <braid/braid.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace {

constexpr std::uint32_t kOrders = 5000;
constexpr std::uint32_t kPerTransaction = 50;

braid::Key order_key(std::uint32_t customer, std::uint32_t order) {
  return braid::Key().u32(customer).u32(order);  // composite keys sort component by component
}

std::string order_value(std::uint32_t customer, std::uint32_t order) {
  return "customer " + std::to_string(customer) + " order " + std::to_string(order);
}

int fail(const char* what, const braid::Status& s) {
  std::fprintf(stderr, "durable_reopen: %s: %s\n", what, s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: durable_reopen DIR\n");
    return 2;
  }
  braid::Options options;
  options.directory = argv[1];
  options.durability.commit = braid::CommitMode::kDurable;

  {
    braid::Result<std::unique_ptr<braid::Database>> db = braid::Database::open(options);
    if (!db.is_ok()) return fail("open", db.status());
    braid::Result<braid::Table*> orders = (*db)->create_table("orders");
    if (!orders.is_ok()) return fail("create_table (is DIR new?)", orders.status());
    // 100 transactions of 50 orders; each commit() returns once its log record is on disk.
    for (std::uint32_t first = 0; first < kOrders; first += kPerTransaction) {
      braid::Result<braid::Transaction> tx = (*db)->begin();
      if (!tx.is_ok()) return fail("begin", tx.status());
      for (std::uint32_t i = first; i < first + kPerTransaction; ++i) {
        if (braid::Status s = tx->insert(**orders, order_key(i % 100, i), order_value(i % 100, i));
            !s.is_ok()) {
          return fail("insert", s);
        }
      }
      if (braid::Status s = tx->commit(); !s.is_ok()) return fail("commit", s);
      // Half-way: a checkpoint, so the reopen below reads a checkpoint and then the log.
      if (first + kPerTransaction == kOrders / 2) {
        if (braid::Status s = (*db)->checkpoint(); !s.is_ok()) return fail("checkpoint", s);
      }
    }
    std::printf("durable_reopen: wrote %u orders to %s\n", kOrders, argv[1]);
  }  // closed: the directory alone holds the data now

  options.create_if_missing = false;
  braid::Result<std::unique_ptr<braid::Database>> db = braid::Database::open(options);
  if (!db.is_ok()) return fail("reopen", db.status());
  braid::Result<braid::Table*> orders = (*db)->open_table("orders");
  if (!orders.is_ok()) return fail("open_table", orders.status());
  braid::Result<braid::Transaction> tx = (*db)->begin();
  if (!tx.is_ok()) return fail("begin", tx.status());
  std::uint32_t found = 0, wrong = 0;
  for (std::uint32_t i = 0; i < kOrders; ++i) {
    std::string v;
    braid::Status s = tx->get(**orders, order_key(i % 100, i), &v);
    if (s.is_ok() && v == order_value(i % 100, i)) {
      ++found;
    } else {
      ++wrong;
    }
  }
  // Customer 7's orders, in key order, by a range scan over the composite key's prefix.
  std::uint32_t of_seven = 0;
  const braid::Key from = braid::Key().u32(7), to = braid::Key().u32(8);
  if (braid::Status s = tx->scan(**orders, from, to, 0,
                                 [&](std::string_view, std::string_view) {
                                   ++of_seven;
                                   return true;
                                 });
      !s.is_ok()) {
    return fail("scan", s);
  }
  if (braid::Status s = tx->commit(); !s.is_ok()) return fail("commit", s);
  const braid::DurabilityStats stats = (*db)->durability_stats();
  std::printf(
      "durable_reopen: reopened: %u of %u orders found intact (%u missing or wrong), "
      "customer 7 has %u; recovery read %llu records from the checkpoint and replayed %llu "
      "transactions from the log\n",
      found, kOrders, wrong, of_seven,
      static_cast<unsigned long long>(stats.recovered_checkpoint_records),
      static_cast<unsigned long long>(stats.recovered_transactions));
  return found == kOrders && of_seven == kOrders / 100 ? 0 : 1;
}
