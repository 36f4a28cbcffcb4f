// Helpers shared by the engine tests.
#pragma once

#include <braid/braid.h>
#include <braid/tx.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

#include "engine/table.h"
#include "engine/worker_pool.h"
#include "storage/node_segment.h"
#include "storage/sim_fs.h"

namespace braid::testing {

inline std::unique_ptr<Database> open_db(Options o = {}) {
  Result<std::unique_ptr<Database>> db = Database::open(o);
  EXPECT_TRUE(db.is_ok()) << db.status().to_string();
  return std::move(db).value();
}

inline Table* make_table(Database& db, std::string_view name) {
  Result<Table*> t = db.create_table(name);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return *t;
}

// A secondary key function for records "value = <group>:<payload>": the group; no colon, no
// entry.
inline bool group_of(std::string_view, std::string_view value, Key* out) {
  const std::size_t colon = value.find(':');
  if (colon == std::string_view::npos) return false;
  out->str(value.substr(0, colon));
  return true;
}

inline Transaction begin(Database& db) {
  Result<Transaction> tx = db.begin();
  EXPECT_TRUE(tx.is_ok()) << tx.status().to_string();
  return std::move(tx).value();
}

// The visible value of `key`, "<none>" when absent.
inline std::string read(Transaction& tx, Table& t, std::string_view key) {
  Result<std::string_view> r = tx.get(t, key);
  if (r.code() == Code::kNotFound) return "<none>";
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::string(*r) : "<error>";
}

inline std::string read_committed(Database& db, Table& t, std::string_view key) {
  Transaction tx = begin(db);
  std::string v = read(tx, t, key);
  EXPECT_TRUE(tx.commit().is_ok());
  return v;
}

// Lets every context's queue of removed records be worked on and moves the clock and the
// horizon past every removal so far (src/engine/reclaim.cc): `rounds` transactions on
// `scratch` through the workers (each ends in a slot's context, and a worker going idle works
// on its slots' queues) and as many on this thread (every 64th end visits free shared
// contexts). No transaction may be open.
inline void drain_reclamation(Database& db, Table& scratch, int rounds = 1000) {
  for (int i = 0; i < rounds; ++i) {
    const std::string value = std::to_string(i);
    if (db.options().workers != 0) {
      Status s = db.execute(
          [&](Tx& tx) -> Task<Status> { co_return co_await tx.put(scratch, "tick", value); });
      ASSERT_TRUE(s.is_ok()) << s.to_string();
    }
    Transaction tx = begin(db);
    ASSERT_TRUE(tx.put(scratch, "tick", value).is_ok());
    ASSERT_TRUE(tx.commit().is_ok());
  }
  // The last ends' queues are worked on after their results came back (WorkerPool::settle).
  EXPECT_TRUE(engine::WorkerPool::settle(db));
}

// The keys in `table`'s primary index, those in leaves on storage too (read back for it; under a
// memory budget leaves leave memory), after checking the tree's invariants once `db`'s workers
// sleep (after a run they reclaim and sweep on their own). Nothing else may change the table
// meanwhile.
inline std::size_t index_keys(Database& db, Table& table) {
  EXPECT_TRUE(engine::WorkerPool::settle(db));
  (void)table.index().check_invariants();
  std::size_t n = 0;
  EXPECT_TRUE(table.index().for_each([&](std::string_view, std::uint64_t) { ++n; }));
  return n;
}

// A number from the environment (test knobs such as BRAID_MODEL_SEED), or `def`.
inline std::uint64_t env_u64(const char* name, std::uint64_t def) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : def;
}

// Bank tests: account i's key, and a balance as a number.
inline std::string account(int i) {
  Key k;
  k.str("acct").u32(static_cast<std::uint32_t>(i));
  return std::string(k.view());
}
inline std::int64_t as_int(std::string_view v) { return std::stoll(std::string(v)); }

// Damage to the image of a node on storage: one byte flipped inside the first node on storage
// that a node in memory names (a leaf, or an inner node when those page) in a node segment of
// the database in /db on `fs`, so its load fails to verify (Corruption); restore() puts the
// byte back.
class LeafImageDamage {
 public:
  // False when no leaf of the tree is on storage.
  bool damage(storage::SimFileSystem& fs, const index::BTree& tree) {
    std::uint64_t address = 0;
    (void)tree.visit_bottom_up([&](const index::Node&, std::span<const std::uint64_t> children) {
      for (const std::uint64_t w : children) {
        if (index::is_address(w) && address == 0) address = w;
      }
      return std::uint64_t{0};
    });
    if (address == 0) return false;
    const mvcc::entry::ColdAddress a = mvcc::entry::cold(address);
    seg_ = "/db/" + storage::node_segment_name(a.segment);
    std::string image;
    if (!fs.peek(seg_, &image)) return false;
    at_ = a.offset + 200;  // inside the node's bytes, past its header
    if (at_ >= image.size()) return false;
    original_ = image.substr(at_, 1);
    fs_ = &fs;
    fs.poke(seg_, at_, std::string(1, static_cast<char>(original_[0] ^ 0x5a)), true);
    return true;
  }
  void restore() {
    if (fs_ != nullptr) fs_->poke(seg_, at_, original_, true);
    fs_ = nullptr;
  }

 private:
  storage::SimFileSystem* fs_ = nullptr;
  std::string seg_;
  std::uint64_t at_ = 0;
  std::string original_;
};

}  // namespace braid::testing
