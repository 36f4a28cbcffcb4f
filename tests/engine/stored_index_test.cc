// Stored secondary indexes: a checkpoint stores every index created with a key version, and a
// later open's create_index attaches to the stored entries (plus the keys written since they
// were taken) instead of reading the table, with and without a memory budget. Checked against
// a seeded model and against an index built from the table: after the attach, after writes
// over the attached entries (their stale-entry removal included), across a second reopen, and
// through the dirty keys an open carries for an index nobody attached. A version that differs
// rebuilds, a missing index or a table written before the attach is reported, and a damaged
// index file is Corruption.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/table.h"
#include "engine/test_util.h"

namespace braid {
namespace {

using testing::begin;
using testing::group_of;
using testing::open_db;

using V = std::vector<std::string>;
constexpr int kGroups = 9;

std::vector<std::string> lookup(Database& db, Index& idx, std::string_view g) {
  std::vector<std::string> out;
  Key k;
  k.str(g);
  Transaction tx = begin(db);
  Status s = tx.lookup_index(idx, k.view(), 0, [&](std::string_view pk, std::string_view value) {
    EXPECT_EQ(value.substr(0, value.find(':')), g) << pk;
    out.emplace_back(pk);
    return true;
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  tx.abort();
  return out;
}

// The table as the model has it: key → group ("" for a record without one).
struct Model {
  std::map<std::string, std::string> rows;
  std::mt19937_64 rng;

  explicit Model(std::uint64_t seed) : rng(seed) {}
  std::string key(int i) const {
    char k[16];
    std::snprintf(k, sizeof k, "k%05d", i);
    return k;
  }
  // `n` random writes in transactions of 20: inserts, group changes, value-only updates,
  // removals, records without a group.
  void churn(Database& db, Table& t, int n, int key_space) {
    for (int done = 0; done < n;) {
      Transaction tx = begin(db);
      for (int i = 0; i < 20; ++i, ++done) {
        const std::string k = key(static_cast<int>(rng() % key_space));
        const int what = static_cast<int>(rng() % 10);
        const bool exists = rows.count(k) != 0;
        if (exists && what == 0) {
          ASSERT_TRUE(tx.remove(t, k).is_ok());
          rows.erase(k);
          continue;
        }
        std::string g = what == 1 ? "" : "g" + std::to_string(rng() % kGroups);
        if (exists && what == 2) g = rows[k];  // the value changes, the group does not
        const std::string v = g.empty() ? "none" : g + ":" + std::to_string(rng());
        ASSERT_TRUE((exists ? tx.update(t, k, v) : tx.insert(t, k, v)).is_ok());
        rows[k] = g;
      }
      ASSERT_TRUE(tx.commit().is_ok());
    }
  }
  void check(Database& db, Index& idx, const char* where) const {
    std::map<std::string, V> expect;
    for (const auto& [k, g] : rows) {
      if (!g.empty()) expect[g].push_back(k);
    }
    for (int i = 0; i < kGroups; ++i) {
      const std::string g = "g" + std::to_string(i);
      EXPECT_EQ(lookup(db, idx, g), expect[g]) << where << ", group " << g;
    }
  }
};

class StoredIndex : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/braid-stored-idx-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.directory = dir_;
    if (GetParam()) {  // a budget so small that every record and leaf goes out
      options_.memory_budget_bytes = 1;
      options_.page_index_leaves = true;
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  Options options_;
};

TEST_P(StoredIndex, AnOpenAttachesToTheStoredEntries) {
  constexpr int kKeys = 3000;
  Model m(GetParam() ? 71 : 17);
  const IndexOptions v1{1, false};
  const IndexOptions attach_v1{1, true};
  {
    auto db = open_db(options_);
    Table* t = testing::make_table(*db, "t");
    Result<Index*> idx = db->create_index(*t, "by_group", group_of, v1);
    ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
    m.churn(*db, *t, 4000, kKeys);
    ASSERT_TRUE(db->checkpoint().is_ok());
    m.churn(*db, *t, 600, kKeys);  // the log tail: derived again at the attach
    m.check(*db, **idx, "before the close");
  }
  {
    auto db = open_db(options_);
    Table* t = *db->open_table("t");
    EXPECT_EQ(db->create_index(*t, "other", group_of, attach_v1).code(), Code::kNotFound);
    Result<Index*> idx = db->create_index(*t, "by_group", group_of, attach_v1);
    ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
    const DatabaseStats st = db->stats();
    EXPECT_EQ(st.indexes_attached, 1u);
    EXPECT_GT(st.index_entries_attached, static_cast<std::uint64_t>(kKeys / 2));
    // The attached entries name no OID until a reader resolves them (refresh_hint): all but
    // the stale ones, which no record derives, after one read of every group.
    auto hints = [&] {
      std::uint64_t n = 0;
      (*idx)->tree().for_each(
          [&](std::string_view, std::uint64_t v) { n += Index::names_no_oid(v) ? 1 : 0; });
      return n;
    };
    EXPECT_EQ(hints(), st.index_entries_attached);
    m.check(*db, **idx, "after the attach");
    EXPECT_LT(hints() * 20, st.index_entries_attached) << "reads left the hints in place";
    m.check(*db, **idx, "read again through the refreshed entries");
    // An index built from the table agrees.
    Result<Index*> built = db->create_index(*t, "built", group_of);
    ASSERT_TRUE(built.is_ok());
    m.check(*db, **built, "built beside it");
    // Writes over the attached entries (hints replaced, stale ones removed).
    m.churn(*db, *t, 2000, kKeys);
    m.check(*db, **idx, "after writes over the attached entries");
    ASSERT_TRUE(db->checkpoint().is_ok());
    m.churn(*db, *t, 300, kKeys);
  }
  {
    auto db = open_db(options_);
    Table* t = *db->open_table("t");
    Result<Index*> idx = db->create_index(*t, "by_group", group_of, attach_v1);
    ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
    m.check(*db, **idx, "attached a second time");
  }
  // Not attached by this open (the open's checkpoint carries it, with the tail's keys in a
  // dirty file); then written without an attach and closed: the next open's tail adds its keys
  // to the dirty file's.
  {
    auto db = open_db(options_);
    Table* t = *db->open_table("t");
    m.churn(*db, *t, 300, kKeys);
  }
  {
    auto db = open_db(options_);
    Table* t = *db->open_table("t");
    Result<Index*> idx = db->create_index(*t, "by_group", group_of, attach_v1);
    ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
    m.check(*db, **idx, "attached with dirty keys of two opens");
  }
  // Another version: dropped, built, stored by the next checkpoint.
  {
    auto db = open_db(options_);
    Table* t = *db->open_table("t");
    EXPECT_EQ(db->create_index(*t, "by_group", group_of, IndexOptions{2, true}).code(),
              Code::kInvalidArgument);
    Result<Index*> idx = db->create_index(*t, "by_group", group_of, IndexOptions{2, false});
    ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
    EXPECT_EQ(db->stats().indexes_attached, 0u);
    EXPECT_EQ(db->stats().indexes_built, 1u);
    m.check(*db, **idx, "built for version 2");
    ASSERT_TRUE(db->checkpoint().is_ok());
  }
  // A write before the attach voids the stored index.
  {
    auto db = open_db(options_);
    Table* t = *db->open_table("t");
    m.churn(*db, *t, 20, kKeys);
    EXPECT_EQ(db->create_index(*t, "by_group", group_of, IndexOptions{2, true}).code(),
              Code::kNotFound);
    Result<Index*> idx = db->create_index(*t, "by_group", group_of, IndexOptions{2, false});
    ASSERT_TRUE(idx.is_ok()) << idx.status().to_string();
    m.check(*db, **idx, "built after a write voided the stored one");
    ASSERT_TRUE(db->checkpoint().is_ok());
  }
  // A damaged index file.
  {
    bool damaged = false;
    for (const auto& f : std::filesystem::directory_iterator(dir_)) {
      if (f.path().filename().string().rfind("sidx-", 0) != 0) continue;
      std::FILE* fp = std::fopen(f.path().c_str(), "r+b");
      ASSERT_NE(fp, nullptr);
      std::fseek(fp, 100, SEEK_SET);
      const int c = std::fgetc(fp);
      std::fseek(fp, 100, SEEK_SET);
      std::fputc(c ^ 0x5a, fp);
      std::fclose(fp);
      damaged = true;
    }
    ASSERT_TRUE(damaged);
    auto db = open_db(options_);
    Table* t = *db->open_table("t");
    Result<Index*> idx = db->create_index(*t, "by_group", group_of, IndexOptions{2, false});
    EXPECT_EQ(idx.code(), Code::kCorruption) << idx.status().to_string();
    Result<Index*> rebuilt = db->create_index(*t, "by_group", group_of, IndexOptions{3, false});
    ASSERT_TRUE(rebuilt.is_ok()) << rebuilt.status().to_string();
    m.check(*db, **rebuilt, "built for version 3 after the damage");
  }
}

INSTANTIATE_TEST_SUITE_P(Budget, StoredIndex, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "OneByte" : "None"; });

}  // namespace
}  // namespace braid
