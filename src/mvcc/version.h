// Versions and the tagged 64-bit OID-array entry (docs/architecture.md, the record path).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/cold_address.h"
#include "util/assert.h"

namespace braid::mvcc {

// ---- Stamps -------------------------------------------------------------------------------------
// A version's stamp is either a commit timestamp, or (bit 63 set) the xid of the transaction
// that owns the uncommitted version. An aborted or superseded version is stamped kInvisible: a
// "commit timestamp" no snapshot ever reaches, so readers skip it without a special case.
inline constexpr std::uint64_t kOwnerBit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t kInvisible = kOwnerBit - 1;

inline bool is_owner_stamp(std::uint64_t s) { return (s & kOwnerBit) != 0; }
inline std::uint64_t owner_stamp(std::uint64_t xid) { return kOwnerBit | xid; }
inline std::uint64_t stamp_xid(std::uint64_t s) { return s & ~kOwnerBit; }

// ---- Versions -----------------------------------------------------------------------------------
// Header + inline payload, one allocation. Newest first: `next` points to the older version.
// The payload is immutable once the version is published; `stamp` changes once at commit (or
// abort) and `next` only when pruning cuts the chain below it.
//
// `write_index` and `home` share a word: the owner's write-set slot while the version is
// uncommitted, then (set once, at commit, by the committer) the address of the version's
// durable record in the cold entry's form, or 0 when it has none (no log, or a record too big
// for an address). Eviction reads `home` only of a version whose commit is durable: the log's
// durability bound is published after the committer set it (LogWriter::safe, seq_cst), so
// the evictor that read that bound reads the address.
struct Version {
  static constexpr std::uint8_t kTombstone = 1;
  static constexpr std::uint8_t kReloaded = 2;  // read back from the cold store (mvcc/ssn.h)

  std::atomic<std::uint64_t> stamp;
  std::atomic<Version*> next;
  union {
    std::uint32_t write_index;
    std::uint64_t home;
  };
  std::uint32_t size;
  std::uint8_t flags;
  // CLOCK's reference bit, inverted so that a read writes only when the bit says it must (cold
  // store): set means "not read since the last eviction pass". Under a budget a version starts
  // set (TxnTable::set_cooling); a reader that finds it set clears it; a sweep evicts a head
  // that is still set and sets it on one that is clear. A record read between two passes stays;
  // one nobody read since it was made goes on the first.
  mutable std::atomic<std::uint8_t> cooling;
  std::uint8_t pad[2];
  // SSN's η stamp of the version (the largest commit stamp of a serializable transaction that
  // read it and committed), in SSN's doubled units (mvcc/ssn.h); 0: no such reader. A writer
  // that overwrites the version is serialized after those readers. A version read back from
  // the cold store starts at the clock of its reload: readers that committed before the reload
  // are covered without a record of them (mvcc/ssn.h, "Eviction").
  mutable std::atomic<std::uint64_t> pstamp;  // readers hold const versions and raise it

  char* payload() { return reinterpret_cast<char*>(this + 1); }
  const char* payload() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view value() const { return {payload(), size}; }
  bool tombstone() const { return (flags & kTombstone) != 0; }
  static std::size_t bytes_for(std::size_t payload) { return sizeof(Version) + payload; }
};
// 40 bytes: with the 16-byte size classes, a payload of 8 (or of 100) bytes still takes 48 (or
// 144), as it did before SSN's stamp was added.
static_assert(sizeof(Version) == 40);
static_assert(alignof(Version) == 8);
static_assert(offsetof(Version, size) == 24, "header layout: two words, home, size and flags");

// ---- Entries ------------------------------------------------------------------------------------
// An OID-array entry ("swip"): one word, four meanings, told apart by value and tag bits:
//   0                  empty: no version (never written, or an aborted insert)
//   2                  moved: the record's leaf names it by its cold address now and the OID
//                      waits for reclamation's horizon (the leaves' hand demoted it,
//                      docs/internals/index-paging.md decision 4); whoever took the OID before
//                      looks the key up again. Never a version: those are 16-byte aligned
//   bit 0 clear, > 2   hot: Version* of the newest version
//   bit 0 set          cold: the durable address of the newest committed version's record
//                      (storage/cold_address.h)
namespace entry {
inline constexpr std::uint64_t kEmpty = 0;
inline constexpr std::uint64_t kMoved = 2;
using storage::cold;
using storage::cold_encodable;
using storage::ColdAddress;
using storage::from_cold;
using storage::is_cold;
using storage::kColdBit;
using storage::kMaxColdOffset;
using storage::kMaxColdSegment;
using storage::kMaxColdSize;

inline bool is_empty(std::uint64_t e) { return e == kEmpty; }
inline bool is_moved(std::uint64_t e) { return e == kMoved; }
// Both in one test, for a memory path's single branch: bit 0 is a cold word's tag, and bit 1 is
// set in no other entry (a version is 16-byte aligned, empty is 0).
inline bool is_cold_or_moved(std::uint64_t e) { return (e & (kColdBit | kMoved)) != 0; }
static_assert(kColdBit == 1, "is_cold_or_moved: the cold tag is bit 0");
static_assert(kMoved == 2, "is_cold_or_moved: moved is bit 1 alone");
// One compare more than a test for empty would cost nothing: both are against a constant.
inline bool is_hot(std::uint64_t e) { return e > kMoved && !is_cold(e); }
inline Version* hot(std::uint64_t e) {
  BRAID_DASSERT(is_hot(e));
  return reinterpret_cast<Version*>(e);
}
inline std::uint64_t from_version(const Version* v) {
  const auto e = reinterpret_cast<std::uint64_t>(v);
  BRAID_DASSERT((e & 15) == 0);
  return e;
}
}  // namespace entry

}  // namespace braid::mvcc
