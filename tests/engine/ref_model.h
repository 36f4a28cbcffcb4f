// A reference model of snapshot isolation with first-updater-wins, shared by the model tests of
// the thread-per-transaction API (model_test) and of coroutine transactions (coro_model_test):
// committed versions per key, the open transactions' snapshots and write sets, and predictions
// for every operation.
#pragma once

#include <braid/braid.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "util/random.h"

namespace braid::testing {

using Value = std::optional<std::string>;  // nullopt: tombstone
enum class WriteOp { kInsert, kUpdate, kPut, kRemove };

struct RefTx {
  std::uint64_t snapshot = 0;
  std::map<std::string, Value> writes;
};

class RefModel {
 public:
  // Keys of varied shapes: short, 8-byte heads, shared long prefixes, the maximal length.
  static std::vector<std::string> make_keys(std::size_t n) {
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < n; ++i) {
      switch (i % 4) {
        case 0:
          keys.emplace_back(1, static_cast<char>('a' + i));
          break;
        case 1:
          keys.push_back("key" + std::to_string(i));
          break;
        case 2:
          keys.push_back(std::string(30, 'p') + std::to_string(i));
          break;
        default: {
          const std::string number = std::to_string(100 + i);
          keys.push_back(std::string(kMaxKeyBytes - number.size(), 'z') + number);
          break;
        }
      }
    }
    return keys;
  }
  static std::string random_value(util::Rng& rng) {
    std::string v(rng.uniform(100) == 0 ? 5000 : rng.uniform(40), '\0');
    for (auto& c : v) c = static_cast<char>('a' + rng.uniform(26));
    return v;
  }

  // A new transaction; its snapshot is every commit so far.
  void open(RefTx* t) {
    t->snapshot = clock_;
    t->writes.clear();
    open_.insert(t);
  }
  void close(RefTx* t) { open_.erase(t); }

  Value visible(const RefTx& t, const std::string& k) const {
    if (auto w = t.writes.find(k); w != t.writes.end()) return w->second;
    auto it = committed_.find(k);
    if (it == committed_.end()) return std::nullopt;
    for (auto v = it->second.rbegin(); v != it->second.rend(); ++v) {
      if (v->cts <= t.snapshot) return v->value;
    }
    return std::nullopt;
  }

  Code predict_write(const RefTx& t, WriteOp kind, const std::string& k) const {
    Value current;
    if (auto w = t.writes.find(k); w != t.writes.end()) {
      current = w->second;
    } else if (!in_index(k)) {
      return kind == WriteOp::kUpdate || kind == WriteOp::kRemove ? Code::kNotFound : Code::kOk;
    } else if (written_by_other(&t, k) || latest(k)->cts > t.snapshot) {
      return Code::kConflict;
    } else {
      current = latest(k)->value;
    }
    if (kind == WriteOp::kInsert && current) return Code::kDuplicate;
    if ((kind == WriteOp::kUpdate || kind == WriteOp::kRemove) && !current) return Code::kNotFound;
    return Code::kOk;
  }
  void apply_write(RefTx* t, WriteOp kind, const std::string& k, const std::string& v) {
    t->writes[k] = kind == WriteOp::kRemove ? Value() : Value(v);
  }

  std::vector<std::pair<std::string, std::string>> expected_scan(const RefTx& t,
                                                                 const std::string& a,
                                                                 const std::string& b,
                                                                 std::size_t limit,
                                                                 ScanOrder order) const {
    std::vector<std::pair<std::string, std::string>> want;
    std::set<std::string> candidates;
    for (const auto& [k, _] : committed_) candidates.insert(k);
    for (const auto& [k, _] : t.writes) candidates.insert(k);
    for (const std::string& k : candidates) {
      if (k < a || (!b.empty() && k >= b)) continue;
      if (Value v = visible(t, k)) want.emplace_back(k, *v);
    }
    if (order == ScanOrder::kReverse) std::reverse(want.begin(), want.end());
    if (limit != 0 && want.size() > limit) want.resize(limit);
    return want;
  }

  void commit(RefTx* t) {
    if (!t->writes.empty()) {
      ++clock_;
      for (auto& [k, v] : t->writes) committed_[k].push_back({clock_, v});
    }
    close(t);
  }

  // The latest committed state (tombstones dropped).
  std::map<std::string, std::string> final_state() const {
    std::map<std::string, std::string> want;
    for (const auto& [k, versions] : committed_) {
      if (!versions.empty() && versions.back().value) want.emplace(k, *versions.back().value);
    }
    return want;
  }
  // Keys that ever had a committed version (the index keeps their entries).
  std::size_t indexed_keys() const { return committed_.size(); }
  std::size_t open_count() const { return open_.size(); }

 private:
  struct Committed {
    std::uint64_t cts;
    Value value;
  };
  const Committed* latest(const std::string& k) const {
    auto it = committed_.find(k);
    return it == committed_.end() || it->second.empty() ? nullptr : &it->second.back();
  }
  bool written_by_other(const RefTx* self, const std::string& k) const {
    for (const RefTx* o : open_) {
      if (o != self && o->writes.count(k) != 0) return true;
    }
    return false;
  }
  bool in_index(const std::string& k) const {
    return committed_.count(k) != 0 || written_by_other(nullptr, k);
  }

  std::map<std::string, std::vector<Committed>> committed_;
  std::set<const RefTx*> open_;
  std::uint64_t clock_ = 0;
};

}  // namespace braid::testing
