// Serializable isolation: the Serial Safety Net (SSN; Wang, Johnson, Fekete, Pandis, "Efficiently
// making (almost) any concurrency control mechanism serializable", VLDB J. 2017; CoroBase §4.5)
// over the engine's snapshot isolation.
//
// SSN lets snapshot isolation run as it does and certifies each serializable transaction T at
// commit with two numbers over the dependency graph's direct edges:
//   η(T) (pstamp), the newest predecessor: the largest commit stamp among the writers of the
//        versions T read (wr) or overwrote (ww), and the readers of the versions T overwrote
//        that committed before T (rw into T);
//   π(T) (sstamp), the oldest successor: min(c(T), π(U)) over the transactions U that
//        overwrote a version T read and committed before T (rw out of T).
// T commits only when π(T) > η(T) (the exclusion window). A cycle in the committed history
// would need its last committer to have a successor no newer than a predecessor, so no cycle
// commits. Aborts answer Conflict.
//
// Stamps. Commit timestamps are dense and logged, so a read-only transaction does not take one:
// it is serialized just after the newest commit k it saw when it committed. SSN's stamps are
// therefore in doubled units — 2c for a writer that committed at c, 2k + 1 for a reader — which
// orders every reader strictly between two commits with no timestamp spent.
//
// Where the stamps live:
//   * Version::pstamp: the largest stamp of a committed serializable reader of the version.
//   * π(U) of a committed serializable writer U: in the PiRing, by U's commit timestamp (so a
//     reader that finds U's version above the one it read learns π(U) without a per-version
//     field; the ring holds the last 2^20 commits, and a transaction that needs π of a commit
//     older than that aborts, conservatively).
//   * η, π and the read set: in the transaction's context.
//
// Concurrent certification. Two transactions certify at once; each must see the other's effect
// when the other comes first in stamp order. A transaction registers (TxnTable::ssn_register)
// before it takes its stamp and stays registered until its verdict is published. So:
//   * T, overwriting v, waits for every registered transaction with a smaller stamp to reach
//     its verdict before it reads v.pstamp (readers publish their pstamps before their verdict
//     becomes visible);
//   * T, having read v, looks at the version above v: an overwriter still certifying with a
//     smaller stamp is waited for, then its π read from the ring; one with a larger stamp (or
//     still active) will wait for T instead.
// Waits go only from a larger stamp to a smaller one, so they cannot form a cycle. Certification
// never suspends, so a worker never waits for its own slots; it waits (spinning, then
// yielding) only for other threads' transactions in the few instructions of their verdict.
//
// Eviction. The cold store may evict a version and read it back as a copy with the same commit
// stamp, so a read is identified by (entry, stamp), not by address. The evictor raises the
// cold floor to the evicted version's pstamp after it took the version out; a reader that
// published on a version that is no longer reachable raises the floor itself. A writer over a
// version that was read back (Version::kReloaded) takes the floor into its η: conservative,
// and only for records that went cold.
//
// Phantoms. A scan records each leaf it read with the leaf's OLC version, and a get that found
// nothing (no key, or no visible version) records its leaf. At commit the transaction first
// raises each leaf's pstamp (index::Node::pstamp; a split or a merge carries it to the node
// that takes the keys under the lock, and a node the tree freed keeps it when reused), then
// checks the versions: a leaf changed since it was read refuses the commit (a merge changes
// both nodes' versions; a node that left the tree is obsolete). An
// insert made after that check certifies after us and takes the leaf's pstamp into its η (it
// lists the leaves it inserted into). The transaction's own inserts move its recorded version
// along. Conservative: any insert into a leaf a scan read refuses the scanner.
#pragma once

#include <braid/status.h>

#include <atomic>
#include <cstdint>

#include "util/vmem.h"

namespace braid::mvcc::ssn {

inline constexpr std::uint64_t kInfinity = ~std::uint64_t{0};

// SSN stamps of a writer that committed at `cts` and of a reader that saw commits up to `clock`.
inline std::uint64_t of_writer(std::uint64_t cts) { return cts << 1; }
inline std::uint64_t of_reader(std::uint64_t clock) { return (clock << 1) | 1; }

// π of recent serializable writers, by commit timestamp.
class PiRing {
 public:
  static constexpr std::uint64_t kEntries = std::uint64_t{1} << 20;

  Status init() {
    if (Status s = arena_.reserve(kEntries * sizeof(Entry), false); !s.is_ok()) return s;
    // Committed but untouched: pages become resident only as serializable writers use them.
    if (Status s = arena_.ensure_committed(kEntries * sizeof(Entry)); !s.is_ok()) return s;
    entries_ = reinterpret_cast<Entry*>(arena_.base());
    return Status::ok();
  }

  // Before the writer's committed state is published (release on that state orders these).
  void put(std::uint64_t cts, std::uint64_t pi) {
    Entry& e = entries_[cts & (kEntries - 1)];
    // Marked in writing first: a reader that meets the mark treats the entry as reused.
    e.cts.store(kInfinity, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    e.pi.store(pi, std::memory_order_relaxed);
    e.cts.store(cts, std::memory_order_release);
  }

  // π of the writer that committed at `cts`, read after its committed state was seen. A
  // writer that left no entry was not serializable: it has no successors SSN knows of, so π
  // is its own stamp. False when the entry was already reused by a newer commit.
  bool get(std::uint64_t cts, std::uint64_t* pi) const {
    const Entry& e = entries_[cts & (kEntries - 1)];
    const std::uint64_t tag = e.cts.load(std::memory_order_acquire);
    if (tag > cts) return false;
    if (tag != cts) {
      *pi = of_writer(cts);
      return true;
    }
    *pi = e.pi.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    return e.cts.load(std::memory_order_relaxed) == cts;
  }

 private:
  struct Entry {
    std::atomic<std::uint64_t> cts;
    std::atomic<std::uint64_t> pi;
  };
  util::VirtualArena arena_;
  Entry* entries_ = nullptr;
};

}  // namespace braid::mvcc::ssn
