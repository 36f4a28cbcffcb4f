// One argument-check path: every bad-argument case goes through Transaction (an
// application thread) and Tx (a worker coroutine) and must get the same Status, code and
// message, from each. The two used to drift: Transaction::get was accepted inside a scan
// callback, Tx::get refused.
#include <braid/key.h>
#include <braid/tx.h>
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "engine/test_util.h"

namespace braid {
namespace {

using testing::begin;
using testing::make_table;
using testing::open_db;

enum class Op { kGet, kInsert, kUpdate, kPut, kRemove, kScan, kScanIndex, kLookupIndex };
constexpr const char* kOpNames[] = {"get",    "insert", "update",     "put",
                                    "remove", "scan",   "scan_index", "lookup_index"};

struct Case {
  std::string name;
  Op op;
  bool other_table = false;  // a Table*/Index* of another Database
  bool ended = false;        // called after abort()
  bool in_scan = false;      // called from the transaction's own scan callback
  std::string key = "k";     // key, scan begin, or secondary key
  std::string value = "v";   // value, or scan end
};

struct Fixture {
  std::unique_ptr<Database> db = open_db();
  std::unique_ptr<Database> other = open_db();
  Table* t = nullptr;
  Index* idx = nullptr;
  Table* other_t = nullptr;
  Index* other_idx = nullptr;

  Fixture() {
    auto first = [](std::string_view, std::string_view v, Key* out) {
      out->str(v.substr(0, 1));
      return true;
    };
    t = make_table(*db, "t");
    idx = *db->create_index(*t, "i", first);
    other_t = make_table(*other, "t");
    other_idx = *other->create_index(*other_t, "i", first);
    Transaction tx = begin(*db);
    EXPECT_TRUE(tx.put(*t, "row", "value").is_ok());  // a scan callback needs a row
    EXPECT_TRUE(tx.commit().is_ok());
  }
  Table& table(const Case& c) { return c.other_table ? *other_t : *t; }
  Index& index(const Case& c) { return c.other_table ? *other_idx : *idx; }
};

// A named lambda object: ScanCallback is a FunctionRef, which refers to a callable object.
const auto keep_going = [](std::string_view, std::string_view) { return true; };

Status call(Transaction& tx, Fixture& f, const Case& c) {
  switch (c.op) {
    case Op::kGet:
      return tx.get(f.table(c), c.key).status();
    case Op::kInsert:
      return tx.insert(f.table(c), c.key, c.value);
    case Op::kUpdate:
      return tx.update(f.table(c), c.key, c.value);
    case Op::kPut:
      return tx.put(f.table(c), c.key, c.value);
    case Op::kRemove:
      return tx.remove(f.table(c), c.key);
    case Op::kScan:
      return tx.scan(f.table(c), c.key, c.value, 0, keep_going);
    case Op::kScanIndex:
      return tx.scan_index(f.index(c), c.key, c.value, 0, keep_going);
    case Op::kLookupIndex:
      return tx.lookup_index(f.index(c), c.key, 0, keep_going);
  }
  return Status::busy("unknown op");
}

Status via_transaction(Fixture& f, const Case& c) {
  Transaction tx = begin(*f.db);
  Status out;
  if (c.ended) {
    tx.abort();
    out = call(tx, f, c);
  } else if (c.in_scan) {
    EXPECT_TRUE(tx.scan(*f.t, "", "", 1, [&](std::string_view, std::string_view) {
                    out = call(tx, f, c);
                    return false;
                  }).is_ok());
  } else {
    out = call(tx, f, c);
  }
  tx.abort();
  return out;
}

// A Tx operation issued from inside a scan callback cannot be co_awaited (the callback is a
// plain function); the only way to issue one is to drive its awaiter by hand, which is what
// this does. Outside a callback the same helper just awaits.
template <typename A>
Status drive(A&& a) {
  if (!a.await_ready()) return Status::busy("refused operations answer without suspending");
  if constexpr (std::is_same_v<decltype(a.await_resume()), Status>) {
    return a.await_resume();
  } else {
    return a.await_resume().status();
  }
}

Status call_tx_inline(Tx& tx, Fixture& f, const Case& c) {
  switch (c.op) {
    case Op::kGet:
      return drive(tx.get(f.table(c), c.key));
    case Op::kInsert:
      return drive(tx.insert(f.table(c), c.key, c.value));
    case Op::kUpdate:
      return drive(tx.update(f.table(c), c.key, c.value));
    case Op::kPut:
      return drive(tx.put(f.table(c), c.key, c.value));
    case Op::kRemove:
      return drive(tx.remove(f.table(c), c.key));
    case Op::kScan:
      return drive(tx.scan(f.table(c), c.key, c.value, 0, keep_going));
    case Op::kScanIndex:
      return drive(tx.scan_index(f.index(c), c.key, c.value, 0, keep_going));
    case Op::kLookupIndex:
      return drive(tx.lookup_index(f.index(c), c.key, 0, keep_going));
  }
  return Status::busy("unknown op");
}

Task<Status> call_tx(Tx& tx, Fixture& f, const Case& c) {
  switch (c.op) {
    case Op::kGet:
      co_return (co_await tx.get(f.table(c), c.key)).status();
    case Op::kInsert:
      co_return co_await tx.insert(f.table(c), c.key, c.value);
    case Op::kUpdate:
      co_return co_await tx.update(f.table(c), c.key, c.value);
    case Op::kPut:
      co_return co_await tx.put(f.table(c), c.key, c.value);
    case Op::kRemove:
      co_return co_await tx.remove(f.table(c), c.key);
    case Op::kScan:
      co_return co_await tx.scan(f.table(c), c.key, c.value, 0, keep_going);
    case Op::kScanIndex:
      co_return co_await tx.scan_index(f.index(c), c.key, c.value, 0, keep_going);
    case Op::kLookupIndex:
      co_return co_await tx.lookup_index(f.index(c), c.key, 0, keep_going);
  }
  co_return Status::busy("unknown op");
}

Task<Status> tx_body(Tx& tx, Fixture* f, const Case* c, Status* out) {
  if (c->ended) {
    tx.abort();
    *out = co_await call_tx(tx, *f, *c);
  } else if (c->in_scan) {
    Status scanned = co_await tx.scan(*f->t, "", "", 1, [&](std::string_view, std::string_view) {
      *out = call_tx_inline(tx, *f, *c);
      return false;
    });
    EXPECT_TRUE(scanned.is_ok()) << scanned.to_string();
  } else {
    *out = co_await call_tx(tx, *f, *c);
  }
  tx.abort();  // nothing here may commit
  co_return Status::ok();
}

Status via_tx(Fixture& f, const Case& c) {
  Status out = Status::busy("harness: the body did not run");
  (void)f.db->execute([&f, &c, &out](Tx& tx) { return tx_body(tx, &f, &c, &out); });
  return out;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::string long_key(kMaxKeyBytes + 1, 'k');
  const std::string long_value(kMaxValueBytes + 1, 'v');
  // The overflowed braid::Key converts to kMaxKeyBytes + 1 bytes, never a truncated key.
  const std::string overflowed(Key().str(std::string(300, 'x')).u32(1));
  for (int i = 0; i < 8; ++i) {
    const Op op = static_cast<Op>(i);
    const std::string n = kOpNames[i];
    out.push_back({n + ": table of another database", op, true});
    out.push_back({n + ": after abort", op, false, true});
    out.push_back({n + ": from a scan callback", op, false, false, true});
    const bool keyed = op != Op::kScan && op != Op::kScanIndex;
    if (keyed) {
      out.push_back({n + ": key over the limit", op, false, false, false, long_key});
      out.push_back({n + ": overflowed braid::Key", op, false, false, false, overflowed});
    } else {
      out.push_back({n + ": begin over the limit", op, false, false, false, long_key, ""});
      out.push_back({n + ": end over the limit", op, false, false, false, "", long_key});
    }
    if (op == Op::kGet || op == Op::kRemove || op == Op::kInsert || op == Op::kUpdate ||
        op == Op::kPut) {
      out.push_back({n + ": empty key", op, false, false, false, ""});
    }
    if (op == Op::kLookupIndex) {
      out.push_back({n + ": empty secondary key", op, false, false, false, ""});
    }
    if (op == Op::kInsert || op == Op::kUpdate || op == Op::kPut) {
      out.push_back({n + ": value over the limit", op, false, false, false, "k", long_value});
    }
    // Two faults at once: the first in the documented order answers.
    out.push_back(
        {n + ": after abort, another database's table, long key", op, true, true, false, long_key});
  }
  return out;
}

TEST(CheckParity, TransactionAndTxAnswerEveryBadCallAlike) {
  Fixture f;
  int compared = 0;
  for (const Case& c : cases()) {
    const Status a = via_transaction(f, c);
    const Status b = via_tx(f, c);
    EXPECT_EQ(a.code(), Code::kInvalidArgument) << c.name << ": " << a.to_string();
    EXPECT_EQ(a.code(), b.code()) << c.name << ": " << a.to_string() << " vs " << b.to_string();
    EXPECT_EQ(a.message(), b.message()) << c.name;
    ++compared;
  }
  EXPECT_GE(compared, 50);
  // Nothing a refused call did is visible: the table holds its one row.
  Transaction tx = begin(*f.db);
  int rows = 0;
  EXPECT_TRUE(tx.scan(*f.t, "", "", 0, [&](std::string_view, std::string_view) {
                  ++rows;
                  return true;
                }).is_ok());
  EXPECT_EQ(rows, 1);
}

}  // namespace
}  // namespace braid
