// Transactions' ends: begin and configure, commit (the redo record, the timestamp, SSN's
// certification for serializable ones), abort, the application threads' commits and their
// shared log (Durability::settle_external), and the logged clock ticks reclamation takes.
#include "engine/database_impl.h"

#include <string>
#include <thread>

#include "engine/checks.h"
#include "engine/cold_store.h"
#include "engine/durability.h"
#include "engine/redo.h"
#include "util/assert.h"

namespace braid::engine {

using mvcc::TxnContext;
namespace cstate = mvcc::cstate;

Result<Transaction> DatabaseImpl::begin(const TxnOptions& txn) {
  if (Status s = refuse_on_worker("Database::begin()"); !s.is_ok()) return s;
  if (Status s = check_txn(txn, "begin: "); !s.is_ok()) return s;
  TxnContext* ctx = txns_.begin();
  if (ctx == nullptr) {
    return Status::busy("all " + std::to_string(options_.external_transactions) +
                        " application-thread transactions are open "
                        "(Options::external_transactions)");
  }
  configure(ctx, txn);
  return Transaction(this, ctx, open_);
}

void DatabaseImpl::configure(TxnContext* ctx, const TxnOptions& txn) const {
  const Isolation i = txn.override_isolation ? txn.isolation : options_.isolation;
  ctx->serializable = i == Isolation::kSerializable;
  ctx->read_only = txn.read_only;
}

void DatabaseImpl::share_snapshot(TxnContext* ctx, std::uint64_t snapshot) const {
  BRAID_ASSERT(snapshot <= ctx->snapshot);
  BRAID_ASSERT(ctx->reads.empty());
  BRAID_ASSERT(ctx->writes.empty());
  // The pin stays a clock value at or below the snapshot (mvcc/txn.h). Lowering it cannot
  // expose a version already reclaimed: the caller's open transaction has held the horizon at
  // or below `snapshot` since before this transaction began.
  if (ctx->pin.load(std::memory_order_relaxed) > snapshot) {
    ctx->pin.store(snapshot, std::memory_order_seq_cst);
  }
  ctx->snapshot = snapshot;
}

// ---- Commit and abort ---------------------------------------------------------------------------

Status DatabaseImpl::serialization_failure() {
  return Status(Code::kConflict,
                "serialization failure: the transaction's dependencies could close a cycle "
                "(Isolation::kSerializable); retry it");
}

Status DatabaseImpl::commit(TxnContext* ctx, std::uint32_t log, std::uint64_t* cts_out) {
  std::uint64_t cts = 0;
  if (ctx->failed_write) [[unlikely]] {
    abort(ctx, log);
    return Status::io_error(
        "transaction aborted: one of its writes failed after installing its record (a "
        "secondary index entry could not be added), so committing it would lose that entry");
  }
  if (!ctx->writes.empty()) {
    storage::LogWriter* w = durability_ != nullptr ? durability_->log(log) : nullptr;
    std::uint32_t bytes = 0;
    if (w != nullptr) {
      if (durability_->halted()) {
        abort(ctx, log);
        return durability_->halt_status();
      }
      bytes = record_bytes(ctx);
      if (bytes > w->max_record_bytes()) {
        abort(ctx, log);
        return Status::busy("transaction's redo record is " + std::to_string(bytes) +
                            " bytes; the log buffer holds " +
                            std::to_string(w->max_record_bytes()) +
                            " (Options::durability.log_buffer_bytes)");
      }
      // Room in the log before the timestamp: the precommit window stays a few instructions.
      if (Status s = w->prepare(bytes); !s.is_ok()) {
        durability_->halt(s);
        abort(ctx, log);
        return durability_->halt_status();
      }
    }
    if (ctx->serializable) {
      if (!protocol_.ssn_commit(ctx, &cts)) {
        // The timestamp is spent: it is logged all the same.
        if (w != nullptr) append_empty_record(*w, cts);
        abort(ctx, log);
        return serialization_failure();
      }
    } else {
      cts = protocol_.publish_commit(ctx);
    }
    // Our versions stay allocated until finish (this context pins the reclamation epoch).
    if (w != nullptr) encode_record(ctx, cts, bytes, *w, w->append(bytes, cts));
    if (ctx->removes) queue_tombs(ctx, cts);
    if (ctx->stale_sealed != ctx->stale.size()) seal_stale(ctx, cts);
  } else if (ctx->serializable && !protocol_.ssn_commit_read_only(ctx)) {
    abort(ctx, log);
    return serialization_failure();
  }
  mvcc::add_own(ctx->commits, 1);
  finish_txn(ctx, log);
  if (cts_out != nullptr) *cts_out = cts;
  return Status::ok();
}

void DatabaseImpl::finish_txn(TxnContext* ctx, std::uint32_t log) {
  // While the context is still ours: what it reclaims goes to its limbo, which finish seals.
  if (ctx->reclaim_work.load(std::memory_order_relaxed) != 0) {
    reclaim_records(ctx);
  } else if (++ctx->ends_since_help >= kHelpEvery) {
    ctx->ends_since_help = 0;
    help_reclaim(log);
  }
  end_context(ctx, log);
}

void DatabaseImpl::end_context(TxnContext* ctx, std::uint32_t log) {
  if (ctx->records_reached != 0) {
    mvcc::add_own(ctx->record_accesses, ctx->records_reached);
    ctx->records_reached = 0;
  }
  struct Arg {
    DatabaseImpl* db;
    std::uint32_t log;
  } arg{this, log};
  const mvcc::TxnTable::LoggedTick tick{[](void* a) {
                                          auto* p = static_cast<Arg*>(a);
                                          return p->db->logged_tick(p->log) != 0;
                                        },
                                        &arg};
  [[maybe_unused]] const bool wants_tick = txns_.finish(ctx, &tick);
  BRAID_DASSERT(!wants_tick);
}

std::uint64_t DatabaseImpl::logged_tick(std::uint32_t log) {
  // Reclamation needs the clock to move; in a durable database every timestamp is logged (an
  // empty transaction record), or recovery would read the gap as the end of the log.
  storage::LogWriter* w = durability_->log(log);
  if (durability_->halted() || !w->prepare(storage::kTxnHeaderBytes).is_ok()) return 0;
  const std::uint64_t cts = txns_.clock().fetch_add(1, std::memory_order_seq_cst) + 1;
  append_empty_record(*w, cts);
  // The caller holds the application threads' log's mutex; the tick goes to disk before it
  // is released (a bulk load's timestamp must be durable before its parts refer to it).
  if (log == external_log() && !durability_->settle_external(true).is_ok()) return 0;
  return cts;
}

void DatabaseImpl::abort(TxnContext* ctx, std::uint32_t log) {
  protocol_.abort_begin(ctx);
  // Secondary entries before the primary keys: once a fresh key leaves the primary index, an
  // insert of it may take a new OID, and must not find our entry (which names the old one).
  remove_secondary_adds(ctx);
  drop_staged_stale(ctx);
  // Fresh keys leave the index before their entries are emptied: a writer that still finds
  // the OID then sees an empty entry and looks the key up again (Protocol::install).
  for (auto it = ctx->writes.rbegin(); it != ctx->writes.rend(); ++it) {
    if (!it->fresh) continue;
    const std::string_view key(ctx->staged_keys.data() + it->key_off, it->key_len);
    // The leaf is in memory: one that holds a record an open transaction writes never leaves
    // (ColdStore::sweep_leaves), so nothing here can fail on a load.
    const index::Outcome removed = it->table->index().remove(key, leaf_value::of_oid(it->oid));
    BRAID_ASSERT(static_cast<bool>(removed));
  }
  protocol_.unlink_writes(ctx);
  // The fresh records' OIDs are named by nothing now (their secondary entries went first);
  // they are given back once the transactions that may have found them have ended.
  for (const mvcc::WriteEntry& w : ctx->writes) {
    if (!w.fresh) continue;
    ctx->freed_oids.push_back({w.table, w.oid, mvcc::kUnsealed});
    mvcc::add_own(ctx->oids_not_records, 1);
    ctx->reclaim_work.store(1, std::memory_order_relaxed);  // exact again at its finish
  }
  mvcc::add_own(ctx->aborts, 1);
  finish_txn(ctx, log);
}

Status DatabaseImpl::commit_external(TxnContext* ctx, std::uint64_t* cts) {
  if (durability_ == nullptr) return commit(ctx, external_log(), cts);
  // Application threads evict too (workers do between rounds), so a workload that runs only
  // through Transaction stays within its budget; before the log's mutex, which others wait on.
  if (cold_->budget() != 0 && cold_->over_budget()) (void)cold_->sweep(ctx, 64);
  const bool durable = durability_->durable_commits() && durability_->log(external_log());
  // Read-only: acknowledged once its snapshot is durable (what it read survives a crash).
  const std::uint64_t snapshot = ctx->snapshot;
  const bool read_only = ctx->writes.empty();
  Status s;
  {
    // Application threads share one log, and the committing thread drives its I/O itself: no
    // thread of the engine's does so under kDurable. Whatever the outcome — a refused
    // serializable commit spent a timestamp too, logged as an empty record — the log is
    // settled before the mutex is released, or its safe bound, and with it the durable clock,
    // would stay below that timestamp until some later application commit.
    std::lock_guard<std::mutex> g(durability_->external_mutex());
    s = commit(ctx, external_log(), cts);
    if (Status e = durability_->settle_external(durable); !e.is_ok()) return e;
  }
  // Checkpoints run on worker 0, which sleeps while no worker has work: a workload that
  // commits only here would never checkpoint, and its log, the directory with it, would grow
  // without end. Woken, worker 0 stays awake while the checkpoint is due or running.
  if (!read_only && durability_->checkpoint_due()) wake_worker0(true);
  if (!durable) {
    // A block may still be in flight and nobody waits for it: worker 0 reaps it (and submits
    // what later commits append), so the durable clock moves without another application
    // commit.
    wake_worker0(true);
    return s;
  }
  if (!s.is_ok()) return s;
  // Every earlier commit must be on disk too (other logs; their workers flush them).
  const std::uint64_t target = read_only ? snapshot : *cts;
  return durability_->wait_durable(target, read_only ? "read-only commit" : "durable commit");
}

void DatabaseImpl::abort_external(TxnContext* ctx) {
  if (durability_ == nullptr) return abort(ctx, external_log());
  std::lock_guard<std::mutex> g(durability_->external_mutex());
  // An abort appends nothing but a reclamation tick, which logged_tick settles itself.
  abort(ctx, external_log());
}

Status DatabaseImpl::checkpoint() {
  if (Status s = refuse_on_worker("Database::checkpoint()"); !s.is_ok()) return s;
  if (durability_ == nullptr) {
    return Status::invalid_argument("checkpoint: the database has no directory (in-memory)");
  }
  if (options_.read_only) {
    return Status::invalid_argument("checkpoint: the database was opened read-only");
  }
  const std::uint64_t ticket = durability_->request_checkpoint();
  wake_worker0(false);
  return durability_->wait_checkpoint(ticket);
}

DurabilityStats DatabaseImpl::durability_stats() const {
  DurabilityStats s;
  if (durability_ != nullptr) durability_->add_stats(&s);
  return s;
}

}  // namespace braid::engine
