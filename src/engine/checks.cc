// The one argument-check path of both transaction APIs (Transaction on application threads,
// Tx in worker coroutines) and of the options: same checks, same order, same messages.
#include "engine/checks.h"

#include <braid/database.h>

#include <string>

#include "engine/table.h"
#include "mvcc/txn.h"
#include "sched/policy.h"
#include "util/enum_names.h"

namespace braid::engine {

namespace {

constexpr const char* kOpNames[] = {"get",    "insert", "update",    "put",
                                    "remove", "scan",   "multi_get", "index scan"};
static_assert(util::names_every(kOpNames, detail::OpState::Kind::kIndexScan));

bool is_write(detail::OpState::Kind kind) {
  using Kind = detail::OpState::Kind;
  return kind == Kind::kInsert || kind == Kind::kUpdate || kind == Kind::kPut ||
         kind == Kind::kRemove;
}

const char* op_name(detail::OpState::Kind kind) {
  return util::enum_name(kind, kOpNames, "operation");
}

Status check_table(const DatabaseImpl* db, const detail::OpState& op) {
  const Table* t = op.index != nullptr ? &op.index->table() : op.table;
  if (t == nullptr) return Status::invalid_argument("operation without a table");
  if (t->owner() != db) {
    return Status::invalid_argument("table '" + t->name() +
                                    "' belongs to another Database (a Table* or Index* is only "
                                    "valid with the Database that made it)");
  }
  return Status::ok();
}

Status check_op(const detail::OpState& op) {
  using Kind = detail::OpState::Kind;
  switch (op.kind) {
    case Kind::kGet:
    case Kind::kRemove:
      return check_key(op.key);
    case Kind::kInsert:
    case Kind::kUpdate:
    case Kind::kPut:
      if (Status s = check_key(op.key); !s.is_ok()) return s;
      return check_value(op.value);
    case Kind::kScan:
    case Kind::kIndexScan:
      if (op.key.size() > kMaxKeyBytes || op.value.size() > kMaxKeyBytes) {
        return Status::invalid_argument("scan bound longer than " + std::to_string(kMaxKeyBytes) +
                                        " bytes");
      }
      if (op.kind == Kind::kIndexScan && op.index == nullptr) {
        return Status::invalid_argument("index scan without an index");
      }
      if (op.kind == Kind::kIndexScan && op.exact && op.key.empty()) {
        return Status::invalid_argument("lookup_index: empty secondary key");
      }
      return Status::ok();
    case Kind::kMultiGet:
      if (op.keys.size() != op.results.size()) {
        return Status::invalid_argument("multi_get: " + std::to_string(op.keys.size()) +
                                        " keys but " + std::to_string(op.results.size()) +
                                        " result slots");
      }
      for (std::string_view k : op.keys) {
        if (Status s = check_key(k); !s.is_ok()) return s;
      }
      return Status::ok();
  }
  return Status::invalid_argument("unknown operation");
}

}  // namespace

Status check_key(std::string_view key) {
  if (key.empty()) return Status::invalid_argument("key is empty");
  if (key.size() > kMaxKeyBytes) {
    return Status::invalid_argument("key is " + std::to_string(key.size()) +
                                    " bytes; the limit is " + std::to_string(kMaxKeyBytes) +
                                    " (a braid::Key built past the limit has " +
                                    std::to_string(kMaxKeyBytes + 1) + ")");
  }
  return Status::ok();
}

Status check_value(std::string_view value) {
  if (value.size() > kMaxValueBytes) {
    return Status::invalid_argument("value is " + std::to_string(value.size()) +
                                    " bytes; the limit is " + std::to_string(kMaxValueBytes));
  }
  return Status::ok();
}

// point_call_ok (checks.h) passes point operations without coming here: a check added here
// must be added there too, or that function must answer false for what it would refuse.
Status check_call_all(const DatabaseImpl* db, const mvcc::TxnContext* ctx,
                      const detail::OpState& op) {
  if (ctx == nullptr) {
    return Status::invalid_argument("transaction is not active (committed or aborted)");
  }
  // A scan callback runs inside the scan's leaf visit: an operation there would re-enter the
  // tree and the transaction's write set mid-iteration.
  if (ctx->in_scan) {
    return Status::invalid_argument(std::string(op_name(op.kind)) + " called from a scan callback");
  }
  if (Status s = check_table(db, op); !s.is_ok()) return s;
  if (ctx->read_only && is_write(op.kind)) [[unlikely]] {
    return Status::invalid_argument(std::string(op_name(op.kind)) +
                                    " in a transaction declared read-only (TxnOptions::read_only)");
  }
  return check_op(op);
}

Status check_txn(const TxnOptions& t, const std::string& where) {
  if (static_cast<std::uint32_t>(t.isolation) >
      static_cast<std::uint32_t>(Isolation::kSerializable)) {
    return Status::invalid_argument(where + "TxnOptions::isolation " +
                                    std::to_string(static_cast<int>(t.isolation)) +
                                    " is not an Isolation");
  }
  return Status::ok();
}

Status check_exec(const ExecOptions& e, const std::string& where) {
  // Enums from an application may hold any value of their underlying type (a cast, a
  // deserialized config): each is checked, never trusted to be one of the names.
  if (static_cast<std::uint32_t>(e.mode) > static_cast<std::uint32_t>(ExecMode::kAuto)) {
    return Status::invalid_argument(where + "ExecOptions::mode " +
                                    std::to_string(static_cast<int>(e.mode)) +
                                    " is not an ExecMode");
  }
  if (static_cast<std::size_t>(e.scheduler) >= sched::policies().size()) {
    return Status::invalid_argument(where + "ExecOptions::scheduler " +
                                    std::to_string(static_cast<int>(e.scheduler)) +
                                    " is not a SchedulerPolicy");
  }
  if (static_cast<std::uint32_t>(e.storage_path) >
      static_cast<std::uint32_t>(StoragePath::kFlattened)) {
    return Status::invalid_argument(where + "ExecOptions::storage_path " +
                                    std::to_string(static_cast<int>(e.storage_path)) +
                                    " is not a StoragePath");
  }
  if (e.read_batch == 0 || e.read_batch > kMaxReadBatch) {
    return Status::invalid_argument(where + "ExecOptions::read_batch must be 1.." +
                                    std::to_string(kMaxReadBatch) + " (it is " +
                                    std::to_string(e.read_batch) + ")");
  }
  if (e.read_window_us > kMaxReadWindowUs) {
    return Status::invalid_argument(where + "ExecOptions::read_window_us must be at most " +
                                    std::to_string(kMaxReadWindowUs) + " (it is " +
                                    std::to_string(e.read_window_us) + ")");
  }
  if (e.cold_check_every == 0) {
    return Status::invalid_argument(where + "ExecOptions::cold_check_every must be at least 1");
  }
  if (static_cast<std::size_t>(e.team_admission) >= sched::policies().size() ||
      e.team_admission == SchedulerPolicy::kTeam) {
    return Status::invalid_argument(where + "ExecOptions::team_admission " +
                                    std::to_string(static_cast<int>(e.team_admission)) +
                                    " is not a SchedulerPolicy other than team");
  }
  if (e.team_size == 0) {
    return Status::invalid_argument(where + "ExecOptions::team_size must be at least 1");
  }
  if ((e.scheduler == SchedulerPolicy::kDualQueue ||
       (e.scheduler == SchedulerPolicy::kTeam &&
        e.team_admission == SchedulerPolicy::kDualQueue)) &&
      e.cold_slots == 0) {
    return Status::invalid_argument(where +
                                    "ExecOptions::cold_slots must be at least 1 under dual-queue");
  }
  return Status::ok();
}

}  // namespace braid::engine
