// Model-based randomized test: random interleavings of several open transactions (gets, puts,
// inserts, updates, removes, scans, commits, aborts) on one thread, checked step by step against
// a simple multi-version reference model of snapshot isolation with first-updater-wins.
//
// Every run is a pure function of its seed. Default: 4 seeds x 30,000 operations. For long runs:
//   BRAID_MODEL_OPS=5000000 BRAID_MODEL_SEED=123 ./model_test
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/test_util.h"
#include "util/random.h"

namespace braid {
namespace {

using Value = std::optional<std::string>;  // nullopt: tombstone

struct Committed {
  std::uint64_t cts;
  Value value;
};

struct OpenTx {
  Transaction tx;
  std::uint64_t snapshot;
  std::map<std::string, Value> writes;
};

class Model {
 public:
  explicit Model(std::uint64_t seed) : rng_(seed) {
    // Keys of varied shapes: short, 8-byte heads, shared long prefixes, the maximal length.
    for (int i = 0; i < 48; ++i) {
      std::string k;
      switch (i % 4) {
        case 0:
          k = std::string(1, static_cast<char>('a' + i));
          break;
        case 1:
          k = "key" + std::to_string(i);
          break;
        case 2:
          k = std::string(30, 'p') + std::to_string(i);
          break;
        default:
          k = std::string(kMaxKeyBytes - 3, 'z') + std::to_string(100 + i);
          break;
      }
      keys_.push_back(k);
    }
  }

  void run(std::uint64_t ops) {
    db_ = testing::open_db();
    table_ = testing::make_table(*db_, "model");
    for (std::uint64_t i = 0; i < ops; ++i) {
      step_ = i;
      step();
      if (HasFatalFailure()) return;
    }
    while (!open_.empty()) finish(0, true);
    verify_final();
  }

 private:
  static bool HasFatalFailure() { return ::testing::Test::HasFatalFailure(); }

  std::string key() { return keys_[rng_.uniform(keys_.size())]; }
  std::string value() {
    std::string v(rng_.uniform(100) == 0 ? 5000 : rng_.uniform(40), '\0');
    for (auto& c : v) c = static_cast<char>('a' + rng_.uniform(26));
    return v;
  }

  const Committed* latest(const std::string& k) const {
    auto it = committed_.find(k);
    return it == committed_.end() || it->second.empty() ? nullptr : &it->second.back();
  }
  Value visible(const OpenTx& t, const std::string& k) const {
    if (auto w = t.writes.find(k); w != t.writes.end()) return w->second;
    auto it = committed_.find(k);
    if (it == committed_.end()) return std::nullopt;
    for (auto v = it->second.rbegin(); v != it->second.rend(); ++v) {
      if (v->cts <= t.snapshot) return v->value;
    }
    return std::nullopt;
  }
  bool written_by_other(std::size_t self, const std::string& k) const {
    for (std::size_t i = 0; i < open_.size(); ++i) {
      if (i != self && open_[i].writes.count(k) != 0) return true;
    }
    return false;
  }
  bool in_index(const std::string& k) const {
    return committed_.count(k) != 0 || written_by_other(SIZE_MAX, k);
  }

  void step() {
    if (open_.empty() || (open_.size() < 4 && rng_.uniform(8) == 0)) {
      open_.push_back({testing::begin(*db_), clock_, {}});
      return;
    }
    const std::size_t ti = rng_.uniform(open_.size());
    OpenTx& t = open_[ti];
    const std::uint64_t op = rng_.uniform(100);
    if (op < 6) {
      finish(ti, true);
    } else if (op < 9) {
      finish(ti, false);
    } else if (op < 35) {
      const std::string k = key();
      Result<std::string_view> r = t.tx.get(*table_, k);
      const Value want = visible(t, k);
      if (want) {
        ASSERT_TRUE(r.is_ok()) << where() << r.status().to_string();
        ASSERT_EQ(std::string(*r), *want) << where();
      } else {
        ASSERT_EQ(r.code(), Code::kNotFound) << where();
      }
    } else if (op < 45) {
      scan(t);
    } else {
      static constexpr engine_kind kinds[] = {kInsert, kUpdate, kPut, kRemove};
      write(ti, kinds[rng_.uniform(4)]);
    }
  }

  enum engine_kind { kInsert, kUpdate, kPut, kRemove };

  void write(std::size_t ti, engine_kind kind) {
    OpenTx& t = open_[ti];
    const std::string k = key();
    const std::string v = value();
    Status got;
    switch (kind) {
      case kInsert:
        got = t.tx.insert(*table_, k, v);
        break;
      case kUpdate:
        got = t.tx.update(*table_, k, v);
        break;
      case kPut:
        got = t.tx.put(*table_, k, v);
        break;
      case kRemove:
        got = t.tx.remove(*table_, k);
        break;
    }
    // Predict.
    Code want = Code::kOk;
    Value current;
    if (t.writes.count(k) != 0) {
      current = t.writes[k];
    } else if (!in_index(k)) {
      if (kind == kUpdate || kind == kRemove) want = Code::kNotFound;
    } else if (written_by_other(ti, k) || latest(k)->cts > t.snapshot) {
      want = Code::kConflict;
    } else {
      current = latest(k)->value;
    }
    if (want == Code::kOk) {
      if (kind == kInsert && current) want = Code::kDuplicate;
      if ((kind == kUpdate || kind == kRemove) && !current &&
          (t.writes.count(k) != 0 || in_index(k))) {
        want = Code::kNotFound;
      }
    }
    ASSERT_EQ(got.code(), want) << where() << " kind " << kind << " key " << k.substr(0, 12)
                                << " got " << got.to_string();
    if (want == Code::kConflict) {
      EXPECT_FALSE(t.tx.is_active());
      open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(ti));
      return;
    }
    if (want == Code::kOk) t.writes[k] = kind == kRemove ? Value() : Value(v);
  }

  void scan(OpenTx& t) {
    std::string a = key();
    std::string b = rng_.uniform(3) == 0 ? std::string() : key();
    if (!b.empty() && b < a) std::swap(a, b);
    if (rng_.uniform(6) == 0) a.clear();
    const std::size_t limit = rng_.uniform(3) == 0 ? 1 + rng_.uniform(5) : 0;
    const ScanOrder order = rng_.uniform(2) == 0 ? ScanOrder::kForward : ScanOrder::kReverse;
    std::vector<std::pair<std::string, std::string>> got;
    ASSERT_TRUE(t.tx.scan(
                        *table_, a, b, limit,
                        [&](std::string_view k, std::string_view v) {
                          got.emplace_back(k, v);
                          return true;
                        },
                        order)
                    .is_ok());
    std::vector<std::pair<std::string, std::string>> want;
    std::map<std::string, bool> candidates;
    for (const auto& [k, _] : committed_) candidates[k] = true;
    for (const auto& [k, _] : t.writes) candidates[k] = true;
    for (const auto& [k, _] : candidates) {
      if (k < a || (!b.empty() && k >= b)) continue;
      if (Value v = visible(t, k)) want.emplace_back(k, *v);
    }
    if (order == ScanOrder::kReverse) std::reverse(want.begin(), want.end());
    if (limit != 0 && want.size() > limit) want.resize(limit);
    ASSERT_EQ(got, want) << where();
  }

  void finish(std::size_t ti, bool commit) {
    OpenTx& t = open_[ti];
    if (commit) {
      Status s = t.tx.commit();
      ASSERT_TRUE(s.is_ok()) << where() << s.to_string();
      if (!t.writes.empty()) {
        ++clock_;
        for (auto& [k, v] : t.writes) committed_[k].push_back({clock_, v});
      }
    } else {
      t.tx.abort();
    }
    open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(ti));
  }

  void verify_final() {
    Transaction tx = testing::begin(*db_);
    std::map<std::string, std::string> got;
    ASSERT_TRUE(tx.scan(*table_, "", "", 0, [&](std::string_view k, std::string_view v) {
                    got.emplace(k, v);
                    return true;
                  }).is_ok());
    std::map<std::string, std::string> want;
    for (const auto& [k, versions] : committed_) {
      if (!versions.empty() && versions.back().value) want.emplace(k, *versions.back().value);
    }
    ASSERT_EQ(got, want);
    ASSERT_TRUE(tx.commit().is_ok());
    EXPECT_EQ(table_->index().check_invariants(), committed_.size());
    const DatabaseStats st = db_->stats();
    EXPECT_EQ(st.open_transactions, 0u);
    EXPECT_LT(st.live_versions, 4 * keys_.size() + 1024) << "versions leak";
  }

  std::string where() const { return "step " + std::to_string(step_) + ": "; }

  util::Rng rng_;
  std::vector<std::string> keys_;
  std::unique_ptr<Database> db_;
  Table* table_ = nullptr;
  std::map<std::string, std::vector<Committed>> committed_;
  std::vector<OpenTx> open_;
  std::uint64_t clock_ = 0;
  std::uint64_t step_ = 0;
};

std::uint64_t env_u64(const char* name, std::uint64_t def) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : def;
}

class ModelTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ModelTest, MatchesReferenceModel) {
  const std::uint64_t seed = env_u64("BRAID_MODEL_SEED", GetParam());
  SCOPED_TRACE("replay with BRAID_MODEL_SEED=" + std::to_string(seed));
  Model m(seed);
  m.run(env_u64("BRAID_MODEL_OPS", 30000));
}

INSTANTIATE_TEST_SUITE_P(Seeds, ModelTest, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace braid
