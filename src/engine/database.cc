#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "engine/database_impl.h"
#include "engine/worker.h"
#include "util/assert.h"
#include "util/bits.h"

namespace braid::engine {

using mvcc::TxnContext;
using mvcc::Version;
namespace entry = mvcc::entry;
namespace cstate = mvcc::cstate;

namespace {
// A head that is being unlinked by an aborting owner is replaced within a few instructions;
// past this many retries something else is wrong and the operation answers Busy.
constexpr int kMaxWriteRetries = 1 << 16;
}  // namespace

Status check_key(std::string_view key) {
  if (key.empty()) return Status::invalid_argument("key is empty");
  if (key.size() > kMaxKeyBytes) {
    return Status::invalid_argument("key is " + std::to_string(key.size()) +
                                    " bytes; the limit is " + std::to_string(kMaxKeyBytes));
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

// ---- Opening ------------------------------------------------------------------------------------

DatabaseImpl::DatabaseImpl(const Options& options)
    : options_(options),
      txns_(options.workers * options.slots_per_worker, options.external_transactions,
            options.max_txn_writes) {
  tables_.reserve(options.max_tables);
}

DatabaseImpl::~DatabaseImpl() {
  stop_workers();
  // Tables first: their chains hold versions; then the transaction table frees limbo.
  for (auto& t : tables_) {
    for (std::uint64_t oid = 0; oid < t->oids().allocated(); ++oid) {
      std::uint64_t e = t->oids().entry(oid).load(std::memory_order_relaxed);
      if (!entry::is_hot(e)) continue;
      for (Version* v = entry::hot(e); v != nullptr;) {
        Version* next = v->next.load(std::memory_order_relaxed);
        txns_.free_version(&txns_.at(0), v);
        v = next;
      }
    }
  }
  tables_.clear();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::unique_ptr<DatabaseImpl>> DatabaseImpl::open(const Options& o) {
  if (o.workers == 0 || o.workers > 1024) {
    return Status::invalid_argument("Options::workers must be 1..1024");
  }
  if (o.slots_per_worker == 0 || o.slots_per_worker > 4096) {
    return Status::invalid_argument("Options::slots_per_worker must be 1..4096");
  }
  if (o.external_transactions > 4096) {
    return Status::invalid_argument("Options::external_transactions must be 0..4096");
  }
  if (std::uint64_t{o.workers} * o.slots_per_worker + o.external_transactions >= (1u << 16)) {
    return Status::invalid_argument(
        "Options::workers * slots_per_worker + external_transactions must be below 65536");
  }
  if (o.exec.batch == 0) return Status::invalid_argument("Options::exec.batch must be at least 1");
  if (o.submit_queue_depth < 2 || o.submit_queue_depth > (1u << 20)) {
    return Status::invalid_argument("Options::submit_queue_depth must be 2..2^20");
  }
  if (o.max_version_bytes < (std::uint64_t{4} << 20)) {
    return Status::invalid_argument("Options::max_version_bytes must be at least 4 MiB");
  }
  if (o.max_tables == 0 || o.max_tables > 65536) {
    return Status::invalid_argument("Options::max_tables must be 1..65536");
  }
  if (o.max_records_per_table == 0 || o.max_records_per_table > (std::uint64_t{1} << 40)) {
    return Status::invalid_argument("Options::max_records_per_table must be 1..2^40");
  }
  if (o.max_txn_writes == 0) {
    return Status::invalid_argument("Options::max_txn_writes must be at least 1");
  }
  std::unique_ptr<DatabaseImpl> db(new DatabaseImpl(o));
  if (Status s = db->txns_.init_heap(o.max_version_bytes, o.huge_pages); !s.is_ok()) return s;
  if (!o.directory.empty()) {
    Status s = db->open_directory();
    if (!s.is_ok()) return s;
  }
  if (Status s = db->start_workers(); !s.is_ok()) return s;
  return db;
}

Status DatabaseImpl::open_directory() {
  const std::string& dir = options_.directory;
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return Status::io_error("cannot access database directory '" + dir +
                              "': " + std::strerror(errno));
    }
    if (!options_.create_if_missing) {
      return Status::io_error("database directory '" + dir +
                              "' does not exist (Options::create_if_missing is false)");
    }
    if (::mkdir(dir.c_str(), 0755) != 0) {
      return Status::io_error("cannot create database directory '" + dir +
                              "': " + std::strerror(errno));
    }
  } else if (!S_ISDIR(st.st_mode)) {
    return Status::io_error("'" + dir + "' exists and is not a directory");
  }
  const std::string lock_path = dir + "/LOCK";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    return Status::io_error("cannot open '" + lock_path + "': " + std::strerror(errno));
  }
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK) {
      return Status::busy("database directory '" + dir + "' is in use by another process");
    }
    return Status::io_error("cannot lock '" + lock_path + "': " + std::strerror(err));
  }
  return Status::ok();
}

// ---- Catalog ------------------------------------------------------------------------------------

Result<Table*> DatabaseImpl::create_table(std::string_view name) {
  if (name.empty() || name.size() > kMaxTableNameBytes) {
    return Status::invalid_argument("table name must be 1.." + std::to_string(kMaxTableNameBytes) +
                                    " bytes");
  }
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  if (by_name_.count(std::string(name)) != 0) {
    return Status::duplicate("table '" + std::string(name) + "' exists");
  }
  if (tables_.size() >= options_.max_tables) {
    return Status::busy(
        "table limit reached (Options::max_tables = " + std::to_string(options_.max_tables) + ")");
  }
  auto t = std::make_unique<Table>(static_cast<std::uint32_t>(tables_.size()), std::string(name));
  Status s = t->oids().init(options_.max_records_per_table, options_.huge_pages);
  if (!s.is_ok()) return s;
  Table* raw = t.get();
  tables_.push_back(std::move(t));
  by_name_.emplace(std::string(name), raw);
  return raw;
}

Result<Table*> DatabaseImpl::open_table(std::string_view name) {
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return Status::not_found("no table named '" + std::string(name) + "'");
  return it->second;
}

Result<Transaction> DatabaseImpl::begin() {
  TxnContext* ctx = txns_.begin();
  if (ctx == nullptr) {
    return Status::busy("all " + std::to_string(txns_.size()) +
                        " transaction slots are in use (Options::workers * slots_per_worker)");
  }
  return Transaction(this, ctx);
}

DatabaseStats DatabaseImpl::stats() const {
  DatabaseStats s;
  std::int64_t live = 0;
  std::int64_t bytes = 0;
  for (std::uint32_t i = 0; i < txns_.size(); ++i) {
    const TxnContext& c = txns_.at(i);
    live += c.versions_live.load(std::memory_order_relaxed);
    bytes += c.version_bytes_live.load(std::memory_order_relaxed);
    s.commits += c.commits.load(std::memory_order_relaxed);
    s.aborts += c.aborts.load(std::memory_order_relaxed);
    s.pruned_versions += c.pruned.load(std::memory_order_relaxed);
    if (c.in_use.load(std::memory_order_relaxed)) ++s.open_transactions;
    s.retired_versions += c.retired.load(std::memory_order_relaxed);
  }
  s.live_versions = static_cast<std::uint64_t>(live);
  s.live_version_bytes = static_cast<std::uint64_t>(bytes);
  std::lock_guard<std::mutex> guard(catalog_mutex_);
  for (const auto& t : tables_) s.index_nodes += t->index().node_count();
  s.commit_clock = txns_.clock_now();
  return s;
}

// ---- Visibility ---------------------------------------------------------------------------------

DatabaseImpl::Vis DatabaseImpl::visibility(const TxnContext* ctx, std::uint64_t stamp) {
  if (!mvcc::is_owner_stamp(stamp)) return stamp <= ctx->snapshot ? Vis::kVisible : Vis::kInvisible;
  if (stamp == ctx->tag) return Vis::kVisible;
  const std::uint64_t xid = mvcc::stamp_xid(stamp);
  const TxnContext& owner = txns_.at(static_cast<std::uint32_t>(xid & 0xffff));
  for (std::uint32_t spins = 0;; ++spins) {
    // State first, then xid: if the xid still matches, the state belongs to that owner.
    const std::uint64_t s = owner.state.load(std::memory_order_acquire);
    if (owner.xid.load(std::memory_order_acquire) != xid) return Vis::kRetry;
    if (cstate::is_committed(s)) {
      return cstate::cts_of(s) <= ctx->snapshot ? Vis::kVisible : Vis::kInvisible;
    }
    if (s == cstate::kActive) return Vis::kInvisible;
    if (s == cstate::kAborted) return Vis::kOwnerAborting;
    // Precommit: the owner is between taking its timestamp and publishing it; whether our
    // snapshot includes it depends on that number, so wait the few instructions it takes.
    util::backoff(spins);
  }
}

// ---- Writes -------------------------------------------------------------------------------------

Version* DatabaseImpl::make_version(TxnContext* ctx, std::string_view value, bool tombstone) {
  Version* v = txns_.alloc_version(ctx, value.size());
  if (v == nullptr) [[unlikely]]
    return nullptr;
  if (!value.empty()) std::memcpy(v->payload(), value.data(), value.size());
  if (tombstone) v->flags = Version::kTombstone;
  return v;
}

void DatabaseImpl::add_write(TxnContext* ctx, Table& table, std::uint64_t oid, Version* v,
                             std::string_view key, bool fresh) {
  v->write_index = static_cast<std::uint32_t>(ctx->writes.size());
  ctx->writes.push_back({&table, oid, v, static_cast<std::uint32_t>(ctx->staged_keys.size()),
                         static_cast<std::uint16_t>(key.size()), fresh});
  ctx->staged_keys.append(key);
}

namespace {
Status out_of_version_memory(std::uint64_t limit) {
  return Status::io_error(
      "version memory exhausted (Options::max_version_bytes = " + std::to_string(limit) + ")");
}
}  // namespace

Status DatabaseImpl::write(TxnContext* ctx, Table& table, std::string_view key,
                           std::string_view value, WriteKind kind, const LookupHint* hint) {
  if (ctx->writes.size() >= txns_.max_writes()) {
    return Status::busy("transaction write set is full (Options::max_txn_writes = " +
                        std::to_string(txns_.max_writes()) + ")");
  }
  for (int attempt = 0; attempt < kMaxWriteRetries; ++attempt) {
    std::uint64_t oid = 0;
    bool found;
    if (attempt == 0 && hint != nullptr) {
      found = hint->found;
      oid = hint->oid;
    } else {
      found = table.index().lookup(key, &oid);
    }
    if (!found) {
      if (kind == WriteKind::kUpdate || kind == WriteKind::kRemove) return Code::kNotFound;
      // A new record: publish the version in a fresh OID, then the key in the index.
      Result<std::uint64_t> fresh = table.oids().allocate();
      if (!fresh.is_ok()) return fresh.status();
      Version* v = make_version(ctx, value, false);
      if (v == nullptr) return out_of_version_memory(options_.max_version_bytes);
      auto& slot = table.oids().entry(*fresh);
      slot.store(entry::from_version(v), std::memory_order_release);
      std::uint64_t existing;
      if (table.index().insert_if_absent(key, *fresh, &existing)) {
        add_write(ctx, table, *fresh, v, key, true);
        return Status::ok();
      }
      // Lost a race with a concurrent insert of the same key: the OID was never reachable, so
      // its version can go at once (the OID itself stays unused).
      slot.store(entry::kEmpty, std::memory_order_relaxed);
      txns_.free_version(ctx, v);
      oid = existing;
    }
    Status status;
    if (write_existing(ctx, table, oid, key, value, kind, &status) == Outcome::kDone) {
      return status;
    }
  }
  return Status::busy("write retried too often");
}

DatabaseImpl::Outcome DatabaseImpl::write_existing(TxnContext* ctx, Table& table, std::uint64_t oid,
                                                   std::string_view key, std::string_view value,
                                                   WriteKind kind, Status* status) {
  auto& slot = table.oids().entry(oid);
  const bool tombstone = kind == WriteKind::kRemove;
  for (int attempt = 0; attempt < kMaxWriteRetries; ++attempt) {
    std::uint64_t e = slot.load(std::memory_order_acquire);
    // Empty: an aborted insert is taking this key's index entry away; look the key up again.
    if (entry::is_empty(e)) return Outcome::kRelookup;
    BRAID_ASSERT(entry::is_hot(e));
    Version* head = entry::hot(e);
    const std::uint64_t stamp = head->stamp.load(std::memory_order_acquire);

    if (stamp == ctx->tag) {
      // Our own uncommitted head: replace it, keeping one version per record per transaction.
      if (kind == WriteKind::kInsert && !head->tombstone()) {
        *status = Status::duplicate();
        return Outcome::kDone;
      }
      if ((kind == WriteKind::kUpdate || kind == WriteKind::kRemove) && head->tombstone()) {
        *status = Status::not_found();
        return Outcome::kDone;
      }
      Version* v = make_version(ctx, value, tombstone);
      if (v == nullptr) {
        *status = out_of_version_memory(options_.max_version_bytes);
        return Outcome::kDone;
      }
      v->next.store(head->next.load(std::memory_order_relaxed), std::memory_order_relaxed);
      v->write_index = head->write_index;
      slot.store(entry::from_version(v), std::memory_order_release);
      head->stamp.store(mvcc::kInvisible, std::memory_order_release);
      ctx->writes[v->write_index].version = v;
      // Views this transaction got from `head` stay valid: it is freed only after we end.
      txns_.retire(ctx, head);
      *status = Status::ok();
      return Outcome::kDone;
    }

    const Vis vis = visibility(ctx, stamp);
    if (vis == Vis::kRetry) continue;
    if (vis == Vis::kOwnerAborting || stamp == mvcc::kInvisible) {
      // The head is being unlinked by its aborting owner. Spinning alone is not enough: a
      // descheduled owner kept a spin-only waiter here past its retry bound (Busy under
      // `braid-bench ycsb --records 20 --threads 8 --rmw 100`), so back off to yielding.
      util::backoff(static_cast<std::uint32_t>(attempt));
      continue;
    }
    if (vis == Vis::kInvisible) {
      // Uncommitted by another transaction, or committed after our snapshot: first updater wins.
      *status = Status::conflict();
      return Outcome::kDone;
    }
    if (kind == WriteKind::kInsert && !head->tombstone()) {
      *status = Status::duplicate();
      return Outcome::kDone;
    }
    if ((kind == WriteKind::kUpdate || kind == WriteKind::kRemove) && head->tombstone()) {
      *status = Status::not_found();
      return Outcome::kDone;
    }
    Version* v = make_version(ctx, value, tombstone);
    if (v == nullptr) {
      *status = out_of_version_memory(options_.max_version_bytes);
      return Outcome::kDone;
    }
    v->next.store(head, std::memory_order_relaxed);
    if (!slot.compare_exchange_strong(e, entry::from_version(v), std::memory_order_acq_rel)) {
      txns_.free_version(ctx, v);  // never published
      continue;
    }
    add_write(ctx, table, oid, v, key, false);
    prune_below(ctx, head);
    *status = Status::ok();
    return Outcome::kDone;
  }
  *status = Status::busy("write retried too often");
  return Outcome::kDone;
}

void DatabaseImpl::prune_below(TxnContext* ctx, Version* head) {
  // We own the chain's head (our uncommitted version), so no one else prunes it now. The newest
  // version stamped at or below the horizon is visible to every snapshot that exists or will;
  // everything older is unreachable for readers and goes to limbo.
  const std::uint64_t horizon = txns_.horizon();
  Version* keep = head;
  while (keep != nullptr) {
    const std::uint64_t s = keep->stamp.load(std::memory_order_acquire);
    if (!mvcc::is_owner_stamp(s) && s <= horizon) break;
    keep = keep->next.load(std::memory_order_acquire);
  }
  if (keep == nullptr) return;
  Version* rest = keep->next.exchange(nullptr, std::memory_order_acq_rel);
  std::uint64_t n = 0;
  while (rest != nullptr) {
    Version* next = rest->next.load(std::memory_order_relaxed);
    txns_.retire(ctx, rest);
    rest = next;
    ++n;
  }
  if (n != 0) ctx->pruned.fetch_add(n, std::memory_order_relaxed);
}

// ---- Commit and abort ---------------------------------------------------------------------------

Status DatabaseImpl::commit(TxnContext* ctx) {
  if (!ctx->writes.empty()) {
    // Precommit before taking the timestamp: a reader whose snapshot is taken after our
    // fetch_add sees Precommit (or the final state) and waits for the number instead of
    // skipping versions it must see.
    ctx->state.store(cstate::kPrecommit, std::memory_order_seq_cst);
    const std::uint64_t cts = txns_.clock().fetch_add(1, std::memory_order_seq_cst) + 1;
    ctx->state.store(cstate::committed(cts), std::memory_order_release);
    for (const mvcc::WriteEntry& w : ctx->writes) {
      w.version->stamp.store(cts, std::memory_order_release);
    }
  }
  ctx->commits.fetch_add(1, std::memory_order_relaxed);
  txns_.finish(ctx);
  return Status::ok();
}

void DatabaseImpl::abort(TxnContext* ctx) {
  ctx->state.store(cstate::kAborted, std::memory_order_release);
  for (auto it = ctx->writes.rbegin(); it != ctx->writes.rend(); ++it) {
    Version* v = it->version;
    if (it->fresh) {
      // Take the key out of the index before emptying the entry: a writer that still finds the
      // OID then sees an empty entry and looks the key up again (see write_existing).
      const std::string_view key(ctx->staged_keys.data() + it->key_off, it->key_len);
      const bool removed = it->table->index().remove(key, it->oid);
      BRAID_ASSERT(removed);
    }
    Version* older = v->next.load(std::memory_order_acquire);
    it->table->oids().entry(it->oid).store(
        older != nullptr ? entry::from_version(older) : entry::kEmpty, std::memory_order_release);
    v->stamp.store(mvcc::kInvisible, std::memory_order_release);
    txns_.retire(ctx, v);
  }
  ctx->aborts.fetch_add(1, std::memory_order_relaxed);
  txns_.finish(ctx);
}

}  // namespace braid::engine
