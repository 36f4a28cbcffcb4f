// A history checker for list-append workloads (after Kingsbury & Alvaro's Elle, and Adya's
// anomaly classes), independent of the engine: it sees only what clients recorded.
//
// Each key holds a list; a transaction reads lists and appends elements, every element unique,
// so the order in which appends reached a key is recoverable from the reads: the final read of a
// key is its version order, and every committed read must be a prefix of it. From that order
// the checker derives the dependency graph of the committed transactions
//   ww  T(e_i) -> T(e_i+1)                      for consecutive elements of one key's order
//   wr  T(last element of a read) -> reader
//   rw  reader -> T(the element after what it read)
// and reports, with the transactions involved:
//   G0         a cycle of ww edges                       (write cycles)
//   G1a        a committed read of an aborted append     (aborted reads)
//   G1b        a committed read ending in an element its writer later followed with another
//              append to the same key                    (intermediate reads)
//   G1c        a cycle of ww and wr edges                (circular information flow)
//   G-single   a cycle with exactly one rw edge          (read skew)
//   G2-item    a cycle with two or more rw edges         (write skew)
//   lost-update       a committed append missing from its key's final order
//   incompatible-order  a committed read that is not a prefix of its key's final order
//   garbage-read      a read of an element nobody appended
// Snapshot isolation forbids all but G2-item; serializability forbids all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace braid::history {

struct Op {
  enum class Kind : std::uint8_t { kRead, kAppend };
  Kind kind = Kind::kRead;
  std::uint32_t key = 0;
  std::vector<std::uint64_t> list;  // kRead: what it read
  std::uint64_t element = 0;        // kAppend: what it appended
};

struct Txn {
  std::uint64_t id = 0;
  std::vector<Op> ops;
  bool committed = false;
};

struct Anomaly {
  std::string type;
  std::vector<std::uint64_t> txns;  // the transactions involved (a cycle: in cycle order)
  std::string detail;
};

struct Report {
  std::size_t committed = 0;
  std::size_t aborted = 0;
  std::size_t edges = 0;
  std::vector<Anomaly> anomalies;
  // Anomalies of one type.
  std::size_t count(const std::string& type) const;
  // One line per type with counts, and the first few anomalies spelled out.
  std::string summary() const;
};

// `final_state`: each key's list as read after every transaction ended.
Report check(const std::vector<Txn>& txns,
             const std::map<std::uint32_t, std::vector<std::uint64_t>>& final_state);

// The list encoding the workloads store as a value: decimal elements separated by commas.
std::string encode(const std::vector<std::uint64_t>& list);
bool decode(std::string_view value, std::vector<std::uint64_t>* list);

}  // namespace braid::history
