// The engine behind the public Database and Transaction handles.
//
// The record-access path (DESIGN §1): key → index descent → OID → OID-array entry → version
// chain, newest first, to the first version visible to the reader's snapshot. Writes install a
// new head by CAS over a visible committed head (first-updater-wins) and prune below it.
#pragma once

#include <braid/database.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/table.h"
#include "mvcc/txn.h"

namespace braid::engine {

enum class WriteKind : std::uint8_t { kInsert, kUpdate, kPut, kRemove };

class DatabaseImpl {
 public:
  static Result<std::unique_ptr<DatabaseImpl>> open(const Options& options);
  ~DatabaseImpl();

  Result<Table*> create_table(std::string_view name);
  Result<Table*> open_table(std::string_view name);
  Result<Transaction> begin();
  DatabaseStats stats() const;
  const Options& options() const { return options_; }

  // Operations of an active transaction.
  Result<std::string_view> get(mvcc::TxnContext* ctx, Table& table, std::string_view key);
  Status write(mvcc::TxnContext* ctx, Table& table, std::string_view key, std::string_view value,
               WriteKind kind);
  Status scan(mvcc::TxnContext* ctx, Table& table, std::string_view begin, std::string_view end,
              std::size_t limit, ScanCallback callback, ScanOrder order);
  Status commit(mvcc::TxnContext* ctx);
  void abort(mvcc::TxnContext* ctx);

 private:
  enum class Vis : std::uint8_t { kVisible, kInvisible, kRetry, kOwnerAborting };
  enum class Outcome : std::uint8_t { kDone, kRelookup };

  explicit DatabaseImpl(const Options& options);
  Status open_directory();

  Vis visibility(const mvcc::TxnContext* ctx, std::uint64_t stamp);
  const mvcc::Version* find_visible(const mvcc::TxnContext* ctx, std::uint64_t entry);
  Outcome write_existing(mvcc::TxnContext* ctx, Table& table, std::uint64_t oid,
                         std::string_view key, std::string_view value, WriteKind kind,
                         Status* status);
  mvcc::Version* make_version(mvcc::TxnContext* ctx, std::string_view value, bool tombstone);
  void add_write(mvcc::TxnContext* ctx, Table& table, std::uint64_t oid, mvcc::Version* v,
                 std::string_view key, bool fresh);
  void prune_below(mvcc::TxnContext* ctx, mvcc::Version* head);

  Options options_;
  mvcc::TxnTable txns_;
  int lock_fd_ = -1;
  mutable std::mutex catalog_mutex_;
  std::vector<std::unique_ptr<Table>> tables_;
  std::unordered_map<std::string, Table*> by_name_;
};

// Input validation shared by every entry point.
Status check_key(std::string_view key);
Status check_value(std::string_view value);

}  // namespace braid::engine
