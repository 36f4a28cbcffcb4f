// Argument checks: one path for both transaction APIs and every execution mode. A non-OK
// Status refuses the call before it touches the engine; the transaction stays as it was (a
// refused write still fails its transaction: see Database's "Failed writes").
#pragma once

#include <braid/options.h>
#include <braid/status.h>
#include <braid/tx.h>

#include <string>
#include <string_view>

#include "engine/table.h"
#include "mvcc/txn.h"

namespace braid::engine {

class DatabaseImpl;

// Every operation of a transaction, in this order: the transaction is active, the call is not
// made from its scan callback, the table is this database's, the arguments are in range.
Status check_call_all(const DatabaseImpl* db, const mvcc::TxnContext* ctx,
                      const detail::OpState& op);

// True when check_call_all would answer OK for a point operation (get, insert, update, put,
// remove); false when it might not, or for another kind. Every operation passes here, so it
// is inline and builds no Status: three calls deep that each returned one cost an in-cache
// point operation a large share of its time.
inline bool point_call_ok(const DatabaseImpl* db, const mvcc::TxnContext* ctx,
                          const detail::OpState& op) {
  using Kind = detail::OpState::Kind;
  if (ctx == nullptr || ctx->in_scan) return false;
  if (op.table == nullptr || op.index != nullptr || op.table->owner() != db) return false;
  if (op.key.empty() || op.key.size() > kMaxKeyBytes) return false;
  switch (op.kind) {
    case Kind::kGet:
      return true;
    case Kind::kInsert:
    case Kind::kUpdate:
    case Kind::kPut:
      return !ctx->read_only && op.value.size() <= kMaxValueBytes;
    case Kind::kRemove:
      return !ctx->read_only;
    default:
      return false;
  }
}

// check_call_all, answered inline for a point operation whose arguments are in range; the
// messages (and the checks of the other kinds) stay in check_call_all alone.
inline Status check_call(const DatabaseImpl* db, const mvcc::TxnContext* ctx,
                         const detail::OpState& op) {
  if (point_call_ok(db, ctx, op)) [[likely]]
    return Status::ok();
  return check_call_all(db, ctx, op);
}

// A key and a value as every write takes them (also Database::bulk_load).
Status check_key(std::string_view key);
Status check_value(std::string_view value);

// A transaction's options (`where` prefixes the message).
Status check_txn(const TxnOptions& txn, const std::string& where);
// Every bound Options names, checked at open (options_check.cc).
Status check_options(const Options& options);

// ExecOptions::read_batch at most a worker's reads in flight (ColdReader::kMaxInFlight), and
// read_window_us at most 100 ms: a read held longer is a stall, not a batch.
inline constexpr std::uint32_t kMaxReadBatch = 64;
inline constexpr std::uint32_t kMaxReadWindowUs = 100'000;

// The enums and bounds of ExecOptions (`where` prefixes the message).
Status check_exec(const ExecOptions& exec, const std::string& where);

}  // namespace braid::engine
