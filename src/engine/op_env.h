// Where an operation runs (engine/access.h's operations take it first).
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>

namespace braid::detail {
struct TxState;
}  // namespace braid::detail
namespace braid::mvcc {
struct TxnContext;
}  // namespace braid::mvcc

namespace braid::engine {

class DatabaseImpl;

// Bounded fan-out of multi_get: at most this many keys in flight inside one transaction.
inline constexpr std::size_t kMultiGetWidth = 16;

// Where an operation runs: the engine, the transaction, and where a suspending awaiter leaves
// its handle for the scheduler (the transaction slot's resume point, or a multi_get child's).
struct OpEnv {
  DatabaseImpl* db;
  mvcc::TxnContext* ctx;
  detail::TxState* tx;            // null for the thread-per-transaction API
  std::coroutine_handle<>* sink;  // coroutine modes only
  std::uint64_t* suspends;        // counter, coroutine modes only
  std::uint32_t* site;            // the slot's resume site, coroutine modes only (runtime::Miss)
};

}  // namespace braid::engine
