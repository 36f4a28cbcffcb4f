// The MVCC protocol (docs/internals/mvcc.md; CoroBase §2.1): snapshot visibility, installing a new
// version under first-updater-wins, pruning a chain below the horizon, and the commit and abort
// steps on the versions. The engine (DatabaseImpl) calls it with the record's OID entry in hand;
// the indexes, the catalog, the log and secondary keys stay in the engine. Serializable
// transactions add SSN's read tracking and certification (mvcc/ssn.h; implemented in ssn.cc).
//
// Contracts, asserted:
//   * a chain holds at most one uncommitted version, and it is the head;
//   * install() changes a chain only by a CAS of its head (or, for the owner's own head, a
//     store by the only writer allowed);
//   * publish_commit() and unlink_writes() are called once per transaction, on an active
//     context, and leave it committed or aborted.
#pragma once

#include <braid/options.h>
#include <braid/status.h>

#include <atomic>
#include <cstdint>
#include <string_view>

#include "mvcc/txn.h"
#include "mvcc/version.h"
#include "util/bits.h"
#include "util/stall.h"

namespace braid::mvcc {

// A head that is being unlinked by an aborting owner is replaced within a few instructions;
// past this many retries something else is wrong and the write answers Busy.
inline constexpr int kMaxWriteRetries = 1 << 16;

enum class Vis : std::uint8_t { kVisible, kInvisible, kRetry, kOwnerAborting };
enum class WriteKind : std::uint8_t { kInsert, kUpdate, kPut, kRemove };
// kRelookup: the record's entry was emptied by an aborting insert; look the key up again.
// kCold: the record is cold (evicted); read it back, then write again.
enum class Install : std::uint8_t { kDone, kRelookup, kCold };

class Protocol {
 public:
  // `version_limit`: Options::max_version_bytes, named in the out-of-memory message.
  Protocol(TxnTable* txns, std::uint64_t version_limit, std::uint32_t max_reads = 1u << 22,
           DebugFaults faults = {})
      : txns_(txns), version_limit_(version_limit), max_reads_(max_reads), faults_(faults) {}

  // Where waits on another transaction's state (a certification verdict, a precommit window)
  // report a stall; null: not watched.
  void set_stall_monitor(util::StallMonitor* m) { stalls_ = m; }

  // Whether a version with `stamp` is in ctx's snapshot. Hot: every chain step of every read.
  Vis visibility(const TxnContext* ctx, std::uint64_t stamp) const {
    if (!is_owner_stamp(stamp)) return stamp <= ctx->snapshot ? Vis::kVisible : Vis::kInvisible;
    if (stamp == ctx->tag) return Vis::kVisible;
    return owner_visibility(ctx, stamp);
  }

  // The commit timestamp of a committed version: its stamp, or, while its owner has committed
  // but not yet restamped its writes (publish_commit publishes the state first), the owner's
  // timestamp; 0 for one of ctx's own versions; `*known` false when it is not committed. What
  // persists a version (the checkpoint) must write this, never the raw stamp: an owner tag
  // written as a record's timestamp comes back from the cold store as a version whose owner
  // has long ended, and its readers wait on it forever. (SSN reads it too.)
  std::uint64_t commit_stamp_of(const TxnContext* ctx, const Version* v, bool* known) const;

  // visibility() for reads: the same, unless DebugFaults::dirty_reads shows them uncommitted
  // versions too.
  Vis read_visibility(const TxnContext* ctx, std::uint64_t stamp) const {
#if defined(BRAID_DEBUG_CHECKS)
    if (faults_.dirty_reads && is_owner_stamp(stamp)) [[unlikely]]
      return Vis::kVisible;
#endif
    return visibility(ctx, stamp);
  }

  // A new version of ctx's, not yet linked anywhere (null: version memory exhausted).
  Version* make_version(TxnContext* ctx, std::string_view value, bool tombstone);
  // A fresh record (its OID newly allocated): the version becomes the entry's only one.
  void install_fresh(std::atomic<std::uint64_t>& slot, Version* v) {
    BRAID_DASSERT(slot.load(std::memory_order_relaxed) == entry::kEmpty);
    slot.store(entry::from_version(v), std::memory_order_release);
  }
  // Records the write in ctx's write set (its redo record and its abort undo).
  void add_write(TxnContext* ctx, Table* table, std::atomic<std::uint64_t>* slot, std::uint64_t oid,
                 Version* v, std::string_view key, bool fresh);

  // Installs ctx's new version of an existing record (entry `slot`) under first-updater-wins.
  // kDone sets *status: OK (installed; *prev is the version it replaced), Conflict, Duplicate
  // (kInsert over a live record), NotFound (kUpdate/kRemove of a deleted one), IOError (version
  // memory), Busy (retried too often).
  Install install(TxnContext* ctx, Table* table, std::atomic<std::uint64_t>& slot,
                  std::uint64_t oid, std::string_view key, std::string_view value, WriteKind kind,
                  Status* status, const Version** prev);

  // Commit, step 1 of 2: takes the commit timestamp and publishes it on every version of the
  // write set (the log record is the engine's, between the two steps).
  std::uint64_t publish_commit(TxnContext* ctx);
  // Abort: marks ctx aborted (readers then skip its versions), then takes every version of its
  // write set out of its chain. The engine removes fresh keys from its indexes in between
  // (abort_begin, index removal, unlink_writes), so a writer that still finds such an OID sees
  // an empty entry and looks the key up again.
  void abort_begin(TxnContext* ctx);
  void unlink_writes(TxnContext* ctx);

  // ---- Serializable transactions (mvcc/ssn.h) ----
  // Records a read of version `v` through entry `slot` (v null: no version was visible, the
  // record was read absent). Busy when the read set is full (Options::max_txn_reads).
  Status ssn_read(TxnContext* ctx, std::atomic<std::uint64_t>* slot, const Version* v);
  // Records a leaf a scan read, or the leaf that answered a lookup with "absent" (phantoms).
  Status ssn_read_leaf(TxnContext* ctx, const index::LeafRead& r);
  // After ctx inserted a key (primary or secondary index): its own insert does not invalidate
  // its read of that leaf, and the leaf's readers precede it.
  void ssn_note_insert(TxnContext* ctx, const index::LeafChange& c);
  // Commit of a serializable transaction with writes: takes the commit timestamp (*cts) and
  // certifies. True: committed, versions stamped (the engine logs, as after publish_commit).
  // False: refused by the exclusion window; ctx is aborted (the engine unlinks its writes) and
  // the timestamp in *cts is spent (a durable database logs it as an empty record).
  bool ssn_commit(TxnContext* ctx, std::uint64_t* cts);
  // Commit of a serializable transaction without writes; no timestamp is taken. False: refused
  // (ctx is aborted).
  bool ssn_commit_read_only(TxnContext* ctx);

  // Cuts the versions below the newest one every snapshot sees (ctx owns `head`).
  void prune_below(TxnContext* ctx, Version* head);
  // The version an install over `head` would cut first (its free reads it), when `head`
  // itself is the version every snapshot sees; else null (a longer walk, or nothing to cut).
  // A racy hint for a prefetch, read before the install: the chain may change meanwhile.
  const Version* prune_target(const Version* head) const {
    if (!seen_by_all(head->stamp.load(std::memory_order_relaxed), txns_->horizon())) return nullptr;
    return head->next.load(std::memory_order_relaxed);
  }
  // A version with `stamp` is visible to every snapshot that exists or will: committed at or
  // below the horizon. Pruning keeps the newest such version and cuts what is below it.
  static bool seen_by_all(std::uint64_t stamp, std::uint64_t horizon) {
    return !is_owner_stamp(stamp) && stamp <= horizon;
  }

  // Debug tier, single-threaded callers with no transaction open (open, close): the chain from
  // `entry` is ordered, newest first, by strictly decreasing commit stamps, and holds no owner
  // stamp. Returns its length.
  static std::size_t check_chain(std::uint64_t entry);

  // The one definition of the out-of-memory answer.
  Status out_of_version_memory() const;

 private:
  Vis owner_visibility(const TxnContext* ctx, std::uint64_t stamp) const;
  // The version that would follow `head` for a write of `kind`; null with *status set when the
  // write is refused (Duplicate, NotFound) or memory is out.
  Version* successor(TxnContext* ctx, const Version* head, WriteKind kind, std::string_view value,
                     Status* status);

  // Replaces the owner tag on ctx's versions by its commit timestamp (its state says
  // committed already, so readers that still meet the tag resolve it).
  void stamp_writes(TxnContext* ctx, std::uint64_t cts);
  // SSN's steps (ssn.cc). `me`: the certifying transaction's SSN stamp.
  void ssn_wait_earlier(const TxnContext* ctx, std::uint64_t cts) const;
  bool ssn_check_reads(TxnContext* ctx, std::uint64_t me) const;
  bool ssn_check_leaves(TxnContext* ctx, std::uint64_t me) const;
  Status read_set_full() const;
  void ssn_publish_reads(const TxnContext* ctx, std::uint64_t me);
  // One turn of a spin wait on `other`'s state. The first turns are free (a verdict takes a
  // few instructions); past them the wait is watched, its progress the other's state and xid.
  void watch_other(util::StallWatch* watch, std::uint32_t spins, const TxnContext& other) const;

  TxnTable* txns_;
  std::uint64_t version_limit_;
  std::uint32_t max_reads_;
  DebugFaults faults_;  // only BRAID_DEBUG_CHECKS builds read it
  util::StallMonitor* stalls_ = nullptr;
};

}  // namespace braid::mvcc
