// Database options. Everything the engine bounds is bounded here; there are no global flags.
#pragma once

#include <cstdint>
#include <string>

namespace braid {

struct Options {
  // Database directory. Empty: a purely in-memory database. When set, the directory is created if
  // missing (see create_if_missing) and locked against a second process opening it. The redo log
  // that makes it durable is not written yet (see docs/architecture.md, "Not yet built").
  std::string directory;
  bool create_if_missing = true;

  // Worker threads, one per core. Together with slots_per_worker it sizes the table of
  // transaction contexts: at most workers * slots_per_worker transactions are open at once, and
  // begin() answers Busy beyond that.
  std::uint32_t workers = 1;
  std::uint32_t slots_per_worker = 64;

  // Tables a database may hold.
  std::uint32_t max_tables = 256;

  // Records (OIDs) per table. The OID array is reserved virtually at this size (8 bytes each)
  // and backed only as it grows, so a large limit costs address space, not memory.
  std::uint64_t max_records_per_table = std::uint64_t{1} << 32;

  // Writes one transaction may stage before its operations answer Busy.
  std::uint32_t max_txn_writes = std::uint32_t{1} << 20;

  // Ask for transparent huge pages on the large arenas (OID arrays). Falls back quietly when the
  // kernel refuses.
  bool huge_pages = true;
};

// Limits of the data model (public so applications can check before calling).
inline constexpr std::size_t kMaxKeyBytes = 255;
inline constexpr std::size_t kMaxValueBytes = 64 * 1024;
inline constexpr std::size_t kMaxTableNameBytes = 128;

}  // namespace braid
