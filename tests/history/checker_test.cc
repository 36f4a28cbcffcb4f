// The history checker on hand-made histories: each anomaly class it reports, found with the
// transactions involved, and a serializable history found clean.
#include "history/checker.h"

#include <gtest/gtest.h>

namespace braid::history {
namespace {

using List = std::vector<std::uint64_t>;
using State = std::map<std::uint32_t, List>;

Op r(std::uint32_t key, List list) { return {Op::Kind::kRead, key, std::move(list), 0}; }
Op a(std::uint32_t key, std::uint64_t e) { return {Op::Kind::kAppend, key, {}, e}; }
Txn ok(std::uint64_t id, std::vector<Op> ops) { return {id, std::move(ops), true}; }
Txn failed(std::uint64_t id, std::vector<Op> ops) { return {id, std::move(ops), false}; }

std::vector<std::uint64_t> txns_of(const Report& rep, const std::string& type) {
  for (const Anomaly& an : rep.anomalies) {
    if (an.type == type) {
      auto t = an.txns;
      std::sort(t.begin(), t.end());
      return t;
    }
  }
  return {};
}

TEST(HistoryChecker, SerialHistoryIsClean) {
  const std::vector<Txn> h = {
      ok(1, {r(0, {}), a(0, 1)}),
      ok(2, {r(0, {1}), a(0, 2), r(1, {}), a(1, 3)}),
      ok(3, {r(0, {1, 2}), r(1, {3})}),
  };
  const Report rep = check(h, {{0, {1, 2}}, {1, {3}}});
  EXPECT_TRUE(rep.anomalies.empty()) << rep.summary();
  EXPECT_EQ(rep.committed, 3u);
  EXPECT_GT(rep.edges, 0u);
}

TEST(HistoryChecker, G0WriteCycle) {
  // Key 0 orders T1 before T2, key 1 orders T2 before T1.
  const std::vector<Txn> h = {ok(1, {a(0, 1), a(1, 4)}), ok(2, {a(0, 2), a(1, 3)})};
  const Report rep = check(h, {{0, {1, 2}}, {1, {3, 4}}});
  EXPECT_EQ(rep.count("G0"), 1u) << rep.summary();
  const auto cycle = txns_of(rep, "G0");  // T -> T' -> T, sorted
  ASSERT_EQ(cycle.size(), 3u);
  EXPECT_TRUE(cycle.front() == 1 && cycle.back() == 2);
  EXPECT_EQ(rep.count("G2-item"), 0u);
}

TEST(HistoryChecker, G1aAbortedRead) {
  const std::vector<Txn> h = {failed(1, {a(0, 1)}), ok(2, {r(0, {1})})};
  const Report rep = check(h, {{0, {}}});
  EXPECT_EQ(rep.count("G1a"), 1u) << rep.summary();
  EXPECT_EQ(txns_of(rep, "G1a"), (std::vector<std::uint64_t>{1, 2}));
}

TEST(HistoryChecker, G1bIntermediateRead) {
  const std::vector<Txn> h = {ok(1, {a(0, 1), a(0, 2)}), ok(2, {r(0, {1})})};
  const Report rep = check(h, {{0, {1, 2}}});
  EXPECT_EQ(rep.count("G1b"), 1u) << rep.summary();
  EXPECT_EQ(txns_of(rep, "G1b"), (std::vector<std::uint64_t>{1, 2}));
}

TEST(HistoryChecker, G1cCircularInformationFlow) {
  // T1 reads T2's append to key 1; T2 reads T1's append to key 0.
  const std::vector<Txn> h = {ok(1, {a(0, 1), r(1, {2})}), ok(2, {a(1, 2), r(0, {1})})};
  const Report rep = check(h, {{0, {1}}, {1, {2}}});
  EXPECT_EQ(rep.count("G1c"), 1u) << rep.summary();
  EXPECT_EQ(txns_of(rep, "G1c").size(), 3u);  // the cycle T -> T' -> T
}

TEST(HistoryChecker, GSingleReadSkew) {
  // T2 appends to both keys; T1 sees its append to key 1 but not to key 0.
  const std::vector<Txn> h = {ok(1, {r(0, {}), r(1, {2})}), ok(2, {a(0, 1), a(1, 2)})};
  const Report rep = check(h, {{0, {1}}, {1, {2}}});
  EXPECT_EQ(rep.count("G-single"), 1u) << rep.summary();
  EXPECT_EQ(rep.count("G2-item"), 0u);
}

TEST(HistoryChecker, G2ItemWriteSkew) {
  // Each reads both keys empty and appends to one: two rw edges.
  const std::vector<Txn> h = {ok(1, {r(0, {}), r(1, {}), a(0, 1)}),
                              ok(2, {r(0, {}), r(1, {}), a(1, 2)})};
  const Report rep = check(h, {{0, {1}}, {1, {2}}});
  EXPECT_EQ(rep.count("G2-item"), 1u) << rep.summary();
  EXPECT_EQ(rep.count("G-single"), 0u);
  EXPECT_EQ(rep.count("G0") + rep.count("G1c"), 0u);
}

TEST(HistoryChecker, LostUpdate) {
  // Both read [] and appended; the final order kept only one of them.
  const std::vector<Txn> h = {ok(1, {r(0, {}), a(0, 1)}), ok(2, {r(0, {}), a(0, 2)})};
  const Report rep = check(h, {{0, {2}}});
  EXPECT_EQ(rep.count("lost-update"), 1u) << rep.summary();
  EXPECT_EQ(txns_of(rep, "lost-update"), (std::vector<std::uint64_t>{1}));
}

TEST(HistoryChecker, IncompatibleOrderAndGarbage) {
  const std::vector<Txn> h = {ok(1, {a(0, 1)}), ok(2, {a(0, 2)}), ok(3, {r(0, {2})}),
                              ok(4, {r(0, {9})})};
  const Report rep = check(h, {{0, {1, 2}}});
  EXPECT_EQ(rep.count("incompatible-order"), 2u) << rep.summary();
  EXPECT_EQ(rep.count("garbage-read"), 1u);
}

TEST(HistoryChecker, ListEncodingRoundTrips) {
  List out;
  EXPECT_TRUE(decode(encode({1, 22, 333}), &out));
  EXPECT_EQ(out, (List{1, 22, 333}));
  EXPECT_TRUE(decode("", &out));
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(decode("1,,2", &out));
  EXPECT_FALSE(decode("x", &out));
}

}  // namespace
}  // namespace braid::history
