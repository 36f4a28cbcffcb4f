// Argument checks: one path for both transaction APIs and every execution mode. A non-OK
// Status refuses the call before it touches the engine; the transaction stays as it was (a
// refused write still fails its transaction: see Database's "Failed writes").
#pragma once

#include <braid/options.h>
#include <braid/status.h>
#include <braid/tx.h>

#include <string>
#include <string_view>

namespace braid::mvcc {
struct TxnContext;
}  // namespace braid::mvcc

namespace braid::engine {

class DatabaseImpl;

// Every operation of a transaction, in this order: the transaction is active, the call is not
// made from its scan callback, the table is this database's, the arguments are in range.
Status check_call(const DatabaseImpl* db, const mvcc::TxnContext* ctx, const detail::OpState& op);

// A key and a value as every write takes them (also Database::bulk_load).
Status check_key(std::string_view key);
Status check_value(std::string_view value);

// A transaction's options (`where` prefixes the message).
Status check_txn(const TxnOptions& txn, const std::string& where);

// The enums of ExecOptions (`where` prefixes the message).
Status check_exec(const ExecOptions& exec, const std::string& where);

}  // namespace braid::engine
