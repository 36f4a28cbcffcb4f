// The engine behind the public Database and Transaction handles.
//
// The record-access path (DESIGN §1): key → index descent → OID → OID-array entry → version
// chain, newest first, to the first version visible to the reader's snapshot. Writes install a
// new head by CAS over a visible committed head (first-updater-wins) and prune below it.
#pragma once

#include <braid/database.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/table.h"
#include "mvcc/txn.h"

namespace braid::engine {

enum class WriteKind : std::uint8_t { kInsert, kUpdate, kPut, kRemove };

// The result of an index lookup the caller already did (so a write need not repeat it).
struct LookupHint {
  bool found;
  std::uint64_t oid;
};

class Worker;

class DatabaseImpl {
 public:
  static Result<std::unique_ptr<DatabaseImpl>> open(const Options& options);
  ~DatabaseImpl();

  Result<Table*> create_table(std::string_view name);
  Result<Table*> open_table(std::string_view name);
  Result<Transaction> begin();
  DatabaseStats stats() const;
  const Options& options() const { return options_; }
  mvcc::TxnTable& txns() { return txns_; }

  // Coroutine API (workers).
  Result<Pending> submit(TxnFunction fn, const SubmitOptions& options);
  Status run(std::span<TxnGenerator* const> generators, const ExecOptions& exec);
  ExecStats exec_stats() const;

  // Writes of an active transaction (reads go through access.h). With a hint, the first
  // attempt uses the caller's lookup instead of repeating it.
  Status write(mvcc::TxnContext* ctx, Table& table, std::string_view key, std::string_view value,
               WriteKind kind, const LookupHint* hint = nullptr);
  Status commit(mvcc::TxnContext* ctx);
  void abort(mvcc::TxnContext* ctx);

  enum class Vis : std::uint8_t { kVisible, kInvisible, kRetry, kOwnerAborting };
  Vis visibility(const mvcc::TxnContext* ctx, std::uint64_t stamp);

 private:
  enum class Outcome : std::uint8_t { kDone, kRelookup };

  explicit DatabaseImpl(const Options& options);
  Status open_directory();
  Status start_workers();
  void stop_workers();
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
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<std::uint32_t> next_worker_{0};
  std::mutex run_mutex_;  // one Database::run at a time
  std::atomic<std::uint32_t> run_remaining_{0};
};

// Input validation shared by every entry point.
Status check_key(std::string_view key);
Status check_value(std::string_view value);

}  // namespace braid::engine
