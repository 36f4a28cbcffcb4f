// Every record of a table read back and verified (`braid check`): the index walked in key
// order, each key's record counted in memory or on storage, and the ones on storage read in
// file order with many reads in flight (ColdStore::read_in_file_order), each checked to be the
// record of its key. A point read per cold record, as a scan does, pays the device's latency
// once per record; a check of a database much larger than memory would then take hours.
#pragma once

#include <braid/status.h>

#include <cstdint>
#include <functional>

#include "engine/cold_store.h"

namespace braid {
class Table;
}  // namespace braid

namespace braid::engine {

class DatabaseImpl;

struct RecordCheckCounts {
  std::uint64_t records = 0;  // keys whose record a fresh snapshot sees
  std::uint64_t hot = 0;      // of those, in memory
  std::uint64_t cold = 0;     // of those, only on storage: each read back and verified
  ColdStore::BulkStats bulk;
};

// Checks every record of `table` (see the file comment). `progress` hears the keys walked and
// then the cold records verified. IOError or Corruption (naming file and offset) on the first
// record that cannot be read or is not its key's. Quiescent databases only (no writer, no
// checkpoint: `braid check` opens read-only).
Status check_records(DatabaseImpl& db, Table& table, const ColdStore::BulkOptions& options,
                     RecordCheckCounts* out, const std::function<void(std::uint64_t)>& progress);

}  // namespace braid::engine
